package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
)

// version makes an object read return version v ("v<v>"), found.
func version(v int64, status string) func(o *history.Observation) {
	return func(o *history.Observation) { o.Found, o.Version, o.Status = true, v, status }
}

// ORDER-1: updates of sub_1 with versions 1, 3, 2, each settled before the
// next; the object read at the end must be at version 3.
var order1 = register(&table{
	id: "ORDER-1",
	clean: func() *history.History {
		return scenario("ORDER-1").
			send("update", key("evt_1"), typeUpdated).
			send("update", key("evt_2"), typeUpdated).
			send("update", key("evt_3"), typeUpdated).
			fact("want_version", "3").
			object("final", "sub_1", 3, "v3").
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
	},
	cases: []tcase{
		// Ordered by the events' created time: the want is a Unix time.
		{name: "ordered by created time", edits: do(setFact("want_version", "1767225603"),
			reads("object", "final", "sub_1", version(1767225603, "")))},
		{name: "the late older update refused", codes: is("order.not-acked"),
			edits: do(attempts("update", "evt_3", refused(409)))},
		{name: "regressed by the late older update", codes: is("order.regressed"),
			edits: do(reads("object", "final", "sub_1", version(2, "v2")))},
		{name: "no object row", codes: is("order.regressed"),
			edits: do(noRow("object", "final", "sub_1"))},
		{name: "held to the recorded want", codes: is("order.regressed"),
			edits: do(setFact("want_version", "4"))},
		{name: "an update's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "two rows for an update at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_3", 2))},
		{name: "no object read at the end", reason: "no object read at the end of the stream",
			edits: do(drop("object", "final", ""))},
		{name: "no version recorded", reason: "history: fact want_version",
			edits: do(dropFact("want_version"))},
	},
})

func TestORDER1(t *testing.T) { order1.run(t) }

// ORDER-2: versions 1..3 of sub_1 (evt_1..evt_3), each delivered twice in a
// seeded order, in two concurrent halves; then version 1 resent and version 2
// under a new event ID (evt_4); the object must end at version 3.
var order2 = register(&table{
	id: "ORDER-2",
	clean: func() *history.History {
		return scenario("ORDER-2").
			send("stream", key("evt_2"), typeUpdated).
			send("stream", key("evt_2"), typeUpdated).
			send("stream", key("evt_1"), typeUpdated).
			send("stream", key("evt_3"), typeUpdated).
			send("stream", key("evt_1"), typeUpdated).
			send("stream", key("evt_3"), typeUpdated).
			send("late", key("evt_1"), typeUpdated, attemptNo(2)).
			send("late", key("evt_4"), typeUpdated).
			fact("want_version", "3").
			object("final", "sub_1", 3, "v3").
			reconciledRows(key("evt_2"), key("evt_1"), key("evt_3"), key("evt_4")).done()
	},
	cases: []tcase{
		{name: "a duplicate in the stream refused", codes: is("order.not-acked"),
			edits: do(nthAttempt("stream", 1, refused(409)))},
		{name: "the old version's resend refused", codes: is("order.not-acked"),
			edits: do(attempts("late", "evt_1", refused(409)))},
		{name: "regressed by the late update", codes: is("order.regressed"),
			edits: do(reads("object", "final", "sub_1", version(2, "v2")))},
		{name: "left at an older version by the shuffle", codes: is("order.regressed"),
			edits: do(reads("object", "final", "sub_1", version(1, "v1")))},
		// Concurrent copies of one version race without a unique key.
		{name: "concurrent copies stored twice", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_2", 2))},
		{name: "an update's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_4", 0))},
		{name: "no object read at the end", reason: "no object read at the end of the stream",
			edits: do(drop("object", "final", ""))},
	},
})

func TestORDER2(t *testing.T) { order2.run(t) }

