package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// settle bounds how long a positive expectation on the receiver's state is polled:
// a synchronous receiver is already there, an inbox receiver gets a moment.
const settle = 3 * time.Second

// Scenario phases that the checker reads by name. Scenario-specific phases are
// declared next to their scenario.
const (
	// QueryState names the reads of a lifecycle object's state in the history
	// (histories before declared vocabularies call them "payment").
	QueryState = "state"
	// PhaseReconcile is the read of every delivered key after a scenario ends.
	PhaseReconcile = "reconcile"
	// PhaseQuiesce marks the reads made between scenarios while waiting for the
	// previous one's deliveries to land; no checker judges them.
	PhaseQuiesce = "quiesce"
	// FactExpired lists, one per line, the keys a scenario purged on purpose.
	FactExpired = "expired"
	// FactHandled lists, space-separated, the event types the receiver stores;
	// FactEffectType is the effect role's type, applied at most once per key.
	// Histories without them are of the built-in domain.
	FactHandled    = "handled_types"
	FactEffectType = "effect_type"
)

// abortSignal ends a scenario as an error: the harness could not judge it.
type abortSignal struct{ reason string }

// naSignal ends a scenario as not applicable.
type naSignal struct{ reason string }

// session is one scenario in progress: it names its events inside the run's
// namespace, delivers them, reads state, and records everything into the run's
// history for the checker. It judges nothing itself.
type session struct {
	ctx   context.Context
	run   *Run
	env   *Env
	g     Guarantee
	index int
	rng   *rand.Rand

	mu    sync.Mutex
	n     int
	plans int
	notes []string
	facts map[string]string
	// expired are keys the scenario had the receiver purge on purpose.
	expired []profiles.Key
	// waited are keys whose rows a full settle period already waited for in
	// vain; reconciliation reads them once instead of waiting again.
	waited map[profiles.Key]bool
	// objects maps each key the scenario made to its event's business object,
	// which an effects query may count by ($4).
	objects map[profiles.Key]string
	// amounts holds each lifecycle object's amount, the same in all its events.
	amounts map[string]int64
	// lastSend and lastSettled order deliveries and the waits for an
	// asynchronous receiver to settle them.
	lastSend, lastSettled time.Time
	// bg counts background work (deliveries racing a gate, parallel sends);
	// bgAbort is the first abort raised there.
	bg      sync.WaitGroup
	bgAbort *abortSignal
	// sinkSeen maps each downstream call recorded to its outcome then.
	sinkSeen map[int]string
}

// scenarioRand is the random source of one scenario: a function of the seed and
// the guarantee ID only, so one seed replays the same choices whatever the run ID,
// the clock or the other scenarios selected.
func scenarioRand(seed int64, id string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// abort ends the scenario with status error: the harness could not judge it.
func (s *session) abort(format string, args ...any) {
	panic(abortSignal{reason: fmt.Sprintf(format, args...)})
}

// notApplicable ends the scenario as not applicable, with the reason.
func (s *session) notApplicable(format string, args ...any) {
	panic(naSignal{reason: fmt.Sprintf(format, args...)})
}

func (s *session) note(format string, args ...any) {
	s.mu.Lock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// fact records a value the checker needs to judge the scenario.
func (s *session) fact(name string, v any) {
	s.mu.Lock()
	if s.facts == nil {
		s.facts = map[string]string{}
	}
	s.facts[name] = fmt.Sprint(v)
	s.mu.Unlock()
}

// together runs jobs at the same time and waits for all; an abort in any is the
// scenario's. Jobs must draw nothing from the scenario's random source (build
// their events first), so the seed replays the same run.
func (s *session) together(jobs ...func()) {
	waits := make([]func(), len(jobs))
	for i, j := range jobs {
		waits[i] = s.spawn(j)
	}
	for _, w := range waits {
		w()
	}
}

// spawn runs fn in the background; wait returns when it has finished and
// re-raises an abort it hit, so a background failure is the scenario's error.
func (s *session) spawn(fn func()) (wait func()) {
	done := make(chan struct{})
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				a, ok := r.(abortSignal)
				if !ok {
					a = abortSignal{reason: fmt.Sprintf("harness panic: %v", r)}
				}
				s.mu.Lock()
				if s.bgAbort == nil {
					s.bgAbort = &a
				}
				s.mu.Unlock()
			}
		}()
		fn()
	}()
	return func() {
		<-done
		s.mu.Lock()
		a := s.bgAbort
		s.mu.Unlock()
		if a != nil {
			panic(*a)
		}
	}
}

