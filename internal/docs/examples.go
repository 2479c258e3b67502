package docs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookcert/hookcert/scenarios"
)

// ExampleNotApplicable is, for each example receiver (its folder under
// examples/), the guarantees its clean certification reports not applicable:
// what its target file does not declare. Every other guarantee of the
// catalogue passes. A family's name stands for all of its guarantees, so a
// guarantee added to INBOX needs no change here. The self-test
// (TestExampleReceiversAreCertified) holds every clean run of an example to
// this list, so the verdicts the documentation renders from it are those of
// every CI run.
// None of these receivers calls a provider API (REFETCH).
var ExampleNotApplicable = map[string][]string{
	// Stripe has its event ID in the body; no failpoints; a synchronous
	// receiver; PostgreSQL expires no key by itself (no key_ttl query).
	// No example serves a provider that verifies endpoints with a handshake
	// (ACK-8).
	// Its ordered updates carry no {{.Tag}} and it declares no child rows
	// (ORDER-5, ORDER-6), as the Node and Django receivers.
	"stripe-shop": {"DEDUP-5", "ATOMIC-4", "ACK-8", "ORDER-5", "ORDER-6", "RETENTION-5", "INBOX", "OUTBOX", "REFETCH"},
	// One endpoint; no failpoints, no purge; synchronous.
	"node-receiver": {"DEDUP-3", "DEDUP-4", "ATOMIC-4", "ACK-8", "ORDER-5", "ORDER-6", "RETENTION", "INBOX", "OUTBOX", "REFETCH"},
	// One endpoint, no effect on an issue's transitions, issues whose open and
	// closed reach each other, GitHub signs no timestamp, no ordered role.
	"python-receiver": {"DEDUP-3", "DEDUP-4", "DEDUP-6", "ATOMIC-2", "ATOMIC-4", "ACK-4", "ACK-8", "ORDER", "RETENTION", "INBOX", "OUTBOX", "REFETCH"},
	// One provider; no failpoints; no downstream calls; no key_ttl query.
	"django-receiver": {"DEDUP-4", "ATOMIC-4", "ACK-8", "ORDER-5", "ORDER-6", "RETENTION-5", "OUTBOX", "REFETCH"},
	// One endpoint, no lifecycle or ordered role, no retention, no outbox.
	"github-gateway": {"DEDUP-3", "DEDUP-4", "DEDUP-6", "ATOMIC-2", "ATOMIC-4", "ATOMIC-5", "ACK-4", "ACK-8", "ORDER", "RETENTION", "INBOX-7", "OUTBOX", "REFETCH"},
	// A declared provider (Acme): one profile, no handshake, an effect and an
	// unhandled role only, no failpoints, retention, inbox or outbox.
	"custom-provider": {"DEDUP-4", "DEDUP-6", "ATOMIC-2", "ATOMIC-4", "ATOMIC-5", "ACK-8", "ORDER", "RETENTION", "INBOX", "OUTBOX", "REFETCH"},
	// Four providers, one account: no lifecycle, no failpoints, no retention,
	// inbox or outbox.
	"multi-provider": {"DEDUP-3", "DEDUP-6", "ATOMIC-2", "ATOMIC-4", "ATOMIC-5", "ORDER", "RETENTION", "INBOX", "OUTBOX", "REFETCH"},
	// No event ledger (object-version): ACK, DEDUP-1, -2, ATOMIC-1 and -3
	// judge fresh subscriptions; the rest that count event rows are not
	// applicable. No effect or lifecycle role, one endpoint, no failpoints,
	// retention, inbox or outbox.
	"ledgerless-receiver": {"DEDUP-3", "DEDUP-4", "DEDUP-5", "DEDUP-6", "DEDUP-7", "DEDUP-8", "ATOMIC-2", "ATOMIC-4", "ATOMIC-5",
		"ACK-8", "ORDER-3", "RETENTION", "INBOX", "OUTBOX", "REFETCH"},
	// A refetching Stripe receiver: one endpoint, no lifecycle, no
	// failpoints, retention, inbox or outbox.
	"refetch-receiver": {"DEDUP-3", "DEDUP-4", "DEDUP-5", "DEDUP-6", "ATOMIC-2", "ATOMIC-4", "ATOMIC-5", "ACK-8", "ORDER-3", "ORDER-5", "ORDER-6", "RETENTION", "INBOX", "OUTBOX"},
}

// ExampleVerdicts returns an example's clean verdicts, in catalogue order: the
// guarantees that pass and those not applicable.
func ExampleVerdicts(dir string) (passed, notApplicable []string, err error) {
	list, ok := ExampleNotApplicable[dir]
	if !ok {
		return nil, nil, fmt.Errorf("no verdicts for example %q (known: %s)", dir, strings.Join(sortedKeys(ExampleNotApplicable), ", "))
	}
	known := map[string]bool{}
	for _, g := range scenarios.Catalogue() {
		known[g.ID], known[g.Family] = true, true
	}
	for _, id := range list {
		if !known[id] {
			return nil, nil, fmt.Errorf("example %s: %q is neither a guarantee nor a family", dir, id)
		}
	}
	for _, g := range scenarios.Catalogue() {
		if slices.Contains(list, g.ID) || slices.Contains(list, g.Family) {
			notApplicable = append(notApplicable, g.ID)
		} else {
			passed = append(passed, g.ID)
		}
	}
	return passed, notApplicable, nil
}
