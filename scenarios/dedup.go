package scenarios

import (
	"bytes"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// DEDUP: one retained event key gates one effect, however often and however
// concurrently the event arrives, and only that key: the same ID in another
// scope, or another ID with the same payload, is another event.
var dedupFamily = family{Name: "DEDUP", Guarantees: []*Guarantee{&dedup1, &dedup2, &dedup3, &dedup4, &dedup5, &dedup6, &dedup7, &dedup8}}

// The DEDUP deviation codes.
var (
	codeDedupNotAcked      = Code{"dedup.not-acked", "a valid delivery (a copy, a redelivery, the same ID in another scope) was not acknowledged"}
	codeDedupRows          = Code{"dedup.rows", "the event's key rows are not what one event per key means (0 or more than 1); object-version: its object does not hold its key"}
	codeDedupEffects       = Code{"dedup.effects", "the event's effects are not exactly one"}
	codeDedupObjectEffects = Code{"dedup.object-effects", "one business operation was applied other than once"}
	codeDedupTruncated     = Code{"dedup.identity-truncated", "an event whose ID differs from another's only in its last byte was not stored and applied as its own event: the key keeps only part of the ID"}
	codeDedupCaseFolded    = Code{"dedup.identity-case-folded", "an event whose ID differs from another's only in the case of one letter was not stored and applied as its own event: the key ignores case"}
)

// dedupFacts are what the DEDUP scenarios fix for their checkers.
type dedupFacts struct {
	// WantEffects is each lifecycle object's count of effects at the end.
	WantEffects map[string]int64 `fact:"want_effects:"`
}

// copiesDEDUP1 is how many copies of one delivery DEDUP-1 releases together.
const copiesDEDUP1 = 16

// DEDUP-6 reads an object's effects after each pair of events.
const (
	phaseSequential = "sequential"
	phaseConcurrent = "concurrent"
)

var dedup1 = Guarantee{
	ID: "DEDUP-1", Title: "Concurrent duplicates",
	Promise: "Concurrent copies of one delivery converge on one event row and one effect, and every copy is acknowledged.",
	Why:     "Providers retry while a first attempt is still running; a check-then-insert receiver applies the event twice.",
	Spec:    "concurrent copies converge on one row and one effect, all acknowledged",
	Sends:   "16 copies of one `effect` event, released together (lock-gated when the target allows it, at the role's table), on every endpoint; with several `effect` roles, the first (in a seeded order) on every endpoint and each other on the first endpoint",
	Expects: "every copy 2xx; 1 event row; 1 effect",
	Race:    "the 16 copies, held at the event table before any commits",
	codes:   []Code{codeDedupNotAcked, codeDedupRows, codeDedupEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key rows after 16 concurrent copies: 1"}, {Query: queryEffects, Tells: "the event's effects: 1"}},
	judge: bind(func(s *session, _ *noFacts) {
		// Every endpoint, one after another: each is its own provider, account
		// and secret, and each must deduplicate. Every effect role, in a
		// seeded order: the first on every endpoint, the others (each held
		// at its own table) on the primary one.
		for i, r := range s.storeRoles() {
			eps := s.endpoints()
			if i > 0 {
				eps = eps[:1]
			}
			for _, ep := range eps {
				ev := s.storeEventOf(ep, r)
				k := s.key(ep, ev)
				var rel history.Release
				// Every copy reaches the table before any commits: the race is certain.
				s.race(s.storeTable(r), copiesDEDUP1, func() { _, rel = s.copies(ep, ev, copiesDEDUP1, roleCopy, simulator.Shape{}) })
				s.note("%s: %d of %d copies held back and released together, %d sent on their own (the barrier stood %s, fell: %s); send spread %s",
					ep.name(), rel.Released, rel.Copies, rel.Late, time.Duration(rel.PreopenNS).Round(time.Millisecond), rel.FellBecause, time.Duration(rel.SpreadNS))
				s.state(k, phaseAfter, 1)
			}
		}
	}, func(v *view, _ *noFacts) {
		v.acked(codeDedupNotAcked, roleCopy)
		v.stored(codeDedupRows, phaseAfter, "after concurrent copies")
		v.appliedOnce(codeDedupEffects, phaseAfter, "after concurrent copies")
	}),
}

var dedup2 = Guarantee{
	ID: "DEDUP-2", Title: "Redelivery after a lost acknowledgement",
	Promise: "A redelivery after a lost acknowledgement is acknowledged and changes nothing.",
	Why:     "The provider never saw the first 2xx, so it sends the event again; a receiver that errors on the duplicate is retried for days.",
	Spec:    "a redelivery after a lost acknowledgement changes nothing",
	Sends:   "one `effect` event per endpoint, its first 2xx thrown away, redelivered after the profile's first retry delay, then resent",
	Expects: "every attempt 2xx; 1 event row; 1 effect",
	codes:   []Code{codeDedupNotAcked, codeDedupRows, codeDedupEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key rows after its first delivery and after the redeliveries: 1"}, {Query: queryEffects, Tells: "the event's effects after the redeliveries: 1"}},
	judge: bind(func(s *session, _ *noFacts) {
		// Every endpoint at once: each waits its own profile's retry delay.
		var jobs []func()
		for _, ep := range s.endpoints() {
			ev := s.storeEvent(ep)
			k := s.key(ep, ev)
			jobs = append(jobs, func() {
				// The first response is read and thrown away: the provider never saw the
				// 2xx and redelivers, re-signed, after its first retry delay (compressed).
				s.send(ep, ev, roleFirst, simulator.Shape{Faults: simulator.Faults{LostAck: simulator.LostAckDiscard}})
				if s.objectVersion() {
					s.states(phaseAfterFirst, 1, k)
				} else {
					s.settle(1, func() int { return s.rows(k, phaseAfterFirst) })
				}
				if d, ok := simulator.ScheduleFor(ep.Profile, nil).Next(2, 0, 0, nil); ok {
					clock := simulator.Clock{Scale: s.env.TimeScale}
					s.note("%s redelivers after %s of provider time (%s here)", ep.name(), d, clock.Real(d).Round(time.Millisecond))
					_ = clock.Sleep(s.ctx, d)
				} else {
					// No automatic retries (e.g. GitHub): a person presses "Redeliver".
					s.note("%s: profile %s does not retry on its own; redelivering by hand as its users do", ep.name(), ep.Profile.ID())
				}
				s.send(ep, ev, roleRedelivery, simulator.Shape{Attempt: 2})
				// A person may also press "resend" later: still the same event.
				s.send(ep, ev, roleResend, simulator.Shape{Attempt: 3})
				s.state(k, phaseAfter, 1)
			})
		}
		s.together(jobs...)
	}, func(v *view, _ *noFacts) {
		for _, a := range v.role(roleFirst) {
			// Its answer was thrown away on purpose; the receiver still had to say 2xx.
			if !is2xx(a.Status) {
				v.deviate(codeDedupNotAcked, "first delivery of %s was answered %s", a.Key.EventID, Describe(a))
			}
		}
		v.stored(codeDedupRows, phaseAfterFirst, "after the first delivery (its acknowledgement lost)")
		v.acked(codeDedupNotAcked, roleRedelivery, roleResend)
		v.stored(codeDedupRows, phaseAfter, "after the redeliveries")
		v.appliedOnce(codeDedupEffects, phaseAfter, "after the redeliveries")
	}),
}

var dedup3 = Guarantee{
	ID: "DEDUP-3", Title: "Account scope",
	Promise: "The same event ID under another account is a different event and is applied.",
	Why:     "Event IDs are unique per provider account at best; a global key silently drops another tenant's event.",
	Needs:   []Capability{"multi-account"},
	Spec:    "the same event ID under another account is a different event",
	Sends:   "one `effect` event ID to two accounts' endpoints",
	Expects: "both 2xx; 1 row and 1 effect under each account",
	codes:   []Code{codeDedupNotAcked, codeDedupRows, codeDedupEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "accounts: one event ID goes to two accounts, so a query that ignores $2 reads 2 for each"}, {Query: queryEffects, Tells: "accounts, as event_rows: 1 under each"}},
	judge: bind(func(s *session, _ *noFacts) {
		a, b, _ := s.env.sameProfileTwoAccounts()
		evA := s.effectEvent(a)
		evB := evA
		evB.Source, evB.Account = b.source(), b.Account
		s.send(a, evA, roleFirst, simulator.Shape{})
		s.send(b, evB, roleOtherScope, simulator.Shape{})
		s.states(phaseAfter, 1, s.key(a, evA), s.key(b, evB))
	}, scopeCheck("same event ID under two accounts")),
}

var dedup4 = Guarantee{
	ID: "DEDUP-4", Title: "Source scope",
	Promise: "The same event ID from another source is a different event and is applied.",
	Why:     "Two providers (or test and live) can produce the same ID; keying on the ID alone drops one of them.",
	Needs:   []Capability{"multi-source"},
	Spec:    "the same event ID from another source is a different event",
	Sends:   "one `effect` event ID through two sources' endpoints",
	Expects: "both 2xx; 1 row and 1 effect under each source",
	codes:   []Code{codeDedupNotAcked, codeDedupRows, codeDedupEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "sources: one event ID goes through two sources, so a query that ignores $1 reads 2 for each"}, {Query: queryEffects, Tells: "sources, as event_rows: 1 under each"}},
	judge: bind(func(s *session, _ *noFacts) {
		a, b, _ := s.env.twoProfilesOneAccount()
		evA := s.effectEvent(a)
		evB := s.effectEvent(b)
		evB.ID = evA.ID
		s.send(a, evA, roleFirst, simulator.Shape{})
		s.send(b, evB, roleOtherScope, simulator.Shape{})
		s.states(phaseAfter, 1, s.key(a, evA), s.key(b, evB))
	}, scopeCheck("same event ID from two sources")),
}

var dedup5 = Guarantee{
	ID: "DEDUP-5", Title: "Identical payloads, different IDs",
	Promise: "Different event IDs with identical payload text are different events and are both applied.",
	Why:     "Deduplicating on a hash of the body drops genuinely repeated business events (two equal top-ups).",
	Needs:   []Capability{"header-event-id"},
	Spec:    "different event IDs with identical payload text are both applied",
	Sends:   "two `effect` events with byte-identical bodies and different header event IDs",
	Expects: "both 2xx; 1 row and 1 effect each",
	codes:   []Code{codeDedupNotAcked, codeDedupRows, codeDedupEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "event IDs: the two bodies are byte-identical and only $3 differs"}, {Query: queryEffects, Tells: "event IDs: both events carry one object ($4), so a query keyed on $4 alone reads 2 for each"}},
	judge: bind(func(s *session, _ *noFacts) {
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
		s.send(ep, ev1, roleFirst, simulator.Shape{})
		s.send(ep, ev2, roleOtherScope, simulator.Shape{})
		s.states(phaseAfter, 1, s.key(ep, ev1), s.key(ep, ev2))
	}, scopeCheck("identical payload, distinct event IDs")),
}

