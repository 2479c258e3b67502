package scenarios

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// quiesce waits, bounded, until the previous scenario's background work has
// ended, the receiver says it has no accepted work pending (its declared
// acceptance.quiescent) and it has no session busy in its database, and notes
// what it waited for.
func (r *Run) quiesce(ctx context.Context, s *session) {
	r.mu.Lock()
	prev := r.prev
	r.mu.Unlock()
	t0 := time.Now()
	deadline := t0.Add(r.opt.QuiesceTimeout)
	if prev != nil {
		done := make(chan struct{})
		go func() { prev.bg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return
		case <-time.After(time.Until(deadline)):
			s.note("the previous scenario's deliveries were still running after %s", r.opt.QuiesceTimeout)
		}
	}
	r.mu.Lock()
	unwell := r.unwell
	r.mu.Unlock()
	if unwell != "" || r.gone() != "" {
		return // a receiver that exited or hung has nothing in flight worth waiting for
	}
	if prev != nil {
		if !r.env.ledgerless() {
			// Straggling keys land as event rows; a receiver without them is
			// waited for by its activity alone.
			r.awaitStragglers(ctx, s, prev, deadline)
		}
	}
	r.awaitQuiescent(ctx, s, deadline)
	if r.env.Activity == nil {
		return
	}
	idle, detail := 0, ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n, d, err := r.env.Activity.Busy(ctx)
		if err != nil {
			s.note("could not read the receiver's database activity: %v", err)
			return
		}
		if n == 0 {
			// Twice in a row: a pool between two statements looks idle for a moment.
			if idle++; idle >= 2 {
				if w := time.Since(t0); w > 100*time.Millisecond {
					s.note("waited %s for the previous scenario's work to leave the receiver", w.Round(time.Millisecond))
				}
				return
			}
		} else {
			idle, detail = 0, d
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() == nil {
		s.note("the receiver was still busy after %s (%s); this scenario may see the previous one's work", r.opt.QuiesceTimeout, detail)
	}
}

// awaitStragglers waits, until deadline, for the previous scenario's deliveries
// whose outcome was unknown (timed out, answer lost) to land in the receiver:
// a receiver that queues requests in memory may still be working through them
// with no database session busy, and its late writes would look like the next
// scenario's. The reads are recorded under the next scenario, phase "quiesce",
// which no checker judges.
func (r *Run) awaitStragglers(ctx context.Context, s *session, prev *session, deadline time.Time) {
	seen := map[profiles.Key]bool{}
	var keys []profiles.Key
	for _, a := range r.attemptsOf(prev.index) {
		if a.Outcome != history.OutcomeUnknown || a.Key.EventID == "" || invalid(a) || !r.env.vocabulary().Handled(a.EventType) || seen[a.Key] {
			continue
		}
		seen[a.Key] = true
		keys = append(keys, a.Key)
	}
	if len(keys) == 0 {
		return
	}
	t0 := time.Now()
	pending := keys
	// Give up when nothing has landed for a settle period: the receiver is not
	// working through them (it lost them, or stores nothing).
	progress := time.Now()
	for len(pending) > 0 && time.Now().Before(deadline) && time.Since(progress) < settleDefault && ctx.Err() == nil {
		var still []profiles.Key
		for _, k := range pending {
			n, err := r.env.Observer.EventRows(ctx, k)
			o := history.Observation{Scenario: s.index, Query: queryEventRows, Phase: phaseQuiesce, Params: keyParams(k), Found: err == nil, Count: int64(n), AtNS: int64(time.Since(r.start))}
			if err != nil {
				o.Error = err.Error()
			}
			r.addObservation(o)
			if err != nil || n == 0 {
				still = append(still, k)
			}
		}
		if len(still) < len(pending) {
			progress = time.Now()
		}
		if pending = still; len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	switch {
	case len(pending) > 0:
		s.note("%d of the previous scenario's %d deliveries with an unknown outcome had not landed after %s; this scenario may see them land", len(pending), len(keys), time.Since(t0).Round(time.Millisecond))
	case time.Since(t0) > 100*time.Millisecond:
		s.note("waited %s for the previous scenario's %d deliveries with an unknown outcome to land", time.Since(t0).Round(time.Millisecond), len(keys))
	}
}

// awaitQuiescent waits, for a receiver that applies events after its 2xx and
// declares how to tell it is done (acceptance.quiescent), until that query
// reads true: an event accepted at the end of the previous scenario may not
// have been claimed by a worker yet, with no database session busy, and its
// worker would otherwise meet this scenario's locks as if it were this
// scenario's. The wait is bounded by the declared settle period (how long
// accepted work may take) and deadline; work still pending then — a retry
// scheduled later, an event the previous scenario left failing — is noted,
// not waited for.
func (r *Run) awaitQuiescent(ctx context.Context, s *session, deadline time.Time) {
	if r.env.Quiescent == nil || !r.env.Acceptance.Async {
		return
	}
	t0 := time.Now()
	bound := r.env.Acceptance.Settle
	if bound <= 0 {
		bound = settleDefault
	}
	if d := t0.Add(bound); d.Before(deadline) {
		deadline = d
	}
	for ctx.Err() == nil {
		ok, err := r.env.Quiescent(ctx)
		if err != nil {
			s.note("could not read whether the receiver is quiescent: %v", err)
			return
		}
		if ok {
			if w := time.Since(t0); w > 100*time.Millisecond {
				s.note("waited %s for the receiver's accepted work to be done (acceptance.quiescent)", w.Round(time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			s.note("the receiver still had accepted work pending %s after the previous scenario (acceptance.quiescent); this scenario may meet it", time.Since(t0).Round(time.Millisecond))
			return
		}
		if sleepCtx(ctx, 25*time.Millisecond) != nil {
			return
		}
	}
}
