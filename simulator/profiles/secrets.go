package profiles

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// GenerateSecret returns a new signing secret in the provider's format, reading
// randomness from r (crypto/rand.Reader in production; a seeded reader in tests):
//
//	stripe                        whsec_ + 32 base-62 chars (the whole string is the key)
//	standard-webhooks, svix       whsec_ + base64 of 24 random bytes ("At least 24 bytes", spec)
//	adyen, adyen-legacy           64 upper-case hex chars (a 32-byte HMAC key, hex-encoded)
//	github                        64 hex chars ("a random string of text with high entropy")
//	slack                         32 hex chars (the length of Slack's documented example secret)
//	shopify, paddle               64 hex chars (prefixes unconfirmed, so none is added)
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
	switch profileID {
	case "stripe":
		var s strings.Builder
		s.WriteString("whsec_")
		for s.Len() < len("whsec_")+32 {
			b, err := read(32)
			if err != nil {
				return "", err
			}
			for _, c := range b {
				// Rejection sampling: 248 = 4*62, so bytes below it map uniformly.
				if c < 248 && s.Len() < len("whsec_")+32 {
					s.WriteByte(base62[c%62])
				}
			}
		}
		return s.String(), nil
	case "standard-webhooks", "svix":
		b, err := read(24)
		if err != nil {
			return "", err
		}
		return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
	case "adyen", "adyen-legacy":
		b, err := read(32)
		if err != nil {
			return "", err
		}
		return strings.ToUpper(hex.EncodeToString(b)), nil
	case "slack":
		b, err := read(16)
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(b), nil
	case "github", "shopify", "paddle":
		b, err := read(32)
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(b), nil
	}
	if _, err := Lookup(profileID); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	return "", fmt.Errorf("secret for %q: no generator", profileID)
}
