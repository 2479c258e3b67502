package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Store checks by idempotency style. A ledger receiver shows an event stored
// by its event rows and applied once by its effects. An object-version
// receiver keeps no event rows: an event is stored when the object it updates
// holds the event's ordering key (or a newer one), and nothing is stored when
// the object does not hold it and was not created by it. A second
// application of one update shows in neither, so "applied once" is left
// unjudged for it, and said so in the evidence.

// objectVersionJudged are the guarantees that count event rows for a ledger
// receiver and judge an object-version receiver through the object instead:
// their scenarios send ordered updates of fresh objects (storeEvent), read
// the object where they read rows (states), and judge it (view.state).
var objectVersionJudged = map[string]bool{
	"ACK-1": true, "ACK-3": true, "ACK-4": true, "ACK-5": true, "ACK-6": true, "ACK-7": true, "ACK-9": true,
	"DEDUP-1": true, "DEDUP-2": true,
	"ATOMIC-1": true, "ATOMIC-3": true,
}

// ledgerOnlyWhy says, per guarantee that counts event rows and is not judged
// by object version, what it judges that an object-version receiver has no
// way to show; the rest (RETENTION, INBOX, OUTBOX) need a ledger, an inbox or
// an outbox of event rows by what they are.
var ledgerOnlyWhy = map[string]string{
	"ACK-8":    "a handshake counted as an event shows only as an event row or an effect under the handshake's own key, which no object carries",
	"DEDUP-3":  "the same event ID under another account is told apart by the event key, and an object-version receiver keys nothing by the event ID",
	"DEDUP-4":  "the same event ID from another source is told apart by the event key, and an object-version receiver keys nothing by the event ID",
	"DEDUP-5":  "two event IDs with one payload are two events only to a ledger: to an object-version receiver they are one update of one object",
	"DEDUP-7":  "a redelivery after many other events is a duplicate to a ledger that may have forgotten its key; an object version forgets nothing",
	"DEDUP-8":  "event IDs differing in one byte are told apart only by an event key",
	"ATOMIC-2": "a lifecycle event refused before its precondition is judged by its key rows, and the ordered role has no precondition",
	"ATOMIC-4": "a crash after commit is judged by the event being applied exactly once, which an object version cannot count",
	"ATOMIC-5": "an event for a missing lifecycle object is judged by its key rows, and an ordered update creates its object",
}

// objectVersion reports whether store checks go through the event's object:
// the receiver keeps no event ledger (with both, the ledger is read).
func (s *session) objectVersion() bool { return s.env.ledgerless() }

// storeEvent is the event a store check sends: a fresh event of the effect
// role for a ledger receiver; for an object-version receiver an ordered
// update of a fresh object (made first by its fixture where declared), with
// a key newer than anything the object holds.
func (s *session) storeEvent(ep Endpoint) profiles.Event {
	if !s.objectVersion() {
		return s.effectEvent(ep)
	}
	o := s.orderedRole()
	s.common(func(c *commonFacts) {
		c.Idempotency = s.env.Idempotency
		c.OrderedFixture = o.Fixture != ""
	})
	obj := s.newID(prefixOr(o.IDPrefix))
	s.createOrdered(ep, o, obj)
	// As ORDER does: keys an hour back, whole seconds; the object is fresh,
	// so the first update's key is the newest it has seen.
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	return s.orderedEvent(ep, s.voc().Ordered, obj, 1, base)
}

// storeRoles are the effect roles a store check takes in turn: every effect
// role of a ledger receiver; one turn (nil) for an object-version receiver,
// whose store check sends ordered updates (storeEventOf).
func (s *session) storeRoles() []*vocab.EventRole {
	if s.objectVersion() {
		return []*vocab.EventRole{nil}
	}
	return s.effectRoles()
}

// storeEventOf is storeEvent for effect role r (nil: the first).
func (s *session) storeEventOf(ep Endpoint, r *vocab.EventRole) profiles.Event {
	if s.objectVersion() || r == nil {
		return s.storeEvent(ep)
	}
	return s.effectEventOf(ep, r)
}

