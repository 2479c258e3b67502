package scenarios

import "testing"

// Every guarantee declares what it reads (docs/guarantees.md prints it; the
// self-test's TestDefects holds it to its clean runs' histories).
func TestEveryGuaranteeDeclaresItsReads(t *testing.T) {
	for _, g := range Catalogue() {
		if g.Reads == nil {
			t.Errorf("%s: no Reads: declare the target's queries its scenario reads (Reads: []Read{} for none)", g.ID)
		}
		seen := map[string]bool{}
		for _, r := range g.Reads {
			if seen[r.Query] {
				t.Errorf("%s: %s declared twice", g.ID, r.Query)
			}
			seen[r.Query] = true
			if r.Tells == "" || len(r.Binds) == 0 {
				t.Errorf("%s: read of %s says nothing of what it reads, or binds nothing", g.ID, r.Query)
			}
		}
	}
	for _, r := range append(append([]Read(nil), ReconcileReads...), QuiesceReads...) {
		if r.Tells == "" || len(r.Binds) == 0 {
			t.Errorf("common read of %s says nothing of what it reads, or binds nothing", r.Query)
		}
	}
}
