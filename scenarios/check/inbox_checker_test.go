package check_test

import (
	"testing"

	"github.com/hookcert/hookcert/history"
)

// inboxCases are the cases of every check that an accepted event is applied
// once and, with stuck set, ends done (code stuck for an event left pending).
func inboxCases(stuck string) []tcase {
	cs := []tcase{
		{name: "accepted, not applied", codes: is("inbox.not-applied"),
			edits: do(count("effects", "after", "evt_1", 0))},
		{name: "applied twice", codes: is("inbox.effects"),
			edits: do(count("effects", "after", "evt_1", 2))},
		{name: "the row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no effects read after", reason: `has no effects read in phase "after"`,
			edits: do(drop("effects", "after", ""))},
	}
	if stuck != "" {
		cs = append(cs,
			tcase{name: "still claimed", codes: is(stuck), edits: do(status("inbox_state", "after", "evt_1", "processing"))},
			tcase{name: "still pending", codes: is(stuck), edits: do(status("inbox_state", "after", "evt_1", "pending"))},
			tcase{name: "no inbox row", codes: is(stuck), edits: do(noRow("inbox_state", "after", "evt_1"))})
	}
	return cs
}

// INBOX-1: three deliveries while the inbox and effect tables are held; two
// accepted, one in flight at the SIGKILL. After the restart the accepted ones
// are read in the inbox, then applied; the third is redelivered and applied.
var inbox1 = register(&table{
	id: "INBOX-1",
	clean: func() *history.History {
		k1, k2, k3 := key("evt_1"), key("evt_2"), key("evt_3")
		return scenario("INBOX-1").fact("acceptance", "async").
			send("accept", k1, typeCredit, accepted).
			send("accept", k2, typeCredit, accepted).
			send("accept", k3, typeCredit, noAnswer("reset")).
			fact("early_acks", "0").
			inbox("after-restart", k1, "pending", 0).
			inbox("after-restart", k2, "pending", 0).
			state("after", 1, k1, k2).
			inbox("after", k1, "done", 1).
			inbox("after", k2, "done", 1).
			send("redelivery", k3, typeCredit, attemptNo(2), accepted).
			state("after", 1, k1, k2, k3).
			reconciled(k1, k2, k3).done()
	},
	cases: append([]tcase{
		{name: "no inbox read after the restart", reason: "has no inbox_state read after the restart",
			edits: do(drop("inbox_state", "after-restart", ""))},
		{name: "acknowledged while the inbox was held: noted", note: "2 deliveries were acknowledged while the harness held the table",
			edits: do(setFact("early_acks", "2"))},
		{name: "an acknowledged event not in the inbox after the crash", codes: is("inbox.lost"),
			edits: do(noRow("inbox_state", "after-restart", "evt_2"))},
		// As it happens: acknowledged from memory, gone with the process.
		{name: "acknowledged from memory, gone with the crash", codes: is("inbox.lost", "inbox.not-applied"), also: is("reconcile.lost"),
			edits: do(noRow("inbox_state", "after-restart", "evt_2"), noRow("inbox_state", "after", "evt_2"),
				count("event_rows", "after", "evt_2", 0), count("effects", "after", "evt_2", 0),
				count("event_rows", "reconcile", "evt_2", 0), count("effects", "reconcile", "evt_2", 0))},
		{name: "the redelivered event applied twice", codes: is("inbox.effects"),
			edits: do(count("effects", "after", "evt_3", 2))},
	}, inboxCases("")...),
})

func TestINBOX1(t *testing.T) { inbox1.run(t) }

// INBOX-2: three events accepted while the effect table is held, so every
// worker stands at its business change; released together, each must be
// applied once and done.
var inbox2 = register(&table{
	id: "INBOX-2",
	clean: func() *history.History {
		k1, k2, k3 := key("evt_1"), key("evt_2"), key("evt_3")
		return scenario("INBOX-2").fact("acceptance", "async").
			send("accept", k1, typeCredit, accepted).
			send("accept", k2, typeCredit, accepted).
			send("accept", k3, typeCredit, accepted).
			gate("ledger_entries", 8, 3, 0).
			state("after", 1, k1, k2, k3).
			inbox("after", k1, "done", 1).
			inbox("after", k2, "done", 1).
			inbox("after", k3, "done", 1).
			reconciled(k1, k2, k3).done()
	},
	cases: append([]tcase{
		{name: "no inbox read at the end", reason: `has no inbox_state read in phase "after"`,
			edits: do(drop("inbox_state", "after", ""))},
		{name: "an event refused", codes: is("inbox.not-applied"),
			edits: do(attempts("accept", "evt_2", refused(503)))},
		{name: "every worker applied one event", codes: is("inbox.effects"),
			edits: do(count("effects", "after", "", 3))},
	}, inboxCases("inbox.not-applied")...),
})

