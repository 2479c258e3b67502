package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/soak"
)

// soakDemo runs `hookcert soak --demo` against the test server and returns its
// exit status, output and results.
func soakDemo(t *testing.T, args ...string) (int, string, *reports.Soak) {
	t.Helper()
	return soakDemoIn(t, t.TempDir(), args...)
}

// soakDemoIn is soakDemo writing its reports into dir.
func soakDemoIn(t *testing.T, dir string, args ...string) (int, string, *reports.Soak) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: soaks the reference receiver for seconds")
	}
	code, out := runChild(t, append([]string{"soak", "--demo", "--database-url", pgtest.ServerURL(), "--report-dir", dir, "--no-color"}, args...)...)
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatalf("results.json: %v\n%s", err, out)
	}
	if res.Soak == nil {
		t.Fatalf("results.json has no soak section\n%s", out)
	}
	return code, out, res.Soak
}

var soakKey = regexp.MustCompile(`\(\w[\w-]*, acct_[AB], evt_hc\w+soak\w+\)`)

// soakFaults asserts that every fault applied without error and at least
// kills kills and terms session terminations were applied.
// The schedule's waits vary by a quarter either way (drawn from the seed), so
// the intervals the tests give leave room for two of each in 15 s.
func soakFaults(t *testing.T, s *reports.Soak, kills, terms int) {
	t.Helper()
	kinds := map[string]int{}
	for _, f := range s.Faults {
		if f.Error != "" {
			t.Errorf("fault %s at %d ms: %s", f.Kind, f.StartMS, f.Error)
		}
		kinds[f.Kind]++
	}
	if kinds["kill"] < kills || kinds["pg-terminate"] < terms {
		t.Errorf("faults applied %v, want at least %d kills and %d pg-terminate", kinds, kills, terms)
	}
}

// rejudge re-judges a soak's report directory offline (hookcert check --from)
// and asserts the same soak section and exit status as the soak's own.
func rejudge(t *testing.T, dir string, code int, s *reports.Soak) {
	t.Helper()
	out := t.TempDir()
	got, text := runChild(t, "check", "--from", dir, "--out", out, "--no-color")
	if got != code {
		t.Errorf("check --from: exit %d, the soak's was %d:\n%s", got, code, text)
	}
	res, err := reports.ReadResults(filepath.Join(out, reports.FileJSON))
	if err != nil {
		t.Fatalf("check --from: results.json: %v\n%s", err, text)
	}
	if _, err := os.Stat(filepath.Join(out, reports.FileSoakHTML)); err != nil {
		t.Errorf("check --from: %v", err)
	}
	want, _ := json.Marshal(s)
	have, _ := json.Marshal(res.Soak)
	if string(want) != string(have) {
		t.Errorf("check --from gives another soak section:\nsoak:  %.600s\ncheck: %.600s", want, have)
	}
}

// The make-test soak of the reference receiver (make soak runs it for 60 s):
// 15 s at 64 concurrent deliveries, the receiver killed every 5 s and its
// database sessions terminated every 7 s, and nothing lost or duplicated; the
// faults and figures are in results.json, and re-judging the stored history
// offline gives the same verdict.
func TestSoakDemoPasses(t *testing.T) {
	besideOthers(t)
	dir := t.TempDir()
	code, out, s := soakDemoIn(t, dir, "--duration", "15s", "--concurrency", "64", "--nemesis", "kill=4s,pg-terminate=5s", "--seed", "11")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if s.Lost != 0 || s.Duplicated != 0 || !s.Passed {
		t.Fatalf("lost %d, duplicated %d, passed %v:\n%s", s.Lost, s.Duplicated, s.Passed, out)
	}
	// About 1,000 a second on a quiet two-core machine; a tenth of that on a
	// loaded one still is a soak.
	if s.Acknowledged < 1500 {
		t.Errorf("%d events acknowledged, want at least 1500:\n%s", s.Acknowledged, out)
	}
	soakFaults(t, s, 2, 2)
	if s.Latency.P99MS <= 0 || s.DeliveriesPerS <= 0 || len(s.Series) < 15 {
		t.Errorf("latency %+v, %g deliveries/s, %d points: figures missing", s.Latency, s.DeliveriesPerS, len(s.Series))
	}
	if !strings.Contains(out, "PASS: ") || !strings.Contains(out, "deliveries/s") {
		t.Errorf("output lacks the verdict or the progress lines:\n%s", out)
	}
	rejudge(t, dir, code, s)
	t.Logf("%d acknowledged, %.1f acks/s, p99 %.1f ms, %d events", s.Acknowledged, s.AcksPerS, s.Latency.P99MS, s.Keys)
}