// ORDER-3 on the built-in payment: its one stale pair is a succeeded event after
// the refund. pi_1 is created, succeeds and is refunded (evt_1..evt_3); a late
// succeeded event (evt_4) must leave it refunded with its path's 2 effects.
var order3 = register(&table{
	id: "ORDER-3",
	clean: func() *history.History {
		return scenario("ORDER-3").fact("object", "payment").
			send("setup", key("evt_1"), typeCreated).
			send("setup", key("evt_2"), typeSucceeded).
			send("setup", key("evt_3"), typeRefunded).
			fact("setup_state:pi_1", "refunded").
			fact("setup_events:pi_1", "evt_1 evt_2 evt_3").
			objState("setup", "pi_1", "refunded").
			send("late", key("evt_4"), typeSucceeded).
			fact("want_state:pi_1", "refunded").
			fact("late_type:pi_1", typeSucceeded).
			objState("final", "pi_1", "refunded").
			fact("want_effects:pi_1", "2").
			objEffects("final", "pi_1", 2).
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4")).done()
	},
	cases: []tcase{
		{name: "no effects query declared", edits: do(drop("object_effects", "final", ""), dropFact("want_effects:pi_1"))},
		{name: "a setup event refused", codes: is("order.not-acked"),
			edits: do(attempts("setup", "evt_2", refused(500)))},
		// The refund was acknowledged and dropped: the late success was never
		// sent, and the object's finding is its setup, not a transition.
		{name: "a setup event acknowledged and lost", codes: is("setup.unmet"),
			edits: do(status("state", "setup", "pi_1", "succeeded"), dropRole("late"), drop("state", "final", ""),
				drop("object_effects", "final", ""), dropFact("want_effects:pi_1"), dropFact("want_state:pi_1"), dropFact("late_type:pi_1"),
				drop("event_rows", "reconcile", "evt_4"))},
		// A late event's read of an object whose setup did not hold is not
		// judged: "succeeded" here is the lost refund's, not the late event's.
		{name: "a lost setup is not blamed on the late event", codes: is("setup.unmet"),
			edits: do(status("state", "setup", "pi_1", "succeeded"), status("state", "final", "pi_1", "succeeded"))},
		{name: "a refused setup event is not a lost one", codes: is("order.not-acked"), note: "was refused, so its later event was not judged",
			edits: do(attempts("setup", "evt_3", refused(500)), status("state", "setup", "pi_1", "succeeded"), status("state", "final", "pi_1", "succeeded"))},
		{name: "the object gone after its setup", codes: is("setup.unmet"),
			edits: do(noRow("state", "setup", "pi_1"), noRow("state", "final", "pi_1"))},
		// A state reads 1 for the path's 2 effects: judged as applied, the
		// late event's state still judged in full.
		{name: "object effects as a state without a witness", note: "object effects judged as applied or not only",
			edits: do(setFact("object_effects_blind", objectBlindReason), count("object_effects", "final", "pi_1", 1))},
		{name: "object effects as a state, the late event undid the refund", codes: is("order.transition-applied"),
			edits: do(setFact("object_effects_blind", objectBlindReason), count("object_effects", "final", "pi_1", 1), status("state", "final", "pi_1", "succeeded"))},
		{name: "no setup read", reason: "no setup read of payment pi_1",
			edits: do(drop("state", "setup", ""))},
		{name: "the late success undid the refund", codes: is("order.transition-applied"),
			edits: do(status("state", "final", "pi_1", "succeeded"))},
		{name: "the late success added an effect", codes: is("order.transition-applied"),
			edits: do(count("object_effects", "final", "pi_1", 3))},
		{name: "the late success applied in full", codes: is("order.transition-applied"),
			edits: do(status("state", "final", "pi_1", "succeeded"), count("object_effects", "final", "pi_1", 3))},
		{name: "the payment gone", codes: is("order.transition-applied"),
			edits: do(noRow("state", "final", "pi_1"))},
		{name: "held to the recorded want", codes: is("order.transition-applied"),
			edits: do(setFact("want_effects:pi_1", "1"))},
		{name: "the late event's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_4", 0))},
		{name: "two rows for the refund at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_3", 2))},
		{name: "no state read after the late event", reason: "no state read after the late events",
			edits: do(drop("state", "final", ""))},
		{name: "effects recorded but never read", reason: `has no object_effects read in phase "final"`,
			edits: do(drop("object_effects", "final", ""))},
	},
})

func TestORDER3(t *testing.T) { order3.run(t) }

