package check_test

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
)

// asRole renames an attempt's role (histories written before a role was renamed).
func asRole(role string) attemptOpt { return func(a *history.Attempt) { a.Role = role } }

// cutTable is the table of ATOMIC-1 and ATOMIC-3: a delivery whose transaction
// is cut (doomed: answered as the cut leaves it), its rows and effects read in
// phase (nothing may be left), then the provider's redelivery, applied once.
// A receiver that accepts before applying (acceptance async) acknowledges the
// doomed delivery and must still apply it once: that is the scenario's other
// path.
func cutTable(id, phase string, doomed attemptOpt) *table {
	k := key("evt_1")
	async := func() *history.History {
		return scenario(id).fact("acceptance", "async").
			send("doomed", k, typeCredit, accepted).
			state("after", 1, k).
			reconciled(k).done()
	}
	return &table{
		id: id,
		clean: func() *history.History {
			return scenario(id).
				send("doomed", k, typeCredit, doomed).
				state(phase, 0, k).
				send("redelivery", k, typeCredit, attemptNo(2)).
				state("after", 1, k).
				reconciled(k).done()
		},
		cases: []tcase{
			{name: "accepted before applying, applied once", build: async},
			{name: "the doomed delivery acknowledged", codes: is("atomic.acked-uncommitted"),
				edits: do(attempts("doomed", "", acked))},
			// As it happens: acknowledged, so never redelivered, and the cut
			// transaction took the event with it.
			{name: "the doomed delivery acknowledged, then lost", codes: is("atomic.acked-uncommitted"), also: is("reconcile.lost"),
				edits: do(attempts("doomed", "", acked), dropRole("redelivery"), drop("event_rows", "after", ""), drop("effects", "after", ""),
					count("event_rows", "reconcile", "evt_1", 0), count("effects", "reconcile", "evt_1", 0))},
			{name: "the key row survived the cut", codes: is("atomic.partial"),
				edits: do(count("event_rows", phase, "evt_1", 1))},
			{name: "the effect survived the cut", codes: is("atomic.partial"),
				edits: do(count("effects", phase, "evt_1", 1))},
			{name: "the redelivery refused as a duplicate", codes: is("atomic.not-acked"),
				edits: do(attempts("redelivery", "", refused(409)))},
			{name: "the redelivery not applied", codes: is("atomic.not-applied"),
				edits: do(count("effects", "after", "evt_1", 0))},
			{name: "the redelivery applied on top of the cut one", codes: is("atomic.not-applied"),
				edits: do(count("effects", "after", "evt_1", 2))},
			{name: "accepted before applying, never applied", build: async, codes: is("atomic.not-applied"),
				edits: do(count("effects", "after", "evt_1", 0))},
			{name: "accepted before applying, stored twice", build: async, codes: is("atomic.not-applied"), also: is("reconcile.duplicated"),
				edits: do(count("event_rows", "after", "evt_1", 2), count("event_rows", "reconcile", "evt_1", 2))},
			{name: "the row gone by the reconciliation", codes: is("reconcile.lost"),
				edits: do(count("event_rows", "reconcile", "evt_1", 0))},
			{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
				edits: do(count("event_rows", "reconcile", "evt_1", 2))},
			{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
				edits: do(count("effects", "reconcile", "evt_1", 2))},
			{name: "no rows read after the cut", reason: `has no event_rows read in phase "` + phase + `"`,
				edits: do(drop("event_rows", phase, ""))},
			{name: "no effects read after the redelivery", reason: `has no effects read in phase "after"`,
				edits: do(drop("effects", "after", ""))},
			{name: "accepted before applying, no read after", build: async, reason: `has no event_rows read in phase "after"`,
				edits: do(drop("event_rows", "after", ""))},
		},
	}
}

// ATOMIC-1: the receiver crashes at after-insert-before-commit (or is killed
// while it waits on the locked effect table): the delivery gets no answer.
var atomic1 = register(cutTable("ATOMIC-1", "after-crash", noAnswer("reset")))

// ATOMIC-3: the receiver's database sessions are terminated mid-transaction: it
// answers 500.
var atomic3 = register(cutTable("ATOMIC-3", "after-cut", refused(500)))

