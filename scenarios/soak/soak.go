// Package soak runs hookcert's soak: provider traffic at a chosen concurrency for
// a while — distinct events of the target's effect role, concurrent duplicates,
// lost acknowledgements and redeliveries on the profile's compressed retry
// schedule — while a nemesis kills the receiver, terminates its database
// sessions and pauses it. When traffic stops, the receiver is allowed to settle
// (every unacknowledged event is redelivered, bounded), every key's rows are
// read, and Judge reconciles the recorded history as Jepsen's queue checker
// does: lost, duplicated, recovered, never applied.
package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Nemesis kinds.
const (
	KindKill        = "kill"
	KindPGTerminate = "pg-terminate"
	KindPause       = "pause"
)

// Roles of the soak's attempts in the history.
const (
	RoleFirst      = "soak"
	RoleCopy       = "soak-copy"
	RoleLostAck    = "soak-lost-ack"
	RoleRedelivery = "redelivery"
	RoleSettle     = "settle"
)

// PhaseSoak is the phase of the final reads of every key.
const PhaseSoak = "soak"

// Nemesis is one fault applied every Every.
type Nemesis struct {
	Kind  string
	Every time.Duration
}

// ParseNemesis reads "kill=5s,pg-terminate=7s,pause=9s" ("" is none).
func ParseNemesis(s string) ([]Nemesis, error) {
	var out []Nemesis
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want KIND=INTERVAL, e.g. kill=5s", part)
		}
		switch k {
		case KindKill, KindPGTerminate, KindPause:
		default:
			return nil, fmt.Errorf("%q: unknown fault %q (kill, pg-terminate, pause)", part, k)
		}
		if seen[k] {
			return nil, fmt.Errorf("%q: %s given twice", part, k)
		}
		seen[k] = true
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return nil, fmt.Errorf("%q: the interval must be a duration of at least 100ms", part)
		}
		out = append(out, Nemesis{Kind: k, Every: d})
	}
	return out, nil
}

// Hooks are what the nemesis and the settling need from the harness. A nil hook
// makes its fault unavailable (Run refuses a nemesis that needs it).
type Hooks struct {
	// Controller kills and restarts the receiver (kill).
	Controller scenarios.Controller
	// Pause stops (true) or continues (false) the receiver's processes (pause).
	Pause func(stop bool) error
	// Terminate ends the receiver's database sessions (pg-terminate).
	Terminate func(ctx context.Context) ([]int, error)
}

// Options shape a soak.
type Options struct {
	Duration    time.Duration
	Concurrency int
	// Rate bounds deliveries per second (0: as fast as the workers go).
	Rate float64
	// DupRate is the share of events sent as two concurrent copies,
	// LostAckRate the share whose first acknowledgement is lost.
	DupRate, LostAckRate float64
	Nemesis              []Nemesis
	// PauseFor is how long a pause lasts (default 1s).
	PauseFor time.Duration
	Seed     int64
	// SettleBound bounds the redeliveries and the wait for quiescence after
	// traffic stops (default 30s).
	SettleBound time.Duration
	// Progress hears, once a second and at each phase's end, how the soak goes.
	Progress func(Progress)
}

// Progress is a snapshot of a running soak.
type Progress struct {
	// Phase is "traffic", "settle" or "read".
	Phase    string
	Elapsed  time.Duration
	Duration time.Duration
	// Rate is the deliveries that ended in the last second.
	Rate                           int64
	Attempts, Acknowledged, Errors int64
	// Faults counts the faults applied, Down is true while one is applied.
	Faults int64
	Down   string
}

// Result is what a soak recorded: its history (attempts and the final reads)
// and what the nemesis and the settling did.
type Result struct {
	History   *history.History
	Faults    []reports.SoakFault
	Settle    reports.SoakSettle
	TrafficNS int64
}