var dedup6 = Guarantee{
	ID: "DEDUP-6", Title: "One business operation, one effect",
	Promise: "Two different event IDs for one business operation are held to one effect by a domain constraint.",
	Why:     "Providers sometimes emit two events for one change; the event key alone cannot stop a double credit.",
	Needs:   []Capability{"domain-constraint"},
	Spec:    "two event IDs for one business operation apply one effect",
	Sends:   "for every `lifecycle` object with an `effects` query (in a seeded order), every effect transition from every reachable state: an object brought to that state, then the transition twice under two event IDs: one after the other, then at once (lock-gated at the object's table, else the effect table, when the target allows it)",
	Expects: "the object's effects are its path's plus one",
	Race:    "the two events for one object, held at the effect table after whatever check each makes",
	codes:   []Code{codeDedupNotAcked, codeDedupObjectEffects, codeSetupUnmet},
	Reads:   []Read{{Query: queryState, Tells: "each object's state ($4) after its setup: the state its path leads to"}, {Query: queryObjectEffects, Tells: "every effect on one object ($4), whichever event applied it: its path's plus one"}},
	judge: bind(func(s *session, f *dedupFacts) {
		ep := s.primary()
		// Every lifecycle object whose effects the target counts, in a
		// seeded order; a child object is created through its parent.
		var run int
		ls := s.lifecycles()
		for _, l := range ls {
			if !l.CountsEffects {
				s.note("%s: no effects query, its effects cannot be counted", l.Object)
				continue
			}
			cases := effectCases(l)
			if len(cases) == 0 {
				s.note("no transition of %s applies an effect from a reachable state", l.Object)
				continue
			}
			run++
			if f.WantEffects == nil {
				f.WantEffects = map[string]int64{}
			}
			for _, c := range cases {
				want := int64(vocab.EffectsOf(c.path) + 1)
				s.note("%s sent twice under two event IDs after %s: %d effect(s) in all", c.t.Type, describePath(l, c.path), want)

				// Sequential: the provider emits a second event for the same change.
				obj := s.newObject(l)
				if s.setUp(ep, l, obj, c.path) {
					first := s.objectEvent(ep, c.t.Type, obj)
					second := s.objectEvent(ep, c.t.Type, obj)
					s.send(ep, first, roleFirst, simulator.Shape{})
					s.send(ep, second, roleOtherScope, simulator.Shape{})
					f.WantEffects[obj] = want
					s.settle(int(want), func() int { return s.objectEffectsOf(l, ep.source(), ep.Account, obj, phaseSequential) })
				}

				// Concurrent: both held where the effect is written, released together.
				obj2 := s.newObject(l)
				if s.setUp(ep, l, obj2, c.path) {
					a := s.objectEvent(ep, c.t.Type, obj2)
					b := s.objectEvent(ep, c.t.Type, obj2)
					s.raceAtEffectOf(l, func() { s.parallel(ep, []profiles.Event{a, b}, roleCopy, simulator.Shape{}) })
					f.WantEffects[obj2] = want
					s.settle(int(want), func() int { return s.objectEffectsOf(l, ep.source(), ep.Account, obj2, phaseConcurrent) })
				}
			}
		}
		switch {
		case run > 0:
		case len(ls) == 1 && !ls[0].CountsEffects:
			s.notApplicable("the target declares no events.lifecycle.effects query: an object's effects cannot be counted")
		case len(ls) == 1:
			s.notApplicable("no transition of %s applies an effect from a reachable state", ls[0].Object)
		default:
			s.notApplicable("no lifecycle object with an effects query has a transition that applies an effect from a reachable state")
		}
	}, func(v *view, f *dedupFacts) {
		v.acked(codeDedupNotAcked, roleSetup, roleFirst, roleOtherScope, roleCopy)
		// An object whose setup did not hold got no pair of events: its reads
		// are absent, and only a phase every object skipped goes unread.
		unmet := v.setupUnmet()
		for _, ph := range []struct{ phase, what string }{
			{phaseSequential, "two events for one change, one after the other"},
			{phaseConcurrent, "two events for one change at the same time"},
		} {
			if len(unmet) > 0 && len(v.reads(queryObjectEffects, ph.phase)) == 0 {
				continue
			}
			v.objectEffectsOnce(codeDedupObjectEffects, ph.phase, f.WantEffects, 1, ph.what)
		}
	}),
}

