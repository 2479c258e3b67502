package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/hookcert/hookcert/history"
)

// Lock gating turns a race the receiver might lose into one it meets for
// certain: the harness holds a lock on one of the receiver's tables, so that
// every concurrent delivery (or worker) reaches the same statement before any
// of them commits, counts the receiver's sessions waiting on it, and releases
// them together (or cuts them there: cut.go). A session waiting behind one at
// the lock — on a row lock the receiver took first — is held there too. Only
// sessions whose transaction began after the lock was taken are counted or
// cut: one that began earlier is another scenario's work.

// gate holds a lock on table, runs fire in the background, waits until the
// receiver's sessions are held (want of them, or until the count stops
// growing), releases them together, waits for fire to finish, and records the
// gate in the history: the proof that the race was forced. A gate that held
// nobody is an error: the race it was to force never happened.
func (s *session) gate(table string, want int, fire func()) history.Gate {
	rec := s.tryGate(table, want, fire)
	if rec.Held() == 0 && !rec.Refused {
		s.abort("the lock gate on %s held no receiver session: the deliveries never reached that table while it was locked, so the race was not forced", table)
	}
	return rec
}

// race runs fire — deliveries that must race — at a lock gate on table where
// the target allows the harness to lock its tables, and otherwise lets them
// race by timing alone and records why (the checker reports the race as not
// forced).
func (s *session) race(table string, racers int, fire func()) {
	if ok, why := s.env.has("lock-gating"); !ok {
		s.unforced("no lock gate (%s): the deliveries were sent at the same time and left to meet by timing", why)
		fire()
		return
	}
	s.gate(table, racers, fire)
}

// unforced records why a race was left to timing.
func (s *session) unforced(format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	s.note("%s", why)
	s.common(func(c *commonFacts) { c.Unforced = why })
}

// tryGate is gate without the abort: a gate that held nobody is recorded as
// such, for a caller that judges on and reports the race as not forced.
func (s *session) tryGate(table string, want int, fire func()) history.Gate {
	h := s.hold(table)
	defer h.release()
	since := len(s.run.attemptsOf(s.index))
	rec := history.Gate{Scenario: s.index, Table: table, Racers: want, StartNS: s.run.sinceStart()}
	finished := make(chan struct{})
	wait := s.spawn(func() { defer close(finished); fire() })
	best, foreign := h.queue(want, finished, s.workerLinger())
	h.release()
	rec.ReleasedNS = s.run.sinceStart()
	wait()
	rec.AtGate, rec.Behind, rec.Foreign = best.AtGate, best.Behind, foreign
	if foreign > 0 {
		s.note("the lock gate on %s also stopped %d session(s) of work that began before it: not counted, not this scenario's", table, foreign)
	}
	if rec.Held() == 0 && s.allRefused(since) {
		// Nothing was accepted, so nothing could race: the checker reports
		// the refusals themselves.
		rec.Refused = true
		s.run.addGate(rec)
		s.note("the lock gate on %s held no receiver session: every delivery was refused before it reached the table", table)
		return rec
	}
	s.run.addGate(rec)
	if rec.Held() == 0 {
		return rec
	}
	s.note("lock gate on %s: %s, then released together", table, describeHeld(rec))
	return rec
}