// Validate checks the options against what the hooks offer.
func (o *Options) Validate(h Hooks) error {
	if o.Duration <= 0 {
		return errors.New("--duration must be positive")
	}
	if o.Concurrency < 1 || o.Concurrency > 256 {
		return fmt.Errorf("--concurrency must be between 1 and 256, got %d", o.Concurrency)
	}
	if o.Rate < 0 {
		return errors.New("--rate must not be negative")
	}
	for name, v := range map[string]float64{"--dup-rate": o.DupRate, "--lost-ack-rate": o.LostAckRate} {
		if v < 0 || v > 1 {
			return fmt.Errorf("%s must be between 0 and 1, got %g", name, v)
		}
	}
	if o.DupRate+o.LostAckRate > 1 {
		return errors.New("--dup-rate and --lost-ack-rate must not add up to more than 1")
	}
	for _, n := range o.Nemesis {
		switch {
		case n.Kind == KindKill && h.Controller == nil:
			return errors.New("--nemesis kill needs a receiver the harness starts (target.lifecycle)")
		case n.Kind == KindPause && h.Pause == nil:
			return errors.New("--nemesis pause needs a receiver the harness starts (target.lifecycle) on a platform with SIGSTOP")
		case n.Kind == KindPGTerminate && h.Terminate == nil:
			return errors.New("--nemesis pg-terminate needs the receiver's database (observe.postgres)")
		}
	}
	if o.PauseFor <= 0 {
		o.PauseFor = time.Second
	}
	if o.SettleBound <= 0 {
		o.SettleBound = 30 * time.Second
	}
	return nil
}

// keyState is one event's deliveries so far.
type keyState struct {
	ep  int
	ev  profiles.Event
	key profiles.Key

	mu       sync.Mutex
	attempts int
	firstV   int64
	acked    bool
}

type job struct {
	ks   *keyState
	n    int
	role string
}

type soak struct {
	env     *scenarios.Env
	hooks   Hooks
	o       Options
	start   time.Time
	runners []*simulator.Runner
	offsets []int64
	scheds  []simulator.Schedule
	clock   simulator.Clock

	mu       sync.Mutex
	attempts []history.Attempt
	keys     []*keyState
	faults   []reports.SoakFault
	queue    []job
	closed   bool

	n                             atomic.Int64
	nAttempts, nAcked, nErr, nFlt atomic.Int64
	down                          atomic.Pointer[string]
	killArmed                     atomic.Bool
	killNow                       chan killed
}

// killed is a kill a worker made: when, and its error.
type killed struct {
	at  int64
	err error
}

// Run soaks the receiver env describes.
func Run(ctx context.Context, env *scenarios.Env, hooks Hooks, o Options) (*Result, error) {
	if err := o.Validate(hooks); err != nil {
		return nil, err
	}
	if len(env.Endpoints) == 0 {
		return nil, errors.New("the target has no endpoints")
	}
	if env.Vocab != nil && env.Vocab.Effect == nil {
		return nil, scenarios.ErrNoEffectRole
	}
	s := &soak{env: env, hooks: hooks, o: o, start: time.Now(), clock: simulator.Clock{Scale: env.TimeScale}, killNow: make(chan killed, 1)}
	for _, ep := range env.Endpoints {
		r, err := simulator.NewRunner(simulator.Target{URL: ep.URL, Profile: ep.Profile, Secrets: ep.Secrets, Account: ep.Account}, simulator.Options{})
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep.URL, err)
		}
		defer r.Close()
		s.runners = append(s.runners, r)
		s.offsets = append(s.offsets, int64(r.Started().Sub(s.start)))
		s.scheds = append(s.scheds, simulator.ScheduleFor(ep.Profile, nil))
	}

	// Traffic and nemesis until the duration ends (or ctx does).
	gen, stopGen := context.WithTimeout(ctx, o.Duration)
	defer stopGen()
	var workers, nemeses sync.WaitGroup
	tokens := s.limiter(gen)
	for w := range o.Concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.worker(ctx, gen, tokens, rand.New(rand.NewPCG(uint64(o.Seed), uint64(w)+1)))
		}()
	}
	// Faults of different kinds never overlap: one would hide the other.
	var nemMu sync.Mutex
	for _, n := range o.Nemesis {
		nemeses.Add(1)
		go func() {
			defer nemeses.Done()
			s.nemesis(ctx, gen, n, &nemMu)
		}()
	}
	stopReport := s.report("traffic")
	workers.Wait()
	nemeses.Wait()
	trafficNS := s.since()
	s.mu.Lock()
	s.closed, s.queue = true, nil
	s.mu.Unlock()
	stopReport()

	res := &Result{TrafficNS: trafficNS}
	if ctx.Err() != nil {
		res.History, res.Faults = s.history(nil), s.faults
		return res, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	stopReport = s.report("settle")
	res.Settle = s.settle(ctx)
	stopReport()
	s.progress("read")
	obs, err := s.read(ctx)
	res.History, res.Faults = s.history(obs), s.faults
	return res, err
}

func (s *soak) since() int64 { return int64(time.Since(s.start)) }

