package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// Nemesis kinds.
const (
	KindKill        = "kill"
	KindPGTerminate = "pg-terminate"
	KindPause       = "pause"
)

// Aims: what a fault waits for before it strikes (aim.go).
const (
	// AimAck strikes right after the n-th acknowledgement (n from the seed),
	// heard in a burst of deliveries the harness held at a table lock and
	// released together where it may lock one.
	AimAck = "ack"
	// AimCommit strikes while the receiver's sessions wait inside their
	// transactions on a table the harness holds locked.
	AimCommit = "commit"
	// AimTimeout pauses past the provider's acknowledgement timeout.
	AimTimeout = "timeout"
	// AimDownstream kills right after the harness's sink received (and
	// applied) the n-th watched downstream call, its answer withheld: the
	// receiver has made the call and not yet recorded it as sent.
	AimDownstream = "downstream"
)

// aims are the aims each kind takes.
var aims = map[string][]string{
	KindKill:        {AimAck, AimCommit, AimDownstream},
	KindPGTerminate: {AimAck, AimCommit},
	KindPause:       {AimTimeout},
}

// Nemesis is one fault applied about every Every, aimed at Aim ("": on the
// timer alone, a kill still waiting for the next acknowledgement).
type Nemesis struct {
	Kind  string
	Aim   string
	Every time.Duration
}

// Name is the fault as --nemesis spells it: kill, kill@ack, ….
func (n Nemesis) Name() string {
	if n.Aim == "" {
		return n.Kind
	}
	return n.Kind + "@" + n.Aim
}

// String is the fault and its interval: kill@ack=3s.
func (n Nemesis) String() string { return n.Name() + "=" + n.Every.String() }

// ParseNemesis reads "kill@ack=3s,kill@commit=7s,pg-terminate=7s,pause=9s"
// ("" and "none" are no fault).
func ParseNemesis(s string) ([]Nemesis, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	var out []Nemesis
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want FAULT[@AIM]=INTERVAL, e.g. kill@ack=3s", part)
		}
		k, aim, _ := strings.Cut(name, "@")
		ks, known := aims[k]
		if !known {
			return nil, fmt.Errorf("%q: unknown fault %q (kill, pg-terminate, pause)", part, k)
		}
		if aim != "" && !slices.Contains(ks, aim) {
			return nil, fmt.Errorf("%q: %s cannot aim at %q (%s@%s)", part, k, aim, k, strings.Join(ks, ", "+k+"@"))
		}
		if seen[name] {
			return nil, fmt.Errorf("%q: %s given twice", part, name)
		}
		seen[name] = true
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return nil, fmt.Errorf("%q: the interval must be a duration of at least 100ms", part)
		}
		out = append(out, Nemesis{Kind: k, Aim: aim, Every: d})
	}
	return out, nil
}

// FormatNemesis is the schedule as --nemesis spells it.
func FormatNemesis(ns []Nemesis) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = n.String()
	}
	return strings.Join(parts, ",")
}

// DefaultNemesis is the schedule a soak runs when none is given: every aimed
// fault, at intervals that leave traffic most of the time.
var DefaultNemesis = []Nemesis{
	{Kind: KindKill, Aim: AimAck, Every: 2 * time.Second},
	{Kind: KindPGTerminate, Aim: AimAck, Every: 4 * time.Second},
	{Kind: KindPGTerminate, Aim: AimCommit, Every: 5 * time.Second},
	{Kind: KindKill, Aim: AimCommit, Every: 7 * time.Second},
	{Kind: KindKill, Aim: AimDownstream, Every: 9 * time.Second},
	{Kind: KindPause, Aim: AimTimeout, Every: 11 * time.Second},
}

// DefaultSchedule is DefaultNemesis less what this target cannot support
// (each left out with why) and what would not fit in o.Duration.
func DefaultSchedule(env *scenarios.Env, h Hooks, o Options) (use []Nemesis, left []string) {
	for _, n := range DefaultNemesis {
		why := Unavailable(env, h, n)
		if why == "" && n.Aim == AimTimeout {
			if d := pauseTimeout(env) + pastTimeout; 4*d > o.Duration {
				why = fmt.Sprintf("a pause past the provider's timeout (%s) does not fit four times in %s of traffic", d, o.Duration)
			}
		}
		if why != "" {
			left = append(left, n.Name()+": "+why)
			continue
		}
		use = append(use, n)
	}
	return use, left
}

// Unavailable says why the target cannot take fault n ("" when it can).
func Unavailable(env *scenarios.Env, h Hooks, n Nemesis) string {
	switch {
	case n.Kind == KindKill && h.Controller == nil:
		return "needs a receiver the harness starts (target.lifecycle)"
	case n.Kind == KindPause && h.Pause == nil:
		return "needs a receiver the harness starts (target.lifecycle) on a platform with SIGSTOP"
	case n.Kind == KindPGTerminate && h.Terminate == nil:
		return "needs the receiver's SQL database (observe.postgres or observe.mysql)"
	case n.Aim == AimCommit && (env == nil || env.DB == nil || env.EffectTable == ""):
		return "needs a table the harness may lock (lock-gating or connection-loss, with an effect_table) to stop the receiver inside its transaction"
	case n.Aim == AimDownstream && (env == nil || env.Sink == nil):
		return "needs a receiver that calls the harness's downstream sink (capability outbox, {{.SinkURL}})"
	case n.Aim == AimTimeout && pauseTimeout(env) <= 0:
		return "no endpoint has an acknowledgement timeout to pause past"
	}
	return ""
}

// killed is a kill a worker made: when, and its error.
type killed struct {
	at  int64
	err error
}

func (s *soak) fault(f reports.SoakFault) {
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	if f.Error == "" {
		s.nFlt.Add(1)
	}
}

// nemesis applies one fault about every n.Every until gen ends: each wait is
// drawn from the seed within ±25% of it, so that faults of different kinds
// mix in an order the seed fixes rather than in lockstep.
func (s *soak) nemesis(ctx, gen context.Context, n Nemesis, mu *sync.Mutex) {
	rng := nemesisRand(s.o.Seed, n)
	for {
		t := time.NewTimer(jitter(rng, n.Every))
		select {
		case <-gen.Done():
			t.Stop()
			return
		case <-t.C:
		}
		mu.Lock()
		if gen.Err() != nil {
			mu.Unlock()
			return
		}
		name := n.Name()
		s.down.Store(&name)
		var f reports.SoakFault
		switch n.Aim {
		case "":
			f = s.apply(ctx, n.Kind)
		case AimAck:
			f = s.atAck(ctx, n.Kind, rng)
		case AimCommit:
			f = s.atCommit(ctx, n.Kind, rng)
		case AimTimeout:
			f = s.pauseTimeout(ctx)
		case AimDownstream:
			f = s.atDownstream(ctx, rng)
		}
		s.down.Store(nil)
		mu.Unlock()
		s.fault(f)
	}
}

// nemesisRand is fault n's own source: its waits and aims follow from the
// seed and its name alone.
func nemesisRand(seed int64, n Nemesis) *rand.Rand {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(n.Name()) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(uint64(seed), h))
}

// jitter is d ±25%, drawn from rng.
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return d*3/4 + time.Duration(rng.Int64N(int64(d)/2+1))
}

func (s *soak) apply(ctx context.Context, kind string) reports.SoakFault {
	f := reports.SoakFault{Kind: kind}
	switch kind {
	case KindKill:
		kill := s.hooks.Controller.Kill
		s.strike.Store(&kill)
		s.killAfter.Store(1)
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