func TestATOMIC1(t *testing.T) { atomic1.run(t) }
func TestATOMIC3(t *testing.T) { atomic3.run(t) }

// ATOMIC-2 on the built-in payment: its one event that can come before its
// precondition is a refund while the payment is pending. The refund (evt_2) is
// sent early and refused, its rows read; the payment succeeds (evt_3); the
// refund is redelivered and the payment read refunded.
var atomic2 = register(&table{
	id: "ATOMIC-2",
	clean: func() *history.History {
		return scenario("ATOMIC-2").fact("object", "payment").
			send("setup", key("evt_1"), typeCreated).
			fact("setup_state:pi_1", "pending").fact("setup_events:pi_1", "evt_1").
			objState("setup", "pi_1", "pending").
			send("premature", key("evt_2"), typeRefunded, refused(409)).
			rows("after-refusal", key("evt_2"), 0).
			send("setup", key("evt_3"), typeSucceeded).
			fact("setup_state:pi_1", "succeeded").fact("setup_events:pi_1", "evt_1 evt_3").
			objState("setup", "pi_1", "succeeded").
			fact("want_state:pi_1", "refunded").
			send("redelivery", key("evt_2"), typeRefunded, attemptNo(2)).
			rows("after", key("evt_2"), 1).
			objState("after", "pi_1", "refunded").
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
	},
	cases: []tcase{
		{name: "accepted early, applied once the precondition held", build: atomic2Async},
		{name: "no want recorded: refunded is the default", edits: do(dropFact("want_state:pi_1"))},
		{name: "the early refund acknowledged", codes: is("atomic.acked-uncommitted"),
			edits: do(attempts("premature", "", acked))},
		{name: "the early refund acknowledged (role of older histories)", codes: is("atomic.acked-uncommitted"),
			edits: do(attempts("premature", "", acked, asRole("refund-early")))},
		// As it happens: acknowledged, so not redelivered, and never applied.
		{name: "the early refund acknowledged, then lost", codes: is("atomic.acked-uncommitted", "atomic.object-state"),
			edits: do(attempts("premature", "", acked), drop("event_rows", "after-refusal", ""), dropRole("redelivery"),
				drop("event_rows", "after", ""), status("state", "after", "pi_1", "succeeded"))},
		{name: "the early refund left its key", codes: is("atomic.partial"),
			edits: do(count("event_rows", "after-refusal", "evt_2", 1))},
		{name: "the creating event refused", codes: is("atomic.not-acked"),
			edits: do(attempts("setup", "evt_1", refused(500)))},
		// The creating event acknowledged and dropped: the early refund was
		// never sent, and the payment's setup is the finding.
		{name: "the creating event acknowledged and lost", codes: is("setup.unmet"),
			build: func() *history.History {
				return scenario("ATOMIC-2").fact("object", "payment").
					send("setup", key("evt_1"), typeCreated).
					fact("setup_state:pi_1", "pending").fact("setup_events:pi_1", "evt_1").
					objState("setup", "pi_1", "").
					reconciledRows(key("evt_1")).done()
			}},
		{name: "no setup read", reason: "no setup read of payment pi_1",
			edits: do(drop("state", "setup", ""))},
		// The success that brings the payment to the refund's precondition was
		// acknowledged and dropped: the refund was not redelivered.
		{name: "the onward success acknowledged and lost", codes: is("setup.unmet"),
			edits: do(status("state", "setup", "pi_1", "pending"), dropRole("redelivery"), drop("event_rows", "after", ""),
				drop("state", "after", ""), dropFact("want_state:pi_1"))},
		{name: "the redelivery refused as a duplicate", codes: is("atomic.not-acked"),
			edits: do(attempts("redelivery", "", refused(409)))},
		{name: "the redelivery not stored", codes: is("atomic.not-applied"),
			edits: do(count("event_rows", "after", "evt_2", 0))},
		{name: "the payment not refunded", codes: is("atomic.object-state"),
			edits: do(status("state", "after", "pi_1", "succeeded"))},
		{name: "no payment row", codes: is("atomic.object-state"),
			edits: do(noRow("state", "after", "pi_1"))},
		{name: "the payment not refunded (query of older histories)", codes: is("atomic.object-state"),
			edits: do(reads("state", "after", "pi_1", func(o *history.Observation) { o.Query, o.Status = "payment", "succeeded" }))},
		{name: "the state read held to the recorded want", codes: is("atomic.object-state"),
			edits: do(setFact("want_state:pi_1", "succeeded"))},
		{name: "accepted early, never applied", build: atomic2Async, codes: is("atomic.object-state"),
			edits: do(status("state", "after", "pi_1", "succeeded"))},
		{name: "the refund's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "two rows for the success at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_3", 2))},
		{name: "no rows read after the redelivery", reason: `has no event_rows read in phase "after"`,
			edits: do(drop("event_rows", "after", ""))},
		{name: "no state read once the precondition held", reason: "has no state read of the objects once their precondition held",
			edits: do(drop("state", "after", ""))},
	},
})

// atomic2Async is ATOMIC-2 against a receiver that accepts before applying: the
// early refund is accepted (202), kept, and applied once the payment succeeded.
func atomic2Async() *history.History {
	return scenario("ATOMIC-2").fact("object", "payment").fact("acceptance", "async").
		send("setup", key("evt_1"), typeCreated, accepted).
		send("premature", key("evt_2"), typeRefunded, accepted).
		send("setup", key("evt_3"), typeSucceeded, accepted).
		fact("want_state:pi_1", "refunded").
		objState("after", "pi_1", "refunded").
		reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
}

func TestATOMIC2(t *testing.T) { atomic2.run(t) }

// ATOMIC-4: the receiver crashes after commit, before its answer; the event is
// there after the restart, and its redelivery changes nothing.
var atomic4 = register(&table{
	id: "ATOMIC-4",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("ATOMIC-4").
			send("first", k, typeCredit, noAnswer("reset")).
			state("after-crash", 1, k).
			send("redelivery", k, typeCredit, attemptNo(2)).
			state("after", 1, k).
			reconciled(k).done()
	},
	cases: []tcase{
		{name: "the redelivery refused as a duplicate", codes: is("atomic.not-acked"),
			edits: do(attempts("redelivery", "", refused(409)))},
		{name: "the committed event gone after the restart", codes: is("atomic.not-applied"),
			edits: do(count("event_rows", "after-crash", "evt_1", 0), count("effects", "after-crash", "evt_1", 0))},
		{name: "the committed effect gone after the restart", codes: is("atomic.not-applied"),
			edits: do(count("effects", "after-crash", "evt_1", 0))},
		{name: "the redelivery applied again", codes: is("atomic.not-applied"),
			edits: do(count("effects", "after", "evt_1", 2))},
		{name: "no row after the redelivery", codes: is("atomic.not-applied"),
			edits: do(count("event_rows", "after", "evt_1", 0))},
		{name: "the row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no rows read after the restart", reason: `has no event_rows read in phase "after-crash"`,
			edits: do(drop("event_rows", "after-crash", ""))},
	},
})

