package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
)

// opKey is the operation key a receiver sends downstream for evt_1.
const opKey = "op-evt_1"

// outboxCases are the cases of every check that an event reached the
// downstream once, its last call (seq last) answered 2xx.
func outboxCases(last int) []tcase {
	return []tcase{
		{name: "no call answered 2xx", codes: is("outbox.not-sent"),
			edits: do(sinkCall(last, func(c *history.Sink) { c.Status, c.Outcome = 503, "failed" }))},
		{name: "no downstream call at all", codes: is("outbox.not-sent"),
			edits: do(dropSink())},
		{name: "applied twice downstream", codes: is("outbox.applied-twice"),
			edits: do(more(func(r *rec) { r.sink(key("evt_1"), last+1, opKey, 200, "applied") }))},
		{name: "the event's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no sink read after the deliveries", reason: "has no sink read after its deliveries",
			edits: do(drop("sink_calls", "after", ""))},
	}
}

// OUTBOX-1: four concurrent copies of evt_1; the sink applies the first call
// and drops its answer, fails the second with 503; the third, same key, is
// answered from the first.
var outbox1 = register(&table{
	id: "OUTBOX-1",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("OUTBOX-1").
			send("copy", k, typeCredit, copyNo(0)).
			send("copy", k, typeCredit, copyNo(1)).
			send("copy", k, typeCredit, copyNo(2)).
			send("copy", k, typeCredit, copyNo(3)).
			state("after", 1, k).
			sink(k, 1, opKey, 0, "lost").
			sink(k, 2, opKey, 503, "failed").
			sink(k, 3, opKey, 200, "replayed").
			sinkRead("after", k, 3, 1).
			reconciled(k).done()
	},
	cases: append([]tcase{
		// As it happens with a fresh idempotency key per attempt.
		{name: "a fresh key per attempt", codes: is("outbox.key-changed", "outbox.applied-twice"),
			edits: do(sinkCall(2, func(c *history.Sink) { c.Key = "op-2" }), sinkCall(3, func(c *history.Sink) { c.Key, c.Outcome = "op-3", "applied" }))},
		{name: "the resend under a new key", codes: is("outbox.key-changed"),
			edits: do(sinkCall(3, func(c *history.Sink) { c.Key = "op-3" }))},
		{name: "given up after the 503", codes: is("outbox.not-sent"),
			edits: do(dropSink(3))},
	}, outboxCases(3)...),
})

func TestOUTBOX1(t *testing.T) { outbox1.run(t) }

// OUTBOX-2 against a receiver that accepts before applying: evt_1 accepted;
// the sink applies its first call and withholds the answer while the receiver
// is killed; restarted, it resends with the same key, answered from the first.
var outbox2 = register(&table{
	id: "OUTBOX-2",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("OUTBOX-2").fact("acceptance", "async").
			send("first", k, typeCredit, accepted).
			sink(k, 1, opKey, 0, "lost").
			sink(k, 2, opKey, 200, "replayed").
			state("after", 1, k).
			sinkRead("after", k, 2, 1).
			reconciled(k).done()
	},
	cases: append([]tcase{
		// A receiver that calls downstream before answering: the delivery dies
		// with it and is redelivered.
		{name: "unanswered, redelivered", edits: do(attempts("first", "", noAnswer("reset")),
			more(func(r *rec) { r.send("redelivery", key("evt_1"), typeCredit, attemptNo(2)) }))},
		{name: "the resend under a new key", codes: is("outbox.key-changed"),
			edits: do(sinkCall(2, func(c *history.Sink) { c.Key = "op-2" }))},
		{name: "no resend after the crash: noted", note: "only one downstream call",
			edits: do(dropSink(2), sinkCall(1, func(c *history.Sink) { c.Status, c.Outcome = 200, "applied" }))},
	}, outboxCases(2)...),
})

func TestOUTBOX2(t *testing.T) { outbox2.run(t) }

