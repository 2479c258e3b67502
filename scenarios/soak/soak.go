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
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator"
)

// Roles of the soak's attempts in the history.
const (
	RoleFirst      = "soak"
	RoleCopy       = "soak-copy"
	RoleLostAck    = "soak-lost-ack"
	RoleRedelivery = "redelivery"
	RoleSettle     = "settle"
)

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
	// NoNemesis says no fault was asked for (--nemesis none), where an empty
	// Nemesis would get the default schedule from the command.
	NoNemesis bool
	// PauseFor is how long a pause lasts (default 1s).
	PauseFor time.Duration
	Seed     int64
	// SettleBound bounds the redeliveries and the wait for quiescence after
	// traffic stops (default 30s).
	SettleBound time.Duration
	// Progress hears, once a second and at each phase's end, how the soak goes.
	Progress func(Progress)
	// Shard is the slice of the traffic this process sends (zero: all of it);
	// Concurrency and Rate are then the whole soak's.
	Shard Shard
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
	if err := o.Shard.validate(o.Concurrency); err != nil {
		return err
	}
	if !o.Shard.appliesFaults() {
		// Receiver-wide faults are shard 0's: no default schedule here either.
		o.Nemesis, o.NoNemesis = nil, true
	}
	for _, n := range o.Nemesis {
		// The target's tables and timeouts are checked by Run (Unavailable).
		if why := Unavailable(nil, h, Nemesis{Kind: n.Kind}); why != "" {
			return fmt.Errorf("--nemesis %s %s", n.Name(), why)
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
	attempts attemptLog
	keys     []*keyState
	faults   []reports.SoakFault
	queue    []job
	closed   bool

	n                                       atomic.Int64
	nAttempts, nAcked, nErr, nLostAck, nFlt atomic.Int64
	down                                    atomic.Pointer[string]
	killArmed                               atomic.Bool
	killAfter                               atomic.Int64
	strike                                  atomic.Pointer[func() error]
	killNow                                 chan killed
	aim                                     aimState
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
	for _, n := range o.Nemesis {
		if why := Unavailable(env, hooks, n); why != "" {
			return nil, fmt.Errorf("--nemesis %s %s", n.Name(), why)
		}
	}
	s := &soak{env: env, hooks: hooks, o: o, start: o.Shard.origin(), clock: simulator.Clock{Scale: env.TimeScale}, killNow: make(chan killed, 1)}
	s.o.Rate = o.Shard.rate(o.Rate, o.Concurrency)
	for _, ep := range env.Endpoints {
		r, err := simulator.NewRunner(simulator.Target{URL: ep.URL, Profile: ep.Profile, Secrets: ep.Secrets, Account: ep.Account}, simulator.Options{NoHistory: true})
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep.URL, err)
		}
		defer r.Close()
		s.runners = append(s.runners, r)
		s.offsets = append(s.offsets, int64(r.Started().Sub(s.start)))
		s.scheds = append(s.scheds, simulator.ScheduleFor(ep.Profile, nil))
	}

	// Traffic and nemesis until the duration ends (or ctx does).
	gen, stopGen, err := s.trafficWindow(ctx)
	if err != nil {
		return nil, err
	}
	defer stopGen()
	var workers, nemeses sync.WaitGroup
	pace := newPacer(o.Rate)
	for _, w := range o.Shard.workers(o.Concurrency) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.worker(ctx, gen, pace, w, rand.New(rand.NewPCG(uint64(o.Seed), uint64(w)+1)))
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
	down, calls := s.readDownstream(ctx)
	obs = append(append(obs, down...), s.inboxEvidence(ctx, obs)...)
	if f, ok := s.restoreWorkers(ctx); ok {
		s.fault(f)
	}
	res.History, res.Faults = s.history(obs), s.faults
	res.History.Sink = calls
	return res, err
}

func (s *soak) since() int64 { return int64(time.Since(s.start)) }
