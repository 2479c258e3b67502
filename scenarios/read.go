package scenarios

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// The names reads of the receiver's state carry in the history (the target's
// queries, and the harness's own reads of its inbox, outbox and sink).
const (
	queryEventRows     = "event_rows"
	queryEffects       = "effects"
	queryObjectEffects = "object_effects"
	queryObject        = "object"
	// queryObjectChildren reads the key an ordered object's child rows were
	// last written from.
	queryObjectChildren = "object_children"
	queryPayloadPresent = "payload_present"
	queryKeyTTL         = "key_ttl"
	// queryState reads a lifecycle object's state (histories before declared
	// vocabularies call it "payment").
	queryState       = "state"
	queryInboxState  = "inbox_state"
	queryOutboxState = "outbox_state"
	querySinkCalls   = "sink_calls"

	// targetQueryPayment is the observer's name of the lifecycle state query.
	targetQueryPayment = "payment"
)

// read runs one observer query once the receiver has settled and records it;
// a failed read aborts the scenario (the harness could not judge).
func (s *session) read(query, phase string, params []string, fn func(ctx context.Context, o *history.Observation) error) history.Observation {
	s.settled()
	return s.readNow(query, phase, params, fn)
}

// readNow reads without waiting for an asynchronous receiver to settle: for
// reads made while the harness itself holds the receiver's work back.
func (s *session) readNow(query, phase string, params []string, fn func(ctx context.Context, o *history.Observation) error) history.Observation {
	o := history.Observation{Scenario: s.index, Query: query, Params: params, Phase: phase}
	err := fn(s.ctx, &o)
	o.AtNS = int64(time.Since(s.run.start))
	if err != nil {
		o.Error = err.Error()
		s.run.addObservation(o)
		// Unbound parameters are empty: not worth a blank in the message.
		s.abort("reading %s for %s: %v", query, strings.Join(slices.DeleteFunc(slices.Clone(params), func(p string) bool { return p == "" }), ", "), err)
	}
	s.run.addObservation(o)
	return o
}

func (s *session) countOf(query, phase string, params []string, fn func(context.Context) (int, error)) int {
	o := s.read(query, phase, params, func(ctx context.Context, o *history.Observation) error {
		n, err := fn(ctx)
		o.Count, o.Found = int64(n), err == nil
		return err
	})
	return int(o.Count)
}

// rows reads the event rows of k.
func (s *session) rows(k profiles.Key, phase string) int {
	return s.countOf(queryEventRows, phase, keyParams(k), func(ctx context.Context) (int, error) { return s.env.Observer.EventRows(ctx, k) })
}

// effects reads the effects of k's event (its object is $4): by its effect
// role's own query (effects:<label>) where the role gives one, else by the
// observer's effects query. An effect the query reads as a state, with no
// witness, is recorded as such: the checker then knows a double application
// could not show.
func (s *session) effects(k profiles.Key, phase string) int {
	role := s.voc().EffectRoleOf(s.typeOf(k))
	if role == nil {
		role = s.voc().Effect
	}
	if role.DoubleBlind() {
		s.common(func(c *commonFacts) { c.EffectsBlind = doubleBlindReason })
	}
	obj := s.objectOf(k)
	params := []string{k.Source, k.Account, k.EventID, obj}
	if r := s.voc().EffectRoleOf(s.typeOf(k)); r != nil && r.Label != "" {
		if q := vocab.QueryName(queryEffects, r.Label); s.env.Queries != nil && s.env.Queries(q) {
			return s.countOf(q, phase, params, func(ctx context.Context) (int, error) {
				return s.roleObserver(q).EffectsOf(ctx, q, k, obj)
			})
		}
	}
	return s.countOf(queryEffects, phase, params, func(ctx context.Context) (int, error) {
		return s.env.Observer.Effects(ctx, k, obj)
	})
}

// objectEffects reads the effects on one lifecycle object.
func (s *session) objectEffects(source, account, objectID, phase string) int {
	if s.voc().Lifecycle.DoubleBlind() {
		s.common(func(c *commonFacts) { c.ObjectEffectsBlind = objectBlindReason })
	}
	return s.countOf(queryObjectEffects, phase, objParams(source, account, objectID), func(ctx context.Context) (int, error) {
		return s.env.Observer.ObjectEffects(ctx, source, account, objectID)
	})
}

// roleObserver is the observer's reads of the roles after the first of each
// kind; one that has none leaves nothing to judge for them.
func (s *session) roleObserver(query string) RoleObserver {
	if ro, ok := s.env.Observer.(RoleObserver); ok {
		return ro
	}
	s.abort("the observer cannot read %s: it answers the first role of each kind only", query)
	return nil
}

// objectEffectsOf reads the effects on obj of lifecycle l, by l's own query.
func (s *session) objectEffectsOf(l *vocab.Lifecycle, source, account, objectID, phase string) int {
	if l.Label == "" {
		return s.objectEffects(source, account, objectID, phase)
	}
	if l.DoubleBlind() {
		s.common(func(c *commonFacts) { c.ObjectEffectsBlind = objectBlindReason })
	}
	q := vocab.QueryName(queryObjectEffects, l.Label)
	return s.countOf(q, phase, objParams(source, account, objectID), func(ctx context.Context) (int, error) {
		return s.roleObserver(q).ObjectEffectsOf(ctx, q, source, account, objectID)
	})
}

