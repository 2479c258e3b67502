package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// DEDUP-1: copies of one delivery released together (one endpoint here), its
// rows and effects read after, and the reconciliation's reads.
var dedup1 = register(&table{
	id: "DEDUP-1",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("DEDUP-1").
			send("copy", k, typeCredit, copyNo(0)).
			send("copy", k, typeCredit, copyNo(1)).
			send("copy", k, typeCredit, copyNo(2)).
			gate("processed_webhook_events", 16, 3, 0).
			state("after", 1, k).
			reconciled(k).done()
	},
	cases: []tcase{
		{name: "a copy refused", codes: is("dedup.not-acked"),
			edits: do(nthAttempt("copy", 1, refused(409)))},
		{name: "a copy unanswered", codes: is("dedup.not-acked"),
			edits: do(nthAttempt("copy", 2, noAnswer("timeout")))},
		{name: "two rows after the copies", codes: is("dedup.rows"),
			edits: do(count("event_rows", "after", "evt_1", 2))},
		{name: "no row after the copies", codes: is("dedup.rows"),
			edits: do(count("event_rows", "after", "evt_1", 0))},
		{name: "two effects after the copies", codes: is("dedup.effects"),
			edits: do(count("effects", "after", "evt_1", 2))},
		// A state effect without a witness reads 1 after one application and
		// after two: the copies' check cannot fail, so it is no pass.
		{name: "a state effect without a witness", na: "an event applied twice leaves that state as one application does, so a second application after concurrent copies cannot be shown",
			edits: do(setFact("effects_blind", blindReason)), note: "reconciliation did not check for effects applied twice"},
		{name: "a state effect without a witness, two effects at the reconciliation", na: "cannot be shown",
			edits: do(setFact("effects_blind", blindReason), count("effects", "reconcile", "evt_1", 2))},
		// What it can show still fails.
		{name: "a state effect never set", codes: is("dedup.effects"),
			edits: do(setFact("effects_blind", blindReason), count("effects", "after", "evt_1", 0))},
		{name: "a state effect without a witness, two rows", codes: is("dedup.rows"),
			edits: do(setFact("effects_blind", blindReason), count("event_rows", "after", "evt_1", 2))},
		{name: "the race lost to the end: two rows, two effects", codes: is("dedup.rows", "dedup.effects"),
			also: is("reconcile.duplicated", "reconcile.applied-twice"),
			edits: do(count("event_rows", "after", "evt_1", 2), count("effects", "after", "evt_1", 2),
				count("event_rows", "reconcile", "evt_1", 2), count("effects", "reconcile", "evt_1", 2))},
		{name: "the row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no rows read after the copies", reason: `has no event_rows read in phase "after"`,
			edits: do(drop("event_rows", "after", ""))},
		{name: "no effects read after the copies", reason: `has no effects read in phase "after"`,
			edits: do(drop("effects", "after", ""))},
	},
})

func TestDEDUP1(t *testing.T) { dedup1.run(t) }

// DEDUP-2: the first 2xx read and thrown away (outcome unknown), the rows read
// until the first delivery shows, then a redelivery and a resend.
var dedup2 = register(&table{
	id: "DEDUP-2",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("DEDUP-2").
			send("first", k, typeCredit, faults("lost_ack:discard"), answered(history.OutcomeUnknown, 200)).
			rows("after-first", k, 1).
			send("redelivery", k, typeCredit, attemptNo(2)).
			send("resend", k, typeCredit, attemptNo(3)).
			state("after", 1, k).
			reconciled(k).done()
	},
	cases: []tcase{
		{name: "the first delivery answered 500", codes: is("dedup.not-acked"),
			edits: do(attempts("first", "", refused(500)))},
		{name: "the first delivery answered 409", codes: is("dedup.not-acked"),
			edits: do(attempts("first", "", refused(409)))},
		{name: "the redelivery refused as a duplicate", codes: is("dedup.not-acked"),
			edits: do(attempts("redelivery", "", refused(409)))},
		{name: "the resend refused", codes: is("dedup.not-acked"),
			edits: do(attempts("resend", "", refused(422)))},
		{name: "no row after the first delivery", codes: is("dedup.rows"),
			edits: do(count("event_rows", "after-first", "evt_1", 0))},
		{name: "a second row after the redeliveries", codes: is("dedup.rows"),
			edits: do(count("event_rows", "after", "evt_1", 2))},
		{name: "a second effect after the redeliveries", codes: is("dedup.effects"),
			edits: do(count("effects", "after", "evt_1", 2))},
		{name: "the row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no rows read after the first delivery", reason: `has no event_rows read in phase "after-first"`,
			edits: do(drop("event_rows", "after-first", ""))},
	},
})

