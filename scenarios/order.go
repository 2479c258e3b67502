package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
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
	// FactStaleKey is the ordering key of ORDER-4's late update.
	FactStaleKey = "stale_key"

	PhaseBeforeDelete = "before-delete"
	PhaseAfterDelete  = "after-delete"
	RoleDelete        = "delete"
)

func init() {
	register("ORDER-1", "an older update arriving late does not regress the object", func(s *session) {
		ep := s.primary()
		o := s.orderedRole()
		sub := s.newID(prefixOr(o.IDPrefix))
		s.createOrdered(ep, o, sub)
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		var want int64
		for _, v := range []int64{1, 3, 2} {
			ev := s.orderedEvent(ep, o, sub, v, base)
			if v == 3 {
				want = orderValue(o, ev)
			}
			s.send(ep, ev, RoleUpdate, simulator.SendOptions{})
			s.settledNow() // each update lands before the next: lateness, not a race
		}
		s.fact(FactWantVersion, want)
		s.object(ep, sub, PhaseFinal)
	})

	register("ORDER-2", "a shuffled, duplicated stream ends at the newest version", func(s *session) {
		ep := s.primary()
		o := s.orderedRole()
		sub := s.newID(prefixOr(o.IDPrefix))
		s.createOrdered(ep, o, sub)
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		spec := simulator.ShuffledVersions(versionsORDER2, dupsORDER2, 0, s.rng)
		half := len(spec) / 2
		pairInFirstHalf(spec, half)
		stream := make([]profiles.Event, len(spec))
		order := make([]string, len(spec))
		byVersion := map[int64]profiles.Event{}
		for i, v := range spec {
			ev, ok := byVersion[v]
			if !ok {
				ev = s.orderedEvent(ep, o, sub, v, base)
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
		s.mu.Lock()
		lateV := 1 + int64(s.rng.IntN(versionsORDER2-1))
		s.mu.Unlock()
		late := s.orderedEvent(ep, o, sub, lateV, base)
		s.send(ep, late, RoleLate, simulator.SendOptions{})
		s.note("version %d resent last, then version %d under a new event ID", resend.Version, late.Version)
		s.fact(FactWantVersion, orderValue(o, byVersion[versionsORDER2]))
		s.object(ep, sub, PhaseFinal)
	})

	register("ORDER-3", "a forbidden state transition is refused", func(s *session) {
		ep := s.primary()
		l := s.lifecycle()
		var stale []vocab.Pair
		for _, p := range l.Forbidden() {
			if p.Stale {
				stale = append(stale, p)
			}
		}
		if len(stale) == 0 {
			s.notApplicable("every state of %s can still reach every other: no transition is ever stale", l.Object)
		}
		// Every state, every event type the object is past: a late event (another
		// event ID, as providers emit) must be acknowledged and never applied.
		for _, p := range stale {
			path, _ := l.Path(p.State)
			obj := s.newObject(l)
			s.create(ep, l, obj)
			s.drive(ep, obj, path)
			late := s.objectEvent(ep, p.T.Type, obj)
			a := s.send(ep, late, RoleLate, simulator.SendOptions{})
			s.note("%s %s is %s; late %s answered %s", l.Object, obj, p.State, p.T.Type, Describe(a))
			s.fact(FactWantState+obj, p.State)
			s.fact(FactLateType+obj, p.T.Type)
			s.lifecycleState(ep, obj, PhaseFinal)
			if l.CountsEffects {
				s.fact(FactWantEffects+obj, vocab.EffectsOf(path))
				s.objectEffects(ep.source(), ep.Account, obj, PhaseFinal)
			}
		}
	})
}

func init() {
	register("ORDER-4", "a deleted object is not brought back by a stale update", func(s *session) {
		ep := s.primary()
		o := s.orderedRole()
		if o.Delete == nil {
			s.notApplicable("the target declares no events.ordered.delete")
		}
		sub := s.newID(prefixOr(o.IDPrefix))
		s.createOrdered(ep, o, sub)
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		// Update 1, then the deletion carrying key 3, then update 2 arriving
		// late under a new event ID (a retry that lost the race with the delete).
		first := s.orderedEvent(ep, o, sub, 1, base)
		s.send(ep, first, RoleUpdate, simulator.SendOptions{})
		s.settledNow()
		// The update's effect, once it shows: a receiver may commit a moment
		// after its 2xx.
		want := orderValue(o, first)
		s.settle(1, func() int {
			if v, _, f := s.object(ep, sub, PhaseBeforeDelete); f && v == want {
				return 1
			}
			return 0
		})
		del := s.orderedEvent(ep, o, sub, 3, base)
		del.Type = o.Delete.Type
		del.Status = "deleted"
		s.send(ep, del, RoleDelete, simulator.SendOptions{})
		s.settledNow()
		// The deletion's effect, once it shows: a receiver may commit a moment
		// after its 2xx.
		bv, bs, bf := s.lastObject(ep, sub, PhaseBeforeDelete)
		s.settle(1, func() int {
			if v, st, f := s.object(ep, sub, PhaseAfterDelete); v != bv || st != bs || f != bf {
				return 1
			}
			return 0
		})
		stale := s.orderedEvent(ep, o, sub, 2, base)
		s.send(ep, stale, RoleLate, simulator.SendOptions{})
		s.fact(FactStaleKey, orderValue(o, stale))
		s.fact(FactWantVersion, orderValue(o, first))
		s.object(ep, sub, PhaseFinal)
	})
}

// createOrdered makes an ordered object exist first where the target says its
// application creates it.
func (s *session) createOrdered(ep Endpoint, o *vocab.Ordered, obj string) {
	if o.Fixture != "" {
		s.runFixture(ep, o.Fixture, obj)
	}
}

// orderedEvent is update number v of obj, its ordering key set the way the
// target declares: the version field, the event's created time (base plus v
// seconds), or the object's key field.
func (s *session) orderedEvent(ep Endpoint, o *vocab.Ordered, obj string, v int64, base time.Time) profiles.Event {
	ev := s.event(ep, o.Type, obj)
	ev.Version = v
	ev.Status = fmt.Sprintf("v%d", v)
	if o.Key == vocab.OrderCreated {
		ev.Created = base.Add(time.Duration(v) * time.Second)
	}
	return ev
}

// orderValue is what the target's state query returns once ev is applied.
func orderValue(o *vocab.Ordered, ev profiles.Event) int64 {
	if o.Key == vocab.OrderCreated {
		return ev.Created.Unix()
	}
	return ev.Version
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
