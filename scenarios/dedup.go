package scenarios

import (
	"bytes"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// copiesDEDUP1 is how many copies of one delivery DEDUP-1 releases together.
const copiesDEDUP1 = 16

var _ = Describe("DEDUP: one event key gates one effect", Label("DEDUP"), func() {
	It("DEDUP-1 concurrent copies converge on one row and one effect, all acknowledged", labels("DEDUP-1"), func(ctx SpecContext) {
		s := begin(ctx, "DEDUP-1")
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)

		var recs []simulator.AttemptRecord
		var rel simulator.ReleaseRecord
		fire := func() { recs, rel = s.copies(ep, ev, copiesDEDUP1, simulator.SendOptions{}) }
		if ok, _ := s.env.has("lock-gating"); ok {
			// Every copy reaches the table before any commits: the race is certain.
			s.gate(s.env.EventTable, copiesDEDUP1, fire)
		} else {
			s.note("no lock-gating capability: the race is left to the barrier release alone")
			fire()
		}
		s.note("%d copies released together; send spread %s", rel.Released, time.Duration(rel.SpreadNS))
		s.expectAcked("concurrent copy", recs...)
		s.expectRows(k, 1, "after 16 concurrent copies")
		s.expectEffects(k, 1, "after 16 concurrent copies")
		s.verdict()
	})

	It("DEDUP-2 a redelivery after a lost acknowledgement changes nothing", labels("DEDUP-2"), func(ctx SpecContext) {
		s := begin(ctx, "DEDUP-2")
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)

		// The first response is read and thrown away: the provider never saw the
		// 2xx and redelivers, re-signed, after its first retry delay (compressed).
		first := s.send(ep, ev, simulator.SendOptions{Faults: simulator.Faults{LostAck: simulator.LostAckDiscard}})
		if !is2xx(first.Status) {
			s.deviate("first delivery of %s was answered %s", ev.ID, describe(first))
		}
		s.expectRows(k, 1, "after the first delivery (its acknowledgement lost)")
		if d, ok := simulator.ScheduleFor(ep.Profile, nil).Next(2, 0, 0, nil); ok {
			clock := simulator.Clock{Scale: s.env.TimeScale}
			s.note("%s redelivers after %s of provider time (%s here)", ep.Profile.ID(), d, clock.Real(d).Round(time.Millisecond))
			_ = clock.Sleep(s.ctx, d)
		} else {
			// No automatic retries (e.g. GitHub): a person presses "Redeliver".
			s.note("profile %s does not retry on its own; redelivering by hand as its users do", ep.Profile.ID())
		}
		s.expectAcked("redelivery after a lost acknowledgement", s.send(ep, ev, simulator.SendOptions{Attempt: 2}))
		// A person may also press "resend" later: still the same event.
		s.expectAcked("manual resend", s.send(ep, ev, simulator.SendOptions{Attempt: 3}))
		s.expectRows(k, 1, "after the redeliveries")
		s.expectEffects(k, 1, "after the redeliveries")
		s.verdict()
	})

	It("DEDUP-3 the same event ID under another account is a different event", labels("DEDUP-3"), func(ctx SpecContext) {
		s := begin(ctx, "DEDUP-3")
		a, b, _ := s.env.sameProfileTwoAccounts()
		evA := s.event(a, typeCash, s.newID("cbtxn"))
		evB := evA
		evB.Account = b.Account
		s.expectAcked("delivery to account "+a.Account, s.send(a, evA, simulator.SendOptions{}))
		s.expectAcked("same event ID delivered to account "+b.Account, s.send(b, evB, simulator.SendOptions{}))
		for _, k := range []profiles.Key{s.key(a, evA), s.key(b, evB)} {
			s.expectRows(k, 1, "same event ID under two accounts")
			s.expectEffects(k, 1, "same event ID under two accounts")
		}
		s.verdict()
	})

	It("DEDUP-4 the same event ID from another source is a different event", labels("DEDUP-4"), func(ctx SpecContext) {
		s := begin(ctx, "DEDUP-4")
		a, b, _ := s.env.twoProfilesOneAccount()
		evA := s.event(a, typeCash, s.newID("cbtxn"))
		evB := s.event(b, typeCash, s.newID("cbtxn"))
		evB.ID = evA.ID
		s.expectAcked("delivery through "+a.Profile.ID(), s.send(a, evA, simulator.SendOptions{}))
		s.expectAcked("same event ID through "+b.Profile.ID(), s.send(b, evB, simulator.SendOptions{}))
		for _, k := range []profiles.Key{s.key(a, evA), s.key(b, evB)} {
			s.expectRows(k, 1, "same event ID from two sources")
			s.expectEffects(k, 1, "same event ID from two sources")
		}
		s.verdict()
	})

	It("DEDUP-5 different event IDs with identical payload text are both applied", labels("DEDUP-5"), func(ctx SpecContext) {
		s := begin(ctx, "DEDUP-5")
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
		s.expectAcked("first of two identical payloads", s.send(ep, ev1, simulator.SendOptions{}))
		s.expectAcked("second of two identical payloads", s.send(ep, ev2, simulator.SendOptions{}))
		for _, ev := range []profiles.Event{ev1, ev2} {
			k := s.key(ep, ev)
			s.expectRows(k, 1, "identical payload, distinct event ID")
			s.expectEffects(k, 1, "identical payload, distinct event ID")
		}
		s.verdict()
	})

	It("DEDUP-6 two event IDs for one business operation apply one effect", labels("DEDUP-6"), func(ctx SpecContext) {
		s := begin(ctx, "DEDUP-6")
		ep := s.primary()
		src, acct := ep.source(), ep.Account

		// Sequential: the provider emits a second event for the same change.
		pay := s.newID("pi")
		s.expectAcked("payment created", s.send(ep, s.event(ep, typePayCreated, pay), simulator.SendOptions{}))
		first := s.event(ep, typePaySucceeded, pay)
		second := s.event(ep, typePaySucceeded, pay)
		second.Amount = first.Amount
		s.expectAcked("first succeeded event", s.send(ep, first, simulator.SendOptions{}))
		s.expectAcked("second succeeded event, new ID", s.send(ep, second, simulator.SendOptions{}))
		s.expectObjectEffects(src, acct, pay, 1, "two succeeded events one after the other")

		// Concurrent: both land at once.
		pay2 := s.newID("pi")
		s.expectAcked("payment created", s.send(ep, s.event(ep, typePayCreated, pay2), simulator.SendOptions{}))
		a := s.event(ep, typePaySucceeded, pay2)
		b := s.event(ep, typePaySucceeded, pay2)
		b.Amount = a.Amount
		s.expectAcked("concurrent succeeded events", s.parallel(ep, []profiles.Event{a, b}, simulator.SendOptions{})...)
		s.expectObjectEffects(src, acct, pay2, 1, "two succeeded events at the same time")
		s.verdict()
	})
})
