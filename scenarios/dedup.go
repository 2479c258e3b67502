package scenarios

import (
	"bytes"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
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
		// Every endpoint, one after another: each is its own provider, account
		// and secret, and each must deduplicate.
		for _, ep := range s.endpoints() {
			ev := s.effectEvent(ep)
			k := s.key(ep, ev)
			var rel history.Release
			fire := func() { _, rel = s.copies(ep, ev, copiesDEDUP1, RoleCopy, simulator.SendOptions{}) }
			if ok, _ := s.env.has("lock-gating"); ok {
				// Every copy reaches the table before any commits: the race is certain.
				s.gate(s.env.EventTable, copiesDEDUP1, fire)
			} else {
				s.note("no lock-gating capability: the race is left to the barrier release alone")
				fire()
			}
			s.note("%s: %d of %d copies held back and released together, %d sent on their own (the barrier stood %s, fell: %s); send spread %s",
				ep.name(), rel.Released, rel.Copies, rel.Late, time.Duration(rel.PreopenNS).Round(time.Millisecond), rel.FellBecause, time.Duration(rel.SpreadNS))
			s.state(k, PhaseAfter, 1)
		}
	})

	register("DEDUP-2", "a redelivery after a lost acknowledgement changes nothing", func(s *session) {
		// Every endpoint at once: each waits its own profile's retry delay.
		var jobs []func()
		for _, ep := range s.endpoints() {
			ev := s.effectEvent(ep)
			k := s.key(ep, ev)
			jobs = append(jobs, func() {
				// The first response is read and thrown away: the provider never saw the
				// 2xx and redelivers, re-signed, after its first retry delay (compressed).
				s.send(ep, ev, RoleFirst, simulator.SendOptions{Faults: simulator.Faults{LostAck: simulator.LostAckDiscard}})
				s.settle(1, func() int { return s.rows(k, PhaseAfterFirst) })
				if d, ok := simulator.ScheduleFor(ep.Profile, nil).Next(2, 0, 0, nil); ok {
					clock := simulator.Clock{Scale: s.env.TimeScale}
					s.note("%s redelivers after %s of provider time (%s here)", ep.name(), d, clock.Real(d).Round(time.Millisecond))
					_ = clock.Sleep(s.ctx, d)
				} else {
					// No automatic retries (e.g. GitHub): a person presses "Redeliver".
					s.note("%s: profile %s does not retry on its own; redelivering by hand as its users do", ep.name(), ep.Profile.ID())
				}
				s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
				// A person may also press "resend" later: still the same event.
				s.send(ep, ev, RoleResend, simulator.SendOptions{Attempt: 3})
				s.state(k, PhaseAfter, 1)
			})
		}
		s.together(jobs...)
	})

	register("DEDUP-3", "the same event ID under another account is a different event", func(s *session) {
		a, b, _ := s.env.sameProfileTwoAccounts()
		evA := s.effectEvent(a)
		evB := evA
		evB.Source, evB.Account = b.source(), b.Account
		s.send(a, evA, RoleFirst, simulator.SendOptions{})
		s.send(b, evB, RoleOtherScope, simulator.SendOptions{})
		s.states(PhaseAfter, 1, s.key(a, evA), s.key(b, evB))
	})

	register("DEDUP-4", "the same event ID from another source is a different event", func(s *session) {
		a, b, _ := s.env.twoProfilesOneAccount()
		evA := s.effectEvent(a)
		evB := s.effectEvent(b)
		evB.ID = evA.ID
		s.send(a, evA, RoleFirst, simulator.SendOptions{})
		s.send(b, evB, RoleOtherScope, simulator.SendOptions{})
		s.states(PhaseAfter, 1, s.key(a, evA), s.key(b, evB))
	})

	register("DEDUP-5", "different event IDs with identical payload text are both applied", func(s *session) {
		ep, _ := s.env.endpointWhere(func(ep Endpoint) bool { return ep.Profile.Facts().EventIDHeader != "" })
		ev1 := s.effectEvent(ep)
		ev2 := ev1
		ev2.ID = s.newID("evt")
		b1, err1 := ep.Profile.Body(s.render(ep, ev1))
		b2, err2 := ep.Profile.Body(s.render(ep, ev2))
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
		l := s.lifecycle()
		if !l.CountsEffects {
			s.notApplicable("the target declares no events.lifecycle.effects query: an object's effects cannot be counted")
		}
		var t vocab.Transition
		var path []vocab.Transition
		found := false
		for _, tr := range l.Transitions {
			if !tr.Effect {
				continue
			}
			for _, from := range tr.From {
				if p, ok := l.Path(from); ok {
					t, path, found = tr, p, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			s.notApplicable("no transition of %s applies an effect from a reachable state", l.Object)
		}
		want := vocab.EffectsOf(path) + 1
		s.note("%s sent twice under two event IDs after %s: %d effect(s) in all", t.Type, describePath(l, path), want)

		// Sequential: the provider emits a second event for the same change.
		obj := s.newObject(l)
		s.create(ep, l, obj)
		s.drive(ep, obj, path)
		first := s.objectEvent(ep, t.Type, obj)
		second := s.objectEvent(ep, t.Type, obj)
		s.send(ep, first, RoleFirst, simulator.SendOptions{})
		s.send(ep, second, RoleOtherScope, simulator.SendOptions{})
		s.fact(FactWantEffects+obj, want)
		s.settle(want, func() int { return s.objectEffects(ep.source(), ep.Account, obj, PhaseSequential) })

		// Concurrent: both land at once.
		obj2 := s.newObject(l)
		s.create(ep, l, obj2)
		s.drive(ep, obj2, path)
		a := s.objectEvent(ep, t.Type, obj2)
		b := s.objectEvent(ep, t.Type, obj2)
		s.parallel(ep, []profiles.Event{a, b}, RoleCopy, simulator.SendOptions{})
		s.fact(FactWantEffects+obj2, want)
		s.settle(want, func() int { return s.objectEffects(ep.source(), ep.Account, obj2, PhaseConcurrent) })
	})
}

// describePath names the transitions that lead an object to a state.
func describePath(l *vocab.Lifecycle, path []vocab.Transition) string {
	if len(path) == 0 {
		return "creation (" + l.Initial + ")"
	}
	out := "creation (" + l.Initial + ")"
	for _, t := range path {
		out += ", " + t.Type + " (" + t.To + ")"
	}
	return out
}
