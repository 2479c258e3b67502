package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
)

func init() {
	scenarioNames["REFETCH-1"] = "a stale event is answered with the provider's newest state"
	scenarioNames["REFETCH-2"] = "a 404 on refetch is handled as a deleted object"
	scenarioNames["REFETCH-3"] = "a transient failure of the provider API does not lose the event"
}

// apiCall records one call the receiver made to the provider API for obj.
func (r *rec) apiCall(obj string, status int, fault string, key int64) *rec {
	r.h.APICalls = append(r.h.APICalls, history.APICall{Scenario: 1, Seq: len(r.h.APICalls) + 1, Method: "GET",
		Path: "/v1/subscriptions/" + obj, Provider: "stripe", Object: obj, Status: status, Fault: fault, Key: key, AtNS: r.tick()})
	return r
}

// noAPICalls removes every call to the provider API.
func noAPICalls(h *history.History) { h.APICalls = nil }

// apiCallsAt moves every call to the provider API to the run's start: before
// anything the scenario sent.
func apiCallsAt(ns int64) edit {
	return func(h *history.History) {
		for i := range h.APICalls {
			h.APICalls[i].AtNS = ns
		}
	}
}

// REFETCH-1: update 1 of sub_1 (evt_1) applied and read; the provider API
// then holds key 3; the stale update 2 (evt_2) arrives; the receiver calls the
// API and the object must read key 3.
var refetch1 = register(&table{
	id: "REFETCH-1",
	clean: func() *history.History {
		return scenario("REFETCH-1").
			send("update", key("evt_1"), typeUpdated).
			apiCall("sub_1", 200, "", 1).
			fact("refetch_object", "sub_1").fact("first_key", "1").
			object("before", "sub_1", 1, "v1").
			send("late", key("evt_2"), typeUpdated).
			apiCall("sub_1", 200, "", 3).
			fact("want_key", "3").fact("stale_key", "2").
			object("after-stale", "sub_1", 3, "v3").
			reconciledRows(key("evt_1"), key("evt_2")).done()
	},
	cases: []tcase{
		{name: "the stale event's body applied", codes: is("refetch.stale-applied"),
			edits: do(reads("object", "after-stale", "sub_1", version(2, "v2")))},
		{name: "left at the first update", codes: is("refetch.stale-applied"),
			edits: do(reads("object", "after-stale", "sub_1", version(1, "v1")))},
		{name: "the object gone", codes: is("refetch.stale-applied"),
			edits: do(noRow("object", "after-stale", "sub_1"))},
		{name: "no call to the provider API", codes: is("refetch.not-called"), edits: do(noAPICalls)},
		{name: "calls only before the stale update", codes: is("refetch.not-called"), edits: do(apiCallsAt(0))},
		{name: "the stale update refused", codes: is("refetch.not-acked"),
			edits: do(attempts("late", "evt_2", refused(500)))},
		{name: "the stale update's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_2", 0))},
		{name: "the first update not applied", reason: "the update was not applied, so refetching cannot be judged",
			edits: do(noRow("object", "before", "sub_1"))},
		{name: "no read after the stale update", reason: "no object read after the stale update",
			edits: do(drop("object", "after-stale", ""))},
		{name: "no newest key recorded", reason: "fact want_key: missing", edits: do(dropFact("want_key"))},
	},
})

func TestREFETCH1(t *testing.T) { refetch1.run(t) }