// ORDER-4: update 1 of sub_1 (evt_1), read; its deletion carrying key 3
// (evt_2), read (no row); the stale update 2 under a new event ID (evt_3); the
// object read at the end must read as after the deletion.
var order4 = register(&table{
	id: "ORDER-4",
	clean: func() *history.History {
		return scenario("ORDER-4").
			send("update", key("evt_1"), typeUpdated).
			object("before-delete", "sub_1", 1, "v1").
			send("delete", key("evt_2"), typeDeleted).
			object("after-delete", "sub_1", 0, "").
			send("late", key("evt_3"), typeUpdated).
			fact("stale_key", "2").
			fact("want_version", "1").
			object("final", "sub_1", 0, "").
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
	},
	cases: []tcase{
		{name: "a tombstone kept through the stale update",
			edits: do(reads("object", "after-delete", "sub_1", version(3, "deleted")), reads("object", "final", "sub_1", version(3, "deleted")))},
		{name: "brought back by the stale update", codes: is("order.resurrected"),
			edits: do(reads("object", "final", "sub_1", version(2, "v2")))},
		{name: "the deleted object back with another version", codes: is("order.resurrected"),
			edits: do(reads("object", "final", "sub_1", version(1, "v1")))},
		{name: "the tombstone overwritten by the stale update", codes: is("order.resurrected"),
			edits: do(reads("object", "after-delete", "sub_1", version(3, "deleted")), reads("object", "final", "sub_1", version(2, "v2")))},
		{name: "the deletion refused", codes: is("order.not-acked"),
			edits: do(attempts("delete", "", refused(400)))},
		{name: "the stale update refused", codes: is("order.not-acked"),
			edits: do(attempts("late", "", refused(409)))},
		{name: "the deletion's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "two rows for the stale update at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_3", 2))},
		// The positive control: a deletion cannot be judged on an object the
		// first update never wrote. Acknowledged and not applied, that update
		// is the finding (setup.unmet), never blamed on the deletion.
		{name: "the first update acknowledged, not applied", codes: is("setup.unmet"),
			edits: do(noRow("object", "before-delete", "sub_1"))},
		{name: "the first update acknowledged, not applied, stale update resurrecting", codes: is("setup.unmet"),
			edits: do(noRow("object", "before-delete", "sub_1"), reads("object", "final", "sub_1", version(2, "v2")))},
		{name: "the first update refused", codes: is("order.not-acked"), note: "its first update was refused, so the deletion was not judged",
			edits: do(attempts("update", "", refused(500)), noRow("object", "before-delete", "sub_1"))},
		{name: "no object read at the end", reason: "ORDER-4 needs one object read before the delete, after it and at the end",
			edits: do(drop("object", "final", ""))},
	},
})

func TestORDER4(t *testing.T) { order4.run(t) }

// children records an object_children read (key 0 and found false for none).
func children(phase, obj string, key int64, found bool) func(r *rec) {
	return func(r *rec) {
		r.read(history.Observation{Query: "object_children", Phase: phase, Params: objParams(obj), Found: found, Version: key})
	}
}

// ORDER-5: update 1 of sub_1 (evt_1, tag v1) read as the control; update 2
// (evt_2, tag v2), then the tie: key 2 again under evt_3, tag v2-tie. With
// the default rule, an acknowledged tie must be what the object holds.
var order5 = register(&table{
	id: "ORDER-5",
	clean: func() *history.History {
		return scenario("ORDER-5").
			send("update", key("evt_1"), typeUpdated).
			object("control", "sub_1", 1, "v1").
			send("update", key("evt_2"), typeUpdated).
			send("tie", key("evt_3"), typeUpdated).
			fact("want_version", "2").fact("control_version", "1").fact("control_tag", "v1").
			fact("first_tag", "v2").fact("tie_tag", "v2-tie").
			object("final", "sub_1", 2, "v2-tie").
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
	},
	cases: []tcase{
		{name: "last-wins, the tie applied", edits: do(setFact("ties", "last-wins"))},
		{name: "acknowledged and dropped", codes: is("order.tie-dropped"),
			edits: do(status("object", "final", "sub_1", "v2"))},
		{name: "last-wins, acknowledged and dropped", codes: is("order.tie-dropped"),
			edits: do(setFact("ties", "last-wins"), status("object", "final", "sub_1", "v2"))},
		{name: "the tie refused, the first kept", edits: do(attempts("tie", "evt_3", refused(409)), status("object", "final", "sub_1", "v2"))},
		{name: "the tie refused yet applied", edits: do(attempts("tie", "evt_3", refused(409)))},
		{name: "last-wins, the tie refused", codes: is("order.not-acked"),
			edits: do(setFact("ties", "last-wins"), attempts("tie", "evt_3", refused(409)))},
		{name: "first-wins, the first kept", edits: do(setFact("ties", "first-wins"), status("object", "final", "sub_1", "v2"))},
		{name: "first-wins, the tie applied", codes: is("order.tie-rule"),
			edits: do(setFact("ties", "first-wins"))},
		{name: "regressed below the tied key", codes: is("order.regressed"),
			edits: do(reads("object", "final", "sub_1", version(1, "v1")))},
		{name: "the tie refused, another update held", codes: is("order.regressed"),
			edits: do(attempts("tie", "evt_3", refused(409)), status("object", "final", "sub_1", "v9"))},
		{name: "the tie's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_3", 0))},
		// The positive control: a state query that does not return the tag
		// cannot show what a tie did.
		{name: "the state query returns no tag", reason: "the state query must return the key and, second, the object's {{.Tag}}",
			edits: do(status("object", "control", "sub_1", "active"))},
		{name: "no read after the tie", reason: "ORDER-5 needs one object read after the first update and one after the tie",
			edits: do(drop("object", "final", ""))},
		{name: "no tags recorded", reason: "history: facts want_version, control_version, first_tag and tie_tag are required",
			edits: do(dropFact("tie_tag"))},
	},
})

