package scenarios

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Event types of the conformance domain (docs/conformance-domain.md).
const (
	typeCash         = "customer_cash_balance_transaction.created"
	typePayCreated   = "payment_intent.created"
	typePaySucceeded = "payment_intent.succeeded"
	typeRefunded     = "charge.refunded"
	typeSubUpdated   = "customer.subscription.updated"
	typeUnknown      = "hookcert.conformance.unhandled"
)

// settle bounds how long a positive expectation on the receiver's state is polled:
// a synchronous receiver is already there, an inbox receiver gets a moment.
const settle = 3 * time.Second

// session is one scenario in progress: it names its events inside the run's
// namespace, delivers them, reads state, and collects every deviation.
type session struct {
	ctx     context.Context
	env     *Env
	g       Guarantee
	rec     *Record
	rng     *rand.Rand
	start   time.Time
	mu      sync.Mutex
	runners map[string]*simulator.Runner
	n       int
	// expired are keys the scenario had the receiver purge on purpose; an
	// acknowledged event missing from them is expected, not lost.
	expired map[profiles.Key]bool
}

// begin starts a scenario for guarantee id: it skips with the reason when the target
// lacks a capability the guarantee needs.
func begin(ctx context.Context, id string) *session {
	env := currentEnv()
	if env == nil {
		ginkgo.Fail("error: the suite was started without a target (use hookcert certify or set HOOKCERT_CONFIG)")
	}
	g, err := Lookup(id)
	if err != nil {
		ginkgo.Fail("error: " + err.Error())
	}
	for _, need := range g.Needs {
		if ok, why := env.has(need); !ok {
			ginkgo.Skip("not applicable: " + why)
		}
	}
	if env.Observer == nil {
		ginkgo.Fail("error: no observer configured (observe.postgres is required)")
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d/%s", env.RunID, env.Seed, id)
	s := &session{
		ctx: ctx, env: env, g: g,
		rec:     newRecord(ginkgo.CurrentSpecReport().LeafNodeText),
		rng:     rand.New(rand.NewPCG(uint64(env.Seed), h.Sum64())),
		start:   time.Now(),
		runners: map[string]*simulator.Runner{},
	}
	ginkgo.DeferCleanup(s.close)
	return s
}

func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runners {
		r.Close()
	}
}

// deviate records one way the receiver broke the promise. The scenario goes on, so
// that the report lists every deviation at once.
func (s *session) deviate(format string, args ...any) {
	s.rec.deviate(format, args...)
}

func (s *session) note(format string, args ...any) { s.rec.note(format, args...) }

// abort ends the scenario with status error: the harness could not judge it.
func (s *session) abort(format string, args ...any) {
	s.rec.mu.Lock()
	s.rec.errored = true
	s.rec.mu.Unlock()
	ginkgo.Fail("error: " + fmt.Sprintf(format, args...))
}

