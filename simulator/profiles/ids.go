package profiles

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"math/bits"
)

// RandSource is what the ID generators need from a seeded random generator.
// Both math/rand/v2's *rand.Rand and math/rand's *rand.Rand satisfy it, so the
// caller's seeded generator makes the IDs deterministic.
type RandSource interface {
	Uint64() uint64
}

const (
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base36 = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// randString draws n characters uniformly from alphabet (len ≤ 64).
func randString(r RandSource, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		// Multiply-shift maps a 64-bit draw onto the alphabet; the bias for an
		// alphabet of ≤ 64 symbols is below 2^-58, irrelevant for test IDs.
		hi, _ := bits.Mul64(r.Uint64(), uint64(len(alphabet)))
		b[i] = alphabet[hi]
	}
	return string(b)
}

// formatUUID formats 16 bytes as a version-4, RFC 4122 variant UUID string.
func formatUUID(b []byte) string {
	u := make([]byte, 16)
	copy(u, b)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func randUUID(r RandSource) string {
	b := make([]byte, 16)
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return formatUUID(b)
}

// base36Hash renders SHA-256(s) as n lower-case base-36 characters: a
// deterministic ID derived from s.
func base36Hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	v := new(big.Int).SetBytes(sum[:])
	out := v.Text(36)
	for len(out) < n {
		out = "0" + out
	}
	return out[:n]
}

// NewEventID returns a provider-side event ID in the provider's format, drawn
// from r (deterministic for a seeded r):
//
//	stripe            evt_ + 24 base-62 chars (evt_1NG8Du2eZvKYlo2CUI79vXWy, API reference)
//	standard-webhooks msg_ + 27 base-62 chars (msg_2KWPBgLlAfxdpx2AI54pPJ85f4W, spec example)
//	svix              msg_ + 27 base-62 chars (msg_ prefix, library tests)
//	github            a GUID (X-GitHub-Delivery: "A globally unique identifier (GUID)")
//	slack             Ev + 10 upper-case alphanumerics (Ev123ABC456, Events API docs)
//	shopify           a GUID; the format is undocumented, the shape is ours
//	paddle            evt_ + 26 lower-case base-36 chars; undocumented, the shape is ours
//
// Adyen has no event ID (see EventKey): use NewAdyenPSPReference for the object.
func NewEventID(profileID string, r RandSource) (string, error) {
	if r == nil {
		return "", fmt.Errorf("event ID for %q: random source: must not be nil", profileID)
	}
	switch profileID {
	case "stripe":
		return "evt_" + randString(r, base62, 24), nil
	case "standard-webhooks", "svix":
		return "msg_" + randString(r, base62, 27), nil
	case "github", "shopify":
		return randUUID(r), nil
	case "slack":
		return "Ev" + randString(r, base62[:36], 10), nil
	case "paddle":
		return "evt_" + randString(r, base36, 26), nil
	case "adyen", "adyen-legacy":
		return "", fmt.Errorf("event ID for %q: Adyen has no event ID; receivers key on pspReference:eventCode:success (use EventKey)", profileID)
	}
	if _, err := Lookup(profileID); err != nil {
		return "", fmt.Errorf("event ID: %w", err)
	}
	return "", fmt.Errorf("event ID for %q: no generator", profileID)
}

// NewDeliveryID returns a per-attempt delivery ID for providers that send one
// in a header of its own: shopify (X-Shopify-Webhook-Id; a GUID, shape ours).
// GitHub's delivery ID is the event ID; Paddle's notification_id is derived per
// destination; the others send none, which is an error here.
func NewDeliveryID(profileID string, r RandSource) (string, error) {
	if r == nil {
		return "", fmt.Errorf("delivery ID for %q: random source: must not be nil", profileID)
	}
	switch profileID {
	case "shopify":
		return randUUID(r), nil
	case "github":
		return "", fmt.Errorf("delivery ID for github: X-GitHub-Delivery is the event ID (stable across redeliveries); use NewEventID")
	}
	if _, err := Lookup(profileID); err != nil {
		return "", fmt.Errorf("delivery ID: %w", err)
	}
	return "", fmt.Errorf("delivery ID for %q: the provider sends no per-attempt delivery ID", profileID)
}

// NewAdyenPSPReference returns a 16-digit Adyen pspReference (the shape of
// "7914073381342284" in Adyen's library tests), drawn from r.
func NewAdyenPSPReference(r RandSource) string {
	b := make([]byte, 16)
	for i := range b {
		hi, _ := bits.Mul64(r.Uint64(), 10)
		b[i] = byte('0' + hi)
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}
