package check_test

import (
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// ACK-1 without failpoints, one round of three concurrent deliveries: two
// acknowledged before the kill, one in flight (no answer). After the restart
// the acknowledged ones are read; then all three are redelivered and read.
var ack1 = register(&table{
	id: "ACK-1",
	clean: func() *history.History {
		k1, k2, k3 := key("evt_1"), key("evt_2"), key("evt_3")
		return scenario("ACK-1").
			send("load", k1, typeCredit).
			send("load", k2, typeCredit).
			send("load", k3, typeCredit, noAnswer("reset")).
			state("after-restart", 1, k1, k2).
			send("redelivery", k1, typeCredit, attemptNo(2)).
			send("redelivery", k2, typeCredit, attemptNo(2)).
			send("redelivery", k3, typeCredit, attemptNo(2)).
			state("after-redelivery", 1, k1, k2, k3).
			reconciled(k1, k2, k3).done()
	},
	cases: []tcase{
		{name: "with failpoints: killed after each of two 2xx", build: func() *history.History {
			k1, k2 := key("evt_1"), key("evt_2")
			return scenario("ACK-1").
				send("load", k1, typeCredit).
				state("after-restart", 1, k1).
				send("redelivery", k1, typeCredit, attemptNo(2)).
				state("after-redelivery", 1, k1).
				send("load", k2, typeCredit).
				state("after-restart", 1, k2).
				send("redelivery", k2, typeCredit, attemptNo(2)).
				state("after-redelivery", 1, k2).
				reconciled(k1, k2).done()
		}},
		{name: "an acknowledged event gone after the restart", codes: is("ack.lost"),
			edits: do(count("event_rows", "after-restart", "evt_2", 0), count("effects", "after-restart", "evt_2", 0))},
		{name: "an acknowledged event's effect gone after the restart", codes: is("ack.lost"),
			edits: do(count("effects", "after-restart", "evt_1", 0))},
		{name: "an acknowledged event applied again after the restart", codes: is("ack.lost"),
			edits: do(count("effects", "after-restart", "evt_1", 2))},
		{name: "the redelivery applied again", codes: is("ack.effects"),
			edits: do(count("effects", "after-redelivery", "evt_1", 2))},
		{name: "a state effect without a witness", na: "a second application redelivered after the kill and restart cannot be shown",
			edits: do(setFact("effects_blind", blindReason))},
		// Losing an acknowledged event shows in a state as well.
		{name: "a state effect without a witness, unset after the restart", codes: is("ack.lost"),
			edits: do(setFact("effects_blind", blindReason), count("effects", "after-restart", "evt_1", 0))},
		{name: "the event in flight stored twice", codes: is("ack.effects"),
			edits: do(count("event_rows", "after-redelivery", "evt_3", 2))},
		{name: "the event in flight not applied after its redelivery", codes: is("ack.effects"),
			edits: do(count("effects", "after-redelivery", "evt_3", 0))},
		{name: "a row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_3", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_2", 2))},
		{name: "no read after the restart of an acknowledged event", reason: "no event_rows read after the restart for acknowledged (stripe, acct_A, evt_2)",
			edits: do(drop("event_rows", "after-restart", "evt_2"))},
		{name: "nothing acknowledged before the kill", reason: "no delivery was acknowledged before the kill",
			edits: do(attempts("load", "", noAnswer("reset")), drop("event_rows", "after-restart", ""), drop("effects", "after-restart", ""))},
		{name: "no effects read after the redelivery", reason: `has no effects read in phase "after-redelivery"`,
			edits: do(drop("effects", "after-redelivery", ""))},
	},
})

func TestACK1(t *testing.T) { ack1.run(t) }

// ACK-2: concurrent deliveries to the endpoint with the shortest timeout
// (github, 10 s), then a burst to every other profile's (stripe, 20 s), each
// endpoint's timeout recorded as a fact.
var ack2 = register(&table{
	id: "ACK-2",
	clean: func() *history.History {
		g1, g2, g3 := profiles.Key{Source: "github", Account: account, EventID: "evt_1"},
			profiles.Key{Source: "github", Account: account, EventID: "evt_2"},
			profiles.Key{Source: "github", Account: account, EventID: "evt_3"}
		s1 := key("evt_4")
		return scenario("ACK-2").
			fact("timeout:github/acct_A", "10s").
			send("load", g1, typeCredit, took(40*time.Millisecond)).
			send("load", g2, typeCredit, took(45*time.Millisecond)).
			send("load", g3, typeCredit, took(60*time.Millisecond)).
			fact("timeout:stripe/acct_A", "20s").
			send("load", s1, typeCredit, took(30*time.Millisecond)).
			reconciled(g1, g2, g3, s1).done()
	},
	cases: []tcase{
		{name: "a delivery timed out", codes: is("ack.timeout"),
			edits: do(attempts("load", "evt_2", noAnswer("timeout"), took(10*time.Second)))},
		{name: "a delivery answered 503 under load", codes: is("ack.timeout"),
			edits: do(attempts("load", "evt_4", refused(503)))},
		{name: "timed out and never stored", codes: is("ack.timeout"),
			edits: do(attempts("load", "evt_3", noAnswer("timeout"), took(10*time.Second)),
				count("event_rows", "reconcile", "evt_3", 0), count("effects", "reconcile", "evt_3", 0))},
		{name: "a row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_4", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_2", 2))},
		// ACK-2's own check needs no read; the reconciliation does.
		{name: "a key not reconciled", reason: "has no reconciliation read for (github, acct_A, evt_2)",
			edits: do(drop("event_rows", "reconcile", "evt_2"))},
		{name: "no delivery under load", reason: "sent no delivery under load",
			edits: do(dropRole("load"))},
	},
})

func TestACK2(t *testing.T) { ack2.run(t) }

// ACK-3 on one endpoint: a tampered body, a wrong secret and no signature, each
// refused and read to have left nothing, beside a valid control.
var ack3 = register(&table{
	id: "ACK-3",
	clean: func() *history.History {
		k1, k2, k3, k4 := key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4")
		return scenario("ACK-3").
			send("bad:stripe tampered body", k1, typeCredit, faults("tamper"), refused(400)).
			send("bad:stripe wrong secret", k2, typeCredit, faults("wrong_secret"), refused(401)).
			send("bad:stripe missing signature", k3, typeCredit, faults("missing_signature"), refused(400)).
			send("control", k4, typeCredit).
			rows("bad", k1, 0).effects("bad", k1, 0).
			rows("bad", k2, 0).effects("bad", k2, 0).
			rows("bad", k3, 0).effects("bad", k3, 0).
			state("control", 1, k4).
			reconciled(k4).done()
	},
	cases: []tcase{
		{name: "a tampered body acknowledged", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe tampered body", "", acked))},
		{name: "a missing signature answered 500", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe missing signature", "", refused(500)))},
		{name: "a wrong secret unanswered", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe wrong secret", "", noAnswer("timeout")))},
		{name: "a tampered body stored", codes: is("ack.stored-bad-input"),
			edits: do(count("event_rows", "bad", "evt_1", 1))},
		{name: "a wrong secret's event applied", codes: is("ack.stored-bad-input"),
			edits: do(count("effects", "bad", "evt_2", 1))},
		{name: "no signature check at all", codes: is("ack.accepted-bad-input", "ack.stored-bad-input"),
			edits: do(attempts("bad:stripe missing signature", "", acked), count("event_rows", "bad", "evt_3", 1), count("effects", "bad", "evt_3", 1))},
		{name: "everything refused, the control too", codes: is("ack.control-rejected"),
			edits: do(attempts("control", "", refused(401)))},
		{name: "the control not applied", codes: is("ack.control-rejected"),
			edits: do(count("effects", "control", "evt_4", 0))},
		{name: "the control's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_4", 0))},
		{name: "two rows for the control at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_4", 2))},
		{name: "two effects for the control at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_4", 2))},
		{name: "no invalid delivery", reason: "sent no invalid delivery",
			edits: do(dropRole("bad:"), drop("event_rows", "bad", ""), drop("effects", "bad", ""))},
		{name: "no control", reason: "sent no valid delivery to hold its expectations against",
			edits: do(dropRole("control"), dropReads("evt_4"))},
		{name: "no effects read of the invalid deliveries", reason: `has no effects read in phase "bad"`,
			edits: do(drop("effects", "bad", ""))},
	},
})