// verdict reconciles the history with the rows, then fails the scenario when
// anything deviated, listing every deviation.
func (s *session) verdict() {
	s.reconcile()
	s.rec.mu.Lock()
	devs := append([]string(nil), s.rec.Deviations...)
	s.rec.mu.Unlock()
	if len(devs) > 0 {
		ginkgo.Fail(fmt.Sprintf("%s broken (%s): %d deviation(s):\n  - %s", s.g.ID, s.g.Promise, len(devs), strings.Join(devs, "\n  - ")))
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

func (s *session) runner(ep Endpoint) *simulator.Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runners[ep.URL]; ok {
		return r
	}
	r, err := simulator.NewRunner(simulator.Target{URL: ep.URL, Profile: ep.Profile, Secrets: ep.Secrets, Account: ep.Account}, simulator.Options{})
	if err != nil {
		s.abort("endpoint %s: %v", ep.URL, err)
	}
	s.runners[ep.URL] = r
	return r
}

// newID returns a fresh ID in the run's namespace, in a shape every profile accepts.
func (s *session) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return fmt.Sprintf("%s_hc%s%s%d%06x", prefix, sanitize(s.env.RunID), strings.ReplaceAll(strings.ToLower(s.g.ID), "-", ""), s.n, s.rng.Uint32()&0xffffff)
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// event builds an event of the conformance domain for an endpoint.
func (s *session) event(ep Endpoint, typ, objectID string) profiles.Event {
	ev := profiles.Event{
		Source: ep.source(), Account: ep.Account, Type: typ, ObjectID: objectID,
		Amount: 1000 + int64(s.rng.IntN(9000)), Currency: "usd", Created: time.Now().UTC().Truncate(time.Second),
	}
	if ep.Profile.Facts().EventIDRule == "" {
		ev.ID = s.newID("evt")
	}
	switch typ {
	case typePayCreated:
		ev.Status = "requires_payment_method"
	case typePaySucceeded:
		ev.Status = "succeeded"
	case typeRefunded:
		ev.Status = "refunded"
	case typeSubUpdated:
		ev.Status = "active"
	}
	return ev
}

// key is the event key the receiver derives for ev on ep.
func (s *session) key(ep Endpoint, ev profiles.Event) profiles.Key {
	return profiles.EventKey(ep.Profile, ev)
}

func (s *session) send(ep Endpoint, ev profiles.Event, o simulator.SendOptions) simulator.AttemptRecord {
	rec, err := s.runner(ep).Send(s.ctx, ev, o)
	if err != nil {
		s.abort("delivering %s: %v", ev.ID, err)
	}
	s.rec.attempts(rec)
	return rec
}

func (s *session) copies(ep Endpoint, ev profiles.Event, n int, o simulator.SendOptions) ([]simulator.AttemptRecord, simulator.ReleaseRecord) {
	recs, rel, err := s.runner(ep).SendCopies(s.ctx, ev, n, o)
	if err != nil {
		s.abort("delivering %d copies of %s: %v", n, ev.ID, err)
	}
	s.rec.attempts(recs...)
	return recs, rel
}

// deliver sends ev and follows the profile's retry schedule on the run's
// compressed clock until the provider would stop.
func (s *session) deliver(ep Endpoint, ev profiles.Event, o simulator.SendOptions) []simulator.AttemptRecord {
	recs, err := s.runner(ep).Deliver(s.ctx, ev, o, simulator.Clock{Scale: s.env.TimeScale})
	if err != nil {
		s.abort("delivering %s: %v", ev.ID, err)
	}
	s.rec.attempts(recs...)
	return recs
}

// parallel sends each event once, all at the same time, and returns the records in
// the order of evs.
func (s *session) parallel(ep Endpoint, evs []profiles.Event, o simulator.SendOptions) []simulator.AttemptRecord {
	out := make([]simulator.AttemptRecord, len(evs))
	var wg sync.WaitGroup
	for i, ev := range evs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ginkgo.GinkgoRecover()
			oo := o
			oo.Copy = i
			rec, err := s.runner(ep).Send(s.ctx, ev, oo)
			if err != nil {
				s.rec.deviate("harness could not deliver %s: %v", ev.ID, err)
				return
			}
			out[i] = rec
		}()
	}
	wg.Wait()
	s.rec.attempts(out...)
	return out
}

func is2xx(st int) bool { return st >= 200 && st < 300 }

func describe(a simulator.AttemptRecord) string {
	d := fmt.Sprintf("status %d", a.Status)
	if a.Status == 0 {
		d = "no response"
	}
	if a.ErrorClass != "" {
		d += " (" + a.ErrorClass + ")"
	}
	if ex := strings.TrimSpace(a.ResponseExcerpt); ex != "" {
		if len(ex) > 120 {
			ex = ex[:120] + "…"
		}
		d += ": " + ex
	}
	return d
}

// expectAcked records a deviation for every attempt that was not acknowledged.
func (s *session) expectAcked(what string, recs ...simulator.AttemptRecord) {
	for _, a := range recs {
		if a.Outcome != simulator.OutcomeAcknowledged {
			s.deviate("%s: %s copy %d attempt %d was not acknowledged: %s", what, a.Key.EventID, a.Copy, a.Attempt, describe(a))
		}
	}
}

// expect4xx records a deviation unless the attempt was refused with a 4xx.
func (s *session) expect4xx(what string, a simulator.AttemptRecord) {
	if a.Status < 400 || a.Status > 499 {
		s.deviate("%s: want a 4xx rejection, got %s", what, describe(a))
	}
}

func keyString(k profiles.Key) string {
	return fmt.Sprintf("(%s, %s, %s)", k.Source, k.Account, k.EventID)
}

// count reads one integer through the observer, recording it as evidence.
func (s *session) count(query string, of string, read func(context.Context) (int, error)) int {
	n, err := read(s.ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			s.abort("reading %s for %s: %v", query, of, err)
		}
		s.abort("reading %s for %s: %v", query, of, err)
	}
	s.rec.observed(query, of, fmt.Sprint(n))
	return n
}

