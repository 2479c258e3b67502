package hookcerttest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/examples/gotest"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/hookcerttest"
)

// TestNoContainerRuntime: importing the library pulls in no container runtime
// or Docker client (go list -deps ./scenarios/hookcerttest | grep -c
// testcontainers is 0), so a receiver's tests that use it stay light.
func TestNoContainerRuntime(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/hookcert/hookcert/scenarios/hookcerttest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list listed %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		if strings.Contains(d, "testcontainers") || strings.HasPrefix(d, "github.com/docker/") || strings.Contains(d, "pgprovision") {
			t.Errorf("the library depends on %s", d)
		}
	}
}

// defective serves the reference with a defect and returns its target: only
// lock-gating declared, so ORDER-1 (needs ordering) is not applicable.
func defective(t *testing.T, defect string) (*gotest.Reference, hookcerttest.Target, []reference.Endpoint) {
	t.Helper()
	dbURL := hookcerttest.Database(t, "")
	eps, err := gotest.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	eps = eps[:2] // stripe acct_A and acct_B: enough, and quick
	opts := reference.Options{Endpoints: eps}
	if defect != "" {
		opts.Defects = []string{defect}
	}
	ref, err := gotest.StartReference(t.Context(), dbURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Close)
	tg := ref.Target(dbURL)
	tg.Capabilities = []string{"lock-gating"}
	tg.Kill, tg.Restart, tg.FailpointsPath, tg.Retention = nil, nil, "", nil
	return ref, tg, eps
}

const helperEnv = "HOOKCERTTEST_HELPER"

// TestHelperDefective is run by TestSubtests in a child process: the failures
// it reports are the point, not this package's.
func TestHelperDefective(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestSubtests")
	}
	_, tg, _ := defective(t, reference.DefectCheckThenInsert)
	hookcerttest.Run(t, tg, hookcerttest.WithSeed(7), hookcerttest.WithLabelFilter("DEDUP-1 || ACK-3 || ORDER-1"))
}

// TestSubtests: with a *testing.T, each guarantee is a subtest named by its ID
// that fails with every deviation and a replay command, is skipped with the
// reason when not applicable, and passes otherwise; no secret is printed.
func TestSubtests(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperDefective$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err == nil {
		t.Fatalf("the defective receiver's test passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperDefective/DEDUP-1",
		"DEDUP-1 broken:",
		"[dedup.rows]",
		"replay: HOOKCERT_SEED=7 go test -run '^TestHelperDefective$/^DEDUP-1$'",
		"--- SKIP: TestHelperDefective/ORDER-1",
		"not applicable: the target does not declare capability ordering",
		"--- PASS: TestHelperDefective/ACK-3",
		"hookcert: FAILED: 1 passed, 1 failed, 1 not applicable, 0 error (seed 7)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// recorder is a testing.TB that is not a *testing.T: Run reports each
// guarantee on it as one line.
type recorder struct {
	testing.TB
	mu           sync.Mutex
	errors, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// runOn runs the suite on a recorder (see record).
func runOn(t *testing.T, tg hookcerttest.Target, opts ...hookcerttest.Option) *recorder {
	return record(t, func(r testing.TB) { hookcerttest.Run(r, tg, opts...) })
}

// record runs f on a recorder, in a goroutine of its own so that its Fatalf
// can end it.
func record(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// TestTB: on a plain testing.TB, a broken guarantee is one Errorf line with
// its evidence, the others are logged; the reports are written when asked,
// secrets scrubbed; the database may be given as a pool.
func TestTB(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	_, tg, eps := defective(t, reference.DefectCheckThenInsert)
	pool, err := pgxpool.New(t.Context(), tg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tg.DatabaseURL, tg.Pool = "", pool
	dir := t.TempDir()
	var res *reports.Results
	r := runOn(t, tg, hookcerttest.WithSeed(11), hookcerttest.WithLabelFilter("DEDUP-1 || ACK-3 || ORDER-1"),
		hookcerttest.WithReportDir(dir), hookcerttest.OnResults(func(x *reports.Results) { res = x }))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "DEDUP-1 broken:") || !strings.Contains(r.errors[0], "[dedup.rows]") ||
		!strings.Contains(r.errors[0], `WithLabelFilter("DEDUP-1")`) {
		t.Errorf("errors = %q, want one for DEDUP-1 with its evidence and replay", r.errors)
	}
	logs := strings.Join(r.logs, "\n")
	for _, want := range []string{"ACK-3 passed", "ORDER-1 not applicable: the target does not declare capability ordering", "reports in " + dir} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs do not say %q:\n%s", want, logs)
		}
	}
	if res == nil || res.Summary.Failed != 1 || res.Summary.Passed != 1 || res.Summary.NotApplicable != 1 || res.Seed != 11 {
		t.Fatalf("results = %+v", res)
	}
	for _, f := range []string{reports.FileJSON, reports.FileJUnit, reports.FileMarkdown, reports.FileHTML, hookcerttest.HistoryFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			if strings.Contains(string(b), ep.Secret) {
				t.Errorf("%s holds the secret of %s", f, ep.Path)
			}
		}
	}
}

// TestConfigErrors: a wrong target fails the test at once, naming the Go
// field: here a query the database cannot prepare, and a receiver that is not
// there.
func TestConfigErrors(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper process")
	}
	ref, tg, _ := defective(t, "")
	bad := tg
	bad.Queries.EventRows = "SELECT count(*) FROM no_such_table WHERE event_id = $3"
	r := runOn(t, bad)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "Target.Queries.EventRows: does not prepare") || !strings.Contains(r.errors[0], "no_such_table") {
		t.Errorf("errors = %q", r.errors)
	}
	if err := ref.Kill(); err != nil {
		t.Fatal(err)
	}
	r = runOn(t, tg)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "does not accept connections") {
		t.Errorf("errors = %q", r.errors)
	}
}
