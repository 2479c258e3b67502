package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/scenarios"
)

// Schedule is what a run did for one guarantee, stripped of what names the
// run: every delivery attempt it made (role, event ID without the run's
// namespace, type, attempt, copy, faults) and every lock gate it held. Two
// runs with the same seed make the same deliveries; a repro replays the
// failing run's schedule when it makes them again and forces every race the
// failing run forced.
type Schedule struct {
	Guarantee  string
	Deliveries []string
	Gates      []history.Gate
}

// ScheduleOf reads the schedule of guarantee id from h. It is an error when
// h holds no scenario of id.
func ScheduleOf(h *history.History, id string) (Schedule, error) {
	sc := Schedule{Guarantee: id}
	of := map[int]bool{}
	for _, s := range h.Scenarios {
		if s.Guarantee == id {
			of[s.Index] = true
		}
	}
	if len(of) == 0 {
		return sc, fmt.Errorf("the history of run %s holds no scenario of %s", h.Meta.RunID, id)
	}
	ns := scenarios.Namespace(h.Meta.RunID)
	for _, a := range h.Attempts {
		if of[a.Scenario] {
			id := strings.ReplaceAll(a.Key.EventID, ns, "")
			sc.Deliveries = append(sc.Deliveries, fmt.Sprintf("%s %s %s #%d.%d %s", a.Role, id, a.EventType, a.Attempt, a.Copy, strings.Join(a.Faults, ",")))
		}
	}
	// Concurrent deliveries are recorded in the order they ended: compare
	// them as a set.
	slices.Sort(sc.Deliveries)
	for _, g := range h.Gates {
		if of[g.Scenario] {
			sc.Gates = append(sc.Gates, g)
		}
	}
	return sc, nil
}

// Replays lists how replay departs from the failing run's schedule s: a
// delivery made by one and not the other, a lock gate missing, or a race s
// forced that replay did not. None: replay made the same deliveries and
// forced every race s forced.
func (s Schedule) Replays(replay Schedule) []string {
	var diffs []string
	missing, extra := multisetDiff(s.Deliveries, replay.Deliveries)
	for _, d := range missing {
		diffs = append(diffs, "not delivered again: "+d)
	}
	for _, d := range extra {
		diffs = append(diffs, "delivered only in the replay: "+d)
	}
	if len(replay.Gates) < len(s.Gates) {
		diffs = append(diffs, fmt.Sprintf("%d lock gate(s) in the failing run, %d in the replay", len(s.Gates), len(replay.Gates)))
	}
	for i, g := range s.Gates {
		if i >= len(replay.Gates) {
			break
		}
		r := replay.Gates[i]
		switch {
		case r.Table != g.Table:
			diffs = append(diffs, fmt.Sprintf("lock gate %d: on %s in the failing run, on %s in the replay", i+1, g.Table, r.Table))
		case g.Held() >= 2 && r.Held() < 2:
			diffs = append(diffs, fmt.Sprintf("lock gate %d on %s: held %d of %d racers in the failing run, only %d in the replay: the race was not forced again", i+1, g.Table, g.Held(), g.Racers, r.Held()))
		}
	}
	return diffs
}

// Describe says in one line what the schedule holds.
func (s Schedule) Describe() string {
	d := fmt.Sprintf("%d delivery attempt(s)", len(s.Deliveries))
	if len(s.Gates) > 0 {
		var held []string
		for _, g := range s.Gates {
			held = append(held, describeGate(g))
		}
		d += "; lock " + strings.Join(dedupe(held), "; ")
	}
	return d
}

// multisetDiff returns the elements of a missing from b and those of b
// missing from a, counting repeats; both sorted.
func multisetDiff(a, b []string) (missing, extra []string) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			i++
			j++
		case a[i] < b[j]:
			missing = append(missing, a[i])
			i++
		default:
			extra = append(extra, b[j])
			j++
		}
	}
	return append(missing, a[i:]...), append(extra, b[j:]...)
}
