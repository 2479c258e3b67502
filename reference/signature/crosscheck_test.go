package signature

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v85/webhook"
)

// The cross-checks below pit Verify against the providers' own libraries in both
// directions: what the library signs, Verify accepts; what is signed by hand from the
// documented algorithm, the library accepts (so the hand signer, and hence the vectors
// above, are right); and for malformed or tampered headers both agree on rejecting.

const crossBody = `{"id":"evt_cross","object":"event","api_version":"2025-01-01.basil","type":"customer.created"}`

func TestCrossStripeGoSignsVerifyAccepts(t *testing.T) {
	now := time.Now()
	for _, ts := range []time.Time{now, now.Add(-299 * time.Second), now.Add(-10 * time.Minute)} {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(crossBody), Secret: stripeSecret, Timestamp: ts})
		err := Verify("stripe", http.Header{"Stripe-Signature": {sp.Header}}, sp.Payload, stripeSecret, now, Options{})
		libErr := webhook.ValidatePayload(sp.Payload, sp.Header, stripeSecret)
		if (err == nil) != (libErr == nil) {
			t.Fatalf("signed %v ago: Verify = %v, stripe-go ValidatePayload = %v; they must agree", now.Sub(ts).Round(time.Second), err, libErr)
		}
		if now.Sub(ts) < 5*time.Minute && err != nil {
			t.Fatalf("fresh stripe-go signature rejected: %v", err)
		}
	}
	// ComputeSignature, assembled into a rolled header with a foreign signature first.
	ts := now.Add(-time.Minute)
	sig := hex.EncodeToString(webhook.ComputeSignature(ts, []byte(crossBody), stripeSecret))
	other := hex.EncodeToString(webhook.ComputeSignature(ts, []byte(crossBody), "whsec_other"))
	header := "t=" + strconv.FormatInt(ts.Unix(), 10) + ",v1=" + other + ",v1=" + sig
	if err := Verify("stripe", http.Header{"Stripe-Signature": {header}}, []byte(crossBody), stripeSecret, now, Options{}); err != nil {
		t.Fatalf("ComputeSignature roll header rejected: %v", err)
	}
}

func TestCrossHandSignedStripeGoAccepts(t *testing.T) {
	ts := time.Now().Unix()
	header := "t=" + strconv.FormatInt(ts, 10) + ",v1=" + handStripe(stripeSecret, ts, crossBody)
	if err := webhook.ValidatePayload([]byte(crossBody), header, stripeSecret); err != nil {
		t.Fatalf("stripe-go ValidatePayload rejects the hand-signed header: %v", err)
	}
	ev, err := webhook.ConstructEventWithOptions([]byte(crossBody), header, stripeSecret, webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		t.Fatalf("stripe-go ConstructEventWithOptions rejects the hand-signed header: %v", err)
	}
	if ev.ID != "evt_cross" {
		t.Fatalf("stripe-go parsed event ID %q, want evt_cross", ev.ID)
	}
	if err := Verify("stripe", http.Header{"Stripe-Signature": {header}}, []byte(crossBody), stripeSecret, time.Unix(ts, 0), Options{}); err != nil {
		t.Fatalf("Verify rejects the hand-signed header: %v", err)
	}
}

