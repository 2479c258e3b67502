package scenarios

import (
	"context"
	"time"
)

// Lock gating turns a race the receiver might lose into one it meets for
// certain: the harness holds a lock on one of the receiver's tables, so that
// every concurrent delivery (or worker) reaches the same statement before any
// of them commits, counts the receiver's sessions waiting on it, and releases
// them together (or cuts them there: cut.go).

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
			s.gateWaiters(0)
			return 0
		}
		s.abort("the lock gate on %s held no receiver session: the deliveries never reached that table while it was locked, so the race was not forced", table)
	}
	s.note("lock gate on %s: %d receiver session(s) waited, then were released together", table, best)
	s.gateWaiters(best)
	return best
}

// gateWaiters records how many receiver sessions a gate held.
func (s *session) gateWaiters(n int) { s.common(func(c *commonFacts) { c.GateWaiters = &n }) }

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

// heldTable is a lock the scenario holds on one of the receiver's tables.
type heldTable struct {
	s     *session
	table string
	g     Gate
	done  bool
}

// hold locks table until release.
func (s *session) hold(table string) *heldTable {
	g, err := s.env.DB.Hold(s.ctx, table)
	if err != nil {
		s.abort("locking %s: %v", table, err)
	}
	return &heldTable{s: s, table: table, g: g}
}

// holdBounded locks table while a receiver session may already hold a
// conflicting lock on it: a wait that would stand behind the receiver's own
// transaction is given up after a few seconds, as an error of the harness.
func (s *session) holdBounded(table string) *heldTable {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	g, err := s.env.DB.Hold(ctx, table)
	if err != nil {
		s.abort("locking %s while the worker was inside its transaction: %v", table, err)
	}
	return &heldTable{s: s, table: table, g: g}
}

func (h *heldTable) release() {
	if h.done {
		return
	}
	h.done = true
	if err := h.g.Release(context.WithoutCancel(h.s.ctx)); err != nil {
		h.s.abort("releasing the lock on %s: %v", h.table, err)
	}
}

// cut terminates the receiver's sessions waiting on the lock (after a kill,
// their backends would otherwise go on).
func (h *heldTable) cut() {
	if h.done {
		return
	}
	pids, err := h.s.env.DB.TerminateWaiters(h.s.ctx, h.g)
	if err != nil {
		h.s.abort("terminating the receiver's sessions waiting on %s: %v", h.table, err)
	}
	if len(pids) > 0 {
		h.s.note("terminated %d receiver backend(s) waiting on %s: %v", len(pids), h.table, pids)
	}
}
