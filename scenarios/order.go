package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// ORDER: deduplication does not order events. A receiver keeps each object at
// its newest version, or lets a state machine refuse what the object is past,
// however late, shuffled or duplicated the events arrive.
var orderFamily = family{Name: "ORDER", Guarantees: []*Guarantee{&order1, &order2, &order3, &order4, &order5, &order6}}

// The ORDER deviation codes.
var (
	codeOrderNotAcked          = Code{"order.not-acked", "a valid update was not acknowledged"}
	codeOrderRegressed         = Code{"order.regressed", "the object is not at the newest version delivered"}
	codeOrderTransitionApplied = Code{"order.transition-applied", "a forbidden state transition changed the object or added an effect"}
	codeOrderResurrected       = Code{"order.resurrected", "a stale update brought a deleted object back"}
	codeOrderTieDropped        = Code{"order.tie-dropped", "an update acknowledged after another with an equal ordering key was dropped"}
	codeOrderTieRule           = Code{"order.tie-rule", "two updates with equal ordering keys did not resolve as the target's declared tie rule says"}
	codeOrderChildrenRegressed = Code{"order.children-regressed", "a stale update rewrote the child rows of an object at a newer version"}
)

// orderFacts are what the ORDER scenarios fix for their checkers.
type orderFacts struct {
	// WantVersion is the ordering key the object must end at (ORDER-1, -2), or
	// hold before its deletion (ORDER-4); StaleKey is ORDER-4's late update's.
	WantVersion *int64 `fact:"want_version"`
	StaleKey    *int64 `fact:"stale_key"`
	// WantKey and StaleKeys are WantVersion and StaleKey per object, for
	// targets with several ordered roles (each role's key may differ);
	// histories without them hold every object to WantVersion.
	WantKey   map[string]int64 `fact:"want_key:"`
	StaleKeys map[string]int64 `fact:"stale_key:"`
	// WantState, LateType and WantEffects are, per lifecycle object of
	// ORDER-3, the state it must keep, the late event it got and its effects.
	WantState   map[string]string `fact:"want_state:"`
	LateType    map[string]string `fact:"late_type:"`
	WantEffects map[string]int64  `fact:"want_effects:"`
	// ORDER-5: the update read as the positive control (its key and tag),
	// the tags of the first update with the tied key and of the tie, and the
	// target's tie rule ("" the default).
	ControlVersion *int64 `fact:"control_version"`
	ControlTag     string `fact:"control_tag"`
	FirstTag       string `fact:"first_tag"`
	TieTag         string `fact:"tie_tag"`
	Ties           string `fact:"ties"`
}

// Phases and roles of the ORDER scenarios.
const (
	phaseFinal        = "final"
	phaseBeforeDelete = "before-delete"
	phaseAfterDelete  = "after-delete"

	roleUpdate = "update"
	roleStream = "stream"
	roleLate   = "late"
	roleDelete = "delete"
	roleTie    = "tie"
)

// versionsORDER2 and dupsORDER2 shape ORDER-2's stream: every version of one
// object, each delivered this many times, in an order drawn from the seed.
const (
	versionsORDER2 = 8
	dupsORDER2     = 2
)

var order1 = Guarantee{
	ID: "ORDER-1", Title: "Late older update",
	Promise: "An older update arriving after a newer one does not regress the object.",
	Why:     "Providers do not keep order; deduplication alone lets version 2 overwrite version 3.",
	Needs:   []Capability{"ordering"},
	Spec:    "an older update arriving late does not regress the object",
	Sends:   "for each `ordered` role (in a seeded order), updates of one object with keys 1, 3, 2, each after the previous settled",
	Expects: "the state query returns key 3",
	codes:   []Code{codeOrderNotAcked, codeOrderRegressed},
	Reads:   []Read{{Query: queryObject, Tells: "the ordered object ($4): the key of the update it holds, 3"}},
	judge: bind(func(s *session, f *orderFacts) {
		ep := s.primary()
		// Every ordered role, in a seeded order, one object each.
		for _, o := range s.orderedRoles() {
			sub := s.newID(prefixOr(o.IDPrefix))
			s.createOrdered(ep, o, sub)
			base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
			var want int64
			for _, v := range []int64{1, 3, 2} {
				ev := s.orderedEvent(ep, o, sub, v, base)
				if v == 3 {
					want = orderValue(o, ev)
				}
				s.send(ep, ev, roleUpdate, simulator.Shape{})
				s.settledNow() // each update lands before the next: lateness, not a race
			}
			f.wantKey(sub, want)
			s.orderedObject(ep, o, sub, phaseFinal)
		}
	}, versionCheck("versions delivered 1, 3, 2")),
}

