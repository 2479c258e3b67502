package scenarios

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
)

// A receiver without an event ledger gets not_applicable, naming its style,
// for every guarantee that counts event rows, and only for those.
func TestLedgerlessNotApplicable(t *testing.T) {
	ledger := &Env{}
	objects := &Env{Idempotency: idempotencyObjectVersion}
	both := &Env{Idempotency: idempotencyBoth}
	var counted int
	for _, g := range Catalogue() {
		rows := false
		for _, r := range g.Reads {
			rows = rows || r.Query == queryEventRows
		}
		why := objects.ledgerReason(&g)
		if rows != (why != "") {
			t.Errorf("%s: reads event_rows %v, ledgerless reason %q", g.ID, rows, why)
		}
		if rows {
			counted++
			if !strings.Contains(why, "target.idempotency is object-version") || !strings.Contains(why, g.ID) {
				t.Errorf("%s: reason %q names neither the style nor the guarantee", g.ID, why)
			}
		}
		if ledger.ledgerReason(&g) != "" || both.ledgerReason(&g) != "" {
			t.Errorf("%s: not applicable to a receiver with an event ledger", g.ID)
		}
	}
	if counted == 0 {
		t.Fatal("no guarantee reads event_rows: the test judges nothing")
	}
}

// What an acknowledged ordered event needs to be visible or superseded.
func TestVisible(t *testing.T) {
	row := func(v int64) history.Observation { return history.Observation{Found: true, Version: v} }
	none := history.Observation{}
	for _, c := range []struct {
		name    string
		ev      orderedKey
		o       history.Observation
		deletes []int64
		want    bool
	}{
		{"the update's key", orderedKey{key: 3}, row(3), nil, true},
		{"a newer key", orderedKey{key: 2}, row(3), nil, true},
		{"an older key", orderedKey{key: 3}, row(2), nil, false},
		{"no row, no deletion", orderedKey{key: 3}, none, nil, false},
		{"no row, an older deletion", orderedKey{key: 3}, none, []int64{2}, false},
		{"no row, a newer deletion", orderedKey{key: 2}, none, []int64{3}, true},
		{"a deletion as no row", orderedKey{key: 3, delete: true}, none, nil, true},
		{"a deletion as its tombstone", orderedKey{key: 3, delete: true}, row(3), nil, true},
		{"a deletion undone by an older update", orderedKey{key: 3, delete: true}, row(2), nil, false},
	} {
		if got := visible(c.ev, c.o, c.deletes); got != c.want {
			t.Errorf("%s: visible = %v, want %v", c.name, got, c.want)
		}
	}
	for _, s := range []string{"sub_1 3", "sub_1 3 delete"} {
		if k, ok := parseOrderedKey(s); !ok || k.String() != s {
			t.Errorf("parseOrderedKey(%q) = %v, %v", s, k, ok)
		}
	}
	for _, s := range []string{"", "sub_1", "sub_1 x", "sub_1 3 gone"} {
		if _, ok := parseOrderedKey(s); ok {
			t.Errorf("parseOrderedKey(%q) accepted", s)
		}
	}
}
