package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Store checks of an object-version receiver (target.idempotency:
// object-version): no event rows; each store check's event is an ordered
// update of a fresh object (sub_<event ID>, key 100), judged by the object:
// stored when it holds the key or a newer one, nothing stored when it neither
// holds the key nor exists.

const ovKey = 100

func ovObject(k profiles.Key) string { return "sub_" + k.EventID }

// ovScenario starts an object-version history whose updates are keys.
func ovScenario(id string, keys ...profiles.Key) *rec {
	r := scenario(id).fact("idempotency", "object-version")
	for _, k := range keys {
		r.fact("order_key:"+keyString(k), ovObject(k)+" 100")
	}
	return r
}

// objects records each key's object read in phase: holding the update's key
// (held) or no row.
func (r *rec) objects(phase string, held bool, keys ...profiles.Key) *rec {
	for _, k := range keys {
		if held {
			r.object(phase, ovObject(k), ovKey, "v1")
		} else {
			r.object(phase, ovObject(k), 0, "")
		}
	}
	return r
}

// ACK-1, killed after acknowledgements: evt_1 acknowledged, evt_2 in flight.
var ack1ObjectVersion = register(&table{
	name: "ACK-1 object-version",
	id:   "ACK-1",
	clean: func() *history.History {
		a, b := key("evt_1"), key("evt_2")
		return ovScenario("ACK-1", a, b).
			send("load", a, typeUpdated).
			send("load", b, typeUpdated, noAnswer("reset")).
			objects("after-restart", true, a).
			send("redelivery", a, typeUpdated, attemptNo(2)).
			send("redelivery", b, typeUpdated, attemptNo(2)).
			objects("after-redelivery", true, a, b).
			objects("reconcile", true, a, b).done()
	},
	cases: []tcase{
		{name: "applied once is said to be unjudged", note: "applied once: not judged (not applicable)"},
		{name: "a newer key on the object is still the update", edits: do(reads("object", "after-restart", "sub_evt_1", version(ovKey+5, "v6")))},
		{name: "acknowledged, gone after the restart", codes: is("ack.lost"),
			edits: do(noRow("object", "after-restart", "sub_evt_1"))},
		{name: "acknowledged, an older key after the restart", codes: is("ack.lost"),
			edits: do(reads("object", "after-restart", "sub_evt_1", version(ovKey-1, "v0")))},
		{name: "not stored after the redelivery", codes: is("ack.effects"), also: is("reconcile.lost"),
			edits: do(noRow("object", "after-redelivery", "sub_evt_2"), noRow("object", "reconcile", "sub_evt_2"))},
		{name: "no object read after the restart", reason: "no object read after the restart",
			edits: do(drop("object", "after-restart", ""))},
		{name: "no ordered update recorded", reason: "no ordered update recorded",
			edits: do(dropFact("order_key:" + keyString(key("evt_1"))))},
	},
})

func TestACK1ObjectVersion(t *testing.T) { ack1ObjectVersion.run(t) }

// ACK-3: a tampered body and no signature, each an update of its own fresh
// object, beside a control.
var ack3ObjectVersion = register(&table{
	name: "ACK-3 object-version",
	id:   "ACK-3",
	clean: func() *history.History {
		t1, t2, ctl := key("evt_1"), key("evt_2"), key("evt_ctl")
		return ovScenario("ACK-3", t1, t2, ctl).
			send("bad:stripe tampered body", t1, typeUpdated, faults("tamper"), refused(400)).
			send("bad:stripe missing signature", t2, typeUpdated, faults("missing_signature"), refused(400)).
			send("control", ctl, typeUpdated).
			objects("bad", false, t1, t2).
			objects("control", true, ctl).
			objects("reconcile", true, ctl).done()
	},
	cases: []tcase{
		{name: "a tampered body accepted", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe tampered body", "", acked))},
		{name: "a tampered body applied", codes: is("ack.accepted-bad-input", "ack.stored-bad-input"),
			edits: do(attempts("bad:stripe tampered body", "", acked), reads("object", "bad", "sub_evt_1", version(ovKey, "v1")))},
		{name: "an unsigned update created its object", codes: is("ack.stored-bad-input"),
			edits: do(reads("object", "bad", "sub_evt_2", version(ovKey-50, "")))},
		{name: "an object a fixture made may exist", edits: do(setFact("ordered_fixture", "true"), reads("object", "bad", "sub_evt_2", version(ovKey-50, "")))},
		{name: "an object a fixture made, the key taken", codes: is("ack.stored-bad-input"),
			edits: do(setFact("ordered_fixture", "true"), reads("object", "bad", "sub_evt_2", version(ovKey, "v1")))},
		{name: "the control not applied", codes: is("ack.control-rejected"), also: is("reconcile.lost"),
			edits: do(noRow("object", "control", "sub_evt_ctl"), noRow("object", "reconcile", "sub_evt_ctl"))},
		{name: "no object read of the bad deliveries", reason: `has no object read in phase "bad"`,
			edits: do(drop("object", "bad", ""))},
	},
})

func TestACK3ObjectVersion(t *testing.T) { ack3ObjectVersion.run(t) }

// ACK-6: an unhandled type beside a control update. An object-version
// receiver has no query for the unhandled type's object: the answer and the
// control are judged, and the note says what is not.
var ack6ObjectVersion = register(&table{
	name: "ACK-6 object-version",
	id:   "ACK-6",
	clean: func() *history.History {
		u, ctl := key("evt_1"), key("evt_ctl")
		return ovScenario("ACK-6", ctl).
			send("unknown-type", u, typeUnhandled).
			send("control", ctl, typeUpdated).
			objects("control", true, ctl).
			objects("reconcile", true, ctl).done()
	},
	cases: []tcase{
		{name: "changing nothing is said to be unjudged", note: "changes nothing: not judged (not applicable)"},
		{name: "the unhandled type refused", codes: is("ack.unknown-type-rejected"),
			edits: do(attempts("unknown-type", "", refused(400)))},
		{name: "the control not applied", codes: is("ack.control-rejected"), also: is("reconcile.lost"),
			edits: do(noRow("object", "control", "sub_evt_ctl"), noRow("object", "reconcile", "sub_evt_ctl"))},
	},
})

func TestACK6ObjectVersion(t *testing.T) { ack6ObjectVersion.run(t) }

// ACK-7: a padded update just under the size limit.
var ack7ObjectVersion = register(&table{
	name: "ACK-7 object-version",
	id:   "ACK-7",
	clean: func() *history.History {
		k := key("evt_1")
		return ovScenario("ACK-7", k).
			send("boundary:stripe/acct_A 1047552-byte body (limit 1048576)", k, typeUpdated).
			objects("boundary", true, k).
			objects("reconcile", true, k).done()
	},
	cases: []tcase{
		{name: "refused", codes: is("ack.boundary-rejected", "ack.boundary-not-applied"),
			edits: do(attempts("boundary:stripe/acct_A 1047552-byte body (limit 1048576)", "", refused(413)), noRow("object", "boundary", "sub_evt_1"))},
		{name: "acknowledged, not applied", codes: is("ack.boundary-not-applied"), also: is("reconcile.lost"),
			edits: do(noRow("object", "boundary", "sub_evt_1"), noRow("object", "reconcile", "sub_evt_1"))},
	},
})

func TestACK7ObjectVersion(t *testing.T) { ack7ObjectVersion.run(t) }

// ACK-9: the body changed after signing and the event ID changed after
// signing (one object, whatever its event ID became), beside a control.
var ack9ObjectVersion = register(&table{
	name: "ACK-9 object-version",
	id:   "ACK-9",
	clean: func() *history.History {
		body, id, ctl := key("evt_body"), key("evt_id"), key("evt_ctl")
		return ovScenario("ACK-9", body, id, ctl).
			send(roleBody, body, typeUpdated, faults("alter:body"), refused(400)).
			send(roleID, id, typeUpdated, faults("alter:id"), refused(400)).
			send("control", ctl, typeUpdated).
			objects("bad", false, body, id).
			objects("control", true, ctl).
			objects("reconcile", true, ctl).done()
	},
	cases: []tcase{
		{name: "the body changed, applied", codes: is("ack.unsigned-body"),
			edits: do(reads("object", "bad", "sub_evt_body", version(ovKey, "v1")))},
		{name: "the event ID changed, accepted and applied", codes: is("ack.unsigned-id"),
			edits: do(attempts(roleID, "", acked), reads("object", "bad", "sub_evt_id", version(ovKey, "v1")))},
		{name: "an object read that is no changed delivery's", reason: "is no changed delivery's",
			edits: do(more(func(r *rec) { r.object("bad", "sub_evt_ctl", ovKey, "v1") }))},
		{name: "no object read of the changed deliveries", reason: `has no object read in phase "bad"`,
			edits: do(drop("object", "bad", ""))},
	},
})

func TestACK9ObjectVersion(t *testing.T) { ack9ObjectVersion.run(t) }

// DEDUP-1: concurrent copies of one update.
var dedup1ObjectVersion = register(&table{
	name: "DEDUP-1 object-version",
	id:   "DEDUP-1",
	clean: func() *history.History {
		k := key("evt_1")
		return ovScenario("DEDUP-1", k).
			send("copy", k, typeUpdated, copyNo(0)).
			send("copy", k, typeUpdated, copyNo(1)).
			gate("subscriptions", 16, 2, 0).
			objects("after", true, k).
			objects("reconcile", true, k).done()
	},
	cases: []tcase{
		{name: "applied once is said to be unjudged", note: "applied once: not judged (not applicable)"},
		{name: "a copy refused", codes: is("dedup.not-acked"), edits: do(nthAttempt("copy", 1, refused(409)))},
		{name: "the update not visible after the copies", codes: is("dedup.rows"), also: is("reconcile.lost"),
			edits: do(noRow("object", "after", "sub_evt_1"), noRow("object", "reconcile", "sub_evt_1"))},
		{name: "no object read after the copies", reason: `has no object read in phase "after"`,
			edits: do(drop("object", "after", ""))},
	},
})

func TestDEDUP1ObjectVersion(t *testing.T) { dedup1ObjectVersion.run(t) }

// DEDUP-2: the first 2xx thrown away, then a redelivery and a resend.
var dedup2ObjectVersion = register(&table{
	name: "DEDUP-2 object-version",
	id:   "DEDUP-2",
	clean: func() *history.History {
		k := key("evt_1")
		return ovScenario("DEDUP-2", k).
			send("first", k, typeUpdated, answered(history.OutcomeUnknown, 200)).
			objects("after-first", true, k).
			send("redelivery", k, typeUpdated, attemptNo(2)).
			send("resend", k, typeUpdated, attemptNo(3)).
			objects("after", true, k).
			objects("reconcile", true, k).done()
	},
	cases: []tcase{
		{name: "the redelivery refused as a duplicate", codes: is("dedup.not-acked"), edits: do(attempts("redelivery", "", refused(409)))},
		{name: "the first delivery not applied", codes: is("dedup.rows"), edits: do(noRow("object", "after-first", "sub_evt_1"))},
		{name: "a redelivery regressed the object", codes: is("dedup.rows"), also: is("reconcile.lost"),
			edits: do(reads("object", "after", "sub_evt_1", version(ovKey-1, "v0")), reads("object", "reconcile", "sub_evt_1", version(ovKey-1, "v0")))},
	},
})

func TestDEDUP2ObjectVersion(t *testing.T) { dedup2ObjectVersion.run(t) }

// ATOMIC-1: the update's transaction killed at the table after the object's
// row; nothing may show, and the redelivery applies.
var atomic1ObjectVersion = register(&table{
	name: "ATOMIC-1 object-version",
	id:   "ATOMIC-1",
	clean: func() *history.History {
		k := key("evt_1")
		return ovScenario("ATOMIC-1", k).
			send("doomed", k, typeUpdated, noAnswer("reset")).
			objects("after-crash", false, k).
			send("redelivery", k, typeUpdated, attemptNo(2)).
			objects("after", true, k).
			objects("reconcile", true, k).done()
	},
	cases: []tcase{
		{name: "applied once is said to be unjudged", note: "applied once: not judged (not applicable)"},
		{name: "the object committed apart from the rest", codes: is("atomic.partial"),
			edits: do(reads("object", "after-crash", "sub_evt_1", version(ovKey, "v1")))},
		{name: "the redelivery not applied", codes: is("atomic.not-applied"), also: is("reconcile.lost"),
			edits: do(noRow("object", "after", "sub_evt_1"), noRow("object", "reconcile", "sub_evt_1"))},
		{name: "acknowledged before the commit", codes: is("atomic.acked-uncommitted"),
			edits: do(attempts("doomed", "", acked))},
	},
})

func TestATOMIC1ObjectVersion(t *testing.T) { atomic1ObjectVersion.run(t) }
