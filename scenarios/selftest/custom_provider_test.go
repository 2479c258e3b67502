package selftest

// customProviderExample is a receiver for Acme, a provider hookcert has no
// built-in profile for: its target file declares Acme's contract
// (profiles:), and the harness signs, checks timestamps and derives its
// negatives from that declaration alone. Its planted defects are
// signature checks gone wrong.
var customProviderExample = example{
	dir:       "custom-provider",
	env:       []string{"ACME_SECRET_ACCT_ALPHA=acme_sk_selftest_alpha_0123456789abcdef", "ACME_SECRET_ACCT_BETA=acme_sk_selftest_beta_0123456789abcdef"},
	defectEnv: "ACME_DEFECT",
	// An effect and an unhandled role only: no lifecycle or ordered role, no
	// failpoints, retention, inbox or outbox, one provider (25); Acme makes
	// no handshake (ACK-8, 26).
	maxNA: 31, // +3: no provider API (REFETCH)
	mustPass: []string{"DEDUP-1", "DEDUP-2", "DEDUP-3", "DEDUP-5", "DEDUP-7", "ATOMIC-1", "ATOMIC-3",
		"ACK-1", "ACK-2", "ACK-3", "ACK-4", "ACK-5", "ACK-6", "ACK-7"},
	breaks: map[string]map[string][]string{
		// The timestamp's age is not checked: a delivery signed 11 minutes
		// ago is applied.
		"stale-accepted": {"ACK-4": {"ack.accepted-bad-input", "ack.stored-bad-input"}},
		// Only the age is checked: a timestamp beyond the tolerance ahead
		// passes. ACK-4 sends one a minute ahead (inside): only the derived
		// negatives go past it, as the contract's timestamp.future says
		// receivers refuse that.
		"future-accepted": {"ACK-9": {"ack.future-accepted"}},
		// The signature is compared over the bytes the header gives: a
		// truncated one passes. Only the derived negatives truncate it.
		"signature-prefix": {"ACK-9": {"ack.signature-truncated-accepted"}},
	},
	// The seed certifies it in full; each defect need only meet the
	// signature checks.
	defectFilter: "ACK",
}
