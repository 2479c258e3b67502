package scenarios

import (
	"context"
	"time"
)

// settleDefault bounds how long a positive expectation on the receiver's state
// is polled: a synchronous receiver is already there, an inbox receiver gets a
// moment (or its declared acceptance.settle, when longer).
const settleDefault = 3 * time.Second

// async reports whether the receiver applies events after its 2xx, and records
// it for the checker.
func (s *session) async() bool {
	if s.env.Acceptance.Async {
		s.common(func(c *commonFacts) { c.Acceptance = "async" })
		return true
	}
	return false
}

// settleFor is how long a positive expectation is waited for.
func (s *session) settleFor() time.Duration {
	if d := s.env.Acceptance.Settle; s.env.Acceptance.Async && d > settleDefault {
		return d
	}
	return settleDefault
}

// settled waits, for a receiver that applies events after its 2xx, until the
// work the scenario's deliveries handed it is done: its quiescent query reads
// true, or the declared settle period has passed. Every read of the state
// comes after it, so an absence is never judged on a read made before the
// worker ran. A synchronous receiver is settled when it answers.
func (s *session) settled() {
	if !s.async() {
		return
	}
	s.mu.Lock()
	pending := s.lastSend.After(s.lastSettled)
	s.mu.Unlock()
	if pending {
		s.settledNow()
	}
}

// settledNow waits for the receiver to settle whatever was sent last.
func (s *session) settledNow() {
	a := s.env.Acceptance
	if !s.async() {
		return
	}
	start := time.Now()
	deadline := start.Add(a.Settle)
	if s.env.Quiescent == nil {
		_ = sleepCtx(s.ctx, a.Settle)
	} else {
		for {
			ok, err := s.env.Quiescent(s.ctx)
			if err != nil {
				s.abort("reading whether the receiver is quiescent: %v", err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				s.note("the receiver still had pending work %s after the last delivery (acceptance.settle); reading its state anyway", a.Settle)
				break
			}
			if sleepCtx(s.ctx, 25*time.Millisecond) != nil {
				break
			}
		}
	}
	s.mu.Lock()
	s.lastSettled = start
	s.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