// primary is the endpoint scenarios use unless they need a particular one.
func (s *session) primary() Endpoint {
	if len(s.env.Endpoints) == 0 {
		s.abort("the target has no endpoints")
	}
	for _, ep := range s.env.Endpoints {
		if ep.Profile.Facts().EventIDRule == "" {
			return ep
		}
	}
	return s.env.Endpoints[0]
}

// newID returns a fresh ID in the run's namespace, in a shape every profile
// accepts. Everything after the namespace comes from the seed.
func (s *session) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return fmt.Sprintf("%s_%s%s%d%06x", prefix, Namespace(s.env.RunID), strings.ReplaceAll(strings.ToLower(s.g.ID), "-", ""), s.n, s.rng.Uint32()&0xffffff)
}

// Namespace is the part of every event and object ID that names the run: "hc"
// and the run ID's letters and digits. Strip it to compare two runs' deliveries.
func Namespace(runID string) string {
	var b strings.Builder
	b.WriteString("hc")
	for _, r := range runID {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// event builds an event of the conformance domain for an endpoint.
func (s *session) event(ep Endpoint, typ, objectID string) profiles.Event {
	s.mu.Lock()
	amount := 1000 + int64(s.rng.IntN(9000))
	s.mu.Unlock()
	ev := profiles.Event{
		Source: ep.source(), Account: ep.Account, Type: typ, ObjectID: objectID,
		Amount: amount, Currency: "usd", Created: time.Now().UTC().Truncate(time.Second),
	}
	if ep.Profile.Facts().EventIDRule == "" {
		ev.ID = s.newID("evt")
	}
	switch typ {
	case vocab.TypePaymentCreated:
		ev.Status = "requires_payment_method"
	case vocab.TypePaymentSucceeded:
		ev.Status = "succeeded"
	case vocab.TypeRefunded:
		ev.Status = "refunded"
	case vocab.TypeSubscriptionUpdated:
		ev.Status = "active"
	}
	return ev
}

// key is the event key the receiver derives for ev on ep.
func (s *session) key(ep Endpoint, ev profiles.Event) profiles.Key {
	k := profiles.EventKey(ep.Profile, ev)
	s.mu.Lock()
	if s.objects == nil {
		s.objects = map[profiles.Key]string{}
	}
	s.objects[k] = ev.ObjectID
	s.mu.Unlock()
	return k
}

// objectOf is the business object of the event s made with key k.
func (s *session) objectOf(k profiles.Key) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects[k]
}

// record files attempts under this scenario and role in the run's history.
func (s *session) record(role string, recs ...history.Attempt) []history.Attempt {
	for i := range recs {
		recs[i].Scenario, recs[i].Role = s.index, role
	}
	s.run.addAttempts(recs...)
	return recs
}

// deliver runs one plan against ep — the simulator's one path for deliveries —
// and files its attempts under role. Each event becomes one step; consecutive
// steps go at the same time when together is set. each, when set, hears of every
// attempt as it ends. The attempts come back in step order.
func (s *session) deliver(ep Endpoint, role string, evs []profiles.Event, step simulator.Step, together bool, each func(history.Attempt)) []history.Attempt {
	recs, _ := s.deliverPlan(ep, role, evs, step, together, each)
	return recs
}

// deliverPlan is deliver that also returns the plan's barrier releases.
func (s *session) deliverPlan(ep Endpoint, role string, evs []profiles.Event, step simulator.Step, together bool, each func(history.Attempt)) ([]history.Attempt, []history.Release) {
	s.mu.Lock()
	s.plans++
	name := fmt.Sprintf("%s/%d", s.g.ID, s.plans)
	s.mu.Unlock()
	// The plan's seed (delivery IDs) comes from what it sends, not from the
	// scenario's random source: deliveries made concurrently draw nothing, so
	// they cannot change what the scenario draws next.
	sh := fnv.New64a()
	fmt.Fprintf(sh, "%s|%s|%d|%v", s.g.ID, role, step.Attempt, step.Faults.List())
	for _, ev := range evs {
		// The object ID too: an event whose ID the profile derives (Adyen) has none.
		fmt.Fprintf(sh, "|%s|%s|%s|%d", ev.ID, ev.Type, ev.ObjectID, ev.Version)
	}
	seed := int64(sh.Sum64() >> 1)
	plan := &simulator.Plan{Name: name, Seed: seed}
	for i, ev := range evs {
		ev = s.render(ep, ev)
		en := fmt.Sprintf("e%d", i)
		plan.Events = append(plan.Events, simulator.EventSpec{Name: en, ID: ev.ID, Source: ev.Source, Account: ev.Account,
			Type: ev.Type, ObjectID: ev.ObjectID, Version: ev.Version, Amount: ev.Amount, Currency: ev.Currency, Status: ev.Status,
			Object: ev.Object, Created: ev.Created})
		st := step
		st.Event, st.WithPrevious = en, together && i > 0
		plan.Steps = append(plan.Steps, st)
	}
	r := s.run.runner(ep)
	h, err := r.RunNotify(s.ctx, plan, each)
	if err != nil && s.ctx.Err() == nil {
		// Bad input to the simulator is the harness's problem, not the receiver's.
		s.abort("the harness could not build the deliveries of %s: %v", name, err)
	}
	recs := h.Attempts
	s.mu.Lock()
	s.lastSend = time.Now()
	s.mu.Unlock()
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Step < recs[j].Step })
	s.harnessSide(recs...)
	if err != nil {
		s.abort("interrupted: %v", context.Cause(s.ctx))
	}
	for i := range h.Releases {
		h.Releases[i].Scenario = s.index
		h.Releases[i].StartNS += int64(r.Started().Sub(s.run.start))
		s.run.addRelease(h.Releases[i])
	}
	return s.record(role, s.run.align(r, recs...)...), h.Releases
}

