package scenarios

import (
	"net/http"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
)

// OUTBOX: external effects go through an outbox written in the business
// transaction and sent by a worker with a stable operation key, so that no
// call is made for a change that never committed, and a resend — after a lost
// answer, a crash, a failure — is applied once downstream. The harness's sink
// (`{{.SinkURL}}`) plays the downstream service.
var outboxFamily = family{Name: "OUTBOX", Guarantees: []*Guarantee{&outbox1, &outbox2, &outbox3, &outbox4}}

// The OUTBOX deviation codes.
var (
	codeOutboxNotSent         = Code{"outbox.not-sent", "no downstream call for the event was answered 2xx"}
	codeOutboxKeyChanged      = Code{"outbox.key-changed", "the downstream calls for one event carried different operation keys"}
	codeOutboxAppliedTwice    = Code{"outbox.applied-twice", "the downstream applied one event's operation more than once"}
	codeOutboxSentUncommitted = Code{"outbox.sent-uncommitted", "a downstream call was made for an event whose transaction had not committed"}
	codeOutboxDropped         = Code{"outbox.dropped", "a downstream message that never succeeded was dropped, given up on before its declared attempts, or recorded as sent"}
)

// copiesOUTBOX1 is how many copies of its event OUTBOX-1 sends at once.
const copiesOUTBOX1 = 4

// outboxFacts are what the OUTBOX scenarios fix for their checkers.
type outboxFacts struct {
	// MaxAttempts is the declared attempt limit of a message (OUTBOX-4).
	MaxAttempts *int `fact:"max_attempts"`
}

var outbox1 = Guarantee{
	ID: "OUTBOX-1", Title: "Lost downstream response",
	Promise: "A downstream call whose response was lost is sent again with the same operation key and is applied once downstream.",
	Why:     "A fresh idempotency key per attempt turns every lost response into a second charge, refund or e-mail downstream.",
	Needs:   []Capability{"outbox"},
	Spec:    "a downstream call whose response was lost is sent again with the same operation key, and applied once",
	Sends:   "4 concurrent copies of one `effect` event (lock-gated when the target allows it); the sink applies the first downstream call and drops its response, then fails the second with 503",
	Expects: "calls retried with one operation key; applied once downstream",
	Race:    "the 4 copies, held at the event table before any commits",
	codes:   []Code{codeOutboxNotSent, codeOutboxKeyChanged, codeOutboxAppliedTwice},
	Reads:   []Read{{Query: querySinkCalls, Tells: "the downstream calls whose body carries the event ID: one key, applied once"}, {Query: queryEventRows, Tells: "the event's key rows: 1"}, {Query: queryEffects, Tells: "the event's effects: 1"}},
	judge: bind(func(s *session, _ *outboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		// The first call is applied and its answer lost; the second fails.
		s.env.Sink.Lose(k.EventID, 1)
		s.env.Sink.Fail(k.EventID, 1, http.StatusServiceUnavailable)
		s.note("sink: the first call for %s is applied and its response dropped; the second is answered 503", k.EventID)
		// Concurrent copies too, held together at the event table where the
		// target allows it: duplicates must not add downstream calls.
		s.race(s.env.EventTable, copiesOUTBOX1, func() { s.copies(ep, ev, copiesOUTBOX1, roleCopy, simulator.Shape{}) })
		s.state(k, phaseAfter, 1)
		s.untilSink(k, s.sinkWait(), answered2xx)
		s.sinkCalls(k, phaseAfter)
	}, func(v *view, _ *outboxFacts) {
		downstreamOnce(v)
	}),
}

