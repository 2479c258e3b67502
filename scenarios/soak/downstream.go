package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The window right after a downstream call (kill@downstream), the downstream
// effects in the final judgement, and a worker process left down after its
// claim was cut (kill@commit with several worker processes).

const (
	// downstreamWait bounds how long kill@downstream waits for the watched
	// event's call to reach the sink: the event may wait behind the inbox's
	// backlog first.
	downstreamWait = 10 * time.Second
	// downstreamHold is how long the sink withholds the watched call's
	// answer; the kill lands well inside it.
	downstreamHold = 10 * time.Second
	// downstreamTries is how many events kill@downstream watches in turn
	// when one's call arrived before the sink was told to hold it.
	downstreamTries = 5
	// inboxEvidenceKeys bounds the inbox reads of events stored but not
	// applied at the final read.
	inboxEvidenceKeys = 64
)

// Downstream queries in the history.
const (
	// QueryDownstream is the final read of each event's downstream calls:
	// count calls, version the operations the sink applied.
	QueryDownstream = "downstream"
	// QueryInboxState is an accepted, unapplied event's inbox state at the
	// final read: status the state, count the attempts.
	QueryInboxState = "inbox_state"
)

// aimState is what the aims keep between faults.
type aimState struct {
	// down is the worker process kill@commit left down (0: none).
	down atomic.Int64
	mu   sync.Mutex
	// struck are the events whose downstream call kill@downstream cut: the
	// final read waits for their resends.
	struck []profiles.Key
}

// restoreWorkers restarts the worker process kill@commit left down; ok
// reports a fault to record (the restart failed).
func (s *soak) restoreWorkers(ctx context.Context) (reports.SoakFault, bool) {
	n := s.aim.down.Swap(0)
	if n == 0 || s.env.Workers == nil {
		return reports.SoakFault{}, false
	}
	if err := s.env.Workers.Restart(context.WithoutCancel(ctx)); err != nil {
		at := s.since() / 1e6
		return reports.SoakFault{Kind: "restart", StartMS: at, EndMS: at, Error: fmt.Sprintf("restarting worker process %d: %v", n, err)}, true
	}
	return reports.SoakFault{}, false
}

// downOnPurpose says whether why (Controller.Alive's) names the worker
// process kill@commit left down: the settle must not restart it, as a start
// would re-offer the claim it left for the others.
func (s *soak) downOnPurpose(why string) bool {
	n := s.aim.down.Load()
	return n > 0 && strings.HasPrefix(why, fmt.Sprintf("worker process %d is not running", n))
}

