package signature

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// verifyGitHub implements X-Hub-Signature-256: "sha256=" + hex(HMAC-SHA256(secret, raw_body)),
// the secret used as UTF-8 bytes
// (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
// The legacy SHA-1 X-Hub-Signature is not accepted: GitHub sends it "for backward
// compatibility" only and SHA-1 is not a sound choice for a reference receiver.
func verifyGitHub(h http.Header, body []byte, secret string, _ time.Time, opt Options) *Error {
	const name = "X-Hub-Signature-256"
	if len(headerValues(h, name)) == 0 && len(headerValues(h, "X-Hub-Signature")) > 0 {
		return fail(ReasonMissingSignature, "header %s: required (the legacy SHA-1 X-Hub-Signature is not accepted)", name)
	}
	v, err := single(h, name)
	if err != nil {
		return err
	}
	hexSig, ok := strings.CutPrefix(v, "sha256=")
	if !ok && opt.AnyScheme {
		// The any-scheme defect: whatever precedes the '=' is not read.
		_, hexSig, ok = strings.Cut(v, "=")
	}
	if !ok {
		return fail(ReasonMalformedSignature, "header %s: must be sha256=<hex>", name)
	}
	sig, derr := hex.DecodeString(hexSig)
	if derr != nil {
		return fail(ReasonMalformedSignature, "header %s: must be sha256=<hex>", name)
	}
	if !sigEqual(hmacSHA256([]byte(secret), body), sig, opt) {
		return fail(ReasonBadSignature, "header %s: does not match the body", name)
	}
	return nil
}

// verifyShopify implements X-Shopify-Hmac-Sha256: base64(HMAC-SHA256(secret, raw_body)),
// the app's client secret used as UTF-8 bytes
// (https://shopify.dev/docs/apps/build/webhooks/verify-deliveries).
func verifyShopify(h http.Header, body []byte, secret string, _ time.Time, opt Options) *Error {
	const name = "X-Shopify-Hmac-Sha256"
	v, err := single(h, name)
	if err != nil {
		return err
	}
	sig, derr := base64.StdEncoding.DecodeString(v)
	if derr != nil {
		return fail(ReasonMalformedSignature, "header %s: must be standard base64", name)
	}
	if !sigEqual(hmacSHA256([]byte(secret), body), sig, opt) {
		return fail(ReasonBadSignature, "header %s: does not match the body", name)
	}
	return nil
}