// describeHeld says who a gate held: "2 of 2 receiver sessions (1 at the lock,
// 1 behind it)".
func describeHeld(g history.Gate) string {
	d := fmt.Sprintf("held %d of %d receiver session(s)", g.Held(), g.Racers)
	if g.Behind > 0 {
		d += fmt.Sprintf(" (%d at the lock, %d behind it on a lock of the receiver's own)", g.AtGate, g.Behind)
	}
	return d
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

// answeredGrace is how long a gate still looks for the receiver's sessions
// once every delivery was answered.
const answeredGrace = 250 * time.Millisecond

// waitQueue polls who the gate holds (count says how many of a reading
// count) until want are held, the count has stopped growing for 300 ms, or 5
// s pass. The receiver's pool may be smaller than the number of copies, so an
// exact count is not required. Once the deliveries have finished it waits at
// most linger more (0 for a receiver that writes before it answers). It
// returns the reading with the most held, and the most foreign sessions seen.
func waitQueue(ctx context.Context, g Gate, count func(GateHeld) int, want int, finished <-chan struct{}, linger time.Duration, fail func(error)) (GateHeld, int) {
	deadline := time.Now().Add(5 * time.Second)
	var best GateHeld
	n, foreign, stableSince := 0, 0, time.Now()
	for time.Now().Before(deadline) {
		h, err := g.Held(ctx)
		if err != nil {
			fail(err)
			return best, foreign
		}
		foreign = max(foreign, h.Foreign)
		if c := count(h); c > n {
			best, n, stableSince = h, c, time.Now()
		}
		if n >= want || (n > 0 && time.Since(stableSince) > 300*time.Millisecond) {
			break
		}
		select {
		case <-finished:
			// Every delivery was answered: a synchronous receiver that did not
			// wait is given a moment more, since one that answers before its
			// commit reaches the lock just after (and that is what a cut must
			// catch); a worker may still come.
			if d := time.Now().Add(max(linger, answeredGrace)); d.Before(deadline) {
				deadline = d
			}
			finished = nil
		case <-ctx.Done():
			return best, foreign
		case <-time.After(10 * time.Millisecond):
		}
	}
	return best, foreign
}

// heldTable is a lock the scenario holds on one of the receiver's tables.
type heldTable struct {
	s     *session
	table string
	g     Gate
	// own: only sessions whose transaction began after the lock was taken
	// are the scenario's (false for a lock taken while its own worker was
	// already inside its transaction: holdBounded).
	own  bool
	done bool
}

// hold locks table until release.
func (s *session) hold(table string) *heldTable {
	g, err := s.env.DB.Hold(s.ctx, table)
	if err != nil {
		s.abort("locking %s: %v", table, err)
	}
	return &heldTable{s: s, table: table, g: g, own: true}
}

// holdBounded locks table while a receiver session may already hold a
// conflicting lock on it: a wait that would stand behind the receiver's own
// transaction is given up after a few seconds, as an error of the harness.
// The scenario's worker is already inside its transaction, so every waiter
// counts as the scenario's.
func (s *session) holdBounded(table string) *heldTable {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	g, err := s.env.DB.Hold(ctx, table)
	if err != nil {
		s.abort("locking %s while the worker was inside its transaction: %v", table, err)
	}
	return &heldTable{s: s, table: table, g: g}
}

// count is how many of a reading's sessions are the scenario's.
func (h *heldTable) count(x GateHeld) int {
	if h.own {
		return x.AtGate + x.Behind
	}
	return x.AtGate + x.Behind + x.Foreign
}

// queue waits for the receiver's sessions to queue on the lock (waitQueue).
func (h *heldTable) queue(want int, finished <-chan struct{}, linger time.Duration) (GateHeld, int) {
	return waitQueue(h.s.ctx, h.g, h.count, want, finished, linger, func(err error) {
		h.s.abort("counting the sessions waiting on %s: %v", h.table, err)
	})
}

// waiters is how many of the scenario's sessions the lock holds now.
func (h *heldTable) waiters() int {
	x, err := h.g.Held(h.s.ctx)
	if err != nil {
		h.s.abort("counting the sessions waiting on %s: %v", h.table, err)
	}
	return h.count(x)
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

// cut terminates the scenario's sessions waiting on the lock (after a kill,
// their backends would otherwise go on) and returns their pids.
func (h *heldTable) cut() []int {
	if h.done {
		return nil
	}
	pids, err := h.s.env.DB.TerminateWaiters(h.s.ctx, h.g, h.own)
	if err != nil {
		h.s.abort("terminating the receiver's sessions waiting on %s: %v", h.table, err)
	}
	if len(pids) > 0 {
		h.s.note("terminated %d receiver backend(s) waiting on %s: %v", len(pids), h.table, pids)
	}
	return pids
}