var order2 = Guarantee{
	ID: "ORDER-2", Title: "Shuffled duplicated stream",
	Promise: "A shuffled, duplicated stream of versioned updates ends at the newest version.",
	Why:     "Retries and parallel delivery interleave versions arbitrarily.",
	Needs:   []Capability{"ordering"},
	Spec:    "a shuffled, duplicated stream ends at the newest version",
	Sends:   "for each `ordered` role (in a seeded order), keys 1..8 of one object, each twice, shuffled by the seed, in two concurrent halves (lock-gated at the role's table where allowed), then an old key resent and an old key under a new event ID",
	Expects: "the state query returns key 8",
	Race:    "each half of the stream, held at the event table before any commits",
	// Concurrent copies in the stream race without a unique key: the
	// reconciliation then finds a duplicated event row.
	codes: []Code{codeOrderNotAcked, codeOrderRegressed},
	Reads: []Read{{Query: queryObject, Tells: "the ordered object ($4): the key of the update it holds, 8"}},
	judge: bind(func(s *session, f *orderFacts) {
		ep := s.primary()
		// Every ordered role, in a seeded order, each held at its own table.
		for _, o := range s.orderedRoles() {
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
				s.race(roleTable(o.Table, s.env.EventTable), len(part), func() { s.parallel(ep, part, roleStream, simulator.Shape{}) })
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
			s.send(ep, resend, roleLate, simulator.Shape{Attempt: 2})
			s.mu.Lock()
			lateV := 1 + int64(s.rng.IntN(versionsORDER2-1))
			s.mu.Unlock()
			late := s.orderedEvent(ep, o, sub, lateV, base)
			s.send(ep, late, roleLate, simulator.Shape{})
			s.note("version %d resent last, then version %d under a new event ID", resend.Version, late.Version)
			want := orderValue(o, byVersion[versionsORDER2])
			f.wantKey(sub, want)
			s.objectUntilOf(ep, o, sub, phaseFinal, want)
		}
	}, versionCheck("after the shuffled, duplicated stream")),
}

