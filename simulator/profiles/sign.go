package profiles

import (
	"crypto/ed25519"
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
//
// Each one writes into a strings.Builder sized up front and signs with a pooled
// HMAC state per secret (fastsign.go), so a signature costs one allocation: the
// returned string.

// Sizes of encoded MACs.
const (
	hexSHA256Len = 64
	hexSHA1Len   = 40
	b64SHA256Len = 44
)

// writeUnix writes t's Unix seconds to b without an intermediate string.
func writeUnix(b *strings.Builder, t time.Time) {
	var tmp [20]byte
	b.Write(strconv.AppendInt(tmp[:0], t.Unix(), 10))
}

// writeHex and writeB64 write a MAC's encoding to b.
func writeHex(b *strings.Builder, sum []byte) {
	var tmp [2 * 32]byte
	b.Write(hex.AppendEncode(tmp[:0], sum))
}

func writeB64(b *strings.Builder, sum []byte) {
	var tmp [b64SHA256Len]byte
	b.Write(base64.StdEncoding.AppendEncode(tmp[:0], sum))
}

// rawSHA256 returns a pooled HMAC-SHA256 keyed with the secret's UTF-8 bytes.
func rawSHA256(secret string) *mac {
	m, _ := getMAC(macRaw256, secret) // every string is a valid raw key
	return m
}

// StripeSignatureHeader returns a Stripe-Signature value "t=<unix>,v1=<hex>[,v1=…]"
// with one v1 per secret: HMAC-SHA256 over "{t}.{body}" keyed with the WHOLE
// secret string, whsec_ prefix included, as UTF-8 bytes (providers.yaml
// stripe.signature; stripe-go webhook.ComputeSignature).
func StripeSignatureHeader(t time.Time, body []byte, secrets ...string) string {
	return timestampedHexHeader("t=", ",v1=", '.', t, body, secrets)
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
	var b strings.Builder
	if err := writeStandardWebhooksSignature(&b, secret, msgID, t, body); err != nil {
		return "", err
	}
	return b.String(), nil
}

// writeStandardWebhooksSignature writes StandardWebhooksSignature's entry to b.
func writeStandardWebhooksSignature(b *strings.Builder, secret, msgID string, t time.Time, body []byte) error {
	if strings.HasPrefix(secret, "whsk_") {
		// Asymmetric signing is rare and ed25519 dominates its cost: no pooling.
		seed, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsk_"))
		if err != nil || len(seed) != ed25519.SeedSize {
			return fmt.Errorf("secret: whsk_ must be followed by the standard base64 of a 32-byte ed25519 seed")
		}
		content := []byte(msgID + "." + unix(t) + "." + string(body))
		b.WriteString("v1a,")
		b.WriteString(base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), content)))
		return nil
	}
	m, ok := getMAC(macStd256, secret)
	if !ok {
		_, err := StandardWebhooksKey(secret) // the precise rule that failed
		return err
	}
	m.writeString(msgID)
	m.write(append(strconv.AppendInt(append(m.buf[:0], '.'), t.Unix(), 10), '.'))
	m.write(body)
	b.WriteString("v1,")
	writeB64(b, m.finish())
	m.release()
	return nil
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
	m := rawSHA256(secret)
	m.write(body)
	var b strings.Builder
	b.Grow(len("sha256=") + hexSHA256Len)
	b.WriteString("sha256=")
	writeHex(&b, m.finish())
	m.release()
	return b.String()
}

// GitHubSignature1 returns the legacy X-Hub-Signature value "sha1=<hex>"
// (HMAC-SHA1, "backward compatibility only", providers.yaml github.signature).
func GitHubSignature1(secret string, body []byte) string {
	m, _ := getMAC(macRaw1, secret)
	m.write(body)
	var b strings.Builder
	b.Grow(len("sha1=") + hexSHA1Len)
	b.WriteString("sha1=")
	writeHex(&b, m.finish())
	m.release()
	return b.String()
}

