package scenarios

import (
	"bytes"
	"time"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// copiesDEDUP1 is how many copies of one delivery DEDUP-1 releases together.
const copiesDEDUP1 = 16

// Phases and roles the DEDUP checkers read.
const (
	PhaseAfter      = "after"
	PhaseAfterFirst = "after-first"
	PhaseSequential = "sequential"
	PhaseConcurrent = "concurrent"

	RoleCopy       = "copy"
	RoleFirst      = "first"
	RoleRedelivery = "redelivery"
	RoleResend     = "resend"
	RoleOtherScope = "other-scope"
	RoleSetup      = "setup"
)

func init() {
	register("DEDUP-1", "concurrent copies converge on one row and one effect, all acknowledged", func(s *session) {
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)
		var rel simulator.ReleaseRecord
		fire := func() { _, rel = s.copies(ep, ev, copiesDEDUP1, RoleCopy, simulator.SendOptions{}) }
		if ok, _ := s.env.has("lock-gating"); ok {
			// Every copy reaches the table before any commits: the race is certain.
			s.gate(s.env.EventTable, copiesDEDUP1, fire)
		} else {
			s.note("no lock-gating capability: the race is left to the barrier release alone")
			fire()
		}
		s.note("%d of %d copies held back and released together, %d sent on their own (the barrier stood %s, fell: %s); send spread %s",
			rel.Released, rel.Copies, rel.Late, time.Duration(rel.PreopenNS).Round(time.Millisecond), rel.FellBecause, time.Duration(rel.SpreadNS))
		s.state(k, PhaseAfter, 1)
	})

	register("DEDUP-2", "a redelivery after a lost acknowledgement changes nothing", func(s *session) {
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)
		// The first response is read and thrown away: the provider never saw the
		// 2xx and redelivers, re-signed, after its first retry delay (compressed).
		s.send(ep, ev, RoleFirst, simulator.SendOptions{Faults: simulator.Faults{LostAck: simulator.LostAckDiscard}})
		s.settle(1, func() int { return s.rows(k, PhaseAfterFirst) })
		if d, ok := simulator.ScheduleFor(ep.Profile, nil).Next(2, 0, 0, nil); ok {
			clock := simulator.Clock{Scale: s.env.TimeScale}
			s.note("%s redelivers after %s of provider time (%s here)", ep.Profile.ID(), d, clock.Real(d).Round(time.Millisecond))
			_ = clock.Sleep(s.ctx, d)
		} else {
			// No automatic retries (e.g. GitHub): a person presses "Redeliver".
			s.note("profile %s does not retry on its own; redelivering by hand as its users do", ep.Profile.ID())
		}
		s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
		// A person may also press "resend" later: still the same event.
		s.send(ep, ev, RoleResend, simulator.SendOptions{Attempt: 3})
		s.state(k, PhaseAfter, 1)
	})

	register("DEDUP-3", "the same event ID under another account is a different event", func(s *session) {
		a, b, _ := s.env.sameProfileTwoAccounts()
		evA := s.event(a, typeCash, s.newID("cbtxn"))
		evB := evA
		evB.Account = b.Account
		s.send(a, evA, RoleFirst, simulator.SendOptions{})
		s.send(b, evB, RoleOtherScope, simulator.SendOptions{})
		s.states(PhaseAfter, 1, s.key(a, evA), s.key(b, evB))
	})

	register("DEDUP-4", "the same event ID from another source is a different event", func(s *session) {
		a, b, _ := s.env.twoProfilesOneAccount()
		evA := s.event(a, typeCash, s.newID("cbtxn"))
		evB := s.event(b, typeCash, s.newID("cbtxn"))
		evB.ID = evA.ID
		s.send(a, evA, RoleFirst, simulator.SendOptions{})
		s.send(b, evB, RoleOtherScope, simulator.SendOptions{})
		s.states(PhaseAfter, 1, s.key(a, evA), s.key(b, evB))
	})

	register("DEDUP-5", "different event IDs with identical payload text are both applied", func(s *session) {
		ep, _ := s.env.endpointWhere(func(ep Endpoint) bool { return ep.Profile.Facts().EventIDHeader != "" })
		ev1 := s.event(ep, typeCash, s.newID("cbtxn"))
		ev2 := ev1
		ev2.ID = s.newID("evt")
		b1, err1 := ep.Profile.Body(ev1)
		b2, err2 := ep.Profile.Body(ev2)
		if err1 != nil || err2 != nil || !bytes.Equal(b1, b2) {
			s.abort("profile %s did not render byte-identical bodies for two event IDs", ep.Profile.ID())
		}
		s.note("both bodies are the same %d bytes; only the %s header differs", len(b1), ep.Profile.Facts().EventIDHeader)
		s.send(ep, ev1, RoleFirst, simulator.SendOptions{})
		s.send(ep, ev2, RoleOtherScope, simulator.SendOptions{})
		s.states(PhaseAfter, 1, s.key(ep, ev1), s.key(ep, ev2))
	})

	register("DEDUP-6", "two event IDs for one business operation apply one effect", func(s *session) {
		ep := s.primary()
		src, acct := ep.source(), ep.Account

		// Sequential: the provider emits a second event for the same change.
		pay := s.newID("pi")
		s.send(ep, s.event(ep, typePayCreated, pay), RoleSetup, simulator.SendOptions{})
		first := s.event(ep, typePaySucceeded, pay)
		second := s.event(ep, typePaySucceeded, pay)
		second.Amount = first.Amount
		s.send(ep, first, RoleFirst, simulator.SendOptions{})
		s.send(ep, second, RoleOtherScope, simulator.SendOptions{})
		s.settle(1, func() int { return s.objectEffects(src, acct, pay, PhaseSequential) })

		// Concurrent: both land at once.
		pay2 := s.newID("pi")
		s.send(ep, s.event(ep, typePayCreated, pay2), RoleSetup, simulator.SendOptions{})
		a := s.event(ep, typePaySucceeded, pay2)
		b := s.event(ep, typePaySucceeded, pay2)
		b.Amount = a.Amount
		s.parallel(ep, []profiles.Event{a, b}, RoleCopy, simulator.SendOptions{})
		s.settle(1, func() int { return s.objectEffects(src, acct, pay2, PhaseConcurrent) })
	})
}