// TestCrossStripeAgreement runs headers through both verifiers (timestamps ignored, so
// only parsing and matching are compared) and requires the same accept/reject verdict.
func TestCrossStripeAgreement(t *testing.T) {
	ts := int64(1700000000)
	good := handStripe(stripeSecret, ts, crossBody)
	t0 := "t=" + strconv.FormatInt(ts, 10)
	headers := map[string]string{
		"plain":             t0 + ",v1=" + good,
		"v1 first":          "v1=" + good + "," + t0,
		"roll":              t0 + ",v1=" + handStripe("whsec_x", ts, crossBody) + ",v1=" + good,
		"v0 only":           t0 + ",v0=" + good,
		"bad hex then good": t0 + ",v1=nothex,v1=" + good,
		"unknown scheme":    t0 + ",v9=abc,v1=" + good,
		"truncated":         t0 + ",v1=" + good[:62],
		"uppercase hex":     t0 + ",v1=" + toUpper(good),
		"element no =":      t0 + ",v1=" + good + ",junk",
		"double =":          t0 + ",v1=" + good + "=",
		"no t":              "v1=" + good,
		"t shifted":         "t=1700000001,v1=" + good,
		"t leading zero":    "t=01700000000,v1=" + good,
		"t plus sign":       "t=+1700000000,v1=" + good,
		"empty":             "",
	}
	for name, h := range headers {
		libErr := webhook.ValidatePayloadIgnoringTolerance([]byte(crossBody), h, stripeSecret)
		err := Verify("stripe", http.Header{"Stripe-Signature": {h}}, []byte(crossBody), stripeSecret, time.Unix(ts, 0), Options{SkipTimestampCheck: true})
		if (err == nil) != (libErr == nil) {
			t.Errorf("%s: Verify = %v, stripe-go = %v; they must agree", name, err, libErr)
		}
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestCrossStandardWebhooksLibrary(t *testing.T) {
	for _, secret := range []string{swSecret, swSecret[len("whsec_"):]} {
		lib, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatalf("NewWebhook: %v", err)
		}
		now := time.Now()
		for _, prefix := range []string{"webhook", "svix"} {
			profile := map[string]string{"webhook": "standard-webhooks", "svix": "svix"}[prefix]
			// Library signs, Verify accepts.
			sig, err := lib.Sign("msg_cross", now, []byte(crossBody))
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			if err := Verify(profile, swHeaders(prefix, "msg_cross", now.Unix(), sig), []byte(crossBody), secret, now, Options{}); err != nil {
				t.Fatalf("%s: Verify rejects a library signature: %v", profile, err)
			}
			// Tampered body: both reject.
			tampered := []byte(crossBody[:len(crossBody)-1] + " }")
			var se *Error
			if err := Verify(profile, swHeaders(prefix, "msg_cross", now.Unix(), sig), tampered, secret, now, Options{}); !errors.As(err, &se) || se.Reason != ReasonBadSignature {
				t.Fatalf("%s: tampered body = %v, want bad_signature", profile, err)
			}
		}
		// Hand-signed, library accepts (the library reads webhook-* headers and the wall clock).
		hand := handStandard(secret, "msg_hand", now.Unix(), crossBody)
		h := swHeaders("webhook", "msg_hand", now.Unix(), "v1a,AAAA "+hand)
		if err := lib.Verify([]byte(crossBody), h); err != nil {
			t.Fatalf("library rejects the hand signature: %v", err)
		}
		if err := Verify("standard-webhooks", h, []byte(crossBody), secret, now, Options{}); err != nil {
			t.Fatalf("Verify rejects the hand signature: %v", err)
		}
		// Both reject too old and too new, and the published invalid fixture.
		for name, ts := range map[string]int64{"too old": now.Unix() - 400, "too new": now.Unix() + 400} {
			h := swHeaders("webhook", "msg_hand", ts, handStandard(secret, "msg_hand", ts, crossBody))
			libErr := lib.Verify([]byte(crossBody), h)
			err := Verify("standard-webhooks", h, []byte(crossBody), secret, now, Options{})
			if libErr == nil || err == nil {
				t.Fatalf("%s: library = %v, Verify = %v; both must reject", name, libErr, err)
			}
		}
		h = swHeaders("webhook", "msg_hand", now.Unix(), swInvalidSig)
		if libErr, err := lib.Verify([]byte(crossBody), h), Verify("standard-webhooks", h, []byte(crossBody), secret, now, Options{}); libErr == nil || err == nil {
			t.Fatalf("invalid fixture: library = %v, Verify = %v; both must reject", libErr, err)
		}
	}
}
