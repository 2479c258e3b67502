package check_test

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Several roles of one kind: ORDER-3 on two lifecycle objects, a payment
// intent and a refund of it. pi_1 is driven to succeeded then refunded and
// gets a late succeeded (evt_1..evt_4); re_1's parent pi_2 succeeds (evt_5),
// a fixture writes re_1 (pending), refund.updated moves it to succeeded
// (evt_6) and a late refund.failed (evt_7) must leave it succeeded. The
// refund's reads are its own queries, state:refund and object_effects:refund.
var order3Roles = register(&table{
	id: "ORDER-3", name: "ORDER-3/several lifecycles",
	clean: func() *history.History {
		return scenario("ORDER-3").fact("object", "payment_intent").
			send("setup", key("evt_1"), typeCreated).
			send("setup", key("evt_2"), typeSucceeded).
			send("setup", key("evt_3"), typeRefunded).
			send("late", key("evt_4"), typeSucceeded).
			fact("want_state:pi_1", "refunded").
			fact("late_type:pi_1", typeSucceeded).
			objState("final", "pi_1", "refunded").
			send("setup", key("evt_5"), typeSucceeded).
			send("setup", key("evt_6"), "refund.updated").
			send("late", key("evt_7"), "refund.failed").
			fact("want_state:re_1", "succeeded").
			fact("late_type:re_1", "refund.failed").
			read(history.Observation{Query: "state:refund", Phase: "final", Params: objParams("re_1"), Found: true, Status: "succeeded"}).
			fact("want_effects:re_1", "1").
			read(history.Observation{Query: "object_effects:refund", Phase: "final", Params: objParams("re_1"), Found: true, Count: 1}).
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4"), key("evt_5"), key("evt_6"), key("evt_7")).done()
	},
	cases: []tcase{
		{name: "the late refund failure overwrote the refund", codes: is("order.transition-applied"),
			edits: do(status("state:refund", "final", "re_1", "failed"))},
		{name: "the late refund failure added an effect", codes: is("order.transition-applied"),
			edits: do(count("object_effects:refund", "final", "re_1", 2))},
		{name: "the late success undid the first object's refund", codes: is("order.transition-applied"),
			edits: do(status("state", "final", "pi_1", "succeeded"))},
		{name: "the refund gone", codes: is("order.transition-applied"),
			edits: do(noRow("state:refund", "final", "re_1"))},
	},
})

func TestORDER3SeveralLifecycles(t *testing.T) { order3Roles.run(t) }

// The deviation names the role whose object deviated.
func TestORDER3NamesTheRole(t *testing.T) {
	h := order3Roles.clean()
	status("state:refund", "final", "re_1", "failed")(h)
	g := judge(t, "ORDER-3", h)
	if ev := strings.Join(g.Evidence, "\n"); !strings.Contains(ev, "refund re_1") {
		t.Errorf("evidence does not name the refund re_1:\n%s", ev)
	}
}

// ORDER-1 on two ordered roles: a customer ordered by created time (cus_1,
// its first role) and a price ordered by a key field (price_1, role "price",
// its reads price's own object:price query). Each is held to its own want.
var order1Roles = register(&table{
	id: "ORDER-1", name: "ORDER-1/several ordered roles",
	clean: func() *history.History {
		return scenario("ORDER-1").
			send("update", key("evt_1"), typeUpdated).
			send("update", key("evt_2"), typeUpdated).
			send("update", key("evt_3"), typeUpdated).
			fact("want_version", "1767225603").
			fact("want_key:cus_1", "1767225603").
			object("final", "cus_1", 1767225603, "").
			send("update", key("evt_4"), "price.updated").
			send("update", key("evt_5"), "price.updated").
			send("update", key("evt_6"), "price.updated").
			fact("want_key:price_1", "3").
			read(history.Observation{Query: "object:price", Phase: "final", Params: objParams("price_1"), Found: true, Version: 3}).
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4"), key("evt_5"), key("evt_6")).done()
	},
	cases: []tcase{
		{name: "the second role regressed", codes: is("order.regressed"),
			edits: do(reads("object:price", "final", "price_1", version(2, "")))},
		{name: "the first role regressed", codes: is("order.regressed"),
			edits: do(reads("object", "final", "cus_1", version(1767225602, "")))},
		{name: "the second role's want missing", reason: "want_key:price_1",
			edits: do(dropFact("want_key:price_1"), dropFact("want_version"), dropFact("want_key:cus_1"),
				setFact("want_key:cus_1", "1767225603"))},
	},
})

