package selftest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// The seed is the run: two runs with one seed send the same deliveries — the same
// scenarios in the same order, the same events (IDs compared without the run's
// namespace), attempts, copies and faults.
func TestSameSeedSameDeliveries(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: runs the demo twice")
	}
	bin := build(t)
	server := pgtest.ServerURL()
	seed := int64(4242)
	var got [2]string
	var hs [2]*history.History
	for i := range got {
		r := &run{seed: seed}
		dir := demo(t, bin, server, r)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i+1, r.code, tail(r.out, 30))
		}
		hs[i] = readHistory(t, dir)
		got[i] = deliveries(hs[i])
	}
	if hs[0].Meta.RunID == hs[1].Meta.RunID {
		t.Fatalf("both runs have run ID %s: the comparison would not show the namespace is stripped", hs[0].Meta.RunID)
	}
	if got[0] != got[1] {
		a, b := strings.Split(got[0], "\n"), strings.Split(got[1], "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("seed %d sent different deliveries; first difference at line %d:\n  run 1: %s\n  run 2: %s", seed, i+1, a[i], b[i])
			}
		}
		t.Fatalf("seed %d sent %d and %d deliveries", seed, len(a), len(b))
	}
	if n := strings.Count(got[0], "\n"); n < 150 {
		t.Fatalf("only %d deliveries compared; the demo sends about two hundred", n)
	}
	// `repro ID --seed N` runs one guarantee alone: its scenario sends what it sent
	// in the full run.
	r1 := &run{seed: seed}
	one := deliveries(readHistory(t, demo(t, bin, server, r1, "--label-filter", "ORDER-2")))
	if want := only(got[0], "ORDER-2"); strings.TrimPrefix(one, "scenario 1 ORDER-2\n") != want || want == "" {
		t.Fatalf("ORDER-2 alone sent other deliveries than in the full run:\n%s\nvs\n%s", one, want)
	}
	// A different seed must send different deliveries, or the test shows nothing.
	r := &run{seed: seed + 1}
	other := deliveries(readHistory(t, demo(t, bin, server, r)))
	if other == got[0] {
		t.Fatal("seeds 4242 and 4243 sent the same deliveries: the seed does not reach them")
	}
}

// deliveries renders a history's deliveries without the run's namespace: per
// scenario in run order, its attempts sorted (concurrent ones start in any order).
func deliveries(h *history.History) string {
	ns := scenarios.Namespace(h.Meta.RunID)
	var b strings.Builder
	for _, sc := range h.Scenarios {
		var lines []string
		for _, a := range h.Attempts {
			if a.Scenario != sc.Index {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s %s/%s/%s %s attempt=%d copy=%d step=%d faults=%v",
				sc.Guarantee, a.Role, a.Key.Source, a.Key.Account, strings.ReplaceAll(a.Key.EventID, ns, "NS"), a.EventType,
				a.Attempt, a.Copy, a.Step, a.Faults))
		}
		sort.Strings(lines)
		fmt.Fprintf(&b, "scenario %d %s\n", sc.Index, sc.Guarantee)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// only keeps the attempt lines of one guarantee.
func only(deliveries, id string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(deliveries, "\n") {
		if strings.HasPrefix(l, id+" ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func readHistory(t *testing.T, dir string) *history.History {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// `hookcert check --from DIR` re-judges a stored run from history.jsonl alone and
// writes the same results.json, for a passing run and a failing one.
func TestCheckReproducesResults(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	bin := build(t)
	server := pgtest.ServerURL()
	for _, defect := range []string{"", "check-then-insert"} {
		r := &run{seed: 77}
		var extra []string
		if defect != "" {
			extra = []string{"--defect", defect}
		}
		dir := demo(t, bin, server, r, extra...)
		if r.res == nil {
			t.Fatalf("defect %q: no results (exit %d)\n%s", defect, r.code, tail(r.out, 30))
		}
		out := t.TempDir()
		c := exec.Command(bin, "check", "--from", dir, "--out", out)
		cout, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != r.code {
			t.Errorf("defect %q: check exited %d, certify %d\n%s", defect, code, r.code, cout)
		}
		a, _ := os.ReadFile(filepath.Join(dir, reports.FileJSON))
		b, err := os.ReadFile(filepath.Join(out, reports.FileJSON))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("defect %q: results.json from check --from differs from certify's (%d vs %d bytes)", defect, len(a), len(b))
		}
	}
}
