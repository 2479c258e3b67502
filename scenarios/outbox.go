package scenarios

import (
	"net/http"
	"time"

	"github.com/hookcert/hookcert/simulator"
)

// PhaseAfterCall is the read of the sink once the receiver has called it;
// PhaseAfterCut the read made while a cut transaction was still uncommitted.
const PhaseAfterCall = "after-call"

// sinkWait bounds the wait for a downstream call: the receiver's own retries
// (backoff, leases) come on top of its settling.
func (s *session) sinkWait() time.Duration {
	d := s.settleFor() + 3*time.Second
	if s.env.Inbox.Lease > 0 {
		d += 2 * s.env.Inbox.Lease
	}
	return d
}

func init() {
	register("OUTBOX-1", "a downstream call whose response was lost is sent again with the same operation key, and applied once", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		// The first call is applied and its answer lost; the second fails.
		s.env.Sink.Lose(k.EventID, 1)
		s.env.Sink.Fail(k.EventID, 1, http.StatusServiceUnavailable)
		s.note("sink: the first call for %s is applied and its response dropped; the second is answered 503", k.EventID)
		// Concurrent copies too: duplicates must not add downstream calls.
		s.copies(ep, ev, 4, RoleCopy, simulator.SendOptions{})
		s.state(k, PhaseAfter, 1)
		s.untilSink(k, s.sinkWait(), answered2xx)
		s.sinkCalls(k, PhaseAfter)
	})

	register("OUTBOX-2", "a crash after the downstream call, before it was recorded, resends it with the same operation key, applied once", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		// The sink applies the first call and withholds its answer; while the
		// receiver waits for it, the harness kills the receiver.
		s.env.Sink.HoldAfterApply(k.EventID, 30*time.Second)
		a := s.send(ep, ev, RoleFirst, simulator.SendOptions{})
		calls := s.untilSink(k, s.sinkWait(), func(c []SinkCall) bool { return len(c) > 0 })
		if len(calls) == 0 {
			s.abort("the receiver made no downstream call for %s within %s (%s), so no crash could follow one", k.EventID, s.sinkWait().Round(time.Second), Describe(a))
		}
		s.note("the receiver's downstream call for %s arrived; SIGKILL while the sink withholds the answer", k.EventID)
		s.kill()
		s.restart()
		if !acked(a) {
			s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
		}
		s.untilSink(k, s.sinkWait(), answered2xx)
		s.state(k, PhaseAfter, 1)
		s.sinkCalls(k, PhaseAfter)
	})

	register("OUTBOX-3", "no downstream call is made for an event whose transaction rolled back", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		a := s.holdAndCut(ep, ev, s.killAt)
		// Read before the restart: whatever the sink got came from a
		// transaction that never committed.
		s.sinkCalls(k, PhaseAfterCut)
		s.restart()
		s.afterCut(ep, ev, k, a, PhaseAfterCrash)
		s.untilSink(k, s.sinkWait(), answered2xx)
		s.sinkCalls(k, PhaseAfter)
	})

	register("OUTBOX-4", "downstream failures are retried, then dead-lettered and kept, never dropped", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		max := s.env.Outbox.MaxAttempts
		s.fact(FactMaxAttempts, max)
		// Every call for this event fails, more often than it may be tried.
		s.env.Sink.Fail(k.EventID, 10*max+10, http.StatusServiceUnavailable)
		s.note("sink: every call for %s is answered 503", k.EventID)
		s.send(ep, ev, RoleFirst, simulator.SendOptions{})
		s.state(k, PhaseAfter, 1)
		// Until the message ends (dead or sent), more calls come than may,
		// or the calls stop for a while: the receiver has given up.
		bound := time.Duration(max)*(s.settleFor()+5*time.Second) + s.sinkWait()
		deadline := time.Now().Add(bound)
		quiet := s.settleFor() + 2*s.env.Inbox.Lease + 2*time.Second
		lastN, lastAt := 0, time.Now()
		for time.Now().Before(deadline) && s.ctx.Err() == nil {
			st, err := s.env.Queue.OutboxState(s.ctx, k)
			if err != nil {
				s.abort("reading the outbox state of %s: %v", k.EventID, err)
			}
			n := len(s.env.Sink.Calls(k.EventID))
			if n != lastN {
				lastN, lastAt = n, time.Now()
			}
			if st.Found && (st.State == InboxDead || st.State == OutboxSent) || n > max || n > 0 && time.Since(lastAt) > quiet {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		s.outboxState(k, PhaseAfter)
		s.sinkCalls(k, PhaseAfter)
	})
}