func TestORDER1SeveralOrderedRoles(t *testing.T) { order1Roles.run(t) }

// ORDER-4 on two ordered roles, each deleted then sent a stale update; the
// second role's reads are object:price.
var order4Roles = register(&table{
	id: "ORDER-4", name: "ORDER-4/several ordered roles",
	clean: func() *history.History {
		return scenario("ORDER-4").
			send("update", key("evt_1"), typeUpdated).
			object("before-delete", "sub_1", 1, "v1").
			send("delete", key("evt_2"), typeDeleted).
			object("after-delete", "sub_1", 0, "").
			send("late", key("evt_3"), typeUpdated).
			fact("stale_key", "2").
			fact("want_version", "1").
			fact("stale_key:sub_1", "2").
			fact("want_key:sub_1", "1").
			object("final", "sub_1", 0, "").
			send("update", key("evt_4"), "price.updated").
			read(history.Observation{Query: "object:price", Phase: "before-delete", Params: objParams("price_1"), Found: true, Version: 1767225601}).
			send("delete", key("evt_5"), "price.deleted").
			read(history.Observation{Query: "object:price", Phase: "after-delete", Params: objParams("price_1")}).
			send("late", key("evt_6"), "price.updated").
			fact("stale_key:price_1", "1767225602").
			fact("want_key:price_1", "1767225601").
			read(history.Observation{Query: "object:price", Phase: "final", Params: objParams("price_1")}).
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4"), key("evt_5"), key("evt_6")).done()
	},
	cases: []tcase{
		{name: "the second role's object brought back", codes: is("order.resurrected"),
			edits: do(reads("object:price", "final", "price_1", version(1767225602, "")))},
		{name: "the second role's first update acknowledged, not applied", codes: is("setup.unmet"),
			edits: do(noRow("object:price", "before-delete", "price_1"))},
	},
})

func TestORDER4SeveralOrderedRoles(t *testing.T) { order4Roles.run(t) }

// ATOMIC-5 on two lifecycle objects: the payment (created by its succeeded
// event) and a refund re_3 of payment pi_3, whose refund.updated arrives
// before the shop wrote the refund; once pi_3 succeeded and the fixture wrote
// re_3, the redelivery applies. The refund's reads are state:refund.
var atomic5Roles = register(&table{
	id: "ATOMIC-5", name: "ATOMIC-5/several lifecycles",
	clean: func() *history.History {
		return scenario("ATOMIC-5").fact("object", "payment_intent").
			fact("event_of:pi_1", "evt_1").
			send("missing:create", key("evt_1"), typeSucceeded).
			fact("want_state:pi_1", "succeeded").
			objState("after", "pi_1", "succeeded").
			fact("event_of:re_3", "evt_5").
			send("missing:retry", key("evt_5"), "refund.updated", refused(409)).
			rows("after-refusal", key("evt_5"), 0).
			send("setup", key("evt_6"), typeSucceeded).
			fact("want_state:re_3", "succeeded").
			send("redelivery", key("evt_5"), "refund.updated", attemptNo(2)).
			rows("after", key("evt_5"), 1).
			read(history.Observation{Query: "state:refund", Phase: "after", Params: objParams("re_3"), Found: true, Status: "succeeded"}).
			reconciledRows(key("evt_1"), key("evt_5"), key("evt_6")).done()
	},
	cases: []tcase{
		{name: "the refund's event acknowledged and skipped", codes: is("atomic.missing-lost"),
			edits: do(attempts("missing:retry", "", acked), drop("event_rows", "after-refusal", ""), dropRole("redelivery"), drop("event_rows", "after", ""),
				status("state:refund", "after", "re_3", "pending"))},
		{name: "the refund not applied after its redelivery", codes: is("atomic.object-state"),
			edits: do(status("state:refund", "after", "re_3", "pending"))},
	},
})

func TestATOMIC5SeveralLifecycles(t *testing.T) { atomic5Roles.run(t) }