// limiter hands out one token per delivery at o.Rate (nil: unlimited).
func (s *soak) limiter(ctx context.Context) <-chan struct{} {
	if s.o.Rate <= 0 {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Duration(float64(time.Second) / s.o.Rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case ch <- struct{}{}:
				default: // nobody waiting: the rate is a ceiling, not a debt
				}
			}
		}
	}()
	return ch
}

func (s *soak) worker(ctx, gen context.Context, tokens <-chan struct{}, rng *rand.Rand) {
	for gen.Err() == nil {
		if tokens != nil {
			select {
			case <-tokens:
			case <-gen.Done():
				return
			}
		}
		if j, ok := s.pop(); ok {
			s.deliver(ctx, j, false, false)
			continue
		}
		n := int(s.n.Add(1))
		epi := n % len(s.env.Endpoints)
		ev, key, err := scenarios.EffectEvent(s.env, s.env.Endpoints[epi], "soak"+strconv.Itoa(n)+fmt.Sprintf("%06x", rng.Uint32()&0xffffff), rng.Uint32())
		if err != nil {
			s.fault(reports.SoakFault{Kind: "generator", StartMS: s.since() / 1e6, EndMS: s.since() / 1e6, Error: err.Error()})
			return
		}
		ks := &keyState{ep: epi, ev: ev, key: key}
		s.mu.Lock()
		s.keys = append(s.keys, ks)
		s.mu.Unlock()
		x := rng.Float64()
		dup, lost := x < s.o.DupRate, x >= s.o.DupRate && x < s.o.DupRate+s.o.LostAckRate
		role := RoleFirst
		switch {
		case dup:
			role = RoleCopy
		case lost:
			role = RoleLostAck
		}
		s.deliver(ctx, job{ks: ks, n: 1, role: role}, dup, lost)
	}
}

func (s *soak) pop() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return job{}, false
	}
	j := s.queue[0]
	s.queue = s.queue[1:]
	return j, true
}

func (s *soak) push(j job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.queue = append(s.queue, j)
	}
}

// deliver makes attempt j.n of one event (two concurrent copies with dup, the
// acknowledgement lost with lost), records it, and schedules the provider's
// next attempt when it was not acknowledged (retry).
func (s *soak) deliver(ctx context.Context, j job, dup, lost bool) bool {
	ks, r := j.ks, s.runners[j.ks.ep]
	ep := s.env.Endpoints[ks.ep]
	o := simulator.SendOptions{Attempt: j.n, Timeout: ep.AckTimeout}
	if lost {
		o.Faults.LostAck = simulator.LostAckClose
	}
	var recs []history.Attempt
	if dup {
		rs, _, err := r.SendCopies(ctx, ks.ev, 2, o)
		if err != nil {
			return false
		}
		recs = rs
	} else {
		rec, err := r.Send(ctx, ks.ev, o)
		if err != nil {
			return false
		}
		recs = []history.Attempt{rec}
	}
	acked := false
	off := s.offsets[ks.ep]
	var last history.Attempt
	for i := range recs {
		a := &recs[i]
		a.Role = j.role
		a.StartNS += off
		a.EndNS += off
		a.VirtualNS = int64(s.clock.Virtual(time.Duration(a.StartNS)))
		s.nAttempts.Add(1)
		if a.Outcome == history.OutcomeAcknowledged {
			acked = true
			s.nAcked.Add(1)
			// A kill waits for an acknowledgement: a crash just after the
			// answer is the one that tells whether it followed the commit.
			// The worker that heard it kills at once: any hand-off to another
			// goroutine widens the gap the crash must fall into.
			if s.killArmed.CompareAndSwap(true, false) {
				at := s.since()
				s.killNow <- killed{at: at, err: s.hooks.Controller.Kill()}
			}
		} else {
			s.nErr.Add(1)
		}
		last = *a
	}
	s.mu.Lock()
	s.attempts = append(s.attempts, recs...)
	s.mu.Unlock()
	ks.mu.Lock()
	if j.n == 1 {
		ks.firstV = last.VirtualNS
	}
	ks.attempts = max(ks.attempts, j.n)
	ks.acked = ks.acked || acked
	done, n, elapsed := ks.acked, ks.attempts, time.Duration(last.VirtualNS-ks.firstV)
	ks.mu.Unlock()
	if done || j.role == RoleSettle || last.Verdict == profiles.Stop.String() {
		return acked
	}
	if wait, ok := s.scheds[ks.ep].Next(n+1, elapsed, time.Duration(last.RetryAfterNS), nil); ok {
		next := job{ks: ks, n: n + 1, role: RoleRedelivery}
		time.AfterFunc(s.clock.Real(wait), func() { s.push(next) })
	}
	return acked
}

