package check_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/scenarios"
)

// proofs maps each deviation code to the broken cases that prove a checker
// reports it ("<table>/<case>"), from the tables themselves.
func proofs() map[string][]string {
	out := map[string][]string{}
	for _, tb := range tables {
		for _, c := range tb.cases {
			for _, code := range c.codes {
				out[code] = append(out[code], tb.label()+"/"+c.name)
			}
		}
	}
	return out
}

// Every documented deviation code, the reconciliation's included, is reported
// by at least one broken history; and no case claims a code nobody documents.
func TestEveryDeviationCodeIsProven(t *testing.T) {
	codes := scenarios.DeviationCodes()
	for _, code := range scenarios.ReconcileCodes {
		if _, ok := codes[code]; !ok {
			t.Errorf("reconciliation code %s is not among the deviation codes", code)
		}
	}
	proven := proofs()
	var missing []string
	for code := range codes {
		if len(proven[code]) == 0 {
			missing = append(missing, code)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no broken history reports %d code(s): %s", len(missing), strings.Join(missing, ", "))
	}
	for code, cases := range proven {
		if _, ok := codes[code]; !ok {
			t.Errorf("%v prove %s, which is no documented deviation code", cases, code)
		}
	}
	// The proof holds: the first case that claims each code reports it.
	for code, cases := range proven {
		tb, c := find(t, cases[0])
		if g := judge(t, tb.id, tb.history(c)); !slices.Contains(g.Codes, code) {
			t.Errorf("%s claims %s but reports %v", cases[0], code, g.Codes)
		}
	}
}

// Every guarantee has its table, with a broken history for every code its
// catalogue entry lists; every table judges a catalogued guarantee.
func TestEveryGuaranteeHasATable(t *testing.T) {
	own := map[string]*table{}
	for _, tb := range tables {
		if catalogued(tb.id).ID == "" {
			t.Errorf("table %s judges %s, which is not in the catalogue", tb.label(), tb.id)
		}
		if tb.name == "" {
			own[tb.id] = tb
		}
	}
	for _, g := range scenarios.Catalogue() {
		tb := own[g.ID]
		if tb == nil {
			t.Errorf("%s has no checker table", g.ID)
			continue
		}
		proven := map[string]bool{}
		errs := 0
		for _, c := range tb.cases {
			for _, code := range c.codes {
				proven[code] = true
			}
			if c.reason != "" {
				errs++
			}
		}
		for _, code := range g.Codes {
			if !proven[code] {
				t.Errorf("%s lists %s, which no broken history of its table reports", g.ID, code)
			}
		}
		if !slices.ContainsFunc(scenarios.ReconcileCodes, func(c string) bool { return proven[c] }) && tb.unreconciled == "" {
			t.Errorf("%s: no broken history reaches a reconciliation code", g.ID)
		}
		// A checker that needs a read must not pass without it.
		if errs == 0 {
			t.Errorf("%s: no case holds the checker to an error when a read it needs is missing", g.ID)
		}
	}
}

// An entry of undocumented is a finding: the checker reports a code its
// catalogue entry does not list. Once the catalogue (or the checker) is fixed,
// the entry must go.
func TestUndocumentedCodesAreStillUndocumented(t *testing.T) {
	for entry, why := range undocumented {
		id, code, _ := strings.Cut(entry, " ")
		if documented(id, code) {
			t.Errorf("%s now lists %s: remove the entry from undocumented (%s)", id, code, why)
		}
		reported := false
		for _, tb := range tables {
			if tb.id != id {
				continue
			}
			for _, c := range tb.cases {
				if slices.Contains(want(c), code) {
					reported = true
				}
			}
		}
		if !reported {
			t.Errorf("no case of %s reports %s: the entry of undocumented is stale", id, code)
		}
	}
}

// find returns the table and case named "<table>/<case>".
func find(t *testing.T, name string) (*table, tcase) {
	t.Helper()
	label, cname, _ := strings.Cut(name, "/")
	for _, tb := range tables {
		if tb.label() != label {
			continue
		}
		for _, c := range tb.cases {
			if c.name == cname {
				return tb, c
			}
		}
	}
	t.Fatalf("no case %s", name)
	return nil, tcase{}
}
