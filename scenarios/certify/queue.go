package certify

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// queueObserver adapts the inbox_state and outbox_state queries.
type queueObserver struct{ o *observe.Observer }

func (q queueObserver) InboxState(ctx context.Context, k profiles.Key) (scenarios.QueueState, error) {
	st, err := q.o.InboxState(ctx, okey(k))
	return scenarios.QueueState{State: st.State, Attempts: st.Attempts, Found: st.Found}, err
}

func (q queueObserver) OutboxState(ctx context.Context, k profiles.Key) (scenarios.QueueState, error) {
	st, err := q.o.OutboxState(ctx, okey(k))
	return scenarios.QueueState{State: st.State, Attempts: st.Attempts, Found: st.Found}, err
}

// downstream adapts the harness's sink: calls are attributed to an event by
// the event ID their body carries, and read with the target's key header.
type downstream struct{ s *sink.Sink }

func (d downstream) Calls(eventID string) []scenarios.SinkCall {
	var out []scenarios.SinkCall
	for _, c := range d.s.Matching(eventID) {
		out = append(out, scenarios.SinkCall{Seq: c.Seq, At: c.Time, Key: c.IdempotencyKey, Status: c.Status, Outcome: c.Outcome})
	}
	return out
}

func (d downstream) Fail(eventID string, n, status int) {
	d.s.Inject(sink.Fault{Match: eventID, Times: n, Status: status})
}

func (d downstream) Lose(eventID string, n int) {
	d.s.Inject(sink.Fault{Match: eventID, Times: n, Lose: true})
}

func (d downstream) HoldAfterApply(eventID string, dur time.Duration) {
	d.s.Inject(sink.Fault{Match: eventID, Times: 1, HoldAfterApply: dur})
}

// wireQueues gives the scenarios the target's inbox and outbox.
func wireQueues(env *scenarios.Env, tg *targetfile.Target, obs *observe.Observer, s *sink.Sink) {
	if obs.Has(observe.QInboxState) || obs.Has(observe.QOutboxState) {
		env.Queue = queueObserver{obs}
	}
	if tg.Inbox != nil {
		env.Inbox = scenarios.InboxSpec{Lease: tg.Inbox.Lease, MaxAttempts: tg.Inbox.MaxAttempts, Table: tg.Inbox.Table}
	}
	if tg.Outbox != nil {
		env.Outbox = scenarios.OutboxSpec{MaxAttempts: tg.Outbox.MaxAttempts, HasState: obs.Has(observe.QOutboxState)}
	}
	if s != nil {
		env.Sink = downstream{s}
	}
}