func TestDEDUP2(t *testing.T) { dedup2.run(t) }

// scopeTable is the table of DEDUP-3, -4 and -5: one delivery to key a (role
// first), one to key b (role other-scope), each stored and applied once.
func scopeTable(id string, a, b profiles.Key) *table {
	return &table{
		id: id,
		clean: func() *history.History {
			return scenario(id).
				send("first", a, typeCredit).
				send("other-scope", b, typeCredit).
				state("after", 1, a, b).
				reconciled(a, b).done()
		},
		cases: []tcase{
			// Both events must apply: a state shows that, so it is judged.
			{name: "a state effect without a witness, both applied", edits: do(setFact("effects_blind", blindReason))},
			{name: "the first delivery refused", codes: is("dedup.not-acked"),
				edits: do(attempts("first", "", refused(500)))},
			{name: "the other scope's delivery refused", codes: is("dedup.not-acked"),
				edits: do(attempts("other-scope", "", refused(409)))},
			// A key without the scope: the second delivery is taken for a
			// duplicate and refused, and nothing of it is stored.
			{name: "the other scope refused as a duplicate, nothing stored", codes: is("dedup.not-acked", "dedup.rows", "dedup.effects"),
				edits: do(attempts("other-scope", "", refused(409)),
					keyCount("event_rows", "after", b, 0), keyCount("effects", "after", b, 0), keyCount("event_rows", "reconcile", b, 0), keyCount("effects", "reconcile", b, 0))},
			// The same, acknowledged: the event is dropped silently.
			{name: "the other scope acknowledged, nothing stored", codes: is("dedup.rows", "dedup.effects", "reconcile.lost"),
				edits: do(keyCount("event_rows", "after", b, 0), keyCount("effects", "after", b, 0), keyCount("event_rows", "reconcile", b, 0), keyCount("effects", "reconcile", b, 0))},
			{name: "no row for the other scope", codes: is("dedup.rows"),
				edits: do(keyCount("event_rows", "after", b, 0))},
			{name: "two rows for the first", codes: is("dedup.rows"),
				edits: do(keyCount("event_rows", "after", a, 2))},
			{name: "no effect for the other scope", codes: is("dedup.effects"),
				edits: do(keyCount("effects", "after", b, 0))},
			{name: "two rows for the first at the reconciliation", codes: is("reconcile.duplicated"),
				edits: do(keyCount("event_rows", "reconcile", a, 2))},
			{name: "two effects for the other scope at the reconciliation", codes: is("reconcile.applied-twice"),
				edits: do(keyCount("effects", "reconcile", b, 2))},
			{name: "no effects read after the deliveries", reason: `has no effects read in phase "after"`,
				edits: do(drop("effects", "after", ""))},
		},
	}
}

var (
	dedup3 = register(scopeTable("DEDUP-3", key("evt_1"), profiles.Key{Source: source, Account: "acct_B", EventID: "evt_1"}))
	dedup4 = register(scopeTable("DEDUP-4", key("evt_1"), profiles.Key{Source: "github", Account: account, EventID: "evt_1"}))
	dedup5 = register(scopeTable("DEDUP-5", key("evt_1"), key("evt_2")))
)

func TestDEDUP3(t *testing.T) { dedup3.run(t) }
func TestDEDUP4(t *testing.T) { dedup4.run(t) }
func TestDEDUP5(t *testing.T) { dedup5.run(t) }