var order3 = Guarantee{
	ID: "ORDER-3", Title: "Invalid transitions refused",
	Promise: "An event the object is already past never moves it back, from any state (a late succeeded never undoes a refund; a late failure never undoes a success).",
	Why:     "Out-of-order events otherwise move objects backwards in their lifecycle.",
	Needs:   []Capability{"state-machine"},
	Spec:    "a forbidden state transition is refused",
	Sends:   "for every `lifecycle` object declared (in a seeded order) and every state it can reach, a fresh object brought there (a child object through its parent, brought first to the state the relation names), then every event type it is past, under a new event ID",
	Expects: "the state and the object's effects unchanged",
	codes:   []Code{codeOrderNotAcked, codeOrderTransitionApplied, codeSetupUnmet},
	Reads:   []Read{{Query: queryState, Tells: "each object's state ($4) after its setup (the state it was brought to) and after a late event: unchanged"}, {Query: queryObjectEffects, Tells: "each object's effects ($4), where the target counts them: its path's"}},
	judge: bind(func(s *session, f *orderFacts) {
		ep := s.primary()
		// Every lifecycle object the target declares, in a seeded order; a
		// child object is reached through its parent (create).
		var run int
		ls := s.lifecycles()
		for _, l := range ls {
			var stale []vocab.Pair
			for _, p := range l.Forbidden() {
				if p.Stale {
					stale = append(stale, p)
				}
			}
			if len(stale) == 0 {
				s.note("every state of %s can still reach every other: no transition is ever stale", l.Object)
				continue
			}
			run++
			if f.WantState == nil {
				f.WantState, f.LateType = map[string]string{}, map[string]string{}
			}
			// Every state, every event type the object is past: a late event
			// (another event ID, as providers emit) must be acknowledged and
			// never applied.
			for _, p := range stale {
				path, _ := l.Path(p.State)
				obj := s.newObject(l)
				if !s.setUp(ep, l, obj, path) {
					continue // its setup is the finding: the late event would judge nothing
				}
				late := s.objectEvent(ep, p.T.Type, obj)
				a := s.send(ep, late, roleLate, simulator.Shape{})
				s.note("%s %s is %s; late %s answered %s", l.Object, obj, p.State, p.T.Type, Describe(a))
				f.WantState[obj] = p.State
				f.LateType[obj] = p.T.Type
				s.lifecycleStateOf(ep, l, obj, phaseFinal)
				if l.CountsEffects {
					if f.WantEffects == nil {
						f.WantEffects = map[string]int64{}
					}
					f.WantEffects[obj] = int64(vocab.EffectsOf(path))
					s.objectEffectsOf(l, ep.source(), ep.Account, obj, phaseFinal)
				}
			}
		}
		if run == 0 && len(ls) == 1 {
			s.notApplicable("every state of %s can still reach every other: no transition is ever stale", ls[0].Object)
		} else if run == 0 {
			s.notApplicable("every state of every lifecycle object can still reach every other: no transition is ever stale")
		}
	}, func(v *view, f *orderFacts) {
		v.acked(codeOrderNotAcked, roleSetup)
		unmet := v.setupUnmet()
		ps := v.stateReads(phaseFinal)
		if len(ps) == 0 && len(unmet) == 0 {
			v.fail("history: no state read after the late events")
		}
		for _, p := range ps {
			if unmet[p.Params[3]] {
				continue
			}
			want, ok := f.WantState[p.Params[3]]
			if !ok {
				want = "refunded"
			}
			late, ok := f.LateType[p.Params[3]]
			if !ok {
				late = "succeeded event"
			}
			if !p.Found || p.Status != want {
				v.deviate(codeOrderTransitionApplied, "%s %s: status %q after a late %s, want it to stay %q", v.objectNameOf(p), p.Params[3], p.Status, late, want)
			}
		}
		// An object whose effects the scenario recorded must have them read;
		// histories without the fact read them when they could.
		if len(f.WantEffects) > 0 || len(v.roleReads(queryObjectEffects, phaseFinal)) > 0 {
			v.objectEffects(codeOrderTransitionApplied, phaseFinal, f.WantEffects, 2, "the effects of the object's own path; the late event must add none")
		}
	}),
}