func (s *session) rows(k profiles.Key) int {
	return s.count("event_rows", keyString(k), func(ctx context.Context) (int, error) { return s.env.Observer.EventRows(ctx, k) })
}

func (s *session) effects(k profiles.Key) int {
	return s.count("effects", keyString(k), func(ctx context.Context) (int, error) { return s.env.Observer.Effects(ctx, k) })
}

func (s *session) objectEffects(source, account, objectID string) int {
	of := fmt.Sprintf("(%s, %s, object %s)", source, account, objectID)
	return s.count("object_effects", of, func(ctx context.Context) (int, error) {
		return s.env.Observer.ObjectEffects(ctx, source, account, objectID)
	})
}

// expectCount polls read until it equals want or settle passes (only when want > 0:
// absence is checked once, it cannot be waited for), and records a deviation
// otherwise.
func (s *session) expectCount(what string, want int, read func() int) {
	got := read()
	if got != want && want > 0 {
		deadline := time.Now().Add(settle)
		for got < want && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			got = read()
		}
	}
	if got != want {
		s.deviate("%s: got %d, want %d", what, got, want)
	}
}

func (s *session) expectRows(k profiles.Key, want int, why string) {
	s.expectCount(fmt.Sprintf("%s: event rows for %s", why, keyString(k)), want, func() int { return s.rows(k) })
}

func (s *session) expectEffects(k profiles.Key, want int, why string) {
	s.expectCount(fmt.Sprintf("%s: effects of %s", why, keyString(k)), want, func() int { return s.effects(k) })
}

func (s *session) expectObjectEffects(source, account, objectID string, want int, why string) {
	s.expectCount(fmt.Sprintf("%s: effects on object %s", why, objectID), want, func() int { return s.objectEffects(source, account, objectID) })
}

func (s *session) object(ep Endpoint, objectID string) (int64, string, bool) {
	v, st, found, err := s.env.Observer.Object(s.ctx, ep.source(), ep.Account, objectID)
	if err != nil {
		s.abort("reading object %s: %v", objectID, err)
	}
	s.rec.observed("object", objectID, fmt.Sprintf("found=%v version=%d status=%q", found, v, st))
	return v, st, found
}

func (s *session) payment(ep Endpoint, objectID string) (string, bool) {
	st, found, err := s.env.Observer.Payment(s.ctx, ep.source(), ep.Account, objectID)
	if err != nil {
		s.abort("reading payment %s: %v", objectID, err)
	}
	s.rec.observed("payment", objectID, fmt.Sprintf("found=%v status=%q", found, st))
	return st, found
}