// ShopifyHMAC returns the X-Shopify-Hmac-Sha256 value: base64 HMAC-SHA256 of the
// raw body keyed with the client secret's UTF-8 bytes (providers.yaml
// shopify.signature).
func ShopifyHMAC(secret string, body []byte) string {
	m := rawSHA256(secret)
	m.write(body)
	var b strings.Builder
	b.Grow(b64SHA256Len)
	writeB64(&b, m.finish())
	m.release()
	return b.String()
}

// SlackSignature returns the X-Slack-Signature value "v0=<hex>" of HMAC-SHA256
// over "v0:{ts}:{body}" (providers.yaml slack_events.signature).
func SlackSignature(secret string, t time.Time, body []byte) string {
	m := rawSHA256(secret)
	m.write(append(strconv.AppendInt(append(m.buf[:0], "v0:"...), t.Unix(), 10), ':'))
	m.write(body)
	var b strings.Builder
	b.Grow(len("v0=") + hexSHA256Len)
	b.WriteString("v0=")
	writeHex(&b, m.finish())
	m.release()
	return b.String()
}

// PaddleSignatureHeader returns a Paddle-Signature value "ts=<unix>;h1=<hex>"
// over "{ts}:{body}", one h1 per secret (providers.yaml paddle_billing.signature;
// several h1 during rotation is secondary: hookdeck skill).
func PaddleSignatureHeader(t time.Time, body []byte, secrets ...string) string {
	return timestampedHexHeader("ts=", ";h1=", ':', t, body, secrets)
}

// timestampedHexHeader builds "<tsKey><unix>(<sigKey><hex>)…": one hex
// HMAC-SHA256 per secret over "{unix}<sep>{body}", the secret's UTF-8 bytes as key
// (the shape Stripe and Paddle share).
func timestampedHexHeader(tsKey, sigKey string, sep byte, t time.Time, body []byte, secrets []string) string {
	var b strings.Builder
	b.Grow(len(tsKey) + 20 + len(secrets)*(len(sigKey)+hexSHA256Len))
	b.WriteString(tsKey)
	writeUnix(&b, t)
	for _, s := range secrets {
		m := rawSHA256(s)
		m.write(append(strconv.AppendInt(m.buf[:0], t.Unix(), 10), sep))
		m.write(body)
		b.WriteString(sigKey)
		writeHex(&b, m.finish())
		m.release()
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

// errAdyenKey is the one error for a malformed Adyen HMAC key.
var errAdyenKey = fmt.Errorf("secret: must be a non-empty, even-length hex string (Adyen HMAC key format)")

// AdyenHMAC returns the base64 HMAC-SHA256 of AdyenSignedContent(it) keyed with
// the BINARY value of the hex key (PHP pack("H*", $hmacKey); providers.yaml
// adyen.signature.secret_format).
func AdyenHMAC(hexKey string, it AdyenItem) (string, error) {
	m, ok := getMAC(macAdyen256, hexKey)
	if !ok {
		return "", errAdyenKey
	}
	writeAdyenContent(m, it.PSPReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
		it.Amount.Value, it.Amount.Currency, it.EventCode, it.Success)
	var b strings.Builder
	b.Grow(b64SHA256Len)
	writeB64(&b, m.finish())
	m.release()
	return b.String(), nil
}

// writeAdyenContent feeds AdyenSignedContent's fields to m without building
// the joined string.
func writeAdyenContent(m *mac, psp, orig, merchant, ref string, value int64, currency, code, success string) {
	for _, s := range [...]string{psp, orig, merchant, ref} {
		m.writeString(s)
		m.writeString(":")
	}
	m.write(append(strconv.AppendInt(m.buf[:0], value, 10), ':'))
	m.writeString(currency)
	m.writeString(":")
	m.writeString(code)
	m.writeString(":")
	m.writeString(success)
}