var outbox2 = Guarantee{
	ID: "OUTBOX-2", Title: "Crash after sending",
	Promise: "A crash after the downstream call, before it was recorded as sent, resends it with the same operation key, and it is applied once downstream.",
	Why:     "The outbox cannot know whether a call it never saw answered was applied: only a stable operation key makes the resend harmless.",
	Needs:   []Capability{"outbox", "crash"},
	Spec:    "a crash after the downstream call, before it was recorded, resends it with the same operation key, applied once",
	Sends:   "one `effect` event; the sink applies its first downstream call and withholds the answer while the harness SIGKILLs the receiver; restart",
	Expects: "the call resent with the same operation key and answered 2xx; applied once downstream",
	codes:   []Code{codeOutboxNotSent, codeOutboxKeyChanged, codeOutboxAppliedTwice},
	Reads:   []Read{{Query: querySinkCalls, Tells: "the downstream calls whose body carries the event ID: one key, applied once"}, {Query: queryEventRows, Tells: "the event's key rows: 1"}, {Query: queryEffects, Tells: "the event's effects: 1"}},
	judge: bind(func(s *session, _ *outboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		// The sink applies the first call and withholds its answer; while the
		// receiver waits for it, the harness kills the receiver.
		s.env.Sink.HoldAfterApply(k.EventID, 30*time.Second)
		a := s.send(ep, ev, roleFirst, simulator.Shape{})
		calls := s.untilSink(k, s.sinkWait(), func(c []SinkCall) bool { return len(c) > 0 })
		if len(calls) == 0 {
			s.abort("the receiver made no downstream call for %s within %s (%s), so no crash could follow one", k.EventID, s.sinkWait().Round(time.Second), Describe(a))
		}
		s.note("the receiver's downstream call for %s arrived; SIGKILL while the sink withholds the answer", k.EventID)
		s.kill()
		s.restart()
		if !acked(a) {
			s.send(ep, ev, roleRedelivery, simulator.Shape{Attempt: 2})
		}
		s.untilSink(k, s.sinkWait(), answered2xx)
		s.state(k, phaseAfter, 1)
		s.sinkCalls(k, phaseAfter)
	}, func(v *view, _ *outboxFacts) {
		downstreamOnce(v)
		if n := len(v.sinkFor("")); n == 1 {
			v.note("only one downstream call: the receiver did not resend after the crash (its first call was applied, so nothing downstream is missing)")
		}
	}),
}

var outbox3 = Guarantee{
	ID: "OUTBOX-3", Title: "No call for a rolled-back change",
	Promise: "No downstream call is made for an event whose transaction rolled back; once it commits, the call is made once.",
	Why:     "A call made inline, before the commit, cannot be taken back when the transaction fails: the downstream acts on a change that never happened.",
	Needs:   []Capability{"outbox", "crash", "stop-in-transaction"},
	Spec:    "no downstream call is made for an event whose transaction rolled back",
	Sends:   "one `effect` event whose transaction is cut by SIGKILL while it waits on the locked effect table; restart; then as ATOMIC-1",
	Expects: "no downstream call before the restart; then applied once downstream",
	codes:   []Code{codeOutboxSentUncommitted, codeOutboxNotSent, codeOutboxKeyChanged, codeOutboxAppliedTwice},
	Reads:   []Read{{Query: querySinkCalls, Tells: "the downstream calls whose body carries the event ID, while the transaction is cut (none) and at the end"}, {Query: queryEventRows, Tells: "the event's key rows after the crash (0) and after the redelivery (1)"}, {Query: queryEffects, Tells: "the event's effects, likewise"}},
	judge: bind(func(s *session, _ *outboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		a := s.holdAndCut(ep, ev, s.effectTable(ev), s.killAt)
		// Read before the restart: whatever the sink got came from a
		// transaction that never committed.
		s.sinkCalls(k, phaseAfterCut)
		s.restart()
		s.afterCut(ep, ev, k, a, phaseAfterCrash)
		s.untilSink(k, s.sinkWait(), answered2xx)
		s.sinkCalls(k, phaseAfter)
	}, func(v *view, _ *outboxFacts) {
		cut := v.reads(querySinkCalls, phaseAfterCut)
		if len(cut) == 0 {
			v.fail("history: no sink read while the transaction was cut")
			return
		}
		for _, o := range cut {
			for _, c := range v.sinkFor(o.Params[2]) {
				if c.AtNS <= o.AtNS {
					v.deviate(codeOutboxSentUncommitted, "downstream call %d for %s (%s) arrived while its transaction was uncommitted; it was then killed", c.Seq, o.Params[2], c.Outcome)
				}
			}
		}
		downstreamOnce(v)
	}),
}

