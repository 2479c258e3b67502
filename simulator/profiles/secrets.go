package profiles

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// GenerateSecret returns a new signing secret in the provider's format, reading
// randomness from r (crypto/rand.Reader in production; a seeded reader in tests).
// The shape is the contract's secret section (contracts/*.yaml), e.g.:
//
//	stripe                        whsec_ + 32 base-62 chars (the whole string is the key)
//	standard-webhooks, svix       whsec_ + base64 of 24 random bytes ("At least 24 bytes", spec)
//	github                        64 hex chars ("a random string of text with high entropy")
//	slack                         32 hex chars (the length of Slack's documented example secret)
//	shopify, paddle               64 hex chars (prefixes unconfirmed, so none is added)
//	adyen, adyen-legacy           64 upper-case hex chars (a 32-byte HMAC key, hex-encoded; Go only)
//
// For an asymmetric contract (ed25519, ecdsa-p256) the secret is a private key
// drawn from r; PublicKeyer gives the receiver's half.
func GenerateSecret(profileID string, r io.Reader) (string, error) {
	if r == nil {
		return "", fmt.Errorf("secret for %q: random source: must not be nil", profileID)
	}
	read := func(n int) ([]byte, error) {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("secret for %q: read random bytes: %w", profileID, err)
		}
		return b, nil
	}
	if profileID == "adyen" || profileID == "adyen-legacy" {
		// Adyen is Go only (no contract): its HMAC key is 32 bytes in upper-case hex.
		b, err := read(32)
		if err != nil {
			return "", err
		}
		return strings.ToUpper(hex.EncodeToString(b)), nil
	}
	p, err := Lookup(profileID)
	if err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	if m, ok := p.(SecretMaker); ok {
		return m.MakeSecret(r)
	}
	if c, ok := ContractOf(profileID); ok {
		s, err := generateSecret(c.Secret, r)
		if err != nil {
			return "", fmt.Errorf("secret for %q: %w", profileID, err)
		}
		return s, nil
	}
	return "", fmt.Errorf("secret for %q: no generator", profileID)
}
