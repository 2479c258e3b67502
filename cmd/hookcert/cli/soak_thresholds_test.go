package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/reports"
)

// A threshold the reference cannot meet (p99 under a microsecond) breaches
// on a real soak: exit 6, the verdict in the console, results.json and
// soak.html, judged on the measure phase only; check --from re-judges it
// from the thresholds stored in the history's meta alike.
func TestSoakThresholdBreachExits6(t *testing.T) {
	besideOthers(t)
	dir := t.TempDir()
	code, out, s := soakDemoIn(t, dir, "--duration", "2s", "--warmup", "1s", "--drain", "1s", "--concurrency", "8",
		"--threshold", "p99<1us", "--threshold", "rate>1/s", "--seed", "21")
	if code != ExitThreshold {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitThreshold, out)
	}
	if s.Lost != 0 || s.Duplicated != 0 || s.Passed || s.Breached() != 1 || len(s.Thresholds) != 2 {
		t.Fatalf("lost %d, duplicated %d, passed %v, thresholds %+v:\n%s", s.Lost, s.Duplicated, s.Passed, s.Thresholds, out)
	}
	if th := s.Thresholds[0]; th.Verdict != reports.ThresholdFail || th.Measured <= 0.001 || th.Limit != 0.001 || th.Unit != "ms" {
		t.Errorf("p99<1us: %+v", th)
	}
	if th := s.Thresholds[1]; th.Verdict != reports.ThresholdPass {
		t.Errorf("rate>1/s: %+v", th)
	}
	var names []string
	for _, p := range s.Phases {
		names = append(names, p.Name)
	}
	if !strings.HasPrefix(strings.Join(names, " "), "warmup measure drain") || s.Measure == nil || s.Measure.StartMS != 1000 || s.Measure.EndMS != 3000 {
		t.Errorf("phases %+v, measure %+v", s.Phases, s.Measure)
	}
	if s.Options.Warmup != "1s" || s.Options.Drain != "1s" || s.Options.Duration != "2s" {
		t.Errorf("options %+v", s.Options)
	}
	for _, want := range []string{"FAIL p99<1us: measured", "PASS rate>1/s", "breached 1 of 2 thresholds", "--warmup 1s --drain 1s --threshold 'p99<1us'"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, reports.FileSoakHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 threshold breached", "<code>p99&lt;1us</code>", "warmup phase 0.0s–1.0s"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("soak.html lacks %q", want)
		}
	}
	rejudge(t, dir, code, s)
}

// Generous thresholds from a spec file pass (exit 0); a flag given on the
// command line overrides the spec's key.
func TestSoakThresholdsFromSpecPass(t *testing.T) {
	besideOthers(t)
	spec := filepath.Join(t.TempDir(), "soak.yaml")
	if err := os.WriteFile(spec, []byte("duration: 30s\nconcurrency: 4\nthresholds:\n  - p99<30s\n  - failed<50%\n  - ack_rate>1/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, s := soakDemo(t, "--spec", spec, "--duration", "2s", "--seed", "22")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if !s.Passed || len(s.Thresholds) != 3 || s.Options.Duration != "2s" || s.Options.Concurrency != 4 {
		t.Errorf("passed %v, thresholds %+v, options %+v", s.Passed, s.Thresholds, s.Options)
	}
	for _, th := range s.Thresholds {
		if th.Verdict != reports.ThresholdPass {
			t.Errorf("%s: %s %s", th.Threshold, th.Verdict, th.Reason)
		}
	}
}

// Lost or duplicated events (1) win over a breach (6), which wins over what
// could not be judged (5).
func TestSoakExitOrder(t *testing.T) {
	breach := []reports.SoakThreshold{{Threshold: "p99<1ms", Verdict: reports.ThresholdFail, Measured: 3, Unit: "ms"}}
	unjudged := []reports.SoakThreshold{{Threshold: "p99<1ms", Verdict: reports.ThresholdError, Reason: "no attempt was acknowledged"}}
	for _, c := range []struct {
		s      reports.Soak
		runErr string
		want   int
	}{
		{reports.Soak{Keys: 5, Passed: true}, "", ExitOK},
		{reports.Soak{Keys: 5, Lost: 1, Thresholds: breach}, "", ExitFailed},
		{reports.Soak{Keys: 5, Duplicated: 1, Thresholds: breach}, "interrupted", ExitFailed},
		{reports.Soak{Keys: 5, Thresholds: breach}, "", ExitThreshold},
		{reports.Soak{Keys: 5, Thresholds: breach, Unjudged: 2}, "interrupted", ExitThreshold},
		{reports.Soak{Keys: 5, Thresholds: unjudged}, "", ExitUnjudged},
		{reports.Soak{Keys: 5, Unjudged: 1}, "", ExitUnjudged},
	} {
		err := soakExit(&c.s, c.runErr, 1)
		got := ExitOK
		var ee *ExitError
		if errors.As(err, &ee) {
			got = ee.Code
		}
		if got != c.want {
			t.Errorf("%+v %q: exit %d (%v), want %d", c.s, c.runErr, got, err, c.want)
		}
	}
}

// Bad thresholds, phases and spec files are usage errors naming the flag or
// the file's line, before anything starts.
func TestSoakThresholdUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "soak.yaml")
	if err := os.WriteFile(bad, []byte("duration: 5s\nthreshold:\n  - p99<1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--threshold", "p99<250"}, `--threshold "p99<250": p99: value "250" is not a duration`},
		{[]string{"--threshold", "p99=250ms"}, `comparator "="`},
		{[]string{"--threshold", "lat<1s"}, `unknown metric "lat"`},
		{[]string{"--warmup", "-1s"}, "--warmup must not be negative"},
		{[]string{"--spec", bad}, `soak.yaml:2: unknown key "threshold"`},
		{[]string{"--spec", bad + ".missing"}, "--spec: open"},
	} {
		code, out := runChild(t, append([]string{"soak", "--demo"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(out, c.says) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", c.args, code, ExitUsage, c.says, out)
		}
	}
}
