package selftest

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/scenarios"
)

// The phases of the reads the harness makes around every scenario
// (docs/history.md).
const (
	phaseReconcile = "reconcile"
	phaseQuiesce   = "quiesce"
)

// Every read of the receiver's state in the histories of the clean reference's
// full runs in both designs (TestDefects' clean and clean-inbox: between them
// every guarantee runs) is held to the Reads each guarantee declares, which
// docs/guarantees.md prints: a read no declaration names, a parameter bound
// that the declaration does not list, a declared read no scenario made and a
// declared parameter never bound all fail (TestDefects adds each history and
// completes the check once both have run).

// readsSeen gathers what histories of clean runs read, to hold it to the
// declared reads.
type readsSeen struct {
	declared map[string][]scenarios.Read // guarantee ID → its reads
	// ran: guarantees whose scenario ran; issued: guarantee → query → read;
	// bound: query → parameter → bound in some read.
	ran    map[string]bool
	issued map[string]map[string]bool
	bound  map[string]map[int]bool
}

func newReadsSeen() *readsSeen {
	rs := &readsSeen{declared: map[string][]scenarios.Read{}, ran: map[string]bool{},
		issued: map[string]map[string]bool{}, bound: map[string]map[int]bool{}}
	for _, g := range scenarios.Catalogue() {
		rs.declared[g.ID] = g.Reads
	}
	return rs
}

// add checks every read of one history against the declarations and
// records it; a mismatch is reported once, with how many reads showed it.
func (rs *readsSeen) add(t *testing.T, label string, h *history.History) {
	t.Helper()
	guarantee := map[int]string{}
	for _, sc := range h.Scenarios {
		guarantee[sc.Index] = sc.Guarantee
		if sc.State == history.ScenarioRan {
			rs.ran[sc.Guarantee] = true
		}
	}
	var problems []string
	times := map[string]int{}
	problem := func(format string, args ...any) {
		p := fmt.Sprintf(format, args...)
		if times[p]++; times[p] == 1 {
			problems = append(problems, p)
		}
	}
	for _, o := range h.Observations {
		g := guarantee[o.Scenario]
		decl, owner := rs.declared[g], g
		switch o.Phase {
		case phaseQuiesce:
			decl, owner = scenarios.QuiesceReads, "the harness between scenarios"
		case phaseReconcile:
			decl, owner = scenarios.ReconcileReads, "the reconciliation"
		}
		i := slices.IndexFunc(decl, func(r scenarios.Read) bool { return r.Query == o.Query })
		if i < 0 {
			problem("%s read %s (phase %q), which is not declared: add it to the guarantee's Reads", owner, o.Query, o.Phase)
			continue
		}
		for _, n := range boundParams(o) {
			if !slices.Contains(decl[i].Binds, n) {
				problem("%s read %s with $%d bound, which its declared binds %v do not list", owner, o.Query, n, decl[i].Binds)
			}
			if rs.bound[o.Query] == nil {
				rs.bound[o.Query] = map[int]bool{}
			}
			rs.bound[o.Query][n] = true
		}
		if o.Phase != phaseQuiesce && o.Phase != phaseReconcile {
			if rs.issued[g] == nil {
				rs.issued[g] = map[string]bool{}
			}
			rs.issued[g][o.Query] = true
		}
	}
	for _, p := range problems {
		t.Errorf("%s: %s (%d read(s))", label, p, times[p])
	}
}

// complete checks, once every history is in, that every guarantee ran and
// made each read it declares, and that each parameter declared bound was.
func (rs *readsSeen) complete(t *testing.T) {
	t.Helper()
	binds := map[string][]int{}
	for _, g := range scenarios.Catalogue() {
		if _, ok := notOnReference[g.ID]; ok && !rs.ran[g.ID] {
			t.Logf("%s does not run against the reference: %s", g.ID, notOnReference[g.ID])
			continue
		}
		for _, r := range g.Reads {
			binds[r.Query] = r.Binds
		}
		if !rs.ran[g.ID] {
			t.Errorf("%s did not run in any clean run: its declared reads are not shown", g.ID)
			continue
		}
		for _, r := range g.Reads {
			if !rs.issued[g.ID][r.Query] {
				t.Errorf("%s declares a read of %s that its scenario never made", g.ID, r.Query)
			}
		}
	}
	for _, q := range slices.Sorted(maps.Keys(binds)) {
		for _, n := range binds[q] {
			if !rs.bound[q][n] {
				t.Errorf("%s is declared to bind $%d, which no read of it bound", q, n)
			}
		}
	}
}

// boundParams are the parameters ($n) a read bound: those with a value.
func boundParams(o history.Observation) []int {
	var out []int
	for i, p := range o.Params {
		if p != "" {
			out = append(out, i+1)
		}
	}
	return out
}
