package soak

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/reports"
)

// settle brings the receiver back if a fault left it down, redelivers every
// event not acknowledged (bounded), and waits until the receiver has no work in
// flight.
func (s *soak) settle(ctx context.Context) reports.SoakSettle {
	start := time.Now()
	deadline := start.Add(s.o.SettleBound)
	if c := s.hooks.Controller; c != nil {
		if ok, why := c.Alive(); !ok && !s.downOnPurpose(why) {
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