func TestINBOX2(t *testing.T) { inbox2.run(t) }

// INBOX-3 with several worker processes declared but the holder unknown: the
// worker processes are killed alone while one stands at the held effect table
// with evt_1; evt_2 is delivered while none runs and read in the inbox; the
// workers restart and both are applied once and done.
var inbox3 = register(&table{
	id: "INBOX-3",
	clean: func() *history.History {
		k1, k2 := key("evt_1"), key("evt_2")
		return scenario("INBOX-3").fact("acceptance", "async").
			send("doomed", k1, typeCredit, accepted).
			send("accept", k2, typeCredit, accepted).
			inbox("workers-down", k2, "pending", 0).
			state("after", 1, k1, k2).
			inbox("after", k1, "done", 2).
			inbox("after", k2, "done", 1).
			reconciled(k1, k2).done()
	},
	cases: append([]tcase{
		{name: "no inbox read at the end", reason: `has no inbox_state read in phase "after"`,
			edits: do(drop("inbox_state", "after", ""))},
		// The worker holding the claim killed alone: the others take it over.
		{name: "a surviving worker took the claim", build: func() *history.History {
			k1 := key("evt_1")
			return scenario("INBOX-3").fact("acceptance", "async").
				send("doomed", k1, typeCredit, accepted).
				state("after", 1, k1).
				inbox("after", k1, "done", 2).
				reconciled(k1).done()
		}},
		{name: "acknowledged while no worker ran, not in the inbox", codes: is("inbox.lost"),
			edits: do(noRow("inbox_state", "workers-down", "evt_2"))},
		{name: "the second event applied twice", codes: is("inbox.effects"),
			edits: do(count("effects", "after", "evt_2", 2))},
	}, inboxCases("inbox.stuck")...),
})

func TestINBOX3(t *testing.T) { inbox3.run(t) }

// INBOX-4: one event accepted; its worker let through its business change and
// killed before marking it done; dispatched again after the lease, it must be
// applied once in all and done.
var inbox4 = register(&table{
	id: "INBOX-4",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("INBOX-4").fact("acceptance", "async").
			send("accept", k, typeCredit, accepted).
			state("after", 1, k).
			inbox("after", k, "done", 2).
			reconciled(k).done()
	},
	cases: append([]tcase{
		{name: "no inbox read at the end", reason: `has no inbox_state read in phase "after"`,
			edits: do(drop("inbox_state", "after", ""))},
	}, inboxCases("inbox.stuck")...),
})

func TestINBOX4(t *testing.T) { inbox4.run(t) }

// INBOX-5: one event accepted; its worker's session terminated once; it must be
// retried, done, applied once, with 2 attempts recorded.
var inbox5 = register(&table{
	id: "INBOX-5",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("INBOX-5").fact("acceptance", "async").
			send("doomed", k, typeCredit, accepted).
			fact("injected_failures", "1").
			state("after", 1, k).
			inbox("after", k, "done", 2).
			reconciled(k).done()
	},
	cases: append([]tcase{
		{name: "no inbox read at the end", reason: `has no inbox_state read in phase "after"`,
			edits: do(drop("inbox_state", "after", ""))},
		{name: "the failed attempt not recorded", codes: is("inbox.attempts-unrecorded"),
			edits: do(count("inbox_state", "after", "evt_1", 1))},
		{name: "no attempt recorded at all", codes: is("inbox.attempts-unrecorded"),
			edits: do(count("inbox_state", "after", "evt_1", 0))},
	}, inboxCases("inbox.stuck")...),
})

func TestINBOX5(t *testing.T) { inbox5.run(t) }