// gate holds a lock on table, runs fire in the background, waits until the
// receiver's sessions queue on the lock (the count stops growing), releases them
// together, and waits for fire to finish. It returns how many waited.
func (s *session) gate(table string, want int, fire func()) int {
	g, err := s.env.DB.Hold(s.ctx, table)
	if err != nil {
		s.abort("locking %s: %v", table, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ginkgo.GinkgoRecover()
		fire()
	}()
	released := false
	defer func() {
		if !released {
			_ = g.Release(context.WithoutCancel(s.ctx))
		}
	}()
	// The receiver's pool may be smaller than the number of copies: wait until the
	// queue stops growing rather than for an exact count.
	deadline := time.Now().Add(5 * time.Second)
	best, stableSince := 0, time.Now()
	for time.Now().Before(deadline) {
		n, err := g.Waiters(s.ctx)
		if err != nil {
			s.abort("counting waiters on %s: %v", table, err)
		}
		if n > best {
			best, stableSince = n, time.Now()
		}
		if best >= want || (best > 0 && time.Since(stableSince) > 300*time.Millisecond) {
			break
		}
		select {
		case <-done:
			deadline = time.Now() // every delivery finished without waiting
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := g.Release(s.ctx); err != nil {
		s.abort("releasing the lock on %s: %v", table, err)
	}
	released = true
	<-done
	s.note("lock gate on %s: %d receiver session(s) waited, then were released together", table, best)
	return best
}

func (s *session) arm(point, eventID string) {
	if err := s.env.Failpoints.Arm(s.ctx, point, eventID, "crash"); err != nil {
		s.abort("arming failpoint %s: %v", point, err)
	}
	s.note("failpoint %s armed (crash) for event %s", point, eventID)
}

// crashed waits for the receiver to die by itself, then restarts it.
func (s *session) crashedRestart() {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.env.Controller.WaitExit(ctx); err != nil {
		s.deviate("the receiver did not crash at the armed failpoint: %v", err)
		if err := s.env.Controller.Kill(); err != nil {
			s.abort("killing the receiver: %v", err)
		}
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

func latencies(recs []simulator.AttemptRecord) (p50, p99, max time.Duration) {
	if len(recs) == 0 {
		return
	}
	ds := make([]time.Duration, len(recs))
	for i, a := range recs {
		ds[i] = a.Duration()
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[(len(ds)*99)/100], ds[len(ds)-1]
}

// statusText names an HTTP status for evidence.
func statusText(st int) string {
	if st == 0 {
		return "no response"
	}
	return fmt.Sprintf("%d %s", st, http.StatusText(st))
}

// source is the event key's source of deliveries to ep.
func (ep Endpoint) source() string {
	if ep.Source != "" {
		return ep.Source
	}
	return ep.Profile.ID()
}

// badInput marks faults that make a delivery invalid: such keys must leave nothing,
// which the scenarios check themselves.
var badInput = []string{"tamper", "wrong_secret", "missing_signature", "missing_id", "malformed_json", "oversize", "stale_by"}

// reconcile reads, for every event key the scenario delivered, the acknowledged,
// failed and unknown attempts, and holds them against the rows, as Jepsen's queue
// checker does: an acknowledged event must be there (else lost), no key may be there
// twice (duplicated), and a credit-like event applies at most once. Keys whose
// attempts all ended unknown and that are present count as recovered. Facts
// already reported by the scenario for the same event are not repeated.
func (s *session) reconcile() {
	type tally struct {
		acked, failed, unknown int
		typ                    string
		bad                    bool
	}
	s.rec.mu.Lock()
	order := []profiles.Key{}
	byKey := map[profiles.Key]*tally{}
	for _, a := range s.rec.Attempts {
		if a.Key.EventID == "" {
			continue
		}
		t := byKey[a.Key]
		if t == nil {
			t = &tally{typ: a.EventType}
			byKey[a.Key] = t
			order = append(order, a.Key)
		}
		for _, f := range a.Faults {
			for _, b := range badInput {
				if strings.HasPrefix(f, b) {
					t.bad = true
				}
			}
		}
		switch a.Outcome {
		case simulator.OutcomeAcknowledged:
			t.acked++
		case simulator.OutcomeUnknown:
			t.unknown++
		default:
			t.failed++
		}
	}
	reported := strings.Join(s.rec.Deviations, "\n")
	s.rec.mu.Unlock()

	var ok, lost, dup, recovered int
	for _, k := range order {
		t := byKey[k]
		if t.bad || !handledType(t.typ) {
			continue
		}
		if s.expired[k] {
			continue
		}
		rows := s.rows(k)
		if t.acked > 0 && rows == 0 {
			// An asynchronous (inbox) receiver may store a moment after its 2xx.
			for deadline := time.Now().Add(settle); rows == 0 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				rows = s.rows(k)
			}
		}
		already := strings.Contains(reported, k.EventID)
		switch {
		case t.acked > 0 && rows == 0:
			lost++
			if !already {
				s.deviate("reconciliation: %s lost: acknowledged %d time(s), no event row", keyString(k), t.acked)
			}
		case rows > 1:
			dup++
			if !already {
				s.deviate("reconciliation: %s duplicated: %d event rows", keyString(k), rows)
			}
		case t.acked == 0 && t.unknown > 0 && rows == 1:
			recovered++
		default:
			ok++
		}
		if t.typ == typeCash {
			if eff := s.effects(k); eff > 1 && !already {
				s.deviate("reconciliation: %s applied %d times (acknowledged %d, failed %d, unknown %d attempts)", keyString(k), eff, t.acked, t.failed, t.unknown)
			}
		}
	}
	if n := ok + lost + dup + recovered; n > 0 {
		s.note("reconciliation of %d event key(s) against the rows: %d consistent, %d recovered (unknown outcome, present), %d lost, %d duplicated", n, ok, recovered, lost, dup)
	}
}

func handledType(t string) bool {
	switch t {
	case typeCash, typePayCreated, typePaySucceeded, typeRefunded, typeSubUpdated:
		return true
	}
	return false
}

// expire marks k as purged on purpose, so reconciliation does not call it lost.
func (s *session) expire(k profiles.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expired == nil {
		s.expired = map[profiles.Key]bool{}
	}
	s.expired[k] = true
}
