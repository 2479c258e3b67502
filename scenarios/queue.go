package scenarios

import (
	"context"
	"strconv"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Reads of the receiver's inbox and outbox and of the harness's downstream
// sink, for the INBOX and OUTBOX families.

// The states a target's inbox and outbox queries map theirs onto
// (target.inbox.state, target.outbox.state).
const (
	inboxPending    = "pending"
	inboxProcessing = "processing"
	inboxDone       = "done"
	inboxDead       = "dead"
	outboxSent      = "sent"
)

// leaseWait bounds the wait for abandoned work to be claimed again and done:
// the lease runs out, a reconciler notices (within another lease), a worker
// polls and applies.
func (s *session) leaseWait() time.Duration {
	return 2*s.env.Inbox.Lease + 3*time.Second
}

// untilInbox polls an event's inbox state, without recording, until it is one
// of states or d passes.
func (s *session) untilInbox(k profiles.Key, d time.Duration, states ...string) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		st := s.inboxStateQuiet(k)
		for _, want := range states {
			if st.Found && st.State == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.note("the event %s did not reach state %v within %s", k.EventID, states, d.Round(time.Millisecond))
}

func (s *session) inboxStateQuiet(k profiles.Key) QueueState {
	st, err := s.env.Queue.InboxState(s.ctx, k)
	if err != nil {
		s.abort("reading the inbox state of %s: %v", k.EventID, err)
	}
	return st
}

func queueRead(o *history.Observation, st QueueState) {
	o.Status, o.Count, o.Found = st.State, int64(st.Attempts), st.Found
}

// inboxState reads an event's inbox state once the receiver has settled.
func (s *session) inboxState(k profiles.Key, phase string) QueueState {
	s.settled()
	return s.inboxStateNow(k, phase)
}

// inboxStateNow reads it at once (status: state, count: attempts).
func (s *session) inboxStateNow(k profiles.Key, phase string) QueueState {
	var st QueueState
	s.readNow(queryInboxState, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		var err error
		st, err = s.env.Queue.InboxState(ctx, k)
		queueRead(o, st)
		return err
	})
	return st
}

// outboxState reads an event's outbox message state at once.
func (s *session) outboxState(k profiles.Key, phase string) QueueState {
	var st QueueState
	s.readNow(queryOutboxState, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		var err error
		st, err = s.env.Queue.OutboxState(ctx, k)
		queueRead(o, st)
		return err
	})
	return st
}

// sinkCalls records the downstream calls attributed to k's event so far, and a
// read marking the moment (count: calls; version: operations applied).
func (s *session) sinkCalls(k profiles.Key, phase string) []SinkCall {
	var calls []SinkCall
	s.readNow(querySinkCalls, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		calls = s.env.Sink.Calls(k.EventID)
		s.recordSink(k.EventID, calls)
		o.Count, o.Found = int64(len(calls)), true
		applied := map[string]bool{}
		for _, c := range calls {
			if c.Outcome == "applied" || c.Outcome == "lost" {
				applied[c.Key+"#"+strconv.Itoa(c.Seq)] = true
			}
		}
		o.Version = int64(len(applied))
		return nil
	})
	return calls
}

// recordSink adds calls not recorded yet (and ones since answered) to the history.
func (s *session) recordSink(eventID string, calls []SinkCall) {
	s.mu.Lock()
	if s.sinkSeen == nil {
		s.sinkSeen = map[int]string{}
	}
	var add []history.Sink
	for _, c := range calls {
		if c.Outcome == "" || s.sinkSeen[c.Seq] == c.Outcome {
			continue // still being answered, or recorded already
		}
		s.sinkSeen[c.Seq] = c.Outcome
		add = append(add, history.Sink{Scenario: s.index, EventID: eventID, Seq: c.Seq, Key: c.Key,
			Status: c.Status, Outcome: c.Outcome, AtNS: int64(c.At.Sub(s.run.start))})
	}
	s.mu.Unlock()
	for _, r := range add {
		s.run.addSink(r)
	}
}

// untilSink polls the sink until done reports true for k's calls or d passes.
func (s *session) untilSink(k profiles.Key, d time.Duration, done func([]SinkCall) bool) []SinkCall {
	deadline := time.Now().Add(d)
	for {
		calls := s.env.Sink.Calls(k.EventID)
		if done(calls) || !time.Now().Before(deadline) || s.ctx.Err() != nil {
			return calls
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answered2xx reports whether some call was answered with a 2xx.
func answered2xx(calls []SinkCall) bool {
	for _, c := range calls {
		if is2xx(c.Status) {
			return true
		}
	}
	return false
}