func TestACK3(t *testing.T) { ack3.run(t) }

// ACK-4 on one timestamp-signing endpoint (tolerance 5 min): a delivery signed
// beyond the tolerance, a control, and two signed inside it (2m30s ago, 1 min
// ahead). The one signed in the past carries a stale_by fault, so the
// reconciliation leaves it to the boundary check.
var ack4 = register(&table{
	id: "ACK-4",
	clean: func() *history.History {
		k1, k2, k3, k4 := key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4")
		return scenario("ACK-4").
			send("bad:stripe delivery signed 10m1s ago (tolerance 5m0s)", k1, typeCredit, faults("stale_by:10m1s"), refused(400)).
			send("control", k2, typeCredit).
			send("boundary:stripe signed 2m30s ago, inside the tolerance", k3, typeCredit, faults("stale_by:2m30s")).
			send("boundary:stripe signed 1m0s ahead (clock skew), inside the tolerance", k4, typeCredit, faults("ahead_by:1m0s")).
			rows("bad", k1, 0).effects("bad", k1, 0).
			state("control", 1, k2).
			state("boundary", 1, k3, k4).
			reconciled(k2, k4).done()
	},
	cases: []tcase{
		{name: "the stale delivery acknowledged", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe delivery signed 10m1s ago (tolerance 5m0s)", "", acked))},
		{name: "the stale delivery stored", codes: is("ack.stored-bad-input"),
			edits: do(count("event_rows", "bad", "evt_1", 1))},
		{name: "the control refused", codes: is("ack.control-rejected"),
			edits: do(attempts("control", "", refused(400)))},
		{name: "the delivery signed inside the tolerance refused", codes: is("ack.boundary-rejected"),
			edits: do(attempts("boundary:stripe signed 2m30s ago, inside the tolerance", "", refused(400)))},
		{name: "the delivery signed ahead refused", codes: is("ack.boundary-rejected"),
			edits: do(attempts("boundary:stripe signed 1m0s ahead (clock skew), inside the tolerance", "", refused(400)))},
		{name: "the delivery signed ahead not applied", codes: is("ack.boundary-not-applied"),
			edits: do(count("effects", "boundary", "evt_4", 0))},
		{name: "a tolerance too strict: both refused, nothing stored", codes: is("ack.boundary-rejected", "ack.boundary-not-applied"),
			edits: do(attempts("boundary:stripe signed 2m30s ago, inside the tolerance", "", refused(400)),
				attempts("boundary:stripe signed 1m0s ahead (clock skew), inside the tolerance", "", refused(400)),
				count("event_rows", "boundary", "", 0), count("effects", "boundary", "", 0),
				count("event_rows", "reconcile", "evt_4", 0), count("effects", "reconcile", "evt_4", 0))},
		{name: "the delivery signed ahead gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_4", 0))},
		{name: "two rows for the control at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_2", 2))},
		{name: "two effects for the control at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_2", 2))},
		{name: "no delivery at the boundary", reason: "sent no delivery at a boundary",
			edits: do(dropRole("boundary:"), dropReads("evt_3"), dropReads("evt_4"))},
		{name: "no invalid delivery", reason: "sent no invalid delivery",
			edits: do(dropRole("bad:"), dropReads("evt_1"))},
		{name: "no rows read at the boundary", reason: `has no event_rows read in phase "boundary"`,
			edits: do(drop("event_rows", "boundary", ""))},
	},
})