func TestATOMIC4(t *testing.T) { atomic4.run(t) }

// ATOMIC-5 on the built-in payment: a succeeded event for a payment nobody
// created (pi_1, declared missing: create) must create it; a refund for one
// nobody created (pi_2, the lifecycle's missing: retry) is refused, leaves no
// key, and is applied once the payment exists, succeeded, and the provider
// redelivers it.
var atomic5 = register(&table{
	id: "ATOMIC-5",
	clean: func() *history.History {
		return scenario("ATOMIC-5").fact("object", "payment").
			fact("event_of:pi_1", "evt_1").
			send("missing:create", key("evt_1"), typeSucceeded).
			fact("want_state:pi_1", "succeeded").
			objState("after", "pi_1", "succeeded").
			fact("event_of:pi_2", "evt_2").
			send("missing:retry", key("evt_2"), typeRefunded, refused(404)).
			rows("after-refusal", key("evt_2"), 0).
			send("setup", key("evt_3"), typeCreated).
			send("setup", key("evt_4"), typeSucceeded).
			fact("setup_state:pi_2", "succeeded").fact("setup_events:pi_2", "evt_3 evt_4").
			objState("setup", "pi_2", "succeeded").
			fact("want_state:pi_2", "refunded").
			send("redelivery", key("evt_2"), typeRefunded, attemptNo(2)).
			rows("after", key("evt_2"), 1).
			objState("after", "pi_2", "refunded").
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4")).done()
	},
	cases: []tcase{
		// Acknowledged, so not redelivered: kept aside and applied once the
		// payment existed, it is not lost.
		{name: "acknowledged for a missing payment, applied once it existed",
			edits: do(attempts("missing:retry", "", acked), drop("event_rows", "after-refusal", ""), dropRole("redelivery"), drop("event_rows", "after", ""))},
		{name: "acknowledged for a missing payment and skipped", codes: is("atomic.missing-lost"),
			edits: do(attempts("missing:retry", "", acked), drop("event_rows", "after-refusal", ""), dropRole("redelivery"), drop("event_rows", "after", ""),
				status("state", "after", "pi_2", "succeeded"))},
		{name: "the refused refund left its key", codes: is("atomic.partial"),
			edits: do(count("event_rows", "after-refusal", "evt_2", 1))},
		{name: "the event that must create its payment refused", codes: is("atomic.not-acked"),
			edits: do(attempts("missing:create", "", refused(404)))},
		{name: "the creating event refused", codes: is("atomic.not-acked"),
			edits: do(attempts("setup", "evt_3", refused(500)))},
		// The success that brings pi_2 to the refund's precondition was
		// acknowledged and dropped: the refund was not redelivered, and the
		// payment's setup is the finding, not the refund.
		{name: "a setup event acknowledged and lost", codes: is("setup.unmet"),
			edits: do(status("state", "setup", "pi_2", "pending"), dropRole("redelivery"), drop("event_rows", "after", ""),
				drop("state", "after", "pi_2"), dropFact("want_state:pi_2"))},
		{name: "a lost setup is not blamed on the refund", codes: is("setup.unmet"),
			edits: do(status("state", "setup", "pi_2", "pending"), status("state", "after", "pi_2", "pending"))},
		{name: "the redelivery refused as a duplicate", codes: is("atomic.not-acked"),
			edits: do(attempts("redelivery", "", refused(409)))},
		{name: "the redelivery not stored", codes: is("atomic.not-applied"),
			edits: do(count("event_rows", "after", "evt_2", 0))},
		{name: "the created payment in another state", codes: is("atomic.object-state"),
			edits: do(status("state", "after", "pi_1", "pending"))},
		{name: "the payment not created", codes: is("atomic.object-state"),
			edits: do(noRow("state", "after", "pi_1"))},
		{name: "the refused refund not applied after its redelivery", codes: is("atomic.object-state"),
			edits: do(status("state", "after", "pi_2", "succeeded"))},
		{name: "the refund's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "two rows for the success at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_4", 2))},
		{name: "no state read", reason: "no state read of the objects that did not exist",
			edits: do(drop("state", "after", ""))},
		{name: "no rows read after the redelivery", reason: `has no event_rows read in phase "after"`,
			edits: do(drop("event_rows", "after", ""))},
	},
})

func TestATOMIC5(t *testing.T) { atomic5.run(t) }

// Evidence names the state read, or that no row was found, never a bare
// "found" flag beside it.
func TestStateEvidenceNamesTheValueRead(t *testing.T) {
	for _, c := range []struct {
		edit edit
		want string
	}{
		{noRow("state", "after", "pi_1"), "payment pi_1 reads no row after the precondition held"},
		{status("state", "after", "pi_1", "pending"), `payment pi_1 reads "pending" after the precondition held`},
	} {
		h := atomic2.clean()
		c.edit(h)
		g := judge(t, "ATOMIC-2", h)
		ev := strings.Join(g.Evidence, "\n")
		if !strings.Contains(ev, c.want) || strings.Contains(ev, "found") {
			t.Errorf("evidence %q, want it to say %q and no found flag", ev, c.want)
		}
	}
}