// REFETCH-2: update 1 of sub_1 (evt_1) applied; the provider deletes sub_1;
// update 2 (evt_2) is answered 503 after the API's 404; the deletion (evt_3)
// is acknowledged; update 2's retry is acknowledged; the object never holds
// key 2 and is gone at the end.
var refetch2 = register(&table{
	id: "REFETCH-2",
	clean: func() *history.History {
		return scenario("REFETCH-2").
			send("update", key("evt_1"), typeUpdated).
			apiCall("sub_1", 200, "", 1).
			fact("refetch_object", "sub_1").fact("first_key", "1").
			object("before", "sub_1", 1, "v1").
			send("late", key("evt_2"), typeUpdated, refused(503)).
			apiCall("sub_1", 404, "", 0).
			fact("stale_key", "2").
			object("after-404", "sub_1", 1, "v1").
			send("delete", key("evt_3"), typeDeleted).
			send("late", key("evt_2"), typeUpdated, attemptNo(2)).
			apiCall("sub_1", 404, "", 0).
			object("final", "sub_1", 0, "").
			reconciledRows(key("evt_1"), key("evt_2"), key("evt_3")).done()
	},
	cases: []tcase{
		{name: "acknowledged at once, nothing applied", edits: do(attempts("late", "evt_2", acked))},
		{name: "the stale body recreated the deleted object", codes: is("refetch.recreated"),
			edits: do(reads("object", "final", "sub_1", version(2, "v2")))},
		{name: "the stale body applied at the 404", codes: is("refetch.recreated"),
			edits: do(reads("object", "after-404", "sub_1", version(2, "v2")))},
		{name: "the update failed on every attempt", codes: is("refetch.not-acked"),
			edits: do(attempts("late", "evt_2", refused(503)))},
		{name: "the deletion refused", codes: is("refetch.not-acked"),
			edits: do(attempts("delete", "evt_3", refused(500)))},
		{name: "no call to the provider API", codes: is("refetch.not-called"), edits: do(noAPICalls)},
		{name: "the deletion's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_3", 0))},
		{name: "the first update not applied", reason: "the update was not applied, so refetching cannot be judged",
			edits: do(reads("object", "before", "sub_1", version(7, "v7")))},
		{name: "no read at the end", reason: `no object read in phase "final"`, edits: do(drop("object", "final", ""))},
		{name: "no stale update sent", reason: "no stale update was sent", edits: do(dropRole("late"))},
	},
})

func TestREFETCH2(t *testing.T) { refetch2.run(t) }

// REFETCH-3: update 1 of sub_1 (evt_1) applied; updates 2, 3, 4 (evt_2..4)
// each while the API fails the object's next call (a 404, a 429, a 503): each
// first answered 503, its retry acknowledged, the object at its key after.
var refetch3 = register(&table{
	id: "REFETCH-3",
	clean: func() *history.History {
		r := scenario("REFETCH-3").
			send("update", key("evt_1"), typeUpdated).
			apiCall("sub_1", 200, "", 1).
			fact("refetch_object", "sub_1").fact("first_key", "1").
			object("before", "sub_1", 1, "v1")
		for i, f := range []string{"404", "429", "503"} {
			step, id, k := string(rune('1'+i)), "evt_"+string(rune('2'+i)), int64(i+2)
			r.fact("step_key:"+step, string(rune('0'+k))).fact("step_fault:"+step, f).
				send("transient:"+step, key(id), typeUpdated, refused(503)).
				apiCall("sub_1", map[string]int{"404": 404, "429": 429, "503": 503}[f], f, 0).
				send("transient:"+step, key(id), typeUpdated, attemptNo(2)).
				apiCall("sub_1", 200, "", k).
				object("after:"+step, "sub_1", k, "v"+string(rune('0'+k)))
		}
		return r.reconciledRows(key("evt_1"), key("evt_2"), key("evt_3"), key("evt_4")).done()
	},
	cases: []tcase{
		{name: "a 404 acknowledged and the event lost", codes: is("refetch.lost"),
			edits: do(nthAttempt("transient:1", 0, acked), reads("object", "after:1", "sub_1", version(1, "v1")))},
		{name: "a 429 acknowledged and the event lost", codes: is("refetch.lost"),
			edits: do(nthAttempt("transient:2", 0, acked), reads("object", "after:2", "sub_1", version(2, "v2")))},
		{name: "never acknowledged once the API recovered", codes: is("refetch.not-acked"),
			edits: do(attempts("transient:3", "evt_4", refused(503)))},
		{name: "the first update refused", codes: is("refetch.not-acked"),
			edits: do(attempts("update", "evt_1", refused(500)))},
		{name: "no call to the provider API", codes: is("refetch.not-called"), edits: do(noAPICalls)},
		{name: "an update's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_3", 0))},
		{name: "no read after a step", reason: "no object read after step 2", edits: do(drop("object", "after:2", ""))},
		{name: "no step recorded", reason: "facts step_key: missing",
			edits: do(dropFact("step_key:1"), dropFact("step_key:2"), dropFact("step_key:3"))},
		{name: "the first update not applied", reason: "the update was not applied", edits: do(noRow("object", "before", "sub_1"))},
	},
})

func TestREFETCH3(t *testing.T) { refetch3.run(t) }