func (s *soak) fault(f reports.SoakFault) {
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	if f.Error == "" {
		s.nFlt.Add(1)
	}
}

// nemesis applies one kind of fault every n.Every until gen ends.
func (s *soak) nemesis(ctx, gen context.Context, n Nemesis, mu *sync.Mutex) {
	t := time.NewTicker(n.Every)
	defer t.Stop()
	for {
		select {
		case <-gen.Done():
			return
		case <-t.C:
		}
		mu.Lock()
		s.down.Store(&n.Kind)
		f := s.apply(ctx, n.Kind)
		s.down.Store(nil)
		mu.Unlock()
		s.fault(f)
	}
}

func (s *soak) apply(ctx context.Context, kind string) reports.SoakFault {
	f := reports.SoakFault{Kind: kind}
	switch kind {
	case KindKill:
		s.killArmed.Store(true)
		how := "after an acknowledgement"
		var k killed
		select {
		case k = <-s.killNow:
		case <-time.After(time.Second):
			if s.killArmed.CompareAndSwap(true, false) {
				how = "no acknowledgement within 1s"
				k = killed{at: s.since(), err: s.hooks.Controller.Kill()}
			} else {
				k = <-s.killNow
			}
		case <-ctx.Done():
			if s.killArmed.CompareAndSwap(true, false) {
				f.Error = ctx.Err().Error()
				return f
			}
			k = <-s.killNow
		}
		f.StartMS = k.at / 1e6
		if k.err != nil {
			f.Error = "kill: " + k.err.Error()
		} else if err := s.hooks.Controller.Restart(ctx); err != nil {
			f.Error = "restart: " + err.Error()
		}
		f.EndMS = s.since() / 1e6
		f.Detail = "SIGKILL " + how + ", restarted"
	case KindPGTerminate:
		f.StartMS = s.since() / 1e6
		pids, err := s.hooks.Terminate(ctx)
		f.EndMS = s.since() / 1e6
		if err != nil {
			f.Error = err.Error()
		}
		f.Detail = fmt.Sprintf("pg_terminate_backend of %d session(s)", len(pids))
	case KindPause:
		f.StartMS = s.since() / 1e6
		if err := s.hooks.Pause(true); err != nil {
			f.Error = "SIGSTOP: " + err.Error()
			f.EndMS = f.StartMS
			return f
		}
		t := time.NewTimer(s.o.PauseFor)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if err := s.hooks.Pause(false); err != nil {
			f.Error = "SIGCONT: " + err.Error()
		}
		f.EndMS = s.since() / 1e6
		f.Detail = "SIGSTOP, SIGCONT after " + s.o.PauseFor.String()
	}
	return f
}

// report calls Progress once a second until the returned stop, which waits
// for the last call to end: Progress is never called concurrently.
func (s *soak) report(phase string) (stop func()) {
	if s.o.Progress == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.progress(phase)
			}
		}
	}()
	return func() { close(done); <-exited }
}

func (s *soak) progress(phase string) {
	if s.o.Progress == nil {
		return
	}
	now := s.since()
	var rate int64
	s.mu.Lock()
	for i := len(s.attempts) - 1; i >= 0 && s.attempts[i].EndNS > now-int64(time.Second); i-- {
		rate++
	}
	s.mu.Unlock()
	p := Progress{Phase: phase, Elapsed: time.Duration(now), Duration: s.o.Duration, Rate: rate,
		Attempts: s.nAttempts.Load(), Acknowledged: s.nAcked.Load(), Errors: s.nErr.Load(), Faults: s.nFlt.Load()}
	if d := s.down.Load(); d != nil {
		p.Down = *d
	}
	s.o.Progress(p)
}