var order4 = Guarantee{
	ID: "ORDER-4", Title: "No resurrection",
	Promise: "An update older than a deletion, arriving after it, does not bring the deleted object back.",
	Why:     "A retry of an old update that loses the race with the delete recreates the object with stale data when the receiver upserts without remembering the deletion.",
	Needs:   []Capability{"ordering", "deletion"},
	Spec:    "a deleted object is not brought back by a stale update",
	Sends:   "for each `ordered` role with a `delete` (in a seeded order), update 1 of an object, its deletion carrying key 3, then update 2 under a new event ID",
	Expects: "the object reads the same after the stale update as after the deletion (no row, or the deletion's tombstone)",
	codes:   []Code{codeOrderNotAcked, codeOrderResurrected, codeSetupUnmet},
	Reads:   []Read{{Query: queryObject, Tells: "the ordered object ($4) before the deletion, after it, and after the stale update: as after the deletion"}},
	judge: bind(func(s *session, f *orderFacts) {
		ep := s.primary()
		// Every ordered role with a deletion, in a seeded order.
		var run int
		for _, o := range s.orderedRoles() {
			if o.Delete == nil {
				s.note("ordered role %s declares no delete", roleName(o.Label, o.Type))
				continue
			}
			run++
			s.noResurrection(ep, o, f)
		}
		if run == 0 {
			s.notApplicable("the target declares no events.ordered.delete")
		}
	}, func(v *view, f *orderFacts) {
		v.acked(codeOrderNotAcked, roleUpdate, roleDelete, roleLate)
		befores := v.roleReads(queryObject, phaseBeforeDelete)
		if len(befores) == 0 {
			v.fail("history: ORDER-4 needs an object read before the delete")
			return
		}
		updatesAcked := len(v.role(roleUpdate)) > 0
		for _, a := range v.role(roleUpdate) {
			updatesAcked = updatesAcked && acked(a)
		}
		// The last read before the delete of each object: a receiver that
		// applies after its 2xx is read until the update shows.
		last := map[string]history.Observation{}
		var objs []string
		for _, b := range befores {
			if _, seen := last[b.Params[3]]; !seen {
				objs = append(objs, b.Params[3])
			}
			last[b.Params[3]] = b
		}
		for _, obj := range objs {
			b := last[obj]
			want, stale := f.WantVersion, f.StaleKey
			if w, ok := f.WantKey[obj]; ok {
				want = &w
			}
			if k, ok := f.StaleKeys[obj]; ok {
				stale = &k
			}
			// The positive control: the state query sees the object before it
			// is deleted. An acknowledged first update that never shows is the
			// setup's failure, not the deletion's.
			if !b.Found || want == nil || b.Version != *want {
				if updatesAcked && want != nil {
					v.deviate(codeSetupUnmet, "%sobject %s: its first update (key %d) was acknowledged, but before the delete it reads %s: the deletion and the stale update were not judged",
						roleOf(b), obj, *want, objectText(b))
					continue
				}
				if want == nil {
					v.fail("%sobject %s before the delete: key %d (found %v), want %s: the first update was not applied, so the deletion cannot be judged (ORDER-1 judges updates)", roleOf(b), obj, b.Version, b.Found, factText(want))
					return
				}
				v.note("%sobject %s: its first update was refused, so the deletion was not judged", roleOf(b), obj)
				continue
			}
			after, final := v.readsOf(b.Query, phaseAfterDelete, obj), v.readsOf(b.Query, phaseFinal, obj)
			if len(after) == 0 || len(final) != 1 {
				v.fail("history: ORDER-4 needs one object read before the delete, after it and at the end")
				return
			}
			// Brought back: the stale update is what the object now holds, or an
			// object the deletion removed exists again.
			a, fin := after[len(after)-1], final[0]
			if (fin.Found && stale != nil && fin.Version == *stale) || (!a.Found && fin.Found) {
				v.deviate(codeOrderResurrected, "%sobject %s: after the delete it read %s; after a stale update (key %s) it reads %s: the deleted object was brought back",
					roleOf(fin), obj, objectText(a), factText(stale), objectText(fin))
			}
		}
	}),
}

