package profiles

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy X-Hub-Signature is HMAC-SHA1; we emit it, not rely on it.
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The signing primitives below are exported so that bad-input tooling (tampered
// bodies, wrong secrets, stale timestamps) and tests can sign arbitrary bytes
// exactly as the profiles do. None of them returns or logs a secret.

// StripeSignatureHeader returns a Stripe-Signature value "t=<unix>,v1=<hex>[,v1=…]"
// with one v1 per secret: HMAC-SHA256 over "{t}.{body}" keyed with the WHOLE
// secret string, whsec_ prefix included, as UTF-8 bytes (providers.yaml
// stripe.signature; stripe-go webhook.ComputeSignature).
func StripeSignatureHeader(t time.Time, body []byte, secrets ...string) string {
	ts := unix(t)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(hmacSHA256([]byte(s), []byte(ts), []byte("."), body)))
	}
	return b.String()
}

// StandardWebhooksKey decodes a Standard Webhooks / Svix secret: strip "whsec_",
// base64-decode the rest (providers.yaml standard_webhooks.signature.secret_format;
// the Go library also accepts the secret without the prefix).
func StandardWebhooksKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		// The decode error would quote input bytes; name the rule instead.
		return nil, fmt.Errorf("secret: must be whsec_ followed by standard base64 (Standard Webhooks secret format)")
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("secret: decodes to an empty key")
	}
	return key, nil
}

// StandardWebhooksSignature returns one signature entry for a Standard Webhooks
// / Svix delivery over "{id}.{unix ts}.{body}":
//   - symmetric secret (whsec_<base64>): "v1,<base64 HMAC-SHA256>" with the
//     decoded key, standard base64 with padding;
//   - asymmetric secret (whsk_<base64 32-byte ed25519 seed>): "v1a,<base64
//     ed25519 signature>" (Go library ed25519.NewKeyFromSeed).
//
// Source: providers.yaml standard_webhooks.signature.
func StandardWebhooksSignature(secret, msgID string, t time.Time, body []byte) (string, error) {
	content := []byte(msgID + "." + unix(t) + "." + string(body))
	if strings.HasPrefix(secret, "whsk_") {
		seed, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsk_"))
		if err != nil || len(seed) != ed25519.SeedSize {
			return "", fmt.Errorf("secret: whsk_ must be followed by the standard base64 of a 32-byte ed25519 seed")
		}
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), content)), nil
	}
	key, err := StandardWebhooksKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(hmacSHA256(key, content)), nil
}

// StandardWebhooksPublicKey returns the whpk_<base64> public key a receiver
// verifies v1a signatures with, for a whsk_ secret.
func StandardWebhooksPublicKey(secret string) (string, error) {
	seed, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsk_"))
	if !strings.HasPrefix(secret, "whsk_") || err != nil || len(seed) != ed25519.SeedSize {
		return "", fmt.Errorf("secret: must be whsk_ followed by the standard base64 of a 32-byte ed25519 seed")
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return "whpk_" + base64.StdEncoding.EncodeToString(pub), nil
}

// GitHubSignature256 returns the X-Hub-Signature-256 value "sha256=<hex>" of
// HMAC-SHA256 over the raw body keyed with the secret's UTF-8 bytes
// (providers.yaml github.signature).
func GitHubSignature256(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(hmacSHA256([]byte(secret), body))
}

// GitHubSignature1 returns the legacy X-Hub-Signature value "sha1=<hex>"
// (HMAC-SHA1, "backward compatibility only", providers.yaml github.signature).
func GitHubSignature1(secret string, body []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// ShopifyHMAC returns the X-Shopify-Hmac-Sha256 value: base64 HMAC-SHA256 of the
// raw body keyed with the client secret's UTF-8 bytes (providers.yaml
// shopify.signature).
func ShopifyHMAC(secret string, body []byte) string {
	return base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), body))
}

// SlackSignature returns the X-Slack-Signature value "v0=<hex>" of HMAC-SHA256
// over "v0:{ts}:{body}" (providers.yaml slack_events.signature).
func SlackSignature(secret string, t time.Time, body []byte) string {
	return "v0=" + hex.EncodeToString(hmacSHA256([]byte(secret), []byte("v0:"+unix(t)+":"), body))
}

// PaddleSignatureHeader returns a Paddle-Signature value "ts=<unix>;h1=<hex>"
// over "{ts}:{body}", one h1 per secret (providers.yaml paddle_billing.signature;
// several h1 during rotation is secondary: hookdeck skill).
func PaddleSignatureHeader(t time.Time, body []byte, secrets ...string) string {
	ts := unix(t)
	var b strings.Builder
	b.WriteString("ts=" + ts)
	for _, s := range secrets {
		b.WriteString(";h1=")
		b.WriteString(hex.EncodeToString(hmacSHA256([]byte(s), []byte(ts+":"), body)))
	}
	return b.String()
}

// AdyenSignedContent returns the colon-joined content Adyen signs for one
// NotificationRequestItem: pspReference:originalReference:merchantAccountCode:
// merchantReference:amount.value:amount.currency:eventCode:success, missing
// fields empty, value 0 rendered "0" (providers.yaml adyen.signature and the
// testHmacSignatureForRefundWithZeroValue vector).
func AdyenSignedContent(it AdyenItem) string {
	return strings.Join([]string{
		it.PSPReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
		strconv.FormatInt(it.Amount.Value, 10), it.Amount.Currency, it.EventCode, it.Success,
	}, ":")
}

// AdyenHMAC returns the base64 HMAC-SHA256 of AdyenSignedContent(it) keyed with
// the BINARY value of the hex key (PHP pack("H*", $hmacKey); providers.yaml
// adyen.signature.secret_format).
func AdyenHMAC(hexKey string, it AdyenItem) (string, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil || len(key) == 0 {
		return "", fmt.Errorf("secret: must be a non-empty, even-length hex string (Adyen HMAC key format)")
	}
	return base64.StdEncoding.EncodeToString(hmacSHA256(key, []byte(AdyenSignedContent(it)))), nil
}