// storeTable is where a store check of role r is held: the role's table,
// else the event table (the ordered role's for an object-version receiver).
func (s *session) storeTable(r *vocab.EventRole) string {
	if r == nil {
		if o := s.voc().Ordered; s.objectVersion() && o != nil {
			return roleTable(o.Table, s.env.EventTable)
		}
		return s.env.EventTable
	}
	return roleTable(r.Table, s.env.EventTable)
}

// orderedOf is the ordered update recorded for k.
func (s *session) orderedOf(k profiles.Key) orderedKey {
	s.mu.Lock()
	v := s.facts.OrderKeys[KeyString(k)]
	s.mu.Unlock()
	ok, found := parseOrderedKey(v)
	if !found {
		s.abort("no ordered update was recorded for %s: its object cannot be read", KeyString(k))
	}
	return ok
}

// objectStates reads the object of every key's ordered update, waiting, as
// states does for rows, until each holds its key when hint is 1; hint 0
// reads once (absence cannot be waited for).
func (s *session) objectStates(phase string, hint int, keys ...profiles.Key) {
	s.settled()
	deadline := time.Now().Add(s.settleFor())
	var waits []func()
	for _, k := range keys {
		ev := s.orderedOf(k)
		waits = append(waits, s.spawn(func() {
			s.settleUntil(deadline, hint, func() int {
				o := s.readNow(queryObject, phase, objParams(k.Source, k.Account, ev.obj), func(ctx context.Context, o *history.Observation) error {
					var err error
					o.Version, o.Status, o.Found, err = s.env.Observer.Object(ctx, k.Source, k.Account, ev.obj)
					return err
				})
				if o.Found && o.Version >= ev.key {
					return 1
				}
				return 0
			})
		}))
	}
	for _, w := range waits {
		w()
	}
}

// objectVersion reports whether the scenario judged a receiver without an
// event ledger: its store checks read objects.
func (v *view) objectVersion() bool { return v.common.Idempotency == idempotencyObjectVersion }

// orderedByObject is, per object, the newest ordered update (not a deletion)
// the scenario sent, and its event key.
func (v *view) orderedByObject() (map[string]orderedKey, map[string]profiles.Key) {
	byObj, keys := map[string]orderedKey{}, map[string]profiles.Key{}
	for ks, val := range v.common.OrderKeys {
		ok, found := parseOrderedKey(val)
		if !found || ok.delete {
			continue
		}
		if cur, seen := byObj[ok.obj]; !seen || ok.key > cur.key {
			byObj[ok.obj] = ok
			if k, parsed := parseKeyString(ks); parsed {
				keys[ok.obj] = k
			}
		}
	}
	return byObj, keys
}

// objectStored judges every object read in phase against its update: want 1,
// the object holds the update's key or a newer one; want 0, it does not hold
// it and, unless a fixture made it, does not exist (the event would have
// created it).
func (v *view) objectStored(code Code, phase string, want int64, what string) {
	rs := v.reads(queryObject, phase)
	if len(rs) == 0 {
		v.fail("history: %s has no %s read in phase %q", v.sc.Name, queryObject, phase)
		return
	}
	byObj, _ := v.orderedByObject()
	for _, o := range rs {
		ev, ok := byObj[o.Params[3]]
		if !ok {
			v.fail("history: %s records no ordered update of object %s", v.sc.Name, o.Params[3])
			return
		}
		if bad := v.objectDeviation(o, ev, want); bad != "" {
			v.deviate(code, "%s: object %s %s", what, o.Params[3], bad)
		}
	}
}

// objectDeviation says what is wrong with object read o for update ev ("" when
// nothing): want 1, it must hold ev's key or a newer one; want 0, neither hold
// it nor have been created by it.
func (v *view) objectDeviation(o history.Observation, ev orderedKey, want int64) string {
	switch {
	case want > 0 && (!o.Found || o.Version < ev.key):
		return fmt.Sprintf("reads %s, want key %d (the update's) or newer", objectText(o), ev.key)
	case want == 0 && o.Found && o.Version >= ev.key:
		return fmt.Sprintf("reads %s: it took the update's key %d", objectText(o), ev.key)
	case want == 0 && o.Found && !v.common.OrderedFixture:
		return fmt.Sprintf("reads %s: the update, the only event about it, created it", objectText(o))
	}
	return ""
}

