package selftest

import (
	"os"
	"os/exec"
	"path/filepath"
)

func init() { examples = append(examples, ledgerlessExample) }

// ledgerlessExample is a Stripe-to-PostgreSQL sync in Node.js without an
// event ledger (target.idempotency: object-version): each event upserts its
// subscription guarded by the event's created time, a deletion leaves a
// tombstone, the items are child rows. Its clean runs must show no false
// reconcile.lost over five seeds; each planted defect is a bug found in a
// real sync engine of this shape.
var ledgerlessExample = example{
	dir:       "ledgerless-receiver",
	needs:     ledgerlessReady,
	env:       []string{"STRIPE_WEBHOOK_SECRET=whsec_selftestLedgerless000000000000000"},
	defectEnv: "LEDGERLESS_DEFECT",
	seeds:     5,
	// No event rows: the guarantees that count them and cannot judge the
	// object instead (DEDUP-7, -8, ACK-8) are not applicable; no effect or
	// lifecycle role, one endpoint, no failpoints, retention, inbox, outbox
	// or refetch. ACK, DEDUP-1, -2, ATOMIC-1 and -3 judge fresh
	// subscriptions; ORDER-1, -2, -4, -5 and -6 the ordered one.
	maxNA: 30,
	mustPass: []string{"ACK-1", "ACK-2", "ACK-3", "ACK-4", "ACK-5", "ACK-6", "ACK-7", "ACK-9", "DEDUP-1", "DEDUP-2", "ATOMIC-1", "ATOMIC-3",
		"ORDER-1", "ORDER-2", "ORDER-4", "ORDER-5", "ORDER-6"},
	breaks: map[string]map[string][]string{
		// A deletion removes the row: the late older update recreates it, and
		// the deletion it undid no longer shows.
		"hard-delete": {"ORDER-4": {"order.resurrected", "reconcile.lost"}},
		// An event type it does not sync answered 400: retried for days.
		"reject-unknown-types": {"ACK-6": {"ack.unknown-type-rejected"}},
		// A strict guard: the second update in one second is acknowledged and
		// dropped.
		"same-second-drop": {"ORDER-5": {"order.tie-dropped"}},
		// Items upserted outside the guard: a late older update rewrites them.
		"unguarded-children": {"ORDER-6": {"order.children-regressed"}},
		// The signature is not checked: forged and stale deliveries are
		// accepted, and their subscriptions written.
		"unsigned": {
			"ACK-3": {"ack.accepted-bad-input", "ack.stored-bad-input"},
			"ACK-4": {"ack.accepted-bad-input", "ack.stored-bad-input"},
		},
		// The 200 before the commit: a kill or a transaction cut after it
		// loses an update the provider will not send again.
		"ack-before-commit": {
			"ACK-1":    {"ack.lost"},
			"ATOMIC-1": {"atomic.acked-uncommitted", "reconcile.lost"},
			"ATOMIC-3": {"atomic.acked-uncommitted", "reconcile.lost"},
		},
	},
}

// ledgerlessReady: node on PATH and the example's npm packages.
func ledgerlessReady() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	if _, err := os.Stat(filepath.Join("..", "..", "examples", "ledgerless-receiver", "node_modules", "pg")); err != nil {
		return "its npm packages are not installed (run `npm ci` in examples/ledgerless-receiver; .ci/run does)"
	}
	return ""
}
