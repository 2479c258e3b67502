package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The reconciliation every ran scenario goes through, judged through ACK-2:
// its checker judges only the outcomes of its "load" attempts, so whatever
// else a case records is the reconciliation's alone. Attempts of role "other"
// stand for a scenario's deliveries that its own check does not judge.
var reconcileTable = register(&table{
	name: "reconcile",
	id:   "ACK-2",
	clean: func() *history.History {
		return scenario("ACK-2").
			fact("timeout:stripe/acct_A", "20s").
			send("load", key("evt_1"), typeCredit).
			reconciled(key("evt_1")).done()
	},
	cases: []tcase{
		{name: "one key consistent", note: "reconciliation of 1 event key(s) against the rows: 1 consistent, 0 recovered (unknown outcome, present), 0 lost, 0 duplicated"},
		{name: "acknowledged, no row", codes: is("reconcile.lost"), note: "1 lost",
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "acknowledged once of two attempts, no row", codes: is("reconcile.lost"),
			edits: do(more(func(r *rec) { r.send("other", key("evt_1"), typeCredit, refused(500)) }), count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows", codes: is("reconcile.duplicated"), note: "1 duplicated",
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "applied twice", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		// Lost is judged before duplicated: a key is one or the other.
		{name: "two rows and two effects", codes: is("reconcile.duplicated", "reconcile.applied-twice"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2), count("effects", "reconcile", "evt_1", 2))},
		{name: "never acknowledged, applied twice", codes: is("reconcile.applied-twice"),
			edits: do(more(func(r *rec) {
				r.send("other", key("evt_2"), typeCredit, noAnswer("timeout")).
					send("other", key("evt_2"), typeCredit, attemptNo(2), refused(500)).
					rows("reconcile", key("evt_2"), 1).effects("reconcile", key("evt_2"), 2)
			}))},
		{name: "never acknowledged, two rows", codes: is("reconcile.duplicated"),
			edits: do(more(func(r *rec) {
				r.send("other", key("evt_2"), typeCredit, noAnswer("reset")).rows("reconcile", key("evt_2"), 2).effects("reconcile", key("evt_2"), 1)
			}))},
		{name: "unknown outcome, present: recovered", note: "1 consistent, 1 recovered (unknown outcome, present), 0 lost",
			edits: do(more(func(r *rec) { r.send("other", key("evt_2"), typeCredit, noAnswer("timeout")).reconciled(key("evt_2")) }))},
		{name: "unknown outcome, absent: not lost", note: "2 consistent, 0 recovered (unknown outcome, present), 0 lost",
			edits: do(more(func(r *rec) {
				r.send("other", key("evt_2"), typeCredit, noAnswer("timeout")).rows("reconcile", key("evt_2"), 0).effects("reconcile", key("evt_2"), 0)
			}))},
		{name: "refused, absent", edits: do(more(func(r *rec) {
			r.send("other", key("evt_2"), typeCredit, refused(500)).rows("reconcile", key("evt_2"), 0).effects("reconcile", key("evt_2"), 0)
		}))},
		// The reconciliation reads rows until they show: the last read decides.
		{name: "a first read short of the row", edits: do(func(h *history.History) {
			first := history.Observation{Scenario: 1, Query: "event_rows", Phase: "reconcile", Params: keyParams(key("evt_1")), Found: true, Count: 0}
			h.Observations = append([]history.Observation{first}, h.Observations...)
		})},
		{name: "a later read without the row", codes: is("reconcile.lost"),
			edits: do(more(func(r *rec) { r.rows("reconcile", key("evt_1"), 0) }))},
		// The effects read is made for credit-like keys only; without it the
		// key's rows are still judged.
		{name: "no effects read", edits: do(drop("effects", "reconcile", ""))},
		{name: "no effects read, no row", codes: is("reconcile.lost"),
			edits: do(drop("effects", "reconcile", ""), count("event_rows", "reconcile", "evt_1", 0))},
		// Keys the reconciliation leaves out: no read is needed for them.
		{name: "invalid deliveries are not reconciled", edits: do(more(func(r *rec) {
			r.send("other", key("evt_2"), typeCredit, faults("tamper")).
				send("other", key("evt_3"), typeCredit, faults("oversize:2097152")).
				send("other", key("evt_4"), typeCredit, faults("stale_by:10m1s"))
		}))},
		{name: "faults that leave a delivery valid are reconciled", reason: "has no reconciliation read for (stripe, acct_A, evt_2)",
			edits: do(more(func(r *rec) { r.send("other", key("evt_2"), typeCredit, faults("ahead_by:1m0s")) }))},
		{name: "unhandled types are not reconciled", edits: do(more(func(r *rec) { r.send("other", key("evt_2"), typeUnhandled) }))},
		{name: "keys expired on purpose are not reconciled", edits: do(
			setFact("expired", keyString(key("evt_2"))+"\n"+keyString(key("evt_3"))),
			more(func(r *rec) { r.send("other", key("evt_2"), typeCredit).send("other", key("evt_3"), typeCredit) }))},
		{name: "an expired key of another account is reconciled", reason: "has no reconciliation read for (stripe, acct_B, evt_2)",
			edits: do(setFact("expired", keyString(key("evt_2"))),
				more(func(r *rec) {
					r.send("other", profiles.Key{Source: source, Account: "acct_B", EventID: "evt_2"}, typeCredit)
				}))},
		{name: "a delivery without an event ID is not reconciled", edits: do(more(func(r *rec) { r.send("other", key(""), typeCredit) }))},
		// A history written before handled_types and effect_type were recorded
		// is of the built-in domain.
		// Every effect role applies at most once, not only the first: a
		// second role's event (here "payout.paid") applied twice is reported.
		{name: "a second effect role's event applied twice", codes: is("reconcile.applied-twice"),
			edits: do(setFact("handled_types", builtinHandled+" payout.paid"), setFact("effect_types", typeCredit+" payout.paid"),
				more(func(r *rec) {
					r.send("other", key("evt_2"), "payout.paid").rows("reconcile", key("evt_2"), 1).effects("reconcile", key("evt_2"), 2)
				}))},
		{name: "a second effect role's event, not declared as one", edits: do(setFact("handled_types", builtinHandled+" payout.paid"),
			more(func(r *rec) {
				r.send("other", key("evt_2"), "payout.paid").rows("reconcile", key("evt_2"), 1).effects("reconcile", key("evt_2"), 2)
			}))},
		{name: "an older history: the built-in domain", edits: do(dropFact("handled_types"), dropFact("effect_type"))},
		{name: "an older history: its credit applied twice", codes: is("reconcile.applied-twice"),
			edits: do(dropFact("handled_types"), dropFact("effect_type"), count("effects", "reconcile", "evt_1", 2))},
		{name: "an older history: its unhandled type left out", edits: do(dropFact("handled_types"), dropFact("effect_type"),
			more(func(r *rec) { r.send("other", key("evt_2"), typeUnhandled) }))},
		// A declared vocabulary: its own handled types and effect type.
		{name: "a declared vocabulary", build: declared},
		{name: "a declared vocabulary: its effect applied twice", build: declared, codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "a declared vocabulary: another handled type lost", build: declared, codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "a declared vocabulary: effects of a type that is no effect not judged", build: declared,
			edits: do(more(func(r *rec) { r.effects("reconcile", key("evt_2"), 2) }))},
		{name: "a declared vocabulary: the built-in credit type not handled", build: declared,
			edits: do(more(func(r *rec) { r.send("other", key("evt_3"), typeCredit) }))},
		{name: "a declared vocabulary without an effect role: no effect judged", build: declared,
			edits: do(dropFact("effect_type"), count("effects", "reconcile", "evt_1", 2))},
		{name: "a delivered key not reconciled", reason: "has no reconciliation read for (stripe, acct_A, evt_1)",
			edits: do(drop("event_rows", "reconcile", ""))},
		{name: "a read in another phase does not reconcile", reason: "has no reconciliation read for (stripe, acct_A, evt_1)",
			edits: do(reads("event_rows", "reconcile", "evt_1", func(o *history.Observation) { o.Phase = "after" }))},
	},
})

// declared is the clean history of a target that declares its vocabulary: it
// handles invoice.paid (its effect role) and order.shipped.
func declared() *history.History {
	return scenario("ACK-2").
		fact("handled_types", "invoice.paid order.shipped").
		fact("effect_type", "invoice.paid").
		fact("timeout:stripe/acct_A", "20s").
		send("load", key("evt_1"), "invoice.paid").
		send("load", key("evt_2"), "order.shipped").
		reconciled(key("evt_1")).
		reconciledRows(key("evt_2")).done()
}

func TestReconcile(t *testing.T) { reconcileTable.run(t) }

// Reconciliation by object version (target.idempotency: object-version),
// judged through ORDER-1: updates with keys 1, 3, 2 of sub_1 (evt_1..evt_3),
// no event rows. The late update 2 is refused by the guard: superseded by
// key 3, not lost.
var reconcileObjectVersion = register(&table{
	name: "reconcile object-version",
	id:   "ORDER-1",
	clean: func() *history.History {
		return scenario("ORDER-1").
			fact("idempotency", "object-version").
			fact("order_key:"+keyString(key("evt_1")), "sub_1 1").
			fact("order_key:"+keyString(key("evt_2")), "sub_1 3").
			fact("order_key:"+keyString(key("evt_3")), "sub_1 2").
			send("update", key("evt_1"), typeUpdated).
			send("update", key("evt_2"), typeUpdated).
			send("update", key("evt_3"), typeUpdated).
			fact("want_version", "3").
			object("final", "sub_1", 3, "v3").
			object("reconcile", "sub_1", 3, "v3").done()
	},
	cases: []tcase{
		{name: "the refused late update is superseded", note: "reconciliation of 3 event key(s) by object version and effects: 3 consistent (2 superseded by a newer key), 0 lost"},
		{name: "acknowledged, neither visible nor superseded", codes: is("order.regressed", "reconcile.lost"),
			edits: do(reads("object", "final", "sub_1", version(1, "v1")), reads("object", "reconcile", "sub_1", version(1, "v1")))},
		{name: "the object gone, no deletion", codes: is("order.regressed", "reconcile.lost"),
			edits: do(noRow("object", "final", "sub_1"), noRow("object", "reconcile", "sub_1"))},
		{name: "a credit-like event applied", edits: do(more(func(r *rec) {
			r.send("other", key("evt_9"), typeCredit).effects("reconcile", key("evt_9"), 1)
		}))},
		{name: "a credit-like event acknowledged, no effect", codes: is("reconcile.lost"), edits: do(more(func(r *rec) {
			r.send("other", key("evt_9"), typeCredit).effects("reconcile", key("evt_9"), 0)
		}))},
		{name: "a credit-like event applied twice", codes: is("reconcile.applied-twice"), edits: do(more(func(r *rec) {
			r.send("other", key("evt_9"), typeCredit).effects("reconcile", key("evt_9"), 2)
		}))},
		{name: "a credit-like event never read", reason: "has no reconciliation read of the effects", edits: do(more(func(r *rec) {
			r.send("other", key("evt_9"), typeCredit)
		}))},
		// both: an event ledger too, so the rows are judged as well.
		{name: "both, the rows read", edits: do(setFact("idempotency", "both"), more(func(r *rec) {
			r.reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"))
		}))},
		{name: "both, an update's row gone", codes: is("reconcile.lost"), edits: do(setFact("idempotency", "both"), more(func(r *rec) {
			r.reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"))
		}), count("event_rows", "reconcile", "evt_1", 0))},
		{name: "both, no rows read", reason: "has no reconciliation read for",
			edits: do(setFact("idempotency", "both"))},
	},
})

func TestReconcileObjectVersion(t *testing.T) { reconcileObjectVersion.run(t) }