// atDownstream kills the receiver right after its downstream call for an
// event was applied by the sink, before the receiver can hear the answer and
// record the call as sent. The event is the n-th new one sent after the aim
// is armed (n from the seed); the sink is told to withhold its answer before
// the event is first delivered, so the call cannot slip past. After the
// restart the receiver must resend it with the same operation key: the final
// judgement counts the operations the sink applied per event.
func (s *soak) atDownstream(ctx context.Context, rng *rand.Rand) reports.SoakFault {
	f := reports.SoakFault{Kind: KindKill, StartMS: s.since() / 1e6}
	end := func(msg string) reports.SoakFault {
		f.Error, f.EndMS = msg, s.since()/1e6
		return f
	}
	n := 1 + rng.IntN(8)
	var ks *keyState
	var call scenarios.SinkCall
	skipped := 0
	for try := 0; try < downstreamTries && ks == nil; try++ {
		cand, err := s.nextKey(ctx, n)
		if err != nil {
			return end("waiting for the next events: " + err.Error())
		}
		if cand == nil {
			f.EndMS = s.since() / 1e6
			f.Aim = fmt.Sprintf("downstream: new event %d after it was armed", n)
			f.Detail = "traffic ended before the watched event was sent: nothing killed"
			return f
		}
		s.env.Sink.HoldAfterApply(cand.key.EventID, downstreamHold)
		c, arrived := s.heldCall(ctx, cand.key.EventID)
		switch {
		case ctx.Err() != nil:
			return end(ctx.Err().Error())
		case !arrived:
			f.EndMS = s.since() / 1e6
			f.Aim = fmt.Sprintf("downstream: the call for new event %d (%s)", n, cand.key.EventID)
			f.Detail = fmt.Sprintf("no downstream call for %s reached the sink within %s: nothing killed", cand.key.EventID, downstreamWait)
			return f
		case c.Outcome != "":
			// Called before the sink was told to hold it: watch the next.
			skipped++
			n = 1
			continue
		}
		ks, call = cand, c
	}
	if ks == nil {
		f.EndMS = s.since() / 1e6
		f.Aim = "downstream"
		f.Detail = fmt.Sprintf("%d watched event(s) reached the sink before it could hold their call: nothing killed", skipped)
		return f
	}
	f.StartMS = s.since() / 1e6
	f.Aim = fmt.Sprintf("downstream: call %d for %s, the new event %d sent after it was armed, applied by the sink and its answer withheld", call.Seq, ks.key.EventID, n)
	if err := s.hooks.Controller.Kill(); err != nil {
		return end("kill: " + err.Error())
	}
	s.aim.mu.Lock()
	s.aim.struck = append(s.aim.struck, ks.key)
	s.aim.mu.Unlock()
	if err := s.hooks.Controller.Restart(ctx); err != nil {
		return end("restart: " + err.Error())
	}
	f.EndMS = s.since() / 1e6
	f.InFlight, f.Hit = 1, true
	f.Detail = fmt.Sprintf("SIGKILL right after the sink applied downstream call %d (operation key %q) for %s, its answer withheld, before the receiver could record it as sent; restarted: its resend must carry the same key", call.Seq, call.Key, ks.key.EventID)
	return f
}

// nextKey waits for the n-th event the soak creates from now on (nil when
// traffic ends first). Events are listed before their first delivery, and
// their downstream call follows their acceptance: polling every millisecond
// sees each long before it can reach the sink.
func (s *soak) nextKey(ctx context.Context, n int) (*keyState, error) {
	s.mu.Lock()
	from := len(s.keys)
	s.mu.Unlock()
	for ctx.Err() == nil {
		s.mu.Lock()
		var ks *keyState
		if len(s.keys) >= from+n {
			ks = s.keys[from+n-1]
		}
		closed := s.closed
		s.mu.Unlock()
		if ks != nil {
			return ks, nil
		}
		if closed {
			return nil, nil
		}
		time.Sleep(time.Millisecond)
	}
	return nil, ctx.Err()
}