var order5 = Guarantee{
	ID: "ORDER-5", Title: "Equal ordering keys",
	Promise: "Of two updates of one object with equal ordering keys, one acknowledged after the other is not silently dropped: the object holds it, or the update the target's declared tie rule keeps.",
	Why:     "A created-time key is whole seconds, so two events about one object in the same second are common; a guard `stored < event` acknowledges the second and drops it.",
	Needs:   []Capability{"ordering"},
	Spec:    "an update with a key equal to the object's is not acknowledged and dropped",
	Sends:   "`ordered` update 1 of an object, then update 2, then, once it settled, another update with key 2 (the same created second) under a new event ID and another `{{.Tag}}`",
	Expects: "the state query returns key 2 and, in its second column, the tie's tag (`ties: last-wins`; by default when the tie was acknowledged) or the first update's (`ties: first-wins`; by default when the tie was refused)",
	codes:   []Code{codeOrderNotAcked, codeOrderRegressed, codeOrderTieDropped, codeOrderTieRule},
	Reads:   []Read{{Query: queryObject, Tells: "the ordered object ($4) after update 1: its key and tag (the positive control); after the tie: key 2 and the tag of the update the tie rule keeps"}},
	judge: bind(func(s *session, f *orderFacts) {
		ep := s.primary()
		o := s.orderedRole()
		switch {
		case o.Ties == vocab.TiesNone:
			s.notApplicable("target.events.ordered.ties is none: the provider never sends two updates of one object with equal keys")
		case !o.Tagged:
			s.notApplicable("the ordered updates carry no {{.Tag}} (target.events.ordered.object): two updates with equal keys cannot be told apart in the state read, so what a tie did cannot be seen")
		}
		sub := s.newID(prefixOr(o.IDPrefix))
		s.createOrdered(ep, o, sub)
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		control := s.orderedEvent(ep, o, sub, 1, base)
		s.send(ep, control, roleUpdate, simulator.Shape{})
		cv := orderValue(o, control)
		f.ControlVersion, f.ControlTag = &cv, control.Status
		s.objectUntil(ep, sub, phaseControl, cv)
		first := s.orderedEvent(ep, o, sub, 2, base)
		s.send(ep, first, roleUpdate, simulator.Shape{})
		s.settledNow() // the tie comes after the first landed: a tie, not a race
		tie := s.orderedEvent(ep, o, sub, 2, base)
		tie.Status = first.Status + "-tie"
		a := s.send(ep, tie, roleTie, simulator.Shape{})
		s.note("update tagged %s, then one tagged %s with the same key (answered %s)", first.Status, tie.Status, Describe(a))
		want := orderValue(o, first)
		f.WantVersion, f.FirstTag, f.TieTag, f.Ties = &want, first.Status, tie.Status, o.Ties
		s.objectUntil(ep, sub, phaseFinal, want)
	}, func(v *view, f *orderFacts) {
		roles := []string{roleUpdate}
		if f.Ties == vocab.TiesLastWins {
			roles = append(roles, roleTie)
		}
		v.acked(codeOrderNotAcked, roles...)
		if f.WantVersion == nil || f.ControlVersion == nil || f.FirstTag == "" || f.TieTag == "" {
			v.fail("history: facts want_version, control_version, first_tag and tie_tag are required")
			return
		}
		control, final := v.reads(queryObject, phaseControl), v.reads(queryObject, phaseFinal)
		if len(control) != 1 || len(final) != 1 {
			v.fail("history: ORDER-5 needs one object read after the first update and one after the tie")
			return
		}
		// The positive control: the state read shows the update's tag, or no
		// tie can be judged from it.
		if c := control[0]; !c.Found || c.Version != *f.ControlVersion || c.Status != f.ControlTag {
			v.fail("object %s after its update tagged %s (key %d): it reads %s; the state query must return the key and, second, the object's {{.Tag}} for a tie to be judged", c.Params[3], f.ControlTag, *f.ControlVersion, objectText(c))
			return
		}
		fin := final[0]
		if !fin.Found || fin.Version != *f.WantVersion {
			v.deviate(codeOrderRegressed, "object %s: after two updates with key %d it reads %s", fin.Params[3], *f.WantVersion, objectText(fin))
			return
		}
		tieAcked := false
		for _, a := range v.role(roleTie) {
			tieAcked = tieAcked || acked(a)
		}
		switch {
		case f.Ties == vocab.TiesFirstWins:
			if fin.Status != f.FirstTag {
				v.deviate(codeOrderTieRule, "object %s holds the update tagged %q, want %q: ties: first-wins keeps the first of two updates with key %d", fin.Params[3], fin.Status, f.FirstTag, *f.WantVersion)
			}
		case tieAcked && fin.Status != f.TieTag:
			rule := "acknowledged, so it must be applied"
			if f.Ties == vocab.TiesLastWins {
				rule = "ties: last-wins"
			}
			v.deviate(codeOrderTieDropped, "object %s holds the update tagged %q: the one tagged %q with the same key %d came after it and was acknowledged and dropped (%s)", fin.Params[3], fin.Status, f.TieTag, *f.WantVersion, rule)
		case !tieAcked && fin.Status != f.FirstTag && fin.Status != f.TieTag:
			v.deviate(codeOrderRegressed, "object %s holds the update tagged %q, neither of the two with key %d (%q, %q)", fin.Params[3], fin.Status, *f.WantVersion, f.FirstTag, f.TieTag)
		}
	}),
}