func TestORDER5(t *testing.T) { order5.run(t) }

// ORDER-6: updates 1, 3, 2 of sub_1 (evt_1..evt_3); its child rows read key 1
// after update 1 (the control) and must read 3 at the end.
var order6 = register(&table{
	id: "ORDER-6",
	clean: func() *history.History {
		r := scenario("ORDER-6").
			send("update", key("evt_1"), typeUpdated)
		children("control", "sub_1", 1, true)(r)
		r.send("update", key("evt_2"), typeUpdated).
			send("update", key("evt_3"), typeUpdated).
			fact("want_version", "3").fact("control_version", "1").
			object("final", "sub_1", 3, "v3")
		children("final", "sub_1", 3, true)(r)
		return r.reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
	},
	cases: []tcase{
		{name: "rewritten by the stale update", codes: is("order.children-regressed"),
			edits: do(reads("object_children", "final", "sub_1", func(o *history.Observation) { o.Version = 2 }))},
		{name: "child rows gone", codes: is("order.children-regressed"),
			edits: do(noRow("object_children", "final", "sub_1"))},
		{name: "an update refused", codes: is("order.not-acked"),
			edits: do(attempts("update", "evt_2", refused(500)))},
		{name: "an update's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "the first update wrote no child rows", reason: "the children query must return the key they were written from",
			edits: do(noRow("object_children", "control", "sub_1"))},
		{name: "no children read at the end", reason: "ORDER-6 needs one children read after the first update and one at the end",
			edits: do(drop("object_children", "final", ""))},
		{name: "no control recorded", reason: "history: facts want_version and control_version are required",
			edits: do(dropFact("control_version"))},
	},
})

func TestORDER6(t *testing.T) { order6.run(t) }

// ORDER-4 against an object-version receiver: no event rows; every
// acknowledged update and deletion is reconciled against the object's key.
// Update 1 (evt_1, key 1), the deletion (evt_2, key 3, a tombstone), the stale
// update 2 (evt_3) refused by the guard: superseded, not lost.
var order4ObjectVersion = register(&table{
	name: "ORDER-4 object-version",
	id:   "ORDER-4",
	clean: func() *history.History {
		return scenario("ORDER-4").
			fact("idempotency", "object-version").
			fact("order_key:"+keyString(key("evt_1")), "sub_1 1").
			fact("order_key:"+keyString(key("evt_2")), "sub_1 3 delete").
			fact("order_key:"+keyString(key("evt_3")), "sub_1 2").
			send("update", key("evt_1"), typeUpdated).
			object("before-delete", "sub_1", 1, "v1").
			send("delete", key("evt_2"), typeDeleted).
			object("after-delete", "sub_1", 3, "deleted").
			send("late", key("evt_3"), typeUpdated).
			fact("stale_key", "2").
			fact("want_version", "1").
			object("final", "sub_1", 3, "deleted").
			object("reconcile", "sub_1", 3, "deleted").done()
	},
	cases: []tcase{
		{name: "superseded, not lost", note: "3 consistent (2 superseded by a newer key), 0 lost"},
		{name: "deleted without a tombstone", edits: do(
			reads("object", "after-delete", "sub_1", func(o *history.Observation) { o.Found, o.Version, o.Status = false, 0, "" }),
			reads("object", "final", "sub_1", func(o *history.Observation) { o.Found, o.Version, o.Status = false, 0, "" }),
			reads("object", "reconcile", "sub_1", func(o *history.Observation) { o.Found, o.Version, o.Status = false, 0, "" }))},
		// The stale update brought it back: the deletion no longer shows.
		{name: "brought back by the stale update", codes: is("order.resurrected", "reconcile.lost"),
			edits: do(reads("object", "final", "sub_1", version(2, "v2")), reads("object", "reconcile", "sub_1", version(2, "v2")))},
		{name: "the deletion refused: the update is not superseded", codes: is("order.not-acked", "reconcile.lost"),
			edits: do(attempts("delete", "", refused(400)),
				reads("object", "reconcile", "sub_1", func(o *history.Observation) { o.Found, o.Version, o.Status = false, 0, "" }))},
		{name: "no reconciliation read of the object", reason: "has no reconciliation read of object sub_1",
			edits: do(drop("object", "reconcile", ""))},
	},
})

func TestORDER4ObjectVersion(t *testing.T) { order4ObjectVersion.run(t) }