// DEDUP-6: two payments created; each gets the succeeded transition twice under
// two event IDs, one after the other (pi_1), then at once (pi_2); the object's
// effects are read with the recorded want.
var dedup6 = register(&table{
	id: "DEDUP-6",
	clean: func() *history.History {
		return scenario("DEDUP-6").fact("object", "payment").
			send("setup", key("evt_1"), typeCreated).
			fact("setup_state:pi_1", "pending").fact("setup_events:pi_1", "evt_1").
			objState("setup", "pi_1", "pending").
			send("first", key("evt_2"), typeSucceeded).
			send("other-scope", key("evt_3"), typeSucceeded).
			fact("want_effects:pi_1", "1").
			objEffects("sequential", "pi_1", 1).
			send("setup", key("evt_4"), typeCreated).
			fact("setup_state:pi_2", "pending").fact("setup_events:pi_2", "evt_4").
			objState("setup", "pi_2", "pending").
			send("copy", key("evt_5"), typeSucceeded).
			send("copy", key("evt_6"), typeSucceeded).
			fact("want_effects:pi_2", "1").
			objEffects("concurrent", "pi_2", 1).
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4"), key("evt_5"), key("evt_6")).done()
	},
	cases: []tcase{
		{name: "the second event for the change refused", codes: is("dedup.not-acked"),
			edits: do(attempts("other-scope", "", refused(409)))},
		{name: "a concurrent event refused", codes: is("dedup.not-acked"),
			edits: do(nthAttempt("copy", 1, refused(500)))},
		{name: "the creating event refused", codes: is("dedup.not-acked"),
			edits: do(attempts("setup", "evt_4", refused(500)))},
		// The second object's creating event was acknowledged and dropped: its
		// pair of events was never sent, and its setup is the finding.
		{name: "the creating event acknowledged and lost", codes: is("setup.unmet"),
			edits: do(noRow("state", "setup", "pi_2"), dropRole("copy"), drop("object_effects", "concurrent", ""), dropFact("want_effects:pi_2"),
				drop("event_rows", "reconcile", "evt_5"), drop("event_rows", "reconcile", "evt_6"))},
		// Object effects read as a state without a witness: one effect and
		// two read alike, so the check is no pass; an effect never applied
		// still shows.
		{name: "object effects as a state without a witness", na: "an effect applied twice leaves that state as one application does, so a second application two events for one change, one after the other; two events for one change at the same time cannot be shown",
			edits: do(setFact("object_effects_blind", objectBlindReason))},
		{name: "object effects as a state, never set", codes: is("dedup.object-effects"),
			edits: do(setFact("object_effects_blind", objectBlindReason), count("object_effects", "concurrent", "pi_2", 0))},
		{name: "no setup read of an object", reason: "no setup read of payment pi_1",
			edits: do(drop("state", "setup", "pi_1"))},
		{name: "applied twice, one after the other", codes: is("dedup.object-effects"),
			edits: do(count("object_effects", "sequential", "pi_1", 2))},
		{name: "applied twice at once", codes: is("dedup.object-effects"),
			edits: do(count("object_effects", "concurrent", "pi_2", 2))},
		{name: "never applied", codes: is("dedup.object-effects"),
			edits: do(count("object_effects", "concurrent", "pi_2", 0))},
		// The want is the recorded fact (the path's effects plus one), not a constant.
		{name: "fewer effects than the recorded want", codes: is("dedup.object-effects"),
			edits: do(setFact("want_effects:pi_1", "2"))},
		{name: "an event's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_3", 0))},
		{name: "two rows for one event at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_5", 2))},
		{name: "no object effects read at once", reason: `has no object_effects read in phase "concurrent"`,
			edits: do(drop("object_effects", "concurrent", ""))},
	},
})

func TestDEDUP6(t *testing.T) { dedup6.run(t) }

// DEDUP-7: an event, other events in between (two here: the checker counts
// none of them), then its redelivery; the first event read once at the end.
var dedup7 = register(&table{
	id: "DEDUP-7",
	clean: func() *history.History {
		k, o1, o2 := key("evt_1"), key("evt_2"), key("evt_3")
		return scenario("DEDUP-7").
			send("first", k, typeCredit).
			send("load", o1, typeCredit).
			send("load", o2, typeCredit).
			send("redelivery", k, typeCredit, attemptNo(2)).
			state("after", 1, k).
			reconciled(k, o1, o2).done()
	},
	cases: []tcase{
		{name: "the redelivery refused as a duplicate", codes: is("dedup.not-acked"),
			edits: do(attempts("redelivery", "", refused(409)))},
		{name: "an event in between refused", codes: is("dedup.not-acked"),
			edits: do(attempts("load", "evt_2", refused(500)))},
		// A window of recent keys forgot the event: the redelivery is stored
		// and applied again.
		{name: "the redelivery applied again", codes: is("dedup.rows", "dedup.effects", "reconcile.duplicated", "reconcile.applied-twice"),
			edits: do(count("event_rows", "after", "evt_1", 2), count("effects", "after", "evt_1", 2),
				count("event_rows", "reconcile", "evt_1", 2), count("effects", "reconcile", "evt_1", 2))},
		{name: "no effects read after the redelivery", reason: `has no effects read in phase "after"`,
			edits: do(drop("effects", "after", ""))},
	},
})

func TestDEDUP7(t *testing.T) { dedup7.run(t) }

// blindReason is the fact a scenario records when the effect role reads a
// state and the target declares no witness.
const blindReason = "the effect role's effects query reads a state (events.effect.effects_kind: state) and the target declares no witness (events.effect.witness): an event applied twice leaves that state as one application does"

// objectBlindReason is the fact a scenario records when the lifecycle's
// effects query reads a state and the target declares no witness.
const objectBlindReason = "the lifecycle's effects query reads a state (events.lifecycle.effects_kind: state) and the target declares no witness (events.lifecycle.witness): an effect applied twice leaves that state as one application does"