func (s *session) send(ep Endpoint, ev profiles.Event, role string, o simulator.SendOptions) history.Attempt {
	recs := s.deliver(ep, role, []profiles.Event{ev}, stepOf(o), false, nil)
	if len(recs) != 1 {
		s.abort("delivering %s: %d attempts recorded, want 1", ev.ID, len(recs))
	}
	return recs[0]
}

// copies releases n copies of one delivery together (a barrier release).
func (s *session) copies(ep Endpoint, ev profiles.Event, n int, role string, o simulator.SendOptions) ([]history.Attempt, history.Release) {
	st := stepOf(o)
	st.Copies = n
	recs, rels := s.deliverPlan(ep, role, []profiles.Event{ev}, st, false, nil)
	if len(rels) != 1 {
		s.abort("delivering %d copies of %s: %d barrier releases recorded, want 1", n, ev.ID, len(rels))
	}
	return recs, rels[0]
}

// parallel sends each event once, all at the same time, and returns the records in
// the order of evs.
func (s *session) parallel(ep Endpoint, evs []profiles.Event, role string, o simulator.SendOptions) []history.Attempt {
	return s.deliver(ep, role, evs, stepOf(o), true, nil)
}

func stepOf(o simulator.SendOptions) simulator.Step {
	return simulator.Step{Attempt: o.Attempt, Faults: o.Faults, Timeout: simulator.Duration(o.Timeout), PadTo: o.PadTo}
}