// effectCase is one effect transition from one reachable state, and the path
// that brings a new object there.
type effectCase struct {
	t    vocab.Transition
	path []vocab.Transition
}

// effectCases lists every effect transition of l from every state an object
// can be brought to, in declaration order.
func effectCases(l *vocab.Lifecycle) []effectCase {
	var out []effectCase
	for _, tr := range l.Transitions {
		if !tr.Effect {
			continue
		}
		for _, from := range tr.From {
			if p, ok := l.Path(from); ok {
				out = append(out, effectCase{tr, p})
			}
		}
	}
	return out
}

// raceAtEffectOf runs fire — two events for one object of l, sent at once —
// held at a lock gate on the table the effect is written to (l's own table,
// else the effect table, else the event table), where the target allows it:
// each receiver transaction has made whatever check it makes before either
// can write. A gate that held nobody leaves the race to timing, and says so.
func (s *session) raceAtEffectOf(l *vocab.Lifecycle, fire func()) {
	if ok, why := s.env.has("lock-gating"); !ok {
		s.unforced("no lock gate (%s): the two events were sent at the same time and left to meet by timing", why)
		fire()
		return
	}
	table := s.env.EffectTable
	if l != nil && l.Table != "" {
		table = l.Table
	}
	if table == "" {
		table = s.env.EventTable
		s.note("the target names no effect table (%s.effect_table): the two events are held at their event-key insert instead", s.env.kindField())
	}
	if g := s.tryGate(table, 2, fire); g.Held() == 0 && !g.Refused {
		s.unforced("no receiver session reached %s while it was locked: the object's effects are not written there, so the race was left to timing (%s.effect_table names the table they are written to)", table, s.env.kindField())
	}
}