func TestACK4(t *testing.T) { ack4.run(t) }

// ACK-5 on one endpoint: malformed JSON, a missing event ID (its rows read under
// the empty ID too) and a body twice the 1 MiB limit, beside a control.
var ack5 = register(&table{
	id: "ACK-5",
	clean: func() *history.History {
		k1, k2, k3, k4 := key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4")
		return scenario("ACK-5").
			send("bad:stripe/acct_A malformed JSON", k1, typeCredit, faults("malformed_json"), refused(400)).
			send("bad:stripe/acct_A missing event ID", k2, typeCredit, faults("missing_id"), refused(400)).
			send("bad:stripe/acct_A oversized body (2097152 bytes, twice the 1048576-byte limit)", k3, typeCredit, faults("oversize:2097152"), refused(413)).
			send("control", k4, typeCredit).
			rows("bad", k1, 0).effects("bad", k1, 0).
			rows("bad", k2, 0).effects("bad", k2, 0).rows("bad", key(""), 0).
			rows("bad", k3, 0).effects("bad", k3, 0).
			state("control", 1, k4).
			reconciled(k4).done()
	},
	cases: []tcase{
		{name: "malformed JSON acknowledged", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe/acct_A malformed JSON", "", acked))},
		{name: "an oversized body answered 500", codes: is("ack.accepted-bad-input"),
			edits: do(attempts("bad:stripe/acct_A oversized body (2097152 bytes, twice the 1048576-byte limit)", "", refused(500)))},
		{name: "an event without an ID stored under the empty ID", codes: is("ack.stored-bad-input"),
			edits: do(keyCount("event_rows", "bad", key(""), 1))},
		{name: "malformed JSON stored", codes: is("ack.stored-bad-input"),
			edits: do(count("event_rows", "bad", "evt_1", 1))},
		{name: "the control refused", codes: is("ack.control-rejected"),
			edits: do(attempts("control", "", refused(400)))},
		{name: "the control not stored", codes: is("ack.control-rejected"),
			edits: do(count("event_rows", "control", "evt_4", 0))},
		{name: "the control's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_4", 0))},
		{name: "two rows for the control at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_4", 2))},
		{name: "two effects for the control at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_4", 2))},
		{name: "no control", reason: "sent no valid delivery to hold its expectations against",
			edits: do(dropRole("control"), dropReads("evt_4"))},
		{name: "no rows read of the invalid deliveries", reason: `has no event_rows read in phase "bad"`,
			edits: do(drop("event_rows", "bad", ""))},
	},
})

