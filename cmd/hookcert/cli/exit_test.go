package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
)

// baseTarget certifies the reference receiver, started as ./bin/hookcert from
// the target file's directory (the harness runs elsewhere). Its setup script
// creates a table the receiver does not, which a fixture's SQL needs to
// prepare; a value passed with {{env}} reaches the receiver's environment.
const baseTarget = `target:
  name: reference
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: stripe, account: acct_A, path: /webhooks/stripe/acct_A, secret: whsec_test_secret}
    - {profile: stripe, account: acct_B, path: /webhooks/stripe/acct_B, secret: whsec_test_secret_acct_B}
    - {profile: github, account: acct_A, path: /webhooks/github/acct_A, secret: "It's a Secret to Everybody"}
  lifecycle:
    command: [./bin/hookcert, reference, serve, --listen, "{{.ListenAddr}}", --enable-failpoints]
    env:
      HOOKCERT_DATABASE_URL: "{{.DatabaseURL}}"
      REFERENCE_API_TOKEN: '{{env "HC_EXIT_TEST_TOKEN"}}'
    ready: {http: /healthz, timeout: 30s}
  setup:
    sql_file: schema/extra.sql
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      event_table: processed_webhook_events
      effect_table: ledger_entries
      queries:
        event_rows: SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3
        effects:    SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3
  fixtures:
    customer: {sql: "INSERT INTO shop_customers (id, account) VALUES ($4, $2)"}
  failpoints: {path: /_hookcert/failpoints}
  capabilities: [crash, lock-gating, connection-loss, failpoints]
`

// exitToken is passed to the receiver with {{env}}; it must show nowhere.
const exitToken = "tok-exit-test-5d1e9a"

// certifyRun is one run of the built binary.
type certifyRun struct {
	code           int
	stdout, stderr string
	res            *reports.Results
	summary        string
	reportDir      string
}

// exitFixture is a target directory holding bin/hookcert and the files the
// targets use, and a separate directory the harness runs in.
type exitFixture struct {
	bin, fileDir, runDir string
	dbURL, password      string
}

func newExitFixture(t *testing.T) *exitFixture {
	t.Helper()
	f := &exitFixture{fileDir: t.TempDir(), runDir: t.TempDir()}
	f.bin = filepath.Join(f.fileDir, "bin", "hookcert")
	out, err := exec.Command("go", "build", "-o", f.bin, "github.com/hookcert/hookcert/cmd/hookcert").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f.write(t, "schema/extra.sql", "CREATE TABLE shop_customers (id text PRIMARY KEY, account text NOT NULL);\n")
	f.write(t, "schema/broken.sql", "CREATE TABLE fine (id int);\n\nSELECT * FROM no_such_relation;\n")
	f.dbURL, f.password = plantedRole(t)
	return f
}

func (f *exitFixture) write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(f.fileDir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// env is the harness's environment: no NO_COLOR (a pipe alone must be enough
// to keep colour out), the {{env}} token set.
func exitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "HOOKCERT_DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "HC_EXIT_TEST_TOKEN="+exitToken), extra...)
}

// run runs the binary with args from runDir, output piped, and reads the
// reports it wrote (if any).
func (f *exitFixture) run(t *testing.T, args ...string) certifyRun {
	t.Helper()
	r := certifyRun{reportDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if args[0] == "certify" {
		args = append(args, "--report-dir", r.reportDir, "--seed", "7")
	}
	c := exec.CommandContext(ctx, f.bin, append(args, "--database-url", f.dbURL)...)
	c.Dir = f.runDir
	c.Env = exitEnv()
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	r.stdout, r.stderr = stdout.String(), stderr.String()
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if res, err := reports.ReadResults(filepath.Join(r.reportDir, reports.FileJSON)); err == nil {
		r.res = res
	}
	if b, err := os.ReadFile(filepath.Join(r.reportDir, reports.FileMarkdown)); err == nil {
		r.summary = string(b)
	}
	// Nothing the run printed or wrote carries a colour code or a secret.
	for name, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if strings.ContainsRune(text, 0x1b) {
			t.Errorf("%v: %s (a pipe) holds an escape sequence:\n%q", args, name, text)
		}
	}
	f.noSecret(t, fmt.Sprint(args), "stdout", r.stdout)
	f.noSecret(t, fmt.Sprint(args), "stderr", r.stderr)
	entries, _ := os.ReadDir(r.reportDir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(r.reportDir, e.Name()))
		f.noSecret(t, fmt.Sprint(args), e.Name(), string(b))
	}
	return r
}

func (f *exitFixture) noSecret(t *testing.T, what, where, text string) {
	t.Helper()
	for _, s := range []string{f.password, exitToken} {
		if strings.Contains(text, s) {
			t.Errorf("%s: %s holds a secret (%q)", what, where, s)
		}
	}
}