// onceUnjudged notes, for an object-version receiver, that "applied once" is
// not part of the verdict: nothing it declares counts applications.
func (v *view) onceUnjudged() {
	v.note("applied once: not judged (not applicable): an object-version receiver's ordered objects have no count of effects, so a second application of one update cannot show; the object holding the update's key is judged")
}

// stored checks, per key read in phase, that the event was stored once: its
// event rows, or for an object-version receiver its object.
func (v *view) stored(code Code, phase, what string) {
	if v.objectVersion() {
		v.objectStored(code, phase, 1, what)
		return
	}
	v.count(code, queryEventRows, phase, 1, what)
}

// appliedOnce checks the effects read in phase: one each. An object-version
// receiver has none to count (onceUnjudged).
func (v *view) appliedOnce(code Code, phase, what string) {
	if v.objectVersion() {
		v.onceUnjudged()
		return
	}
	v.once(code, phase, what)
}

// parseKeyString reads back KeyString.
func parseKeyString(s string) (profiles.Key, bool) {
	inner, ok := strings.CutPrefix(s, "(")
	inner, ok2 := strings.CutSuffix(inner, ")")
	parts := strings.SplitN(inner, ", ", 3)
	if !ok || !ok2 || len(parts) != 3 {
		return profiles.Key{}, false
	}
	return profiles.Key{Source: parts[0], Account: parts[1], EventID: parts[2]}, true
}

// ack1Objects is ACK-1's checker for an object-version receiver: every update
// acknowledged before the kill is visible in its object after the restart,
// and every update is after the redelivery.
func ack1Objects(v *view) {
	acked := 0
	for _, a := range v.role(roleLoad) {
		if a.Outcome != history.OutcomeAcknowledged {
			continue
		}
		acked++
		ev, found := parseOrderedKey(v.common.OrderKeys[KeyString(a.Key)])
		if !found {
			v.fail("history: no ordered update recorded for acknowledged %s", KeyString(a.Key))
			return
		}
		o, ok := v.read(queryObject, phaseAfterRestart, objParams(a.Key.Source, a.Key.Account, ev.obj))
		if !ok {
			v.fail("history: no object read after the restart for acknowledged %s", KeyString(a.Key))
			return
		}
		if bad := v.objectDeviation(o, ev, 1); bad != "" {
			v.deviate(codeAckLost, "%s was acknowledged before the kill, but after the restart its object %s %s", KeyString(a.Key), ev.obj, bad)
		}
	}
	if acked == 0 {
		v.fail("no delivery was acknowledged before the kill: there is no acknowledged event to check")
		return
	}
	v.note("%d acknowledged update(s) checked by their objects after a kill and restart", acked)
	v.objectStored(codeAckEffects, phaseAfterRedelivery, 1, "redelivered after the kill and restart")
	v.onceUnjudged()
}

// derivedObjects is ACK-9's store check for an object-version receiver: the
// object of each delivery with a signed input changed neither took its key
// nor was created by it.
func derivedObjects(v *view, byKey map[profiles.Key]Code) {
	rs := v.reads(queryObject, phaseBad)
	if len(rs) == 0 {
		v.fail("history: %s has no %s read in phase %q", v.sc.Name, queryObject, phaseBad)
		return
	}
	byObj, keys := v.orderedByObject()
	for _, o := range rs {
		ev, ok := byObj[o.Params[3]]
		code, bad := byKey[keys[o.Params[3]]]
		if !ok || !bad {
			v.fail("history: object %s read in phase %q is no changed delivery's", o.Params[3], phaseBad)
			return
		}
		if why := v.objectDeviation(o, ev, 0); why != "" {
			v.deviate(code, "a delivery with a signed input changed left its object %s: it %s", o.Params[3], why)
		}
	}
}