// harnessSide aborts when an attempt ended because the run itself was stopped:
// that is no verdict on the receiver.
func (s *session) harnessSide(recs ...history.Attempt) {
	if err := s.ctx.Err(); err != nil {
		for _, a := range recs {
			if a.Outcome != history.OutcomeAcknowledged {
				s.abort("interrupted: %v", context.Cause(s.ctx))
			}
		}
	}
}

// acked reports whether the attempt reached the provider as an acknowledgement:
// the outcome, not the status line, decides.
func acked(a history.Attempt) bool { return a.Outcome == history.OutcomeAcknowledged }

func is2xx(st int) bool { return st >= 200 && st < 300 }

// Describe names an attempt's result for evidence.
func Describe(a history.Attempt) string {
	d := fmt.Sprintf("status %d", a.Status)
	if a.Status == 0 {
		d = "no response"
	}
	if a.ErrorClass != "" {
		d += " (" + a.ErrorClass + ")"
	}
	if a.Outcome == history.OutcomeUnknown && a.Status != 0 {
		d += ", outcome unknown"
	}
	if ex := strings.TrimSpace(a.ResponseExcerpt); ex != "" {
		if len(ex) > 120 {
			ex = ex[:120] + "…"
		}
		d += ": " + ex
	}
	return d
}

// KeyString renders an event key for evidence.
func KeyString(k profiles.Key) string {
	return fmt.Sprintf("(%s, %s, %s)", k.Source, k.Account, k.EventID)
}

// read runs one observer query and records it; a failed read aborts the
// scenario (the harness could not judge).
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
		s.abort("reading %s for %s: %v", query, strings.Join(params, ", "), err)
	}
	s.run.addObservation(o)
	return o
}

func keyParams(k profiles.Key) []string { return []string{k.Source, k.Account, k.EventID, ""} }

func objParams(source, account, objectID string) []string {
	return []string{source, account, "", objectID}
}

func (s *session) countOf(query, phase string, params []string, fn func(context.Context) (int, error)) int {
	o := s.read(query, phase, params, func(ctx context.Context, o *history.Observation) error {
		n, err := fn(ctx)
		o.Count, o.Found = int64(n), err == nil
		return err
	})
	return int(o.Count)
}

func (s *session) rows(k profiles.Key, phase string) int {
	return s.countOf("event_rows", phase, keyParams(k), func(ctx context.Context) (int, error) { return s.env.Observer.EventRows(ctx, k) })
}

func (s *session) effects(k profiles.Key, phase string) int {
	obj := s.objectOf(k)
	return s.countOf("effects", phase, []string{k.Source, k.Account, k.EventID, obj}, func(ctx context.Context) (int, error) {
		return s.env.Observer.Effects(ctx, k, obj)
	})
}

func (s *session) objectEffects(source, account, objectID, phase string) int {
	return s.countOf("object_effects", phase, objParams(source, account, objectID), func(ctx context.Context) (int, error) {
		return s.env.Observer.ObjectEffects(ctx, source, account, objectID)
	})
}