// settle brings the receiver back if a fault left it down, redelivers every
// event not acknowledged (bounded), and waits until the receiver has no work in
// flight.
func (s *soak) settle(ctx context.Context) reports.SoakSettle {
	start := time.Now()
	deadline := start.Add(s.o.SettleBound)
	if c := s.hooks.Controller; c != nil {
		if ok, _ := c.Alive(); !ok {
			_ = c.Kill()
			if err := c.Restart(ctx); err != nil {
				s.fault(reports.SoakFault{Kind: "restart", StartMS: s.since() / 1e6, EndMS: s.since() / 1e6, Error: "restart before settling: " + err.Error()})
			}
		}
	}
	s.mu.Lock()
	var pending []*keyState
	for _, ks := range s.keys {
		ks.mu.Lock()
		if !ks.acked {
			pending = append(pending, ks)
		}
		ks.mu.Unlock()
	}
	s.mu.Unlock()
	var st reports.SoakSettle
	st.Redelivered = len(pending)
	work := make(chan *keyState)
	var wg sync.WaitGroup
	var left atomic.Int64
	for range min(8, max(1, len(pending))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ks := range work {
				ok := false
				for try := 0; try < 20 && !ok && time.Now().Before(deadline) && ctx.Err() == nil; try++ {
					ks.mu.Lock()
					n := ks.attempts + 1
					ks.mu.Unlock()
					if ok = s.deliver(ctx, job{ks: ks, n: n, role: RoleSettle}, false, false); !ok {
						time.Sleep(min(time.Second, 50*time.Millisecond<<try))
					}
				}
				if !ok {
					left.Add(1)
				}
			}
		}()
	}
	for _, ks := range pending {
		work <- ks
	}
	close(work)
	wg.Wait()
	st.StillUnacknowledged = int(left.Load())
	st.Quiescent = s.quiesce(ctx, deadline)
	st.DurationMS = time.Since(start).Milliseconds()
	return st
}

// quiesce waits until the receiver's database sessions are idle, its quiescent
// query holds, and an asynchronous receiver's settle time has passed.
func (s *soak) quiesce(ctx context.Context, deadline time.Time) bool {
	if s.env.Acceptance.Async && s.env.Acceptance.Settle > 0 {
		t := time.NewTimer(s.env.Acceptance.Settle)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	// At least a few seconds, even once the redeliveries used the bound.
	if floor := time.Now().Add(5 * time.Second); deadline.Before(floor) {
		deadline = floor
	}
	for ctx.Err() == nil {
		idle := true
		if a := s.env.Activity; a != nil {
			if n, _, err := a.Busy(ctx); err != nil || n > 0 {
				idle = false
			}
		}
		if q := s.env.Quiescent; idle && q != nil {
			if ok, err := q(ctx); err != nil || !ok {
				idle = false
			}
		}
		if idle {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// read reads every key's event rows and effects, eight at a time.
func (s *soak) read(ctx context.Context) ([]history.Observation, error) {
	s.mu.Lock()
	keys := append([]*keyState(nil), s.keys...)
	s.mu.Unlock()
	out := make([]history.Observation, 2*len(keys))
	var noEffects atomic.Bool
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ks := keys[i]
				params := []string{ks.key.Source, ks.key.Account, ks.key.EventID, ks.ev.ObjectID}
				n, err := s.env.Observer.EventRows(ctx, ks.key)
				out[2*i] = observation("event_rows", params, n, err, s.since())
				if noEffects.Load() {
					continue
				}
				n, err = s.env.Observer.Effects(ctx, ks.key, ks.ev.ObjectID)
				if errors.Is(err, observe.ErrNotConfigured) {
					noEffects.Store(true)
					continue
				}
				out[2*i+1] = observation("effects", params, n, err, s.since())
			}
		}()
	}
	for i := range keys {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	// Unset slots: effects not configured, or reads cut short.
	obs := out[:0]
	for _, o := range out {
		if o.Query != "" {
			obs = append(obs, o)
		}
	}
	if ctx.Err() != nil {
		return obs, fmt.Errorf("interrupted while reading: %w", context.Cause(ctx))
	}
	return obs, nil
}

func observation(q string, params []string, n int, err error, at int64) history.Observation {
	o := history.Observation{Query: q, Params: params, Phase: PhaseSoak, Found: err == nil, Count: int64(n), AtNS: at}
	if err != nil {
		o.Error = err.Error()
	}
	return o
}

// history is what the soak recorded, attempts in the order they started.
func (s *soak) history(obs []history.Observation) *history.History {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &history.History{
		Meta:         history.Meta{RunID: s.env.RunID, Seed: s.o.Seed, TimeScale: s.env.TimeScale, Started: s.start.UTC(), Finished: time.Now().UTC(), Plan: Plan},
		Attempts:     append([]history.Attempt(nil), s.attempts...),
		Releases:     []history.Release{},
		Observations: obs,
	}
	if len(s.env.Endpoints) > 0 {
		h.Meta.Profile = s.env.Endpoints[0].Profile.ID()
	}
	sort.SliceStable(h.Attempts, func(i, j int) bool { return h.Attempts[i].StartNS < h.Attempts[j].StartNS })
	return h
}
