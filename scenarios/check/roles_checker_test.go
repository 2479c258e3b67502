package check_test

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
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
