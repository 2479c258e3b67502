package scenarios

import (
	"fmt"
	"sort"
	"strings"
)

// families is the catalogue: every guarantee family in report order, each
// listing its guarantees in its own file (dedup.go, atomic.go, …). Adding a
// guarantee is adding its value to its family's list; a new family is one
// file and one line here.
var families = []family{dedupFamily, atomicFamily, ackFamily, orderFamily, retentionFamily, inboxFamily, outboxFamily, refetchFamily}

// catalogue is every guarantee in report order, as assembled from families.
var catalogue = assemble(families)

// Families names the guarantee families in report order.
var Families = familyNames()

func familyNames() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.Name
	}
	return out
}

// Catalogue returns every guarantee in report order.
func Catalogue() []Guarantee {
	out := make([]Guarantee, len(catalogue))
	copy(out, catalogue)
	return out
}

// Lookup finds a guarantee by ID (case-insensitive).
func Lookup(id string) (Guarantee, error) {
	for _, g := range catalogue {
		if strings.EqualFold(g.ID, id) {
			return g, nil
		}
	}
	ids := make([]string, len(catalogue))
	for i, g := range catalogue {
		ids[i] = g.ID
	}
	return Guarantee{}, fmt.Errorf("unknown guarantee %q (valid: %s)", id, strings.Join(ids, ", "))
}

// ReconcileCodes are the reconciliation's deviation codes: every scenario can
// report them.
var ReconcileCodes = codeIDs(reconcileCodes)

func codeIDs(cs []Code) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// DeviationCodes returns every deviation code with its meaning.
func DeviationCodes() map[string]string {
	out := map[string]string{}
	for _, c := range reconcileCodes {
		out[c.ID] = c.Meaning
	}
	for _, g := range catalogue {
		for _, c := range g.codes {
			out[c.ID] = c.Meaning
		}
	}
	return out
}

// sortedCodes lists every deviation code, sorted by ID.
func sortedCodes() []Code {
	m := DeviationCodes()
	out := make([]Code, 0, len(m))
	for id, meaning := range m {
		out = append(out, Code{ID: id, Meaning: meaning})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