// callBeforeCut adds a downstream call for evt_1 made before the sink read while
// its transaction was cut, and renumbers the later calls; outcome is what the
// sink made of the later ones (replayed for the same key).
func callBeforeCut(outcome string, later string) edit {
	return func(h *history.History) {
		var cut int64
		for _, o := range h.Observations {
			if o.Query == "sink_calls" && o.Phase == "after-cut" {
				cut = o.AtNS
			}
		}
		for i := range h.Sink {
			h.Sink[i].Seq++
			h.Sink[i].Outcome = later
		}
		h.Sink = append([]history.Sink{{Scenario: 1, EventID: "evt_1", Seq: 1, Key: opKey, Status: 200, Outcome: outcome, AtNS: cut - 1}}, h.Sink...)
	}
}

// OUTBOX-3: evt_1's transaction cut by a SIGKILL while it waits on the held
// effect table; the sink read while it is uncommitted (no call), restart,
// nothing left, the redelivery applied, one downstream call.
var outbox3 = register(&table{
	id: "OUTBOX-3",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("OUTBOX-3").
			send("doomed", k, typeCredit, noAnswer("reset")).
			sinkRead("after-cut", k, 0, 0).
			state("after-crash", 0, k).
			send("redelivery", k, typeCredit, attemptNo(2)).
			state("after", 1, k).
			sink(k, 1, opKey, 200, "applied").
			sinkRead("after", k, 1, 1).
			reconciled(k).done()
	},
	cases: append([]tcase{
		{name: "a call made before the commit", codes: is("outbox.sent-uncommitted"),
			edits: do(callBeforeCut("applied", "replayed"))},
		// As it happens with a fresh key: the cut change is acted on downstream,
		// and the committed one once more.
		{name: "a call before the commit, applied again after", codes: is("outbox.sent-uncommitted", "outbox.applied-twice"),
			edits: do(callBeforeCut("applied", "applied"))},
		{name: "the call resent under a new key", codes: is("outbox.key-changed", "outbox.applied-twice"),
			edits: do(sinkCall(1, func(c *history.Sink) { c.Status, c.Outcome = 0, "lost" }),
				more(func(r *rec) { r.sink(key("evt_1"), 2, "op-2", 200, "applied") }))},
	}, outboxCases(1)...),
})

func TestOUTBOX3(t *testing.T) { outbox3.run(t) }

// OUTBOX-4 with max_attempts 3: the sink answers every call for evt_1 503; the
// message must be dead-lettered after its attempts, all under one key.
var outbox4 = register(&table{
	id: "OUTBOX-4",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("OUTBOX-4").
			fact("max_attempts", "3").
			send("first", k, typeCredit).
			state("after", 1, k).
			sink(k, 1, opKey, 503, "failed").
			sink(k, 2, opKey, 503, "failed").
			sink(k, 3, opKey, 503, "failed").
			outbox("after", k, "dead", 3).
			sinkRead("after", k, 3, 0).
			reconciled(k).done()
	},
	cases: []tcase{
		{name: "one attempt declared, one call", edits: do(setFact("max_attempts", "1"), dropSink(2, 3), count("outbox_state", "after", "evt_1", 1))},
		{name: "given up after one call", codes: is("outbox.dropped"),
			edits: do(dropSink(2, 3), count("outbox_state", "after", "evt_1", 1))},
		{name: "no outbox message", codes: is("outbox.dropped"),
			edits: do(noRow("outbox_state", "after", "evt_1"))},
		{name: "recorded as sent", codes: is("outbox.dropped"),
			edits: do(status("outbox_state", "after", "evt_1", "sent"))},
		{name: "a retry under a new key", codes: is("outbox.key-changed"),
			edits: do(sinkCall(2, func(c *history.Sink) { c.Key = "op-2" }))},
		{name: "the event's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "still retrying when the wait ended", reason: `outbox message still "pending" after 3 attempt(s)`,
			edits: do(status("outbox_state", "after", "evt_1", "pending"))},
		{name: "no outbox read once the calls ended", reason: "needs a sink read and an outbox_state read",
			edits: do(drop("outbox_state", "after", ""))},
	},
})

func TestOUTBOX4(t *testing.T) { outbox4.run(t) }