// DEDUP-1 on two effect roles: the first's copies (evt_1) read by effects,
// the second's (evt_2, role payout, held at its own table) by its own query
// effects:payout. A double effect of either deviates.
var dedup1Roles = register(&table{
	id: "DEDUP-1", name: "DEDUP-1/several effect roles",
	clean: func() *history.History {
		k1, k2 := key("evt_1"), key("evt_2")
		return scenario("DEDUP-1").
			send("copy", k1, typeCredit, copyNo(0)).
			send("copy", k1, typeCredit, copyNo(1)).
			gate("processed_webhook_events", 16, 2, 0).
			state("after", 1, k1).
			send("copy", k2, "payout.paid", copyNo(0)).
			send("copy", k2, "payout.paid", copyNo(1)).
			gate("payouts", 16, 2, 0).
			rows("after", k2, 1).
			read(history.Observation{Query: "effects:payout", Phase: "after", Params: keyParams(k2), Found: true, Count: 1}).
			reconciled(k1).reconciledRows(k2).done()
	},
	cases: []tcase{
		{name: "the second role applied twice", codes: is("dedup.effects"),
			edits: do(count("effects:payout", "after", "evt_2", 2))},
		{name: "the second role's copies stored twice", codes: is("dedup.rows"),
			edits: do(count("event_rows", "after", "evt_2", 2))},
	},
})

func TestDEDUP1SeveralEffectRoles(t *testing.T) { dedup1Roles.run(t) }

// DEDUP-6 on two lifecycle objects that count effects: the payment pi_1/pi_2
// and an invoice in_1/in_2 read by its own object_effects:invoice query.
var dedup6Roles = register(&table{
	id: "DEDUP-6", name: "DEDUP-6/several lifecycles",
	clean: func() *history.History {
		eff := func(phase, obj string, n int64) history.Observation {
			return history.Observation{Query: "object_effects:invoice", Phase: phase, Params: objParams(obj), Found: true, Count: n}
		}
		return scenario("DEDUP-6").fact("object", "payment").
			send("setup", key("evt_1"), typeCreated).
			send("first", key("evt_2"), typeSucceeded).
			send("other-scope", key("evt_3"), typeSucceeded).
			fact("want_effects:pi_1", "1").
			objEffects("sequential", "pi_1", 1).
			send("setup", key("evt_4"), typeCreated).
			send("copy", key("evt_5"), typeSucceeded).
			send("copy", key("evt_6"), typeSucceeded).
			fact("want_effects:pi_2", "1").
			objEffects("concurrent", "pi_2", 1).
			send("first", key("evt_7"), "invoice.paid").
			send("other-scope", key("evt_8"), "invoice.paid").
			fact("want_effects:in_1", "1").
			read(eff("sequential", "in_1", 1)).
			send("copy", key("evt_9"), "invoice.paid").
			send("copy", key("evt_10"), "invoice.paid").
			fact("want_effects:in_2", "1").
			read(eff("concurrent", "in_2", 1)).
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4"), key("evt_5"), key("evt_6"),
				key("evt_7"), key("evt_8"), key("evt_9"), key("evt_10")).done()
	},
	cases: []tcase{
		{name: "the second object paid twice, one after the other", codes: is("dedup.object-effects"),
			edits: do(count("object_effects:invoice", "sequential", "in_1", 2))},
		{name: "the second object paid twice at once", codes: is("dedup.object-effects"),
			edits: do(count("object_effects:invoice", "concurrent", "in_2", 2))},
	},
})

func TestDEDUP6SeveralLifecycles(t *testing.T) { dedup6Roles.run(t) }

// ACK-1 with two effect roles in the load: evt_2 is a payout, read by its
// role's effects:payout query; its effect lost by the kill deviates.
var ack1Roles = register(&table{
	id: "ACK-1", name: "ACK-1/several effect roles",
	clean: func() *history.History {
		k1, k2 := key("evt_1"), key("evt_2")
		payout := func(phase string, k profiles.Key, n int64) history.Observation {
			return history.Observation{Query: "effects:payout", Phase: phase, Params: keyParams(k), Found: true, Count: n}
		}
		return scenario("ACK-1").
			send("load", k1, typeCredit).
			send("load", k2, "payout.paid").
			state("after-restart", 1, k1).rows("after-restart", k2, 1).read(payout("after-restart", k2, 1)).
			send("redelivery", k1, typeCredit, attemptNo(2)).
			send("redelivery", k2, "payout.paid", attemptNo(2)).
			state("after-redelivery", 1, k1).rows("after-redelivery", k2, 1).read(payout("after-redelivery", k2, 1)).
			reconciled(k1).reconciledRows(k2).done()
	},
	cases: []tcase{
		{name: "the payout's effect lost by the kill", codes: is("ack.lost"),
			edits: do(count("effects:payout", "after-restart", "evt_2", 0))},
	},
})

func TestACK1SeveralEffectRoles(t *testing.T) { ack1Roles.run(t) }