// Every exit status of certify, each through the built binary, piped: 0, 1,
// 2 for each kind of configuration error, 3 for each kind of unreachable
// target, 4 for nothing selected and all not applicable. Every run that read
// its target leaves results.json and summary.md saying what happened.
func TestCertifyExitStatuses(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: starts receivers")
	}
	f := newExitFixture(t)
	closed := closedPort(t)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer live.Close()
	replace := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(baseTarget) }
	noLifecycle := func(base, dbURL string) string {
		s := baseTarget[:strings.Index(baseTarget, "  lifecycle:")] + baseTarget[strings.Index(baseTarget, "  observe:"):]
		s = strings.Replace(s, "http://{{.ListenAddr}}", base, 1)
		s = strings.Replace(s, `url: "{{.DatabaseURL}}"`, "url: "+dbURL, 1)
		return strings.Replace(s, "capabilities: [crash, lock-gating, connection-loss, failpoints]", "capabilities: [lock-gating]", 1)
	}
	cases := []struct {
		name, file string
		args       []string
		code       int
		outcome    string
		want       string // in results.json's error (or a guarantee's reason)
	}{
		{"passed", baseTarget, []string{"--label-filter", "DEDUP-5"}, 0, "", ""},
		{"failed", replace("--enable-failpoints]", "--enable-failpoints, --defect, dedupe-by-payload]"), []string{"--label-filter", "DEDUP-5"}, 1, "", ""},

		{"unknown field", replace("  base_url:", "  bse_url:"), nil, 2, reports.RunConfigError, "target.bse_url (line 3): unknown field in target"},
		{"query does not prepare", replace("FROM ledger_entries", "FROM no_such_ledger"), nil, 2, reports.RunConfigError,
			`target.observe.postgres.queries.effects: does not prepare: ERROR: relation "no_such_ledger" does not exist`},
		{"fixture does not prepare", replace("INTO shop_customers", "INTO no_customers"), nil, 2, reports.RunConfigError,
			"target.fixtures.customer.sql: does not prepare"},
		{"purge does not prepare", replace("  failpoints:", `  retention:
    key_ttl: 744h
    payload_ttl: 24h
    purge: {sql: "DELETE FROM no_such_keys WHERE received_at < $1::timestamptz"}
  failpoints:`, "connection-loss, failpoints]", "connection-loss, failpoints, retention]",
			"effects:    SELECT", "payload_present: SELECT payload IS NOT NULL FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3\n        effects:    SELECT"),
			nil, 2, reports.RunConfigError, `target.retention.purge.sql: does not prepare: ERROR: relation "no_such_keys" does not exist`},
		{"setup fails", replace("schema/extra.sql", "schema/broken.sql"), nil, 2, reports.RunConfigError,
			`target.setup.sql_file (broken.sql, line 3): setup failed: ERROR: relation "no_such_relation" does not exist`},
		{"env variable unset", replace("HC_EXIT_TEST_TOKEN", "HC_EXIT_TEST_UNSET"), nil, 2, reports.RunConfigError,
			`target.lifecycle.env.REFERENCE_API_TOKEN (line 12): {{env "HC_EXIT_TEST_UNSET"}}: environment variable HC_EXIT_TEST_UNSET is not set`},
		{"env in a command argument", replace("--enable-failpoints]", `--enable-failpoints, '--token={{env "HC_EXIT_TEST_TOKEN"}}']`), nil, 2, reports.RunConfigError,
			"target.lifecycle.command[6] (line 9): {{env}} is not allowed in a command's arguments"},
		{"secret_env unset", replace("secret: whsec_test_secret}", "secret_env: HC_EXIT_TEST_NO_SECRET}"), nil, 2, reports.RunConfigError,
			"target.endpoints[0].secret_env (line 5): environment variable HC_EXIT_TEST_NO_SECRET is not set or empty"},

		{"receiver exits", replace("[./bin/hookcert, reference, serve, --listen, \"{{.ListenAddr}}\", --enable-failpoints]", "[/bin/sh, -c, 'echo no config; exit 7']"),
			nil, 3, reports.RunUnreachable, "exited with status 7 before it was ready"},
		{"receiver missing", replace("./bin/hookcert, reference", "./bin/no-such-receiver, reference"), nil, 3, reports.RunUnreachable,
			filepath.Join(f.fileDir, "bin", "no-such-receiver")},
		{"nothing listening", noLifecycle("http://"+closed, `"{{.DatabaseURL}}"`), nil, 3, reports.RunUnreachable, "does not accept connections"},
		{"database unreachable", noLifecycle(live.URL, "postgres://hookcert:planted@"+closed+"/db"), nil, 3, reports.RunUnreachable, "observer"},

		{"nothing selected", baseTarget, []string{"--label-filter", "NOPE-1"}, 4, reports.RunNothingSelected, `the label filter "NOPE-1" and focus "" match no guarantee`},
		{"all not applicable", baseTarget, []string{"--label-filter", "needs:retention"}, 4, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := f.write(t, strings.ReplaceAll(c.name, " ", "-")+".yaml", c.file)
			r := f.run(t, append([]string{"certify", "--config", cfg}, c.args...)...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, c.code, r.stdout, r.stderr)
			}
			if r.res == nil || r.summary == "" {
				t.Fatalf("no results.json or summary.md in %s\n%s%s", r.reportDir, r.stdout, r.stderr)
			}
			if r.res.Outcome != c.outcome {
				t.Errorf("outcome %q, want %q", r.res.Outcome, c.outcome)
			}
			// A judged run's verdict says what its exit status says.
			if want := map[int]string{0: reports.VerdictPassed, 1: reports.VerdictFailed, 4: reports.VerdictNone}[c.code]; c.outcome == "" && r.res.Verdict != want {
				t.Errorf("verdict %q, want %q", r.res.Verdict, want)
			} else if c.outcome != "" && r.res.Verdict != "" {
				t.Errorf("a stopped run has verdict %q", r.res.Verdict)
			}
			if c.outcome != "" {
				if len(r.res.Guarantees) != 0 || !strings.Contains(r.res.Error, c.want) {
					t.Errorf("results.json error %q, want it to contain %q", r.res.Error, c.want)
				}
				if title := r.res.OutcomeTitle(); !strings.Contains(r.summary, "# hookcert certification: "+title) || !strings.Contains(r.summary, "Nothing was judged for target reference") {
					t.Errorf("summary.md:\n%s", r.summary)
				}
				if !strings.Contains(r.stderr, c.want) {
					t.Errorf("stderr does not say %q:\n%s", c.want, r.stderr)
				}
			}
			switch c.name {
			case "passed":
				// ./bin/hookcert was the file's, though the harness ran elsewhere.
				if !strings.Contains(r.stdout, "starting the receiver: "+f.bin+" reference serve") ||
					!strings.Contains(r.stdout, "setup: sql_file "+filepath.Join(f.fileDir, "schema", "extra.sql")) {
					t.Errorf("stdout:\n%s", r.stdout)
				}
				if len(r.res.Guarantees) != 1 || r.res.Guarantees[0].Status != reports.StatusPassed {
					t.Errorf("guarantees: %+v", r.res.Guarantees)
				}
				checkExitStatuses(t, f, r.reportDir)
			case "failed":
				if r.res.Summary.Failed != 1 {
					t.Errorf("summary %+v", r.res.Summary)
				}
			case "all not applicable":
				if s := r.res.Summary; s.Total == 0 || s.NotApplicable != s.Total {
					t.Errorf("summary %+v", s)
				}
			}
		})
	}
}

