package scenarios

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// versionsORDER2 and dupsORDER2 shape ORDER-2's stream: every version of one
// object, each delivered this many times, in an order drawn from the seed.
const (
	versionsORDER2 = 8
	dupsORDER2     = 2
)

var _ = Describe("ORDER: deduplication does not order events", Label("ORDER"), func() {
	It("ORDER-1 an older update arriving late does not regress the object", labels("ORDER-1"), func(ctx SpecContext) {
		s := begin(ctx, "ORDER-1")
		ep := s.primary()
		sub := s.newID("sub")
		for _, v := range []int64{1, 3, 2} {
			ev := s.event(ep, typeSubUpdated, sub)
			ev.Version = v
			ev.Status = fmt.Sprintf("v%d", v)
			s.expectAcked(fmt.Sprintf("version %d", v), s.send(ep, ev, simulator.SendOptions{}))
		}
		s.expectVersion(ep, sub, 3, "versions delivered 1, 3, 2")
		s.verdict()
	})

	It("ORDER-2 a shuffled, duplicated stream ends at the newest version", labels("ORDER-2"), func(ctx SpecContext) {
		s := begin(ctx, "ORDER-2")
		ep := s.primary()
		sub := s.newID("sub")
		var stream []profiles.Event
		for v := int64(1); v <= versionsORDER2; v++ {
			ev := s.event(ep, typeSubUpdated, sub)
			ev.Version = v
			ev.Status = fmt.Sprintf("v%d", v)
			for range dupsORDER2 {
				stream = append(stream, ev)
			}
		}
		s.rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
		order := make([]string, len(stream))
		for i, ev := range stream {
			order[i] = fmt.Sprint(ev.Version)
		}
		s.note("delivery order (seeded): %s", strings.Join(order, " "))
		// Half at once, then the rest at once: concurrency and lateness together.
		half := len(stream) / 2
		s.expectAcked("shuffled stream", s.parallel(ep, stream[:half], simulator.SendOptions{})...)
		s.expectAcked("shuffled stream", s.parallel(ep, stream[half:], simulator.SendOptions{})...)
		// And one old version resent last, as a manual resend or a slow retry would:
		// whatever the interleaving above, the stream ends with a stale update.
		late := stream[0]
		for _, ev := range stream {
			if ev.Version < late.Version || late.Version == versionsORDER2 {
				late = ev
			}
		}
		s.note("version %d resent last", late.Version)
		s.expectAcked("late resend of an old version", s.send(ep, late, simulator.SendOptions{Attempt: 2}))
		s.expectVersion(ep, sub, versionsORDER2, "after the shuffled, duplicated stream")
		s.verdict()
	})

	It("ORDER-3 a forbidden state transition is refused", labels("ORDER-3"), func(ctx SpecContext) {
		s := begin(ctx, "ORDER-3")
		ep := s.primary()
		pay := s.newID("pi")
		var amount int64
		for _, typ := range []string{typePayCreated, typePaySucceeded, typeRefunded} {
			ev := s.event(ep, typ, pay)
			if amount == 0 {
				amount = ev.Amount
			}
			ev.Amount = amount
			s.expectAcked(typ, s.send(ep, ev, simulator.SendOptions{}))
		}
		// A late succeeded event (another event ID, as providers emit) arrives after
		// the refund: acknowledging it is right, applying it is not.
		late := s.event(ep, typePaySucceeded, pay)
		late.Amount = amount
		a := s.send(ep, late, simulator.SendOptions{})
		if a.Status >= 500 || a.Status == 0 {
			s.note("late succeeded event answered %s (the provider will retry it)", describe(a))
		}
		if st, found := s.payment(ep, pay); !found || st != "refunded" {
			s.deviate("payment %s: status %q after a late succeeded event, want it to stay \"refunded\"", pay, st)
		}
		s.expectObjectEffects(ep.source(), ep.Account, pay, 2, "one payment credit and one refund; the late succeeded event must add none")
		s.verdict()
	})
})

func (s *session) expectVersion(ep Endpoint, objectID string, want int64, why string) {
	v, st, found := s.object(ep, objectID)
	if !found || v != want {
		s.deviate("%s: object %s is at version %d (status %q, found %v), want %d", why, objectID, v, st, found, want)
	}
}
