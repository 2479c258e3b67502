package soak

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/reports"
)

// Nemesis kinds.
const (
	KindKill        = "kill"
	KindPGTerminate = "pg-terminate"
	KindPause       = "pause"
)

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
