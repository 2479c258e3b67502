package selftest

import (
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
)

// multiProviderSeed is the Ed25519 private seed the harness signs the Discord
// endpoint's deliveries with, hex as the discord profile's secret is.
const multiProviderSeed = "5e1f7e57d15c0dd0a11ce0f5e1f7e57d15c0dd0a11ce0f5e1f7e57d15c0dd0a1"

// multiProviderEnv holds the example's secrets, each in its provider's
// format: a Twilio Auth Token (32 hex digits), the Discord signing seed
// (hex), a Zoom Secret Token, a Clerk (Svix) whsec_ secret. The receiver gets
// the seed's public key from the target file ({{publicKey "discord"}}).
func multiProviderEnv() []string {
	seed, err := hex.DecodeString(multiProviderSeed)
	if err != nil || len(seed) != ed25519.SeedSize {
		panic("multiProviderSeed must be 32 bytes of hex")
	}
	return []string{
		"TWILIO_AUTH_TOKEN=5e1f7e57a0d1c0ffee0ddba11f00dfee",
		"DISCORD_SIGNING_KEY=" + multiProviderSeed,
		"ZOOM_SECRET_TOKEN=selftestZoomSecretToken01",
		"CLERK_WEBHOOK_SECRET=whsec_c2VsZnRlc3QtbXVsdGktcHJvdmlkZXItY2xlcmstMDE=",
	}
}

// multiProviderReady: node on PATH and the example's npm packages.
func multiProviderReady() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	for _, pkg := range []string{"pg", "discord-interactions", "standardwebhooks"} {
		if _, err := os.Stat(filepath.Join("..", "..", "examples", "multi-provider", "node_modules", pkg)); err != nil {
			return "its npm packages are not installed (run `npm ci` in examples/multi-provider; .ci/run does)"
		}
	}
	return ""
}

// multiProviderExample is the Node.js receiver of four providers of
// different shapes on PostgreSQL: Twilio (a form, its URL signed), Discord
// (Ed25519, a PING to answer), Zoom (a URL validation to answer) and Clerk
// (Svix), one community's account on all four. Its planted defects are each
// in one provider's own check, caught by the guarantees derived from the
// providers' contracts: the handshakes (ACK-8) and every signed input
// (ACK-9).
var multiProviderExample = example{
	dir:       "multi-provider",
	needs:     multiProviderReady,
	env:       multiProviderEnv(),
	defectEnv: "MULTI_DEFECT",
	// One account per profile (DEDUP-3), no lifecycle or ordered objects
	// (DEDUP-6, ATOMIC-2, ATOMIC-5, ORDER-1 to 4), no failpoints (ATOMIC-4),
	// no retention, inbox or outbox (16).
	maxNA: 30, // +3: no provider API (REFETCH)
	mustPass: []string{"DEDUP-1", "DEDUP-2", "DEDUP-4", "DEDUP-5", "DEDUP-7", "DEDUP-8", "ATOMIC-1", "ATOMIC-3",
		"ACK-1", "ACK-3", "ACK-4", "ACK-5", "ACK-6", "ACK-7", "ACK-8", "ACK-9"},
	breaks: map[string]map[string][]string{
		// The URL validation answered with an unkeyed SHA-256 of the plain
		// token: Zoom never validates the endpoint.
		"zoom-handshake-plain": {"ACK-8": {"ack.handshake-wrong"}},
		// The signed URL rebuilt without its query: a query added after
		// signing is accepted.
		"twilio-signature-path-only": {"ACK-9": {"ack.unsigned-url"}},
		// A PING answered before its signature is checked: Discord's badly
		// signed PING gets 200.
		"discord-ping-unverified": {"ACK-8": {"ack.handshake-bad-accepted"}},
	},
	// Each defect is in one provider's own check: its run need only meet the
	// guarantees derived from the contracts.
	defectFilter: "ACK-8 || ACK-9",
}
