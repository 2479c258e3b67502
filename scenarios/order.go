package scenarios

import (
	"fmt"
	"strings"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// versionsORDER2 and dupsORDER2 shape ORDER-2's stream: every version of one
// object, each delivered this many times, in an order drawn from the seed.
const (
	versionsORDER2 = 8
	dupsORDER2     = 2
)

// Phases, roles and facts the ORDER checkers read.
const (
	PhaseFinal = "final"

	RoleUpdate = "update"
	RoleStream = "stream"
	RoleLate   = "late"

	FactWantVersion = "want_version"
)

func init() {
	register("ORDER-1", "an older update arriving late does not regress the object", func(s *session) {
		ep := s.primary()
		sub := s.newID("sub")
		for _, v := range []int64{1, 3, 2} {
			ev := s.event(ep, typeSubUpdated, sub)
			ev.Version = v
			ev.Status = fmt.Sprintf("v%d", v)
			s.send(ep, ev, RoleUpdate, simulator.SendOptions{})
		}
		s.fact(FactWantVersion, 3)
		s.object(ep, sub, PhaseFinal)
	})

	register("ORDER-2", "a shuffled, duplicated stream ends at the newest version", func(s *session) {
		ep := s.primary()
		sub := s.newID("sub")
		spec := simulator.ShuffledVersions(versionsORDER2, dupsORDER2, 0, s.rng)
		half := len(spec) / 2
		pairInFirstHalf(spec, half)
		stream := make([]profiles.Event, len(spec))
		order := make([]string, len(spec))
		byVersion := map[int64]profiles.Event{}
		for i, v := range spec {
			ev, ok := byVersion[v]
			if !ok {
				ev = s.event(ep, typeSubUpdated, sub)
				ev.Version = v
				ev.Status = fmt.Sprintf("v%d", v)
				byVersion[v] = ev
			}
			stream[i] = ev
			order[i] = fmt.Sprint(v)
		}
		s.note("delivery order (seeded): %s", strings.Join(order, " "))
		// Half at once, then the rest at once: concurrency and lateness together.
		// Where the target allows it, each half is lock-gated, so the copies of one
		// version in the same half race for certain.
		for _, part := range [][]profiles.Event{stream[:half], stream[half:]} {
			fire := func() { s.parallel(ep, part, RoleStream, simulator.SendOptions{}) }
			if ok, _ := s.env.has("lock-gating"); ok {
				s.gate(s.env.EventTable, len(part), fire)
			} else {
				fire()
			}
		}
		// Then, as a manual resend or a slow retry would, an old version resent
		// (a duplicate: nothing may change) and an older update's event arriving
		// only now (a new event ID: it must not regress the object either).
		// Whatever the interleaving above, the stream ends with stale updates.
		resend := stream[0]
		for _, ev := range stream {
			if ev.Version < resend.Version {
				resend = ev
			}
		}
		s.send(ep, resend, RoleLate, simulator.SendOptions{Attempt: 2})
		late := s.event(ep, typeSubUpdated, sub)
		s.mu.Lock()
		late.Version = 1 + int64(s.rng.IntN(versionsORDER2-1))
		s.mu.Unlock()
		late.Status = fmt.Sprintf("v%d", late.Version)
		s.send(ep, late, RoleLate, simulator.SendOptions{})
		s.note("version %d resent last, then version %d under a new event ID", resend.Version, late.Version)
		s.fact(FactWantVersion, versionsORDER2)
		s.object(ep, sub, PhaseFinal)
	})

	register("ORDER-3", "a forbidden state transition is refused", func(s *session) {
		ep := s.primary()
		pay := s.newID("pi")
		var amount int64
		for _, typ := range []string{typePayCreated, typePaySucceeded, typeRefunded} {
			ev := s.event(ep, typ, pay)
			if amount == 0 {
				amount = ev.Amount
			}
			ev.Amount = amount
			s.send(ep, ev, RoleSetup, simulator.SendOptions{})
		}
		// A late succeeded event (another event ID, as providers emit) arrives after
		// the refund: acknowledging it is right, applying it is not.
		late := s.event(ep, typePaySucceeded, pay)
		late.Amount = amount
		a := s.send(ep, late, RoleLate, simulator.SendOptions{})
		if a.Status >= 500 || a.Status == 0 {
			s.note("late succeeded event answered %s (the provider will retry it)", Describe(a))
		}
		s.payment(ep, pay, PhaseFinal)
		s.objectEffects(ep.source(), ep.Account, pay, PhaseFinal)
	})
}

// pairInFirstHalf makes sure both copies of at least one version are delivered
// together in the first half, so every run has a concurrent duplicate, whatever
// the seed drew: a swap moves the first half's first version's other copy in.
func pairInFirstHalf(order []int64, half int) {
	seen := map[int64]bool{}
	for _, v := range order[:half] {
		if seen[v] {
			return
		}
		seen[v] = true
	}
	for j := half; j < len(order); j++ {
		if order[j] == order[0] {
			order[1], order[j] = order[j], order[1]
			return
		}
	}
}
