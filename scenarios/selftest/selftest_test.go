// Package selftest holds the harness's test of itself: the suite runs against the
// clean reference receiver (everything applicable passes) and against the
// reference started with each defect (exactly the guarantees that defect breaks
// fail, with evidence). A check that no defect makes fail has not been shown to
// test anything.
package selftest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// parallelRuns is how many demo runs go at once (the machine has 2 cores).
const parallelRuns = 2

type run struct {
	defect string // "" = clean
	code   int
	res    *reports.Results
	out    string
	dur    time.Duration
}

func TestSuiteAgainstEveryDefect(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the self-test runs the whole suite once per defect")
	}
	bin := filepath.Join(t.TempDir(), "hookcert")
	build := exec.Command("go", "build", "-o", bin, "github.com/hookcert/hookcert/cmd/hookcert")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	server := pgtest.ServerURL()
	expected := scenarios.ExpectedFailures()
	possible := scenarios.PossibleFailures()

	defects := []string{""}
	for _, d := range reference.Defects() {
		defects = append(defects, d.Name)
		if _, ok := expected[d.Name]; !ok {
			t.Errorf("defect %s is in no guarantee's BrokenBy: no check is shown to catch it", d.Name)
		}
	}
	for d := range expected {
		if !contains(defects, d) {
			t.Errorf("the catalogue names defect %s, which the reference does not have", d)
		}
	}

	runs := make([]*run, len(defects))
	sem := make(chan struct{}, parallelRuns)
	var wg sync.WaitGroup
	for i, d := range defects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			runs[i] = demo(t, bin, server, d, int64(1000+i))
		}()
	}
	wg.Wait()

	all := scenarios.Catalogue()
	for _, r := range runs {
		name := r.defect
		if name == "" {
			name = "clean reference"
		}
		if r.res == nil {
			t.Errorf("%s: no results (exit %d):\n%s", name, r.code, tail(r.out, 40))
			continue
		}
		failed := map[string]bool{}
		for _, g := range r.res.Guarantees {
			switch g.Status {
			case reports.StatusFailed:
				failed[g.ID] = true
				if len(g.Evidence) == 0 {
					t.Errorf("%s: %s failed without evidence", name, g.ID)
				}
			case reports.StatusError, reports.StatusNotApplicable:
				t.Errorf("%s: %s is %s (%s); the reference declares every capability", name, g.ID, g.Status, g.Reason)
			}
		}
		if len(r.res.Guarantees) != len(all) {
			t.Errorf("%s: %d guarantees judged, want %d", name, len(r.res.Guarantees), len(all))
		}
		want, may := map[string]bool{}, map[string]bool{}
		for _, id := range expected[r.defect] {
			want[id] = true
		}
		for _, id := range possible[r.defect] {
			may[id] = true
		}
		for _, g := range all {
			switch {
			case want[g.ID] && !failed[g.ID]:
				t.Errorf("%s: %s passed, but this defect breaks it: the check missed the bug", name, g.ID)
			case !want[g.ID] && !may[g.ID] && failed[g.ID]:
				t.Errorf("%s: %s failed unexpectedly: %s", name, g.ID, reasonOf(r.res, g.ID))
			}
		}
		wantCode := 1
		if r.defect == "" {
			wantCode = 0
		}
		if r.code != wantCode {
			t.Errorf("%s: exit status %d, want %d", name, r.code, wantCode)
		}
	}
	t.Log("\n" + killMatrix(runs, all))
}

func demo(t *testing.T, bin, server, defect string, seed int64) *run {
	dir := t.TempDir()
	args := []string{"demo", "--database-url", server, "--report-dir", dir, "--seed", fmt.Sprint(seed)}
	if defect != "" {
		args = append(args, "--defect", defect)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	r := &run{defect: defect, out: out.String(), dur: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
		r.out += "\n" + err.Error()
	}
	if res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON)); err == nil {
		r.res = res
	}
	return r
}

// killMatrix prints defect × guarantee: X where the guarantee failed, . where it
// passed.
func killMatrix(runs []*run, all []scenarios.Guarantee) string {
	var b strings.Builder
	w := 22
	fmt.Fprintf(&b, "%-*s", w, "defect \\ guarantee")
	for _, g := range all {
		fmt.Fprintf(&b, " %-8s", g.ID)
	}
	b.WriteString("  wall\n")
	sorted := append([]*run(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].defect < sorted[j].defect })
	for _, r := range sorted {
		name := r.defect
		if name == "" {
			name = "(clean)"
		}
		fmt.Fprintf(&b, "%-*s", w, name)
		for _, g := range all {
			mark := "?"
			if r.res != nil {
				for _, rg := range r.res.Guarantees {
					if rg.ID == g.ID {
						mark = map[reports.Status]string{reports.StatusPassed: ".", reports.StatusFailed: "X", reports.StatusError: "E", reports.StatusNotApplicable: "-"}[rg.Status]
					}
				}
			}
			fmt.Fprintf(&b, " %-8s", mark)
		}
		fmt.Fprintf(&b, "  %s\n", r.dur.Round(100*time.Millisecond))
	}
	return b.String()
}

func reasonOf(res *reports.Results, id string) string {
	for _, g := range res.Guarantees {
		if g.ID == id {
			return g.Reason
		}
	}
	return ""
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