// INBOX-6 with max_attempts 3: one event accepted; three attempts failed on
// purpose; it must be dead, and stay dead once the failures stop. It is expired
// on purpose: judged by its inbox state, not by the reconciliation.
var inbox6 = register(&table{
	id: "INBOX-6",
	clean: func() *history.History {
		k := key("evt_1")
		return scenario("INBOX-6").fact("acceptance", "async").
			fact("max_attempts", "3").
			send("accept", k, typeCredit, accepted).
			fact("injected_failures", "3").
			inbox("after-attempts", k, "dead", 3).
			fact("expired", keyString(k)).
			inbox("after", k, "dead", 3).
			rows("after", k, 1).
			effects("after", k, 0).done()
	},
	cases: []tcase{
		// Fewer failures than the declared attempts: not yet due to be dead.
		{name: "fewer failures than declared, still pending",
			edits: do(setFact("injected_failures", "2"), status("inbox_state", "after-attempts", "evt_1", "pending"), status("inbox_state", "after", "evt_1", "pending"))},
		{name: "dropped after its attempts", codes: is("inbox.dead-letter-lost"),
			edits: do(noRow("inbox_state", "after-attempts", "evt_1"), noRow("inbox_state", "after", "evt_1"))},
		{name: "marked done after failing", codes: is("inbox.dead-letter-lost"),
			edits: do(status("inbox_state", "after-attempts", "evt_1", "done"), status("inbox_state", "after", "evt_1", "done"))},
		{name: "retried past its attempts, never dead-lettered", codes: is("inbox.not-dead-lettered"),
			edits: do(status("inbox_state", "after-attempts", "evt_1", "pending"), status("inbox_state", "after", "evt_1", "pending"))},
		{name: "the dead letter purged once the failures stopped", codes: is("inbox.dead-letter-lost"),
			edits: do(noRow("inbox_state", "after", "evt_1"))},
		{name: "the dead letter revived once the failures stopped", codes: is("inbox.dead-letter-lost"),
			edits: do(status("inbox_state", "after", "evt_1", "pending"))},
		{name: "no inbox read after the failures", reason: "no inbox read after the failed attempts",
			edits: do(drop("inbox_state", "after-attempts", ""))},
	},
	unreconciled: "the dead letter's key is expired on purpose: a receiver that writes its key row when it applies has none",
})

func TestINBOX6(t *testing.T) { inbox6.run(t) }

// INBOX-7: three events accepted and held back from their workers; a purge as
// of ten key TTLs later; released, each must still be there and applied once.
var inbox7 = register(&table{
	id: "INBOX-7",
	clean: func() *history.History {
		k1, k2, k3 := key("evt_1"), key("evt_2"), key("evt_3")
		return scenario("INBOX-7").fact("acceptance", "async").
			fact("key_ttl", "720h0m0s").
			fact("payload_ttl", "168h0m0s").
			send("accept", k1, typeCredit, accepted).
			send("accept", k2, typeCredit, accepted).
			send("accept", k3, typeCredit, accepted).
			state("after", 1, k1, k2, k3).
			inbox("after", k1, "done", 1).
			inbox("after", k2, "done", 1).
			inbox("after", k3, "done", 1).
			reconciled(k1, k2, k3).done()
	},
	cases: []tcase{
		{name: "a pending event purged", codes: is("inbox.pending-purged"),
			edits: do(count("event_rows", "after", "evt_2", 0), count("effects", "after", "evt_2", 0))},
		// As it happens: purged for good.
		{name: "a pending event purged for good", codes: is("inbox.pending-purged"), also: is("reconcile.lost"),
			edits: do(count("event_rows", "after", "evt_2", 0), count("effects", "after", "evt_2", 0), noRow("inbox_state", "after", "evt_2"),
				count("event_rows", "reconcile", "evt_2", 0), count("effects", "reconcile", "evt_2", 0))},
		{name: "kept, not applied", codes: is("inbox.not-applied"),
			edits: do(count("effects", "after", "evt_3", 0))},
		{name: "applied twice", codes: is("inbox.effects"),
			edits: do(count("effects", "after", "evt_1", 2))},
		{name: "a row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_2", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_3", 2))},
		{name: "no effects read after the purge", reason: "no effects read after the purge",
			edits: do(drop("effects", "after", ""))},
	},
})

func TestINBOX7(t *testing.T) { inbox7.run(t) }