// interveningDEDUP7 is how many other events DEDUP-7 delivers between an event
// and its redelivery, in batches of batchDEDUP7 sent together: well past the
// windows receivers keep of "recent" IDs (a Redis list, an LRU cache).
const (
	interveningDEDUP7 = 100
	batchDEDUP7       = 25
)

var dedup7 = Guarantee{
	ID: "DEDUP-7", Title: "Redelivery after many other events",
	Promise: "A redelivery that arrives after many other events is still a duplicate: it is acknowledged and changes nothing.",
	Why:     "Receivers that remember only recent event IDs (a bounded cache or list) forget an event after enough others, and apply its redelivery a second time.",
	Spec:    "a redelivery after many other events is still a duplicate",
	Sends:   "one `effect` event, then 100 other `effect` events in batches of 25 sent together, then the first redelivered",
	Expects: "every delivery 2xx; the first event still 1 event row and 1 effect",
	codes:   []Code{codeDedupNotAcked, codeDedupRows, codeDedupEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "the first event's key rows after 100 other events and its redelivery: 1"}, {Query: queryEffects, Tells: "the first event's effects: 1"}},
	judge: bind(func(s *session, _ *noFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		others := make([]profiles.Event, interveningDEDUP7)
		for i := range others {
			others[i] = s.effectEvent(ep)
		}
		s.send(ep, ev, roleFirst, simulator.Shape{})
		for i := 0; i < len(others); i += batchDEDUP7 {
			s.parallel(ep, others[i:min(i+batchDEDUP7, len(others))], roleLoad, simulator.Shape{})
		}
		s.send(ep, ev, roleRedelivery, simulator.Shape{Attempt: 2})
		s.state(k, phaseAfter, 1)
	}, func(v *view, _ *noFacts) {
		v.acked(codeDedupNotAcked, roleFirst, roleLoad, roleRedelivery)
		v.count(codeDedupRows, queryEventRows, phaseAfter, 1, "after a redelivery that followed 100 other events")
		v.once(codeDedupEffects, phaseAfter, "after a redelivery that followed 100 other events")
	}),
}