var outbox4 = Guarantee{
	ID: "OUTBOX-4", Title: "Downstream failures dead-lettered",
	Promise: "A downstream call that keeps failing is retried, then dead-lettered and kept, never dropped or marked sent.",
	Why:     "An outbox that gives up silently, or records a failed call as sent, loses the effect while every dashboard stays green.",
	Needs:   []Capability{"outbox-dead-letter"},
	Spec:    "downstream failures are retried, then dead-lettered and kept, never dropped",
	Sends:   "one `effect` event; the sink answers every downstream call 503",
	Expects: "at least 2 calls, one operation key, then the message dead-lettered (state dead), not marked sent",
	codes:   []Code{codeOutboxKeyChanged, codeOutboxDropped},
	Reads:   []Read{{Query: queryOutboxState, Tells: "the event's outbox message once the calls ended: dead, not sent"}, {Query: querySinkCalls, Tells: "the downstream calls whose body carries the event ID: at least 2, one key"}, {Query: queryEventRows, Tells: "the event's key rows: 1"}, {Query: queryEffects, Tells: "the event's effects: 1"}},
	judge: bind(func(s *session, f *outboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		max := s.env.Outbox.MaxAttempts
		f.MaxAttempts = &max
		// Every call for this event fails, more often than it may be tried.
		s.env.Sink.Fail(k.EventID, 10*max+10, http.StatusServiceUnavailable)
		s.note("sink: every call for %s is answered 503", k.EventID)
		s.send(ep, ev, roleFirst, simulator.Shape{})
		s.state(k, phaseAfter, 1)
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
			if st.Found && (st.State == inboxDead || st.State == outboxSent) || n > max || n > 0 && time.Since(lastAt) > quiet {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		s.outboxState(k, phaseAfter)
		s.sinkCalls(k, phaseAfter)
	}, func(v *view, f *outboxFacts) {
		max := 0
		if f.MaxAttempts != nil {
			max = *f.MaxAttempts
		}
		if len(v.reads(querySinkCalls, phaseAfter)) == 0 || len(v.reads(queryOutboxState, phaseAfter)) == 0 {
			v.fail("history: %s needs a sink read and an outbox_state read once the calls ended", v.sc.Name)
			return
		}
		for _, o := range v.reads(querySinkCalls, phaseAfter) {
			calls := v.sinkFor(o.Params[2])
			if len(calls) < min(2, max) {
				v.deviate(codeOutboxDropped, "%s: given up after %d failed downstream call(s) (declared max_attempts %d)", o.Params[2], len(calls), max)
			}
			sameKey(v, o.Params[2], calls)
		}
		for _, o := range v.reads(queryOutboxState, phaseAfter) {
			switch {
			case !o.Found:
				v.deviate(codeOutboxDropped, "%s: no outbox message after every downstream call failed: dropped", paramsText(o.Params))
			case o.Status == outboxSent:
				v.deviate(codeOutboxDropped, "%s: recorded as sent although the downstream answered every call 503", paramsText(o.Params))
			case o.Status != inboxDead:
				// Still retrying when the harness stopped waiting: neither kept
				// as a dead letter nor dropped, yet.
				v.fail("%s: outbox message still %q after %d attempt(s) (declared max_attempts %d) when the wait ended: its dead-lettering was not observed", paramsText(o.Params), o.Status, o.Count, max)
			}
		}
	}),
}

// sinkWait bounds the wait for a downstream call: the receiver's own retries
// (backoff, leases) come on top of its settling.
func (s *session) sinkWait() time.Duration {
	d := s.settleFor() + 3*time.Second
	if s.env.Inbox.Lease > 0 {
		d += 2 * s.env.Inbox.Lease
	}
	return d
}

// sinkFor returns the downstream calls attributed to eventID ("" for all).
func (v *view) sinkFor(eventID string) []history.Sink {
	var out []history.Sink
	for _, c := range v.sink {
		if eventID == "" || c.EventID == eventID {
			out = append(out, c)
		}
	}
	return out
}

// downstreamOnce: every event read in the after phase reached the sink, was
// answered 2xx at least once, carried one key, and was applied once.
func downstreamOnce(v *view) {
	rs := v.reads(querySinkCalls, phaseAfter)
	if len(rs) == 0 {
		v.fail("history: %s has no sink read after its deliveries", v.sc.Name)
		return
	}
	for _, o := range rs {
		id := o.Params[2]
		calls := v.sinkFor(id)
		applied, ok, noKey := 0, false, false
		for _, c := range calls {
			if c.Outcome == "applied" || c.Outcome == "lost" {
				applied++
			}
			if is2xx(c.Status) {
				ok = true
			}
			if c.Key == "" && !noKey {
				noKey = true
				v.note("downstream call %d for %s carried no operation key: a resend of it would be a new operation downstream", c.Seq, id)
			}
		}
		if !ok {
			v.deviate(codeOutboxNotSent, "%s: %d downstream call(s), none answered 2xx", id, len(calls))
		}
		sameKey(v, id, calls)
		if applied > 1 {
			v.deviate(codeOutboxAppliedTwice, "%s: the downstream applied its operation %d times (%d calls)", id, applied, len(calls))
		}
	}
}

func sameKey(v *view, id string, calls []history.Sink) {
	keys := map[string]bool{}
	for _, c := range calls {
		if c.Key != "" {
			keys[c.Key] = true
		}
	}
	if len(keys) > 1 {
		v.deviate(codeOutboxKeyChanged, "%s: %d different operation keys over %d downstream calls: a resend is a new operation downstream", id, len(keys), len(calls))
	}
}