func TestACK5(t *testing.T) { ack5.run(t) }

// ACK-6 on one endpoint: an event of the unhandled type, its effects read once
// settled, beside a control. The reconciliation leaves the unhandled type out.
var ack6 = register(&table{
	id: "ACK-6",
	clean: func() *history.History {
		k1, k2 := key("evt_1"), key("evt_2")
		return scenario("ACK-6").
			send("unknown-type", k1, typeUnhandled).
			send("control", k2, typeCredit).
			effects("unknown-type", k1, 0).
			state("control", 1, k2).
			reconciled(k2).done()
	},
	cases: []tcase{
		{name: "the unhandled type refused", codes: is("ack.unknown-type-rejected"),
			edits: do(attempts("unknown-type", "", refused(400)))},
		{name: "the unhandled type answered 500", codes: is("ack.unknown-type-rejected"),
			edits: do(attempts("unknown-type", "", refused(500)))},
		{name: "the unhandled type applied", codes: is("ack.unknown-type-applied"),
			edits: do(count("effects", "unknown-type", "evt_1", 1))},
		{name: "the control refused", codes: is("ack.control-rejected"),
			edits: do(attempts("control", "", refused(500)))},
		{name: "the control ignored like the unhandled type", codes: is("ack.control-rejected"),
			edits: do(count("event_rows", "control", "evt_2", 0), count("effects", "control", "evt_2", 0))},
		{name: "the control's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "two rows for the control at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_2", 2))},
		{name: "two effects for the control at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_2", 2))},
		{name: "no effects read of the unhandled type", reason: `has no effects read in phase "unknown-type"`,
			edits: do(drop("effects", "unknown-type", ""))},
		{name: "no control", reason: "sent no valid delivery to hold its expectations against",
			edits: do(dropRole("control"), dropReads("evt_2"))},
	},
})

func TestACK6(t *testing.T) { ack6.run(t) }

// ACK-7 on one endpoint: a valid event padded to 1 KiB under the 1 MiB limit.
var ack7 = register(&table{
	id: "ACK-7",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("ACK-7").
			send("boundary:stripe/acct_A 1047552-byte body (limit 1048576)", k, typeCredit).
			state("boundary", 1, k).
			reconciled(k).done()
	},
	cases: []tcase{
		{name: "the large body refused", codes: is("ack.boundary-rejected"),
			edits: do(attempts("boundary:stripe/acct_A 1047552-byte body (limit 1048576)", "", refused(413)))},
		{name: "the large body acknowledged, not stored", codes: is("ack.boundary-not-applied"),
			edits: do(count("event_rows", "boundary", "evt_1", 0), count("effects", "boundary", "evt_1", 0))},
		{name: "the large body's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no delivery at the boundary", reason: "sent no delivery at a boundary",
			edits: do(dropRole("boundary:"), dropReads("evt_1"))},
		{name: "no effects read at the boundary", reason: `has no effects read in phase "boundary"`,
			edits: do(drop("effects", "boundary", ""))},
	},
})

func TestACK7(t *testing.T) { ack7.run(t) }