// checkExitStatuses re-judges the stored history of a run that passed, as
// stored (exit 0), with the reads of the receiver's state taken out (the
// checker cannot judge: error, exit 5, not 1) and with the receiver's effects
// read as none (a failure: exit 1).
func checkExitStatuses(t *testing.T, f *exitFixture, reportDir string) {
	t.Helper()
	stored, err := os.ReadFile(filepath.Join(reportDir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	edited := func(edit func(h *history.History)) string {
		h, err := history.ReadJSONL(bytes.NewReader(stored))
		if err != nil {
			t.Fatal(err)
		}
		edit(h)
		dir := t.TempDir()
		var b bytes.Buffer
		if err := h.WriteJSONL(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range []struct {
		name    string
		edit    func(h *history.History)
		code    int
		verdict string
		status  reports.Status
		stderr  string
	}{
		{"as stored", func(*history.History) {}, ExitOK, reports.VerdictPassed, reports.StatusPassed, ""},
		{"reads missing", func(h *history.History) { h.Observations = nil }, ExitUnjudged, reports.VerdictError, reports.StatusError,
			"hookcert: 1 guarantee(s) could not be judged, none failed\n"},
		{"no effect applied", func(h *history.History) {
			for i := range h.Observations {
				if h.Observations[i].Query == "effects" {
					h.Observations[i].Count = 0
				}
			}
		}, ExitFailed, reports.VerdictFailed, reports.StatusFailed, "hookcert: 1 guarantee(s) failed, 0 could not be judged\n"},
	} {
		from := edited(c.edit)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, f.bin, "check", "--from", from)
		cmd.Env = exitEnv()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		res, rerr := reports.ReadResults(filepath.Join(from, reports.FileJSON))
		switch {
		case code != c.code || stderr.String() != c.stderr:
			t.Errorf("check, %s: exit %d, want %d; stderr %q, want %q\n%s", c.name, code, c.code, stderr.String(), c.stderr, stdout.String())
		case rerr != nil:
			t.Errorf("check, %s: %v", c.name, rerr)
		case res.Verdict != c.verdict || len(res.Guarantees) != 1 || res.Guarantees[0].Status != c.status:
			t.Errorf("check, %s: verdict %q, guarantees %+v; want %q, %s", c.name, res.Verdict, res.Guarantees, c.verdict, c.status)
		}
	}
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// validate through the built binary: it provisions, runs the setup, starts the
// receiver and prepares everything, delivering nothing; any error is exit 2.
func TestValidate(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: starts receivers")
	}
	f := newExitFixture(t)
	good := f.write(t, "good.yaml", baseTarget)
	r := f.run(t, "validate", "--config", good)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"valid " + good + `: target "reference"`,
		"setup: ran sql_file " + filepath.Join(f.fileDir, "schema", "extra.sql"),
		"receiver: started and ready",
		"queries prepared: effects, event_rows",
		"fixtures: customer (sql)",
		"capabilities: crash, lock-gating, connection-loss, failpoints",
		"events: the built-in conformance vocabulary",
		"stripe             source stripe, account acct_B",
		"valid (",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	// Without starting the receiver its own tables are missing: the queries do
	// not prepare, which is exit 2 naming the query.
	r = f.run(t, "validate", "--config", good, "--no-start")
	if r.code != 2 || !strings.Contains(r.stderr, `target.observe.postgres.queries.event_rows: does not prepare: ERROR: relation "processed_webhook_events" does not exist`) {
		t.Errorf("--no-start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A receiver without lifecycle whose schema the setup creates: valid, and
	// validate says the receiver is not answering, which certify would need.
	f.write(t, "schema/own.sql", "CREATE TABLE events (source text, account text, id text);\nCREATE TABLE ledger (event_id text);\n")
	own := f.write(t, "own.yaml", fmt.Sprintf(`target:
  name: own schema
  base_url: http://%s
  endpoints: [{profile: stripe, account: acct_A, path: /w, secret: whsec_validate_own}]
  setup: {sql_file: schema/own.sql}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM events WHERE source=$1 AND account=$2 AND id=$3
        effects: SELECT count(*) FROM ledger WHERE event_id=$3
`, closedPort(t)))
	r = f.run(t, "validate", "--config", own)
	if r.code != 0 || !strings.Contains(r.stdout, "receiver: no lifecycle; ") || !strings.Contains(r.stdout, "does not accept connections") || !strings.Contains(r.stdout, "(certify needs it running, exit 3 otherwise)") {
		t.Errorf("own schema: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for name, c := range map[string]struct{ file, want string }{
		"unknown field":     {strings.Replace(baseTarget, "  base_url:", "  bse_url:", 1), "target.bse_url (line 3): unknown field"},
		"query":             {strings.Replace(baseTarget, "FROM ledger_entries", "FROM no_such_ledger", 1), "target.observe.postgres.queries.effects: does not prepare"},
		"setup":             {strings.Replace(baseTarget, "schema/extra.sql", "schema/broken.sql", 1), "target.setup.sql_file (broken.sql, line 3)"},
		"env unset":         {strings.Replace(baseTarget, "HC_EXIT_TEST_TOKEN", "HC_EXIT_TEST_UNSET", 1), "environment variable HC_EXIT_TEST_UNSET is not set"},
		"receiver not live": {strings.Replace(baseTarget, "./bin/hookcert, reference", "./bin/no-such-receiver, reference", 1), "no-such-receiver"},
	} {
		cfg := f.write(t, "bad-"+strings.ReplaceAll(name, " ", "-")+".yaml", c.file)
		r := f.run(t, "validate", "--config", cfg)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 naming %q\n%s%s", name, r.code, c.want, r.stdout, r.stderr)
		}
	}
}

func TestStripWriter(t *testing.T) {
	var b bytes.Buffer
	w := &stripWriter{w: &b}
	for _, part := range []string{"a\x1b[1", ";31mred\x1b", "[0m b \x1b]0;title\x07c\x1b]8;;http://x\x1b\\link\x1b(Bd → é\n"} {
		if n, err := io.WriteString(w, part); err != nil || n != len(part) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := b.String(); got != "ared b clinkd → é\n" {
		t.Errorf("got %q", got)
	}
}

func TestNoColorArg(t *testing.T) {
	for args, want := range map[string]bool{
		"certify --no-color":           true,
		"--no-color=true certify":      true,
		"certify --no-color=false":     false,
		"certify":                      false,
		"fire -- --no-color":           false,
		"certify --no-color=maybe xyz": true,
	} {
		if got := noColorArg(strings.Fields(args)); got != want {
			t.Errorf("%q: %v, want %v", args, got, want)
		}
	}
}