// Roles and phase of DEDUP-8: the event, and its twins whose IDs differ from
// its own in one byte.
const (
	roleIdentity         = "identity"
	roleIdentityLastByte = "identity-last-byte"
	roleIdentityCase     = "identity-case"
	phaseIdentity        = "identity"
)

var dedup8 = Guarantee{
	ID: "DEDUP-8", Title: "Event identity is exact",
	Promise: "Two events whose IDs differ in a single byte — the last one, or the case of one letter — are two events: both are stored and applied.",
	Why:     "A key column or index that keeps only the first characters of an ID, or compares IDs without regard to case, drops a genuine event as a duplicate of another.",
	Needs:   []Capability{"event-identity"},
	Spec:    "two event IDs that differ in one byte are two events",
	Sends:   "on the first endpoint of every profile that lists where its event ID lives: an `effect` event with a 64-byte ID, then one whose ID differs in its last byte, then one whose ID differs only in the case of its first letter (the same ID under another account is DEDUP-3's)",
	Expects: "all three 2xx; 1 row and 1 effect each",
	codes:   []Code{codeDedupNotAcked, codeDedupTruncated, codeDedupCaseFolded, codeDedupRows, codeDedupEffects},
	Reads: []Read{{Query: queryEventRows, Tells: "event IDs byte for byte: the three IDs differ in one byte each, so a query (or key) that cuts IDs short or ignores case reads 0 or 2"},
		{Query: queryEffects, Tells: "the three events' effects: 1 each"}},
	judge: bind(func(s *session, _ *noFacts) {
		seen := map[string]bool{}
		var jobs []func()
		for _, ep := range s.endpoints() {
			in, ok := ep.identityID()
			if !ok || seen[ep.Profile.ID()] {
				continue
			}
			// Accounts of one profile share the code path; another account is DEDUP-3's.
			seen[ep.Profile.ID()] = true
			base := s.effectEvent(ep)
			base.ID = s.longID(base.ID)
			lastByte, caseTwin := identityTwins(base.ID)
			evs := []profiles.Event{base, s.effectEvent(ep)}
			evs[1].ID = lastByte
			roles := []string{roleIdentity, roleIdentityLastByte}
			if caseTwin != "" {
				ev := s.effectEvent(ep)
				ev.ID = caseTwin
				evs, roles = append(evs, ev), append(roles, roleIdentityCase)
			}
			keys := make([]profiles.Key, len(evs))
			for i, ev := range evs {
				keys[i] = s.key(ep, ev)
			}
			s.note("%s: event IDs of %d bytes where %s puts them (%s), one differing in its last byte, one in the case of its first letter", ep.name(), len(base.ID), ep.Profile.ID(), where(in))
			jobs = append(jobs, func() {
				// One after another: the second must not be mistaken for the first.
				for i, ev := range evs {
					s.send(ep, ev, roles[i], simulator.Shape{})
				}
				s.states(phaseIdentity, 1, keys...)
			})
		}
		s.together(jobs...)
	}, func(v *view, _ *noFacts) {
		if len(v.role(roleIdentity)) == 0 {
			v.fail("history: %s sent no event", v.sc.Name)
			return
		}
		v.acked(codeDedupNotAcked, roleIdentity, roleIdentityLastByte, roleIdentityCase)
		for _, r := range []struct {
			role string
			code Code
			what string
		}{
			{roleIdentity, codeDedupRows, "the first of three IDs one byte apart"},
			{roleIdentityLastByte, codeDedupTruncated, "an ID differing from another only in its last byte"},
			{roleIdentityCase, codeDedupCaseFolded, "an ID differing from another only in the case of its first letter"},
		} {
			for _, a := range v.role(r.role) {
				for _, q := range []string{queryEventRows, queryEffects} {
					o, ok := v.read(q, phaseIdentity, keyParams(a.Key))
					if !ok {
						v.fail("history: no %s read of %s in phase %q", q, KeyString(a.Key), phaseIdentity)
						return
					}
					code := r.code
					if code == codeDedupRows && q == queryEffects {
						code = codeDedupEffects
					}
					if o.Count != 1 {
						v.deviate(code, "%s: %s for %s: got %d, want 1", r.what, q, KeyString(a.Key), o.Count)
					}
				}
			}
		}
		v.note("the same event ID under another account is DEDUP-3's check")
	}),
}

// scopeCheck judges two events that must both be applied: the same ID in two
// scopes, or two IDs with one payload.
func scopeCheck(what string) func(v *view, _ *noFacts) {
	return func(v *view, _ *noFacts) {
		v.acked(codeDedupNotAcked, roleFirst, roleOtherScope)
		v.count(codeDedupRows, queryEventRows, phaseAfter, 1, what)
		v.count(codeDedupEffects, queryEffects, phaseAfter, 1, what)
	}
}

// describePath names the transitions that lead an object to a state.
func describePath(l *vocab.Lifecycle, path []vocab.Transition) string {
	out := "creation (" + l.Initial + ")"
	for _, t := range path {
		out += ", " + t.Type + " (" + t.To + ")"
	}
	return out
}