// settle reads a count until it reaches hint or settle passes. A count that
// should be 0 is read once: absence cannot be waited for. The hint only bounds
// the wait; the checker judges the last read.
func (s *session) settle(hint int, read func() int) int {
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

// lastObject is the last object read of objectID in phase.
func (s *session) lastObject(ep Endpoint, objectID, phase string) (int64, string, bool) {
	var last history.Observation
	for _, o := range s.run.observationsOf(s.index) {
		if o.Query == "object" && o.Phase == phase && len(o.Params) == 4 && o.Params[3] == objectID {
			last = o
		}
	}
	return last.Version, last.Status, last.Found
}

func (s *session) object(ep Endpoint, objectID, phase string) (int64, string, bool) {
	o := s.read("object", phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Version, o.Status, o.Found, err = s.env.Observer.Object(ctx, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Version, o.Status, o.Found
}

// lifecycleState reads a lifecycle object's state (query "state").
func (s *session) lifecycleState(ep Endpoint, objectID, phase string) (string, bool) {
	o := s.read(QueryState, phase, objParams(ep.source(), ep.Account, objectID), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Status, o.Found, err = s.env.Observer.Payment(ctx, ep.source(), ep.Account, objectID)
		return err
	})
	return o.Status, o.Found
}

// gate holds a lock on table, runs fire in the background, waits until the
// receiver's sessions queue on the lock (the count stops growing), releases them
// together, and waits for fire to finish. A gate that held nobody is an error:
// the race it was to force never happened.
func (s *session) gate(table string, want int, fire func()) int {
	g, err := s.env.DB.Hold(s.ctx, table)
	if err != nil {
		s.abort("locking %s: %v", table, err)
	}
	released := false
	defer func() {
		if !released {
			_ = g.Release(context.WithoutCancel(s.ctx))
		}
	}()
	since := len(s.run.attemptsOf(s.index))
	finished := make(chan struct{})
	wait := s.spawn(func() { defer close(finished); fire() })
	best := waitQueue(s.ctx, g, want, finished, s.workerLinger(), func(err error) { s.abort("counting waiters on %s: %v", table, err) })
	if err := g.Release(s.ctx); err != nil {
		s.abort("releasing the lock on %s: %v", table, err)
	}
	released = true
	wait()
	if best == 0 {
		if s.allRefused(since) {
			// Nothing was accepted, so nothing could race: the checker reports
			// the refusals themselves.
			s.note("the lock gate on %s held no receiver session: every delivery was refused before it reached the table", table)
			s.fact("gate_waiters", 0)
			return 0
		}
		s.abort("the lock gate on %s held no receiver session: the deliveries never reached that table while it was locked, so the race was not forced", table)
	}
	s.note("lock gate on %s: %d receiver session(s) waited, then were released together", table, best)
	s.fact("gate_waiters", best)
	return best
}

// allRefused reports whether the scenario made attempts after the first
// `since` and the receiver refused every one of them.
func (s *session) allRefused(since int) bool {
	recs := s.run.attemptsOf(s.index)
	recs = recs[min(since, len(recs)):]
	for _, a := range recs {
		if acked(a) || a.Status == 0 {
			return false
		}
	}
	return len(recs) > 0
}

// workerLinger is how long a gate keeps waiting for the receiver's sessions
// after the deliveries were answered: an asynchronous receiver writes in its
// workers, after the 2xx, so its race happens then.
func (s *session) workerLinger() time.Duration {
	if s.async() {
		return s.env.Acceptance.Settle
	}
	return 0
}

// waitQueue polls the gate's waiters until want are queued, the queue has stopped
// growing for 300 ms, or 5 s pass. The receiver's pool may be smaller than the
// number of copies, so an exact count is not required. Once the deliveries
// have finished it waits at most linger more (0 for a receiver that writes
// before it answers).
func waitQueue(ctx context.Context, g Gate, want int, finished <-chan struct{}, linger time.Duration, fail func(error)) int {
	deadline := time.Now().Add(5 * time.Second)
	best, stableSince := 0, time.Now()
	for time.Now().Before(deadline) {
		n, err := g.Waiters(ctx)
		if err != nil {
			fail(err)
			return best
		}
		if n > best {
			best, stableSince = n, time.Now()
		}
		if best >= want || (best > 0 && time.Since(stableSince) > 300*time.Millisecond) {
			break
		}
		select {
		case <-finished:
			// Every delivery was answered: a synchronous receiver that did not
			// wait never will; a worker may still come.
			if d := time.Now().Add(linger); d.Before(deadline) {
				deadline = d
			}
			finished = nil
		case <-ctx.Done():
			return best
		case <-time.After(10 * time.Millisecond):
		}
	}
	return best
}

func (s *session) arm(point, eventID string) {
	if err := s.env.Failpoints.Arm(s.ctx, point, eventID, "crash"); err != nil {
		s.abort("arming failpoint %s: %v", point, err)
	}
	s.note("failpoint %s armed (crash) for event %s", point, eventID)
}

// crashedRestart waits for the receiver to die at an armed failpoint, then
// restarts it. A receiver that does not crash there is killed and restarted, and
// the scenario is an error: the crash it was to test never happened.
func (s *session) crashedRestart(point string) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.env.Controller.WaitExit(ctx); err != nil {
		if kerr := s.env.Controller.Kill(); kerr != nil {
			s.abort("killing the receiver: %v", kerr)
		}
		s.restart()
		s.abort("the receiver did not crash at the armed failpoint %s (%v): the target declares the failpoints capability but the crash could not be tested", point, err)
	}
	s.restart()
}

func (s *session) restart() {
	t0 := time.Now()
	if err := s.env.Controller.Restart(s.ctx); err != nil {
		s.abort("restarting the receiver: %v", err)
	}
	s.note("receiver restarted in %s", time.Since(t0).Round(time.Millisecond))
}

// source is the event key's source of deliveries to ep.
func (ep Endpoint) source() string {
	if ep.Source != "" {
		return ep.Source
	}
	return ep.Profile.ID()
}

// BadInput reports whether an attempt's faults make the delivery invalid: such
// keys must leave nothing, which their scenarios check themselves.
func BadInput(faults []string) bool {
	for _, f := range faults {
		for _, b := range []string{"tamper", "wrong_secret", "missing_signature", "missing_id", "malformed_json", "oversize", "stale_by"} {
			if strings.HasPrefix(f, b) {
				return true
			}
		}
	}
	return false
}

// expire marks k as purged on purpose, so reconciliation does not call it lost.
func (s *session) expire(k profiles.Key) {
	s.mu.Lock()
	s.expired = append(s.expired, k)
	s.mu.Unlock()
}

// reconcile reads, for every event key the scenario delivered that the receiver
// should have stored, its event rows (and the effects of credit-like events), so
// the checker can hold them against the acknowledged, failed and unknown
// attempts. Keys read concurrently share one settle deadline.
func (s *session) reconcile() {
	type item struct {
		k     profiles.Key
		acked bool
		cash  bool
	}
	voc := s.env.vocabulary()
	// The checker reads what counts as stored, and what applies once, from
	// the history alone.
	s.fact(FactHandled, strings.Join(voc.HandledTypes(), " "))
	if voc.Effect != nil {
		s.fact(FactEffectType, voc.Effect.Type)
	}
	expired := map[profiles.Key]bool{}
	s.mu.Lock()
	for _, k := range s.expired {
		expired[k] = true
	}
	s.mu.Unlock()
	var items []*item
	seen := map[profiles.Key]*item{}
	for _, a := range s.run.attemptsOf(s.index) {
		if a.Key.EventID == "" || BadInput(a.Faults) || !voc.Handled(a.EventType) || expired[a.Key] {
			continue
		}
		it := seen[a.Key]
		if it == nil {
			it = &item{k: a.Key, cash: voc.Effect != nil && a.EventType == voc.Effect.Type}
			seen[a.Key] = it
			items = append(items, it)
		}
		it.acked = it.acked || acked(a)
	}
	if len(expired) > 0 {
		keys := make([]string, 0, len(expired))
		for k := range expired {
			keys = append(keys, KeyString(k))
		}
		sort.Strings(keys)
		s.fact(FactExpired, strings.Join(keys, "\n"))
	}
	deadline := time.Now().Add(s.settleFor())
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var first *abortSignal
	var mu sync.Mutex
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if r := recover(); r != nil {
					a, ok := r.(abortSignal)
					if !ok {
						panic(r)
					}
					mu.Lock()
					if first == nil {
						first = &a
					}
					mu.Unlock()
				}
			}()
			rows := s.rows(it.k, PhaseReconcile)
			s.mu.Lock()
			waited := s.waited[it.k]
			s.mu.Unlock()
			// An asynchronous (inbox) receiver may store a moment after its 2xx.
			for it.acked && rows == 0 && !waited && time.Now().Before(deadline) && s.ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond)
				rows = s.rows(it.k, PhaseReconcile)
			}
			if it.cash {
				s.effects(it.k, PhaseReconcile)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		panic(*first)
	}
}