// lifecycleStateOf reads obj's state of lifecycle l by l's own state query:
// "state" for the first object declared, "state:<object>" for the others.
func (s *session) lifecycleStateOf(ep Endpoint, l *vocab.Lifecycle, objectID, phase string) (string, bool) {
	if l.Label == "" {
		return s.lifecycleState(ep, objectID, phase)
	}
	q := vocab.QueryName(queryState, l.Label)
	oq := vocab.QueryName(targetQueryPayment, l.Label)
	o := s.read(q, phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Status, o.Found, err = s.roleObserver(oq).PaymentOf(ctx, oq, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Status, o.Found
}

// orderedObject reads an ordered object of role r by its own state query: "object"
// for the first ordered role, "object:<name>" for the others.
func (s *session) orderedObject(ep Endpoint, r *vocab.Ordered, objectID, phase string) (int64, string, bool) {
	if r.Label == "" {
		return s.object(ep, objectID, phase)
	}
	q := vocab.QueryName(queryObject, r.Label)
	o := s.read(q, phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Version, o.Status, o.Found, err = s.roleObserver(q).ObjectOf(ctx, q, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Version, o.Status, o.Found
}

// lastObject is the last object read of objectID in phase (any ordered role's
// query: the object ID names the role's object).
func (s *session) lastObject(objectID, phase string) (int64, string, bool) {
	var last history.Observation
	for _, o := range s.run.observationsOf(s.index) {
		if vocab.BaseQuery(o.Query) == queryObject && o.Phase == phase && len(o.Params) == 4 && o.Params[3] == objectID {
			last = o
		}
	}
	return last.Version, last.Status, last.Found
}

// object reads an ordered object's key and status.
func (s *session) object(ep Endpoint, objectID, phase string) (int64, string, bool) {
	o := s.read(queryObject, phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Version, o.Status, o.Found, err = s.env.Observer.Object(ctx, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Version, o.Status, o.Found
}

// objectUntil reads an ordered object until its key is want, for a receiver
// that applies events after its 2xx: its quiescent query may read true while
// an event backs off (retried once its object exists), so one read after
// quiescence may come before the retry; the settle period bounds the wait.
// A synchronous receiver is read once. The checker judges the last read.
func (s *session) objectUntil(ep Endpoint, objectID, phase string, want int64) {
	s.objectUntilOf(ep, s.voc().Ordered, objectID, phase, want)
}

// objectUntilOf is objectUntil for an object of ordered role r.
func (s *session) objectUntilOf(ep Endpoint, r *vocab.Ordered, objectID, phase string, want int64) {
	s.settled()
	deadline := time.Now().Add(s.settleFor())
	for {
		var v int64
		if r == nil {
			v, _, _ = s.object(ep, objectID, phase)
		} else {
			v, _, _ = s.orderedObject(ep, r, objectID, phase)
		}
		if v == want || !s.env.Acceptance.Async || !time.Now().Before(deadline) || s.ctx.Err() != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lifecycleState reads a lifecycle object's state.
func (s *session) lifecycleState(ep Endpoint, objectID, phase string) (string, bool) {
	o := s.read(queryState, phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Status, o.Found, err = s.env.Observer.Payment(ctx, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Status, o.Found
}

// settle reads a count until it reaches hint or the settle period passes. A
// count that should be 0 is read once: absence cannot be waited for. The hint
// only bounds the wait; the checker judges the last read.
func (s *session) settle(hint int, read func() int) int {
	// Settled first: the wait for the receiver's quiescence must not spend
	// the period the count is waited for.
	s.settled()
	return s.settleUntil(time.Now().Add(s.settleFor()), hint, read)
}

func (s *session) settleUntil(deadline time.Time, hint int, read func() int) int {
	got := read()
	for hint > 0 && got < hint && time.Now().Before(deadline) && s.ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		got = read()
	}
	return got
}

// state reads the event rows and effects of k in phase, waiting for hint rows
// and effects as settle does.
func (s *session) state(k profiles.Key, phase string, hint int) { s.states(phase, hint, k) }

// states reads the rows and effects of every key at once, sharing one settle
// deadline: a receiver that stores nothing costs one settle, not one per read.
func (s *session) states(phase string, hint int, keys ...profiles.Key) {
	if s.objectVersion() {
		s.objectStates(phase, hint, keys...)
		return
	}
	// As settle: quiescence first, then a whole period for the counts (the
	// workers of a receiver restarted on a loaded machine may take most of
	// the first).
	s.settled()
	deadline := time.Now().Add(s.settleFor())
	var waits []func()
	for _, k := range keys {
		waits = append(waits,
			s.spawn(func() {
				if s.settleUntil(deadline, hint, func() int { return s.rows(k, phase) }) < hint {
					s.mu.Lock()
					s.waited[k] = true // a full settle period already passed without the row
					s.mu.Unlock()
				}
			}),
			s.spawn(func() { s.settleUntil(deadline, hint, func() int { return s.effects(k, phase) }) }))
	}
	for _, w := range waits {
		w()
	}
}
