package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// session is one scenario in progress: it names its events inside the run's
// namespace, delivers them (deliver.go), reads the receiver's state (read.go),
// forces races and crashes (gate.go, cut.go), and records everything into the
// run's history for the checker. It judges nothing itself.
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
	// facts are the session's own (commonFacts) and the scenario's (own, a
	// pointer to its family's facts struct, set by bind).
	facts commonFacts
	own   any
	// expired are keys the scenario had the receiver purge on purpose.
	expired []profiles.Key
	// waited are keys whose rows a full settle period already waited for in
	// vain; reconciliation reads them once instead of waiting again.
	waited map[profiles.Key]bool
	// objects maps each key the scenario made to its event's business object,
	// which an effects query may count by ($4).
	objects map[profiles.Key]string
	// types maps each key the scenario made to its event's type, so a read
	// of its effects uses its role's query.
	types map[profiles.Key]string
	// amounts holds each lifecycle object's amount, the same in all its events.
	amounts map[string]int64
	// lastSend and lastSettled order deliveries and the waits for an
	// asynchronous receiver to settle them.
	lastSend, lastSettled time.Time
	// bg counts background work (deliveries racing a gate, parallel sends);
	// bgStop is the first stop raised there.
	bg     sync.WaitGroup
	bgStop *stop
	// sinkSeen maps each downstream call recorded to its outcome then.
	sinkSeen map[int]string
}

// stop ends a scenario before its end: abort (state error: the harness could
// not judge) or notApplicable. It travels as a panic, so a helper many calls
// deep ends the scenario at once; catch is the one place it is recovered.
type stop struct {
	state  string
	reason string
}

// abort ends the scenario with status error: the harness could not judge it.
func (s *session) abort(format string, args ...any) {
	panic(stop{state: history.ScenarioError, reason: fmt.Sprintf(format, args...)})
}

// notApplicable ends the scenario as not applicable, with the reason.
func (s *session) notApplicable(format string, args ...any) {
	panic(stop{state: history.ScenarioNotApplicable, reason: fmt.Sprintf(format, args...)})
}

// catch runs fn and returns the stop it raised, nil when it returned. Any
// other panic is the harness's own failure, and ends the scenario as an error
// that says so.
func catch(fn func()) (st *stop) {
	defer func() {
		if r := recover(); r != nil {
			x, ok := r.(stop)
			if !ok {
				x = stop{state: history.ScenarioError, reason: fmt.Sprintf("harness panic: %v", r)}
			}
			st = &x
		}
	}()
	fn()
	return nil
}

// scenarioRand is the random source of one scenario: a function of the seed and
// the guarantee ID only, so one seed replays the same choices whatever the run ID,
// the clock or the other scenarios selected.
func scenarioRand(seed int64, id string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

func (s *session) note(format string, args ...any) {
	s.mu.Lock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// common sets the session's own facts.
func (s *session) common(set func(c *commonFacts)) {
	s.mu.Lock()
	set(&s.facts)
	s.mu.Unlock()
}

// locked runs fn under the session's lock: for a scenario's facts written from
// concurrent jobs.
func (s *session) locked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

// factsRecord renders the session's and the scenario's facts for the history.
func (s *session) factsRecord() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]string{}
	encodeFacts(m, &s.facts)
	if s.own != nil {
		encodeFacts(m, s.own)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// together runs jobs at the same time and waits for all; a stop in any is the
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
// re-raises a stop it hit, so a background failure is the scenario's.
func (s *session) spawn(fn func()) (wait func()) {
	done := make(chan struct{})
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(done)
		if st := catch(fn); st != nil {
			s.mu.Lock()
			if s.bgStop == nil {
				s.bgStop = st
			}
			s.mu.Unlock()
		}
	}()
	return func() {
		<-done
		s.mu.Lock()
		st := s.bgStop
		s.mu.Unlock()
		if st != nil {
			panic(*st)
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

// endpoints are the endpoints a guarantee runs on when it runs on each.
func (s *session) endpoints() []Endpoint {
	if len(s.env.Endpoints) == 0 {
		s.abort("the target has no endpoints")
	}
	return s.env.Endpoints
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
	s.trackObject(k, ev.ObjectID, ev.Type)
	return k
}

// trackObject records obj as the business object of the event with key k,
// and typ as its type.
func (s *session) trackObject(k profiles.Key, obj, typ string) {
	if obj == "" {
		return
	}
	s.mu.Lock()
	if s.objects == nil {
		s.objects, s.types = map[profiles.Key]string{}, map[profiles.Key]string{}
	}
	s.objects[k] = obj
	s.types[k] = typ
	s.mu.Unlock()
}

// objectOf is the business object of the event s made with key k.
func (s *session) objectOf(k profiles.Key) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects[k]
}

// typeOf is the event type of the event s made with key k.
func (s *session) typeOf(k profiles.Key) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.types[k]
}

// source is the event key's source of deliveries to ep.
func (ep Endpoint) source() string {
	if ep.Source != "" {
		return ep.Source
	}
	return ep.Profile.ID()
}

// name identifies an endpoint in notes and evidence.
func (ep Endpoint) name() string { return ep.source() + "/" + ep.Account }

// acked reports whether the attempt reached the provider as an acknowledgement:
// the outcome, not the status line, decides.
func acked(a history.Attempt) bool { return a.Outcome == history.OutcomeAcknowledged }

func is2xx(st int) bool { return st >= 200 && st < 300 }