// The reference in inbox mode keeps every event through kills of the receiver
// (and of its workers inside their apply transactions) and of its database
// sessions: every acknowledged (202) event is applied once when its workers have
// caught up. Four workers apply one to four hundred events a second on two
// busy cores once traffic stops, fewer than 64 unthrottled senders get accepted,
// so the senders are held to 200 deliveries a second: the backlog left when
// traffic stops drains in seconds, not minutes (make soak runs it unthrottled).
func TestSoakDemoInboxPasses(t *testing.T) {
	besideOthers(t)
	code, out, s := soakDemo(t, "--mode", "inbox", "--duration", "15s", "--concurrency", "64", "--rate", "200",
		"--nemesis", "kill=4s,pg-terminate=5s", "--seed", "13")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if s.Lost != 0 || s.Duplicated != 0 || !s.Passed || !s.Settle.Quiescent {
		t.Fatalf("lost %d, duplicated %d, passed %v, quiescent %v:\n%s", s.Lost, s.Duplicated, s.Passed, s.Settle.Quiescent, out)
	}
	if s.Acknowledged < 1000 {
		t.Errorf("%d events acknowledged, want at least 1000:\n%s", s.Acknowledged, out)
	}
	soakFaults(t, s, 2, 2)
	if !strings.Contains(out, "--mode inbox --workers 4") || !strings.Contains(out, "(inbox mode)") {
		t.Errorf("the receiver was not started in inbox mode:\n%s", out)
	}
	t.Logf("%d acknowledged, %.1f acks/s, p99 %.1f ms, %d events, quiescent after %.1fs", s.Acknowledged, s.AcksPerS, s.Latency.P99MS, s.Keys, float64(s.Settle.DurationMS)/1000)
}

// A receiver that answers before it commits loses the events a fault catches
// between the two; the soak names them and exits 1. The gap is microseconds
// long: a kill on a timer lands in it now and then; the aimed faults strike
// at the n-th acknowledgement of a burst the harness held at a lock and
// released together, while others are between their answer and their commit.
func TestSoakDemoAckBeforeCommitLoses(t *testing.T) {
	besideOthers(t)
	code, out, s := soakDemo(t, "--defect", "ack-before-commit", "--duration", "6s", "--concurrency", "32", "--nemesis", "kill@ack=700ms,pg-terminate@ack=1s", "--seed", "12")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	if s.Lost == 0 || len(s.LostKeys) == 0 {
		t.Fatalf("no key lost:\n%s", out)
	}
	// The aimed faults say what they aimed at, and which caught an
	// acknowledged event uncommitted.
	hits := 0
	for _, f := range s.Faults {
		if f.Aim == "" || !strings.HasPrefix(f.Aim, "acknowledgement ") {
			t.Errorf("fault without its aim: %+v", f)
		}
		if f.Hit {
			hits++
		}
	}
	if hits == 0 {
		t.Errorf("no aimed fault hit, yet %d lost: %+v", s.Lost, s.Faults)
	}
	if !strings.Contains(out, "lost: acknowledged, never stored") || !soakKey.MatchString(out) || !strings.Contains(out, "--seed 12") {
		t.Errorf("output does not name the lost keys and the seed:\n%s", out)
	}
}

// Check-then-insert stores both of two concurrent copies; the soak names the
// duplicated keys and exits 1.
func TestSoakDemoCheckThenInsertDuplicates(t *testing.T) {
	besideOthers(t)
	dir := t.TempDir()
	code, out, s := soakDemoIn(t, dir, "--defect", "check-then-insert", "--duration", "5s", "--rate", "200", "--dup-rate", "0.3", "--seed", "13")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	if s.Duplicated == 0 || len(s.DuplicatedKeys) == 0 || len(s.DuplicatedKeys) > 20 {
		t.Fatalf("duplicated %d, keys listed %d:\n%s", s.Duplicated, len(s.DuplicatedKeys), out)
	}
	if !strings.Contains(out, "duplicated: more than one row, effect or downstream operation") || !soakKey.MatchString(out) {
		t.Errorf("output does not name the duplicated keys:\n%s", out)
	}
	rejudge(t, dir, code, s)
}

// Flags that cannot work are usage errors before anything starts.
func TestSoakUsage(t *testing.T) {
	for _, args := range [][]string{
		{"soak"},
		{"soak", "--demo", "--config", "x.yaml"},
		{"soak", "--config", "x.yaml", "--defect", "check-then-insert"},
		{"soak", "--demo", "--nemesis", "explode=1s"},
		{"soak", "--demo", "--dup-rate", "0.8", "--lost-ack-rate", "0.5"},
		{"soak", "--demo", "--concurrency", "0"},
	} {
		if code, out := runChild(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d:\n%s", args, code, ExitUsage, out)
		}
	}
}

// The progress line names the acknowledgements the soak loses on purpose
// apart from real errors.
func TestSoakProgressLine(t *testing.T) {
	var b bytes.Buffer
	got := soakProgressLine(painterFor(&b), soak.Progress{Phase: "traffic", Elapsed: 3500 * time.Millisecond, Duration: 10 * time.Second,
		Rate: 120, Attempts: 50, Acknowledged: 40, LostAcks: 7, Errors: 3, Faults: 2}, false)
	want := "[3s/10s] traffic   120 deliveries/s  acknowledged 40  acks lost on purpose 7  errors 3  faults 2\n"
	if got != want {
		t.Errorf("progress line %q\nwant          %q", got, want)
	}
}
