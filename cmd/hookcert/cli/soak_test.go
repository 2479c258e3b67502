package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
)

// soakDemo runs `hookcert soak --demo` against the test server and returns its
// exit status, output and results.
func soakDemo(t *testing.T, args ...string) (int, string, *reports.Soak) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: soaks the reference receiver for seconds")
	}
	dir := t.TempDir()
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

// The reference receiver keeps every event through kills of the receiver and
// of its database sessions: nothing lost or duplicated, and the faults and
// figures are in results.json.
func TestSoakDemoPasses(t *testing.T) {
	code, out, s := soakDemo(t, "--duration", "10s", "--rate", "250", "--nemesis", "kill=3s,pg-terminate=4s", "--seed", "11")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if s.Lost != 0 || s.Duplicated != 0 || !s.Passed {
		t.Fatalf("lost %d, duplicated %d, passed %v:\n%s", s.Lost, s.Duplicated, s.Passed, out)
	}
	if s.Acknowledged < 300 {
		t.Errorf("%d events acknowledged, want at least 300:\n%s", s.Acknowledged, out)
	}
	kinds := map[string]int{}
	for _, f := range s.Faults {
		if f.Error != "" {
			t.Errorf("fault %s at %d ms: %s", f.Kind, f.StartMS, f.Error)
		}
		kinds[f.Kind]++
	}
	if kinds["kill"] < 2 || kinds["pg-terminate"] < 1 {
		t.Errorf("faults applied %v, want at least 2 kills and 1 pg-terminate", kinds)
	}
	if s.Latency.P99MS <= 0 || s.DeliveriesPerS <= 0 || len(s.Series) < 10 {
		t.Errorf("latency %+v, %g deliveries/s, %d points: figures missing", s.Latency, s.DeliveriesPerS, len(s.Series))
	}
	if !strings.Contains(out, "PASS: ") || !strings.Contains(out, "deliveries/s") {
		t.Errorf("output lacks the verdict or the progress lines:\n%s", out)
	}
	t.Logf("%.1f acks/s, p99 %.1f ms, %d events", s.AcksPerS, s.Latency.P99MS, s.Keys)
}

// The reference in inbox mode keeps every event through kills of the receiver
// (and of its workers inside their apply transactions) and of its database
// sessions: every acknowledged (202) event is applied once when its workers have
// caught up.
func TestSoakDemoInboxPasses(t *testing.T) {
	code, out, s := soakDemo(t, "--mode", "inbox", "--duration", "8s", "--concurrency", "32", "--rate", "400",
		"--nemesis", "kill=3s,pg-terminate=4s", "--seed", "13")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if s.Lost != 0 || s.Duplicated != 0 || !s.Passed || !s.Settle.Quiescent {
		t.Fatalf("lost %d, duplicated %d, passed %v, quiescent %v:\n%s", s.Lost, s.Duplicated, s.Passed, s.Settle.Quiescent, out)
	}
	if s.Acknowledged < 1000 {
		t.Errorf("%d events acknowledged, want at least 1000:\n%s", s.Acknowledged, out)
	}
	kinds := map[string]int{}
	for _, f := range s.Faults {
		if f.Error != "" {
			t.Errorf("fault %s at %d ms: %s", f.Kind, f.StartMS, f.Error)
		}
		kinds[f.Kind]++
	}
	if kinds["kill"] < 2 || kinds["pg-terminate"] < 1 {
		t.Errorf("faults applied %v, want at least 2 kills and 1 pg-terminate", kinds)
	}
	if !strings.Contains(out, "--mode inbox --workers 4") || !strings.Contains(out, "(inbox mode)") {
		t.Errorf("the receiver was not started in inbox mode:\n%s", out)
	}
	t.Logf("%.1f acks/s, p99 %.1f ms, %d events, quiescent after %.1fs", s.AcksPerS, s.Latency.P99MS, s.Keys, float64(s.Settle.DurationMS)/1000)
}

// A receiver that answers before it commits loses the events a fault catches
// between the two; the soak names them and exits 1. The gap is microseconds
// long: a kill lands in it now and then (about one kill in five here), the
// termination of every session far more often (a session is idle in its
// transaction while the answer goes out), so both run.
func TestSoakDemoAckBeforeCommitLoses(t *testing.T) {
	code, out, s := soakDemo(t, "--defect", "ack-before-commit", "--duration", "6s", "--concurrency", "32", "--nemesis", "kill=1s,pg-terminate=700ms", "--seed", "12")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	if s.Lost == 0 || len(s.LostKeys) == 0 {
		t.Fatalf("no key lost:\n%s", out)
	}
	if !strings.Contains(out, "lost: acknowledged, never stored") || !soakKey.MatchString(out) || !strings.Contains(out, "--seed 12") {
		t.Errorf("output does not name the lost keys and the seed:\n%s", out)
	}
}

// Check-then-insert stores both of two concurrent copies; the soak names the
// duplicated keys and exits 1.
func TestSoakDemoCheckThenInsertDuplicates(t *testing.T) {
	code, out, s := soakDemo(t, "--defect", "check-then-insert", "--duration", "5s", "--rate", "200", "--dup-rate", "0.3", "--seed", "13")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	if s.Duplicated == 0 || len(s.DuplicatedKeys) == 0 || len(s.DuplicatedKeys) > 20 {
		t.Fatalf("duplicated %d, keys listed %d:\n%s", s.Duplicated, len(s.DuplicatedKeys), out)
	}
	if !strings.Contains(out, "duplicated: more than one row or effect") || !soakKey.MatchString(out) {
		t.Errorf("output does not name the duplicated keys:\n%s", out)
	}
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