// heldCall waits for the first downstream call for eventID (arrived false
// when none came within downstreamWait).
func (s *soak) heldCall(ctx context.Context, eventID string) (scenarios.SinkCall, bool) {
	deadline := time.Now().Add(downstreamWait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if calls := s.env.Sink.Calls(eventID); len(calls) > 0 {
			return calls[0], true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return scenarios.SinkCall{}, false
}

// downstreamResendWait bounds the wait, before the final read, for the
// resend of each call kill@downstream cut: past the lease the receiver's
// claim on the message runs out and it is sent again.
func (s *soak) downstreamResendWait() time.Duration {
	return 2*s.env.Inbox.Lease + 10*time.Second
}

// readDownstream waits (bounded) until every event whose call
// kill@downstream cut has a call answered 2xx, then reads every event's
// downstream calls: an observation per event (count calls, version
// operations applied) and the calls themselves for the history.
func (s *soak) readDownstream(ctx context.Context) ([]history.Observation, []history.Sink) {
	if s.env.Sink == nil {
		return nil, nil
	}
	s.aim.mu.Lock()
	struck := append([]profiles.Key(nil), s.aim.struck...)
	s.aim.mu.Unlock()
	deadline := time.Now().Add(s.downstreamResendWait())
	for _, k := range struck {
		for ctx.Err() == nil && time.Now().Before(deadline) && !answered(s.env.Sink.Calls(k.EventID)) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	s.mu.Lock()
	keys := append([]*keyState(nil), s.keys...)
	s.mu.Unlock()
	callsOf := s.env.Sink.Calls
	if each, ok := s.env.Sink.(sinkEach); ok {
		// One pass over the sink's calls, not one per event: a soak's
		// thousands of events each made a call.
		ids := make([]string, len(keys))
		for i, ks := range keys {
			ids[i] = ks.key.EventID
		}
		all := each.CallsEach(ids)
		callsOf = func(id string) []scenarios.SinkCall { return all[id] }
	}
	var obs []history.Observation
	var sinks []history.Sink
	for _, ks := range keys {
		if ctx.Err() != nil {
			break
		}
		calls := callsOf(ks.key.EventID)
		applied := 0
		for _, c := range calls {
			if appliedOutcome(c.Outcome) {
				applied++
			}
			sinks = append(sinks, history.Sink{EventID: ks.key.EventID, Seq: c.Seq, Key: c.Key, Status: c.Status, Outcome: c.Outcome, AtNS: int64(c.At.Sub(s.start))})
		}
		obs = append(obs, history.Observation{Query: QueryDownstream, Params: []string{ks.key.Source, ks.key.Account, ks.key.EventID, ks.ev.ObjectID},
			Phase: PhaseSoak, Found: true, Count: int64(len(calls)), Version: int64(applied), AtNS: s.since()})
	}
	return obs, sinks
}

// sinkEach is a sink that attributes its calls to many events at once.
type sinkEach interface {
	CallsEach(eventIDs []string) map[string][]scenarios.SinkCall
}

// answered: some call was answered 2xx.
func answered(calls []scenarios.SinkCall) bool {
	for _, c := range calls {
		if c.Status/100 == 2 {
			return true
		}
	}
	return false
}

// appliedOutcome: the sink applied the call's operation (its answer may
// have been lost).
func appliedOutcome(o string) bool { return o == "applied" || o == "lost" }

// inboxEvidence reads the inbox state of the events the final read found
// acknowledged and stored but not applied (at most inboxEvidenceKeys): the
// evidence of a claim nothing re-offered.
func (s *soak) inboxEvidence(ctx context.Context, obs []history.Observation) []history.Observation {
	if s.env.Queue == nil {
		return nil
	}
	acked := map[profiles.Key]bool{}
	s.mu.Lock()
	for _, ks := range s.keys {
		ks.mu.Lock()
		acked[ks.key] = ks.acked
		ks.mu.Unlock()
	}
	s.mu.Unlock()
	stored := map[profiles.Key]bool{}
	var out []history.Observation
	for _, o := range obs {
		if len(o.Params) < 3 || o.Error != "" {
			continue
		}
		k := profiles.Key{Source: o.Params[0], Account: o.Params[1], EventID: o.Params[2]}
		switch o.Query {
		case "event_rows":
			stored[k] = o.Count > 0
		case "effects":
			if o.Count > 0 || !stored[k] || !acked[k] || len(out) >= inboxEvidenceKeys || ctx.Err() != nil {
				continue
			}
			st, err := s.env.Queue.InboxState(ctx, k)
			r := history.Observation{Query: QueryInboxState, Params: o.Params, Phase: PhaseSoak, Found: st.Found, Status: st.State, Count: int64(st.Attempts), AtNS: s.since()}
			if err != nil {
				r.Error = err.Error()
			}
			out = append(out, r)
		}
	}
	return out
}

// evidenceNote is what the final reads tell of a key beyond its rows: its
// inbox state, its downstream calls.
func evidenceNote(inbox *history.Observation, down *history.Observation, keys int) string {
	note := ""
	if inbox != nil && inbox.Error == "" && inbox.Found {
		note += fmt.Sprintf(" (inbox: %s, %s attempt(s))", inbox.Status, strconv.FormatInt(inbox.Count, 10))
	}
	if down != nil && down.Version > 1 {
		note += fmt.Sprintf(" (downstream: applied %d times, %d call(s) under %d operation key(s))", down.Version, down.Count, keys)
	}
	return note
}
