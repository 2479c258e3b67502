package scenarios

import (
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// ATOMIC: the key and the business change commit in one transaction, so a
// crash, a failed precondition or a lost connection leaves neither, and the
// provider's redelivery applies the event once.
var atomicFamily = family{Name: "ATOMIC", Guarantees: []*Guarantee{&atomic1, &atomic2, &atomic3, &atomic4, &atomic5}}

// The ATOMIC deviation codes.
var (
	codeAtomicAckedUncommitted = Code{"atomic.acked-uncommitted", "a delivery was acknowledged although its transaction could not have committed (crash, failed precondition, lost connection)"}
	codeAtomicPartial          = Code{"atomic.partial", "a key row or an effect (object-version: the update's key on its object) survived a transaction that did not commit"}
	codeAtomicNotAcked         = Code{"atomic.not-acked", "a valid delivery or redelivery was not acknowledged"}
	codeAtomicNotApplied       = Code{"atomic.not-applied", "after the redelivery (or a commit before a crash) the event is not stored exactly once (object-version: its object does not hold its key)"}
	codeAtomicObjectState      = Code{"atomic.object-state", "the lifecycle object is not in the state its events lead to"}
	codeAtomicMissingLost      = Code{"atomic.missing-lost", "an event for an object that did not exist yet was acknowledged, and not applied once the object existed: the change is lost"}
)

// atomicFacts are what the ATOMIC scenarios fix for their checkers.
type atomicFacts struct {
	// WantState is the state each lifecycle object must end in.
	WantState map[string]string `fact:"want_state:"`
	// EventOf is the event ID sent for an object that did not exist yet.
	EventOf map[string]string `fact:"event_of:"`
}

// rolePremature is an event sent before its precondition (ATOMIC-2);
// roleMissing, with ":" and the declared rule, one for an object that does
// not exist (ATOMIC-5).
const (
	rolePremature = "premature"
	roleMissing   = "missing"
)

var atomic1 = Guarantee{
	ID: "ATOMIC-1", Title: "Crash before commit",
	Promise: "A crash before commit leaves neither the key nor the change, and a redelivery after restart applies the event once.",
	Why:     "A key committed apart from its change turns a crash into a lost event; a change committed apart from its key turns it into a double.",
	Needs:   []Capability{"crash", "stop-in-transaction"},
	Spec:    "a crash before commit leaves nothing, and the redelivery applies once",
	Sends:   "one `effect` event crashed inside its transaction (failpoint after-insert-before-commit), or, without failpoints, one SIGKILLed while it waits on the locked effect table and one while it waits on the locked event table; each redelivered",
	Expects: "not acknowledged; 0 rows and 0 effects after the restart; the redelivery 2xx, 1 row, 1 effect (async acceptance: accepted, then applied once)",
	codes:   []Code{codeAtomicAckedUncommitted, codeAtomicPartial, codeAtomicNotAcked, codeAtomicNotApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key rows after the crash (0) and after the redelivery (1)"}, {Query: queryEffects, Tells: "the event's effects, likewise"}},
	judge: bind(func(s *session, _ *noFacts) {
		ep := s.primary()
		ev := s.storeEvent(ep)
		k := s.key(ep, ev)
		if ok, _ := s.env.has("failpoints"); ok {
			// The exact path: the receiver kills itself between insert and commit.
			s.arm(fpAfterInsertBeforeCommit, k.EventID)
			a := s.send(ep, ev, roleDoomed, simulator.Shape{})
			s.crashedRestart(fpAfterInsertBeforeCommit)
			s.state(k, phaseAfterCrash, 0)
			s.redeliverUnlessAcked(ep, ev, k, a)
			return
		}
		// Without failpoints: hold each table the receiver writes in its
		// transaction, so it stops there, and SIGKILL it there.
		for i, table := range s.cutTables(ev) {
			if i > 0 {
				ev = s.storeEvent(ep)
				k = s.key(ep, ev)
			}
			a := s.holdAndCut(ep, ev, table, s.killAt)
			s.restart()
			s.afterCut(ep, ev, k, a, phaseAfterCrash)
		}
	}, func(v *view, _ *noFacts) {
		cutCheck(v, phaseAfterCrash, "a crash before commit")
	}),
}

var atomic2 = Guarantee{
	ID: "ATOMIC-2", Title: "Failed precondition rolls back",
	Promise: "A failed business precondition rolls back the key with the change and answers non-2xx; a later redelivery succeeds.",
	Why:     "If the key survives the failed attempt, every redelivery is taken for a duplicate and the event is lost.",
	Needs:   []Capability{"state-machine"},
	Spec:    "a failed precondition rolls back the key and is retried successfully",
	Sends:   "for every `lifecycle` object (in a seeded order) and every state, each event that can only follow it later (a refund of a payment not yet succeeded), sent early, then again once its precondition holds",
	Expects: "the early one non-2xx with 0 event rows; the redelivery 2xx, 1 row, the object in the transition's state",
	codes:   []Code{codeAtomicAckedUncommitted, codeAtomicPartial, codeAtomicNotAcked, codeAtomicNotApplied, codeAtomicObjectState, codeSetupUnmet},
	Reads:   []Read{{Query: queryEventRows, Tells: "the key rows of a `lifecycle` event, not only of `effect` ones: 0 after its refusal, 1 after its redelivery"}, {Query: queryState, Tells: "each object's state ($4) after its setup and once the precondition held"}},
	judge: bind(func(s *session, f *atomicFacts) {
		ep := s.primary()
		// Every lifecycle object, in a seeded order; a child object is
		// created through its parent (create).
		var run int
		ls := s.lifecycles()
		for _, l := range ls {
			// Every state with every event that can only come later from it.
			type item struct {
				pair         vocab.Pair
				path, onward []vocab.Transition
			}
			var items []item
			for _, p := range l.Forbidden() {
				if p.Stale {
					continue
				}
				path, _ := l.Path(p.State)
				for _, from := range p.T.From {
					if onward, ok := l.PathFrom(p.State, from); ok {
						items = append(items, item{p, path, onward})
						break
					}
				}
			}
			if len(items) == 0 {
				s.note("no event of %s can arrive before its precondition: every transition not allowed from a state is one the object is already past", l.Object)
				continue
			}
			run++
			if f.WantState == nil {
				f.WantState = map[string]string{}
			}
			for _, it := range items {
				pair := it.pair
				s.note("%s arrives while %s is %s (allowed from %v), before its precondition", pair.T.Type, l.Object, pair.State, pair.T.From)
				obj := s.newObject(l)
				if !s.setUp(ep, l, obj, it.path) {
					continue // its setup is the finding: the early event would judge nothing
				}
				early := s.objectEvent(ep, pair.T.Type, obj)
				k := s.key(ep, early)
				a := s.send(ep, early, rolePremature, simulator.Shape{})
				// A lifecycle event's effect is the object's state (and its effects),
				// not the effect role's per-event count: its key rows are read. An
				// accepted one (async) keeps its key, rightly, until it applies.
				if !acked(a) {
					s.rows(k, phaseAfterRefusal)
				}
				if acked(a) {
					// Accepted early, the event may apply as soon as its
					// precondition holds: the state after the onward path is
					// not the setup's alone.
					s.drive(ep, obj, it.onward)
				} else if !s.driveOn(ep, l, obj, pair.State, it.onward) {
					continue
				}
				f.WantState[obj] = pair.T.To
				switch {
				case acked(a) && s.async():
					// Accepted before its precondition: the receiver must keep it and
					// apply it once the precondition holds.
				case acked(a):
					s.note("the early %s was acknowledged, so the provider will not redeliver it", pair.T.Type)
				default:
					s.send(ep, early, roleRedelivery, simulator.Shape{Attempt: 2})
					s.settle(1, func() int { return s.rows(k, phaseAfter) })
				}
				s.settle(1, func() int {
					if st, found := s.lifecycleStateOf(ep, l, obj, phaseAfter); found && st == pair.T.To {
						return 1
					}
					return 0
				})
			}
		}
		if run == 0 && len(ls) == 1 {
			s.notApplicable("no event of %s can arrive before its precondition: every transition not allowed from a state is one the object is already past", ls[0].Object)
		} else if run == 0 {
			s.notApplicable("no event of any lifecycle object can arrive before its precondition: every transition not allowed from a state is one the object is already past")
		}
	}, func(v *view, f *atomicFacts) {
		for _, a := range v.role(rolePremature, "refund-early") {
			if acked(a) && !v.async() {
				v.deviate(codeAtomicAckedUncommitted, "%s arrived before its precondition and was acknowledged (%s); the provider will not retry it", a.EventType, Describe(a))
			}
		}
		v.countIf(codeAtomicPartial, queryEventRows, phaseAfterRefusal, 0, "after the failed precondition")
		v.acked(codeAtomicNotAcked, roleSetup)
		if len(v.role(roleRedelivery)) > 0 {
			v.acked(codeAtomicNotAcked, roleRedelivery)
			v.count(codeAtomicNotApplied, queryEventRows, phaseAfter, 1, "after the redelivery once the precondition held")
		}
		unmet := v.setupUnmet()
		if len(v.stateReads(phaseAfter)) == 0 {
			if len(unmet) == 0 {
				v.fail("history: %s has no state read of the objects once their precondition held", v.sc.Name)
			}
			return
		}
		v.objectState(codeAtomicObjectState, phaseAfter, f.WantState, "refunded", "after the precondition held and the event was redelivered")
	}),
}

var atomic3 = Guarantee{
	ID: "ATOMIC-3", Title: "Lost database connection",
	Promise: "A database connection lost in the middle of the transaction leaves nothing partial, and a redelivery applies the event once.",
	Why:     "A receiver that committed part of its work in an earlier transaction is left half-done by a network blip.",
	Needs:   []Capability{"connection-loss"},
	Spec:    "a lost database connection mid-transaction leaves nothing partial",
	Sends:   "one `effect` event whose database sessions are terminated while it waits on the locked effect table, and one while it waits on the locked event table (where the target names it apart); each redelivered",
	Expects: "as ATOMIC-1",
	codes:   []Code{codeAtomicAckedUncommitted, codeAtomicPartial, codeAtomicNotAcked, codeAtomicNotApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key rows after the lost connection (0) and after the redelivery (1)"}, {Query: queryEffects, Tells: "the event's effects, likewise"}},
	judge: bind(func(s *session, _ *noFacts) {
		if s.env.EffectTable == "" {
			s.notApplicable("%s.effect_table is not configured, so the harness cannot hold the receiver inside its transaction", s.env.kindField())
		}
		ep := s.primary()
		ev := s.storeEvent(ep)
		for i, table := range s.cutTables(ev) {
			if i > 0 {
				ev = s.storeEvent(ep)
			}
			a := s.holdAndCut(ep, ev, table, nil)
			s.afterCut(ep, ev, s.key(ep, ev), a, phaseAfterCut)
		}
	}, func(v *view, _ *noFacts) {
		cutCheck(v, phaseAfterCut, "the connection loss")
	}),
}

var atomic4 = Guarantee{
	ID: "ATOMIC-4", Title: "Commit uncertainty is retryable",
	Promise: "When the receiver dies after commit but before answering, the redelivery is acknowledged and applies nothing twice.",
	Why:     "The provider cannot know the commit happened; the receiver must make its retry harmless.",
	Needs:   []Capability{"crash", "failpoints"},
	Spec:    "a crash after commit, before the answer, makes the redelivery harmless",
	Sends:   "one `effect` event crashed after commit, before its answer (failpoint after-commit-before-response), then redelivered",
	Expects: "1 row and 1 effect after the restart; the redelivery 2xx, still 1 and 1",
	codes:   []Code{codeAtomicNotAcked, codeAtomicNotApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key rows after the crash and after the redelivery: 1 both times"}, {Query: queryEffects, Tells: "the event's effects, likewise"}},
	judge: bind(func(s *session, _ *noFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		s.arm(fpAfterCommitBeforeResponse, k.EventID)
		a := s.send(ep, ev, roleFirst, simulator.Shape{})
		s.note("first attempt: %s (outcome %s)", Describe(a), a.Outcome)
		s.crashedRestart(fpAfterCommitBeforeResponse)
		s.state(k, phaseAfterCrash, 1)
		s.send(ep, ev, roleRedelivery, simulator.Shape{Attempt: 2})
		s.state(k, phaseAfter, 1)
	}, func(v *view, _ *noFacts) {
		v.state(codeAtomicNotApplied, phaseAfterCrash, 1, "after a crash after commit")
		v.acked(codeAtomicNotAcked, roleRedelivery)
		v.stateOnce(codeAtomicNotApplied, phaseAfter, "after the redelivery")
	}),
}

var atomic5 = Guarantee{
	ID: "ATOMIC-5", Title: "Event before its object",
	Promise: "An event for an object that does not exist yet is never acknowledged and lost: it is answered non-2xx and applied once the object exists and the provider redelivers it, or it creates the object, as the target declares.",
	Why:     "Providers send events before the receiver's own application has written the row they refer to; a receiver that acknowledges and skips them loses the change for good.",
	Needs:   []Capability{"state-machine"},
	Spec:    "an event for an object that does not exist yet is never acknowledged and lost",
	Sends:   "for every `lifecycle` object (in a seeded order), every event type for an object that does not exist; then the object is created (its creating event or fixture) and brought to the event's precondition, and a refused event redelivered",
	Expects: "per the declared `missing`: retry: non-2xx and 0 rows, then applied once; create: 2xx and the object in the event's state; ignore: 2xx",
	codes:   []Code{codeAtomicMissingLost, codeAtomicPartial, codeAtomicNotAcked, codeAtomicNotApplied, codeAtomicObjectState, codeSetupUnmet},
	Reads:   []Read{{Query: queryEventRows, Tells: "the key rows of a `lifecycle` event for a missing object: 0 after its refusal, 1 after its redelivery"}, {Query: queryState, Tells: "the object's state ($4): no row while it does not exist, the event's state once applied"}},
	judge: bind(func(s *session, f *atomicFacts) {
		ep := s.primary()
		// Every lifecycle object, in a seeded order; a child object is
		// created through its parent (create).
		for _, l := range s.lifecycles() {
			// Every event type of the lifecycle, each for an object nobody created yet.
			type item struct {
				t   vocab.Transition
				obj string
				ev  profiles.Event
			}
			var items []item
			for _, t := range l.Transitions {
				obj := s.newObject(l)
				items = append(items, item{t, obj, s.objectEvent(ep, t.Type, obj)})
			}
			if f.WantState == nil {
				f.WantState, f.EventOf = map[string]string{}, map[string]string{}
			}
			for _, it := range items {
				rule := l.MissingRule(it.t)
				k := s.key(ep, it.ev)
				f.EventOf[it.obj] = k.EventID
				a := s.send(ep, it.ev, roleMissing+":"+rule, simulator.Shape{})
				s.note("%s for %s %s, which does not exist (declared: %s): %s", it.t.Type, l.Object, it.obj, rule, Describe(a))
				switch rule {
				case vocab.MissingCreate:
					f.WantState[it.obj] = it.t.To
					s.settle(1, func() int {
						if st, found := s.lifecycleStateOf(ep, l, it.obj, phaseAfter); found && st == it.t.To {
							return 1
						}
						return 0
					})
					continue
				case vocab.MissingIgnore:
					s.lifecycleStateOf(ep, l, it.obj, phaseAfterRefusal)
					continue
				}
				if !acked(a) {
					s.rows(k, phaseAfterRefusal)
				}
				// The object appears, as the receiver's application or the provider
				// creates it, and reaches the event's precondition.
				path, ok := l.Path(it.t.From[0])
				if !ok {
					s.abort("the lifecycle has no path to %s", it.t.From[0])
				}
				if !acked(a) {
					// Refused, the event cannot have moved the object: its setup must
					// hold before the redelivery is judged.
					if !s.setUp(ep, l, it.obj, path) {
						continue
					}
				} else {
					s.create(ep, l, it.obj)
					s.drive(ep, it.obj, path)
				}
				f.WantState[it.obj] = it.t.To
				if !acked(a) {
					s.send(ep, it.ev, roleRedelivery, simulator.Shape{Attempt: 2})
					s.settle(1, func() int { return s.rows(k, phaseAfter) })
				}
				s.settle(1, func() int {
					if st, found := s.lifecycleStateOf(ep, l, it.obj, phaseAfter); found && st == it.t.To {
						return 1
					}
					return 0
				})
			}
		}
	}, func(v *view, f *atomicFacts) {
		v.acked(codeAtomicNotAcked, roleSetup, roleRedelivery, roleMissing+":"+vocab.MissingCreate, roleMissing+":"+vocab.MissingIgnore)
		unmet := v.setupUnmet()
		v.countIf(codeAtomicPartial, queryEventRows, phaseAfterRefusal, 0, "after an event for an object that did not exist was refused")
		if len(v.role(roleRedelivery)) > 0 {
			v.count(codeAtomicNotApplied, queryEventRows, phaseAfter, 1, "after the object existed and the event was redelivered")
		}
		byObject := map[string]history.Attempt{}
		for _, a := range v.role(roleMissing + ":" + vocab.MissingRetry) {
			for obj, id := range f.EventOf {
				if id == a.Key.EventID {
					byObject[obj] = a
				}
			}
		}
		for _, o := range v.stateReads(phaseAfter) {
			want, ok := f.WantState[o.Params[3]]
			if !ok || unmet[o.Params[3]] {
				continue
			}
			if o.Found && o.Status == want {
				continue
			}
			if a, ok := byObject[o.Params[3]]; ok && acked(a) {
				v.deviate(codeAtomicMissingLost, "%s for %s %s, which did not exist yet, was acknowledged (%s); once the object existed it reads %s, not %q: the change is lost",
					a.EventType, v.objectNameOf(o), o.Params[3], Describe(a), readText(o), want)
				continue
			}
			v.deviate(codeAtomicObjectState, "%s %s reads %s, want %q", v.objectNameOf(o), o.Params[3], readText(o), want)
		}
		for _, o := range v.stateReads(phaseAfterRefusal) {
			if o.Found {
				v.note("%s %s exists after an event the target declares it ignores for missing objects (status %q)", v.objectNameOf(o), o.Params[3], o.Status)
			}
		}
		if len(v.stateReads(phaseAfter)) == 0 && len(v.stateReads(phaseAfterRefusal)) == 0 && len(unmet) == 0 {
			v.fail("history: no state read of the objects that did not exist")
		}
	}),
}

// cutCheck judges a transaction cut in the middle (a crash, a lost
// connection): unacknowledged, it left nothing and its redelivery applied once;
// acknowledged by a receiver that accepts before applying, it was still
// applied once.
func cutCheck(v *view, phase, what string) {
	doomed := v.role(roleDoomed)
	accepted := 0 // acknowledged by a receiver that accepts before it applies
	for _, a := range doomed {
		if !acked(a) {
			continue
		}
		if !v.async() {
			v.deviate(codeAtomicAckedUncommitted, "delivery was acknowledged although its transaction was cut by %s before it could commit: %s", what, Describe(a))
			continue
		}
		accepted++
	}
	// Every cut delivery but an accepted one was read right after the cut:
	// nothing of it may be stored.
	if accepted < len(doomed) {
		v.state(codeAtomicPartial, phase, 0, "after "+what)
	}
	// An accepted one must still be applied; a refused one is redelivered
	// and applied once.
	if accepted > 0 || len(v.role(roleRedelivery)) > 0 {
		v.acked(codeAtomicNotAcked, roleRedelivery)
		v.stateOnce(codeAtomicNotApplied, phaseAfter, "after the redelivery, or accepted before "+what+" cut its worker")
	}
	if v.objectVersion() {
		v.onceUnjudged()
	}
}
