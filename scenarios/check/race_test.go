package check_test

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
)

// A guarantee that sends a race reports whether it was forced, from the
// history's gate lines and the scenario's facts alone, the same after a
// round trip through JSON Lines (hookcert check --from).
func TestRaceIsReportedFromTheHistory(t *testing.T) {
	k := key("evt_1")
	base := func() *rec {
		return scenario("DEDUP-1").
			send("copy", k, typeCredit, copyNo(0)).
			send("copy", k, typeCredit, copyNo(1)).
			state("after", 1, k).reconciled(k)
	}
	for _, c := range []struct {
		name   string
		h      *history.History
		forced bool
		how    []string
	}{
		{"held two of two at the lock", base().gate("events", 2, 2, 0).done(), true,
			[]string{"gate on events held 2 of 2 racers"}},
		{"one at the lock, one behind it on a row lock", base().gate("events", 2, 1, 1).done(), true,
			[]string{"held 2 of 2 racers (1 at the lock, 1 behind it)"}},
		{"a pool smaller than the copies: two suffice", base().gate("events", 16, 10, 0).done(), true,
			[]string{"held 10 of 16"}},
		{"held one: the other never met it", base().gate("events", 2, 1, 0).done(), false,
			[]string{"not forced", "held 1 of 2", "left to meet by timing"}},
		{"one gate of two held one", base().gate("events", 2, 2, 0).gate("events", 2, 1, 0).done(), false,
			[]string{"not forced", "held 2 of 2", "held 1 of 2"}},
		{"the same gate twice is folded", base().gate("events", 2, 2, 0).gate("events", 2, 2, 0).done(), true,
			[]string{"(×2)"}},
		{"no lock gate: left to timing", base().fact("unforced", "no lock gate (the target does not declare lock-gating)").done(), false,
			[]string{"left to timing: no lock gate (the target does not declare lock-gating)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, h := range []*history.History{c.h, roundTrip(t, c.h)} {
				r := judge(t, "DEDUP-1", h).Race
				if r == nil || r.Forced != c.forced {
					t.Fatalf("race = %+v, want forced %v", r, c.forced)
				}
				for _, w := range c.how {
					if !strings.Contains(r.How, w) {
						t.Errorf("race how %q lacks %q", r.How, w)
					}
				}
			}
		})
	}
}

// Every delivery refused before the table: nothing raced, and the report says
// so rather than claim a forced race.
func TestRaceOfRefusedDeliveriesIsNotForced(t *testing.T) {
	k := key("evt_1")
	h := scenario("DEDUP-1").send("copy", k, typeCredit, refused(401)).state("after", 0, k).done()
	h.Gates = []history.Gate{{Scenario: 1, Table: "events", Racers: 16, Refused: true}}
	r := judge(t, "DEDUP-1", h).Race
	if r == nil || r.Forced || !strings.Contains(r.How, "refused") {
		t.Fatalf("race = %+v, want not forced, refused", r)
	}
}

// A guarantee that sends no race has none in its report, gates or not.
func TestNoRaceForAGuaranteeThatSendsNone(t *testing.T) {
	k := key("evt_1")
	h := scenario("DEDUP-3").send("first", k, typeCredit).gate("events", 1, 1, 0).done()
	if r := judge(t, "DEDUP-3", h).Race; r != nil {
		t.Fatalf("race = %+v, want none", r)
	}
}