var order6 = Guarantee{
	ID: "ORDER-6", Title: "Child rows follow the object",
	Promise: "A stale update does not rewrite the child rows of an object at a newer version (a subscription's items stay those of its newest update).",
	Why:     "Receivers that guard the object's row by its version often rewrite its child rows unguarded: the object reads current while its items are stale.",
	Needs:   []Capability{"ordering"},
	Spec:    "a stale update does not rewrite the object's child rows",
	Sends:   "`ordered` updates of one object with keys 1, 3, 2, each after the previous settled",
	Expects: "the children query returns key 1 after update 1, and 3 at the end",
	codes:   []Code{codeOrderNotAcked, codeOrderChildrenRegressed},
	Reads: []Read{{Query: queryObject, Tells: "the ordered object ($4) at the end: key 3, for the evidence"},
		{Query: queryObjectChildren, Tells: "the key its child rows were written from ($4): 1 after update 1 (the positive control), 3 at the end"}},
	judge: bind(func(s *session, f *orderFacts) {
		ep := s.primary()
		o := s.orderedRole()
		if !o.Children {
			s.notApplicable("the target declares no events.ordered.children: the object's child rows cannot be read")
		}
		sub := s.newID(prefixOr(o.IDPrefix))
		s.createOrdered(ep, o, sub)
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		var want int64
		for _, v := range []int64{1, 3, 2} {
			ev := s.orderedEvent(ep, o, sub, v, base)
			s.send(ep, ev, roleUpdate, simulator.Shape{})
			s.settledNow()
			switch v {
			case 1:
				cv := orderValue(o, ev)
				f.ControlVersion = &cv
				s.childrenUntil(ep, sub, phaseControl, cv)
			case 3:
				want = orderValue(o, ev)
			}
		}
		f.WantVersion = &want
		s.objectUntil(ep, sub, phaseFinal, want)
		s.childrenUntil(ep, sub, phaseFinal, want)
	}, func(v *view, f *orderFacts) {
		v.acked(codeOrderNotAcked, roleUpdate)
		if f.WantVersion == nil || f.ControlVersion == nil {
			v.fail("history: facts want_version and control_version are required")
			return
		}
		control, final := v.reads(queryObjectChildren, phaseControl), v.reads(queryObjectChildren, phaseFinal)
		if len(control) != 1 || len(final) != 1 {
			v.fail("history: ORDER-6 needs one children read after the first update and one at the end")
			return
		}
		if c := control[0]; !c.Found || c.Version != *f.ControlVersion {
			v.fail("object %s after its first update (key %d): its child rows read %s; the children query must return the key they were written from for a stale rewrite to be seen", c.Params[3], *f.ControlVersion, childrenText(c))
			return
		}
		if fin := final[0]; !fin.Found || fin.Version != *f.WantVersion {
			v.deviate(codeOrderChildrenRegressed, "object %s: after updates 1, 3, 2 its child rows read %s, want key %d: the stale update rewrote them", fin.Params[3], childrenText(fin), *f.WantVersion)
		}
	}),
}

// childrenText renders a children read for evidence.
func childrenText(o history.Observation) string {
	if !o.Found {
		return "no child rows"
	}
	return fmt.Sprintf("key %d", o.Version)
}

// childrenReader is the observer's read of an ordered object's child rows
// (events.ordered.children); an observer without it answers no such query.
type childrenReader interface {
	ObjectChildren(ctx context.Context, source, account, objectID string) (key int64, found bool, err error)
}

// children reads the key an ordered object's child rows were written from.
func (s *session) children(ep Endpoint, objectID, phase string) int64 {
	cr, ok := s.env.Observer.(childrenReader)
	if !ok {
		s.abort("the observer cannot read an object's child rows (events.ordered.children)")
	}
	o := s.read(queryObjectChildren, phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Version, o.Found, err = cr.ObjectChildren(ctx, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Version
}

// childrenUntil reads the children until their key is want, for a receiver
// that applies after its 2xx (as objectUntil); the checker judges the last read.
func (s *session) childrenUntil(ep Endpoint, objectID, phase string, want int64) {
	s.settled()
	deadline := time.Now().Add(s.settleFor())
	for {
		if s.children(ep, objectID, phase) == want || !s.env.Acceptance.Async || !time.Now().Before(deadline) || s.ctx.Err() != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noResurrection is ORDER-4 for one ordered role: update 1, the deletion
// carrying key 3, then update 2 arriving late under a new event ID (a retry
// that lost the race with the delete).
func (s *session) noResurrection(ep Endpoint, o *vocab.Ordered, f *orderFacts) {
	sub := s.newID(prefixOr(o.IDPrefix))
	s.createOrdered(ep, o, sub)
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	first := s.orderedEvent(ep, o, sub, 1, base)
	s.send(ep, first, roleUpdate, simulator.Shape{})
	s.settledNow()
	// The update's effect, once it shows: a receiver may commit a moment
	// after its 2xx.
	want := orderValue(o, first)
	f.wantKey(sub, want)
	if s.settle(1, func() int {
		if v, _, f := s.orderedObject(ep, o, sub, phaseBeforeDelete); f && v == want {
			return 1
		}
		return 0
	}) == 0 {
		// The update the deletion is judged against never showed: its setup
		// is the finding, and the deletion would judge nothing.
		s.note("%s %s does not hold its first update (key %d): the deletion and the stale update were not sent", roleName(o.Label, o.Type), sub, want)
		return
	}
	del := s.orderedEvent(ep, o, sub, 3, base)
	del.Type = o.Delete.Type
	del.Status = "deleted"
	s.noteOrdered(ep, o, del, true)
	s.send(ep, del, roleDelete, simulator.Shape{})
	s.settledNow()
	// The deletion's effect, once it shows: a receiver may commit a moment
	// after its 2xx.
	bv, bs, bf := s.lastObject(sub, phaseBeforeDelete)
	s.settle(1, func() int {
		if v, st, f := s.orderedObject(ep, o, sub, phaseAfterDelete); v != bv || st != bs || f != bf {
			return 1
		}
		return 0
	})
	stale := s.orderedEvent(ep, o, sub, 2, base)
	s.send(ep, stale, roleLate, simulator.Shape{})
	staleKey := orderValue(o, stale)
	if f.StaleKey == nil {
		f.StaleKey = &staleKey
	}
	if f.StaleKeys == nil {
		f.StaleKeys = map[string]int64{}
	}
	f.StaleKeys[sub] = staleKey
	f.wantKey(sub, want)
	s.orderedObject(ep, o, sub, phaseFinal)
}

// versionCheck judges an ordered object's final key against the newest sent.
func versionCheck(what string) func(v *view, f *orderFacts) {
	return func(v *view, f *orderFacts) {
		v.acked(codeOrderNotAcked, roleUpdate, roleStream, roleLate)
		if f.WantVersion == nil && len(f.WantKey) == 0 {
			v.fail("history: fact want_version: missing")
			return
		}
		os := v.roleReads(queryObject, phaseFinal)
		if len(os) == 0 {
			v.fail("history: no object read at the end of the stream")
		}
		// The last read of each object: earlier ones were made while an
		// asynchronous receiver was still settling (objectUntil).
		last := map[string]history.Observation{}
		var ids []string
		for _, o := range os {
			if _, seen := last[o.Params[3]]; !seen {
				ids = append(ids, o.Params[3])
			}
			last[o.Params[3]] = o
		}
		for _, id := range ids {
			o := last[id]
			want, ok := f.WantKey[id]
			if !ok && f.WantVersion == nil {
				v.fail("history: fact want_key:%s: missing", id)
				return
			} else if !ok {
				want = *f.WantVersion
			}
			if !o.Found || o.Version != want {
				v.deviate(codeOrderRegressed, "%s: %sobject %s is at version %d (status %q, found %v), want %d", what, roleOf(o), o.Params[3], o.Version, o.Status, o.Found, want)
			}
		}
	}
}

// wantKey records the key object obj must end at: want_version for a run of
// one object (as histories always had it), want_key per object beside it.
func (f *orderFacts) wantKey(obj string, want int64) {
	if f.WantVersion == nil {
		f.WantVersion = &want
	}
	if f.WantKey == nil {
		f.WantKey = map[string]int64{}
	}
	f.WantKey[obj] = want
}

// roleOf names the role of a read of a role after the first ("" otherwise),
// for evidence.
func roleOf(o history.Observation) string {
	if l := vocab.QueryLabel(o.Query); l != "" {
		return l + " "
	}
	return ""
}

// objectText renders an object read for evidence.
func objectText(o history.Observation) string {
	if !o.Found {
		return "no row"
	}
	if o.Status != "" {
		return fmt.Sprintf("key %d, status %q", o.Version, o.Status)
	}
	return fmt.Sprintf("key %d", o.Version)
}

// factText renders an optional fact for evidence ("" when absent).
func factText(p *int64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
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
	s.noteOrdered(ep, o, ev, false)
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
