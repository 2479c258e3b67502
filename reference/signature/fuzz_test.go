package signature

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzVerify feeds arbitrary header values, bodies and secrets to every profile: Verify
// must never panic, must return nil or an *Error with a known reason, and must never
// echo a (long enough to be unambiguous) secret in its error text.
func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), stripeHeader, swID, "1614265330", []byte(stripePayload), stripeSecret, "X-Extra", "v")
	f.Add(uint8(1), swSignature, swID, "1614265330", []byte(swPayload), swSecret, "webhook-id", "dup")
	f.Add(uint8(2), swSignature+" v1a,xx", swID, "-9223372036854775808", []byte(swPayload), swSecret, "", "")
	f.Add(uint8(3), ghHeader, "", "", []byte(ghPayload), ghSecret, "X-Hub-Signature", "sha1=00")
	f.Add(uint8(4), shopifyHeader, "", "9223372036854775807", []byte(shopifyPayload), shopifySecret, "x-shopify-hmac-sha256", "==")
	f.Add(uint8(5), "t=,v1=,=,,", "", "", []byte{}, "", "Stripe-Signature", "t=1")
	known := map[string]bool{ReasonMissingSignature: true, ReasonMalformedSignature: true, ReasonBadSignature: true,
		ReasonStaleTimestamp: true, ReasonUnknownProfile: true, ReasonInvalidSecret: true}
	profilesList := append(Supported(), "unknown")
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, pi uint8, sig, id, ts string, body []byte, secret, extraName, extraValue string) {
		profile := profilesList[int(pi)%len(profilesList)]
		h := http.Header{}
		for _, name := range []string{"Stripe-Signature", "webhook-signature", "svix-signature", "X-Hub-Signature-256", "X-Shopify-Hmac-Sha256"} {
			h[name] = []string{sig}
		}
		for _, name := range []string{"webhook-id", "svix-id"} {
			h[name] = []string{id}
		}
		for _, name := range []string{"webhook-timestamp", "svix-timestamp"} {
			h[name] = []string{ts}
		}
		h[extraName] = append(h[extraName], extraValue)
		for _, opt := range []Options{{}, {SkipTimestampCheck: true}, {Tolerance: time.Nanosecond}} {
			err := Verify(profile, h, body, secret, now, opt)
			if err == nil {
				continue
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Verify returned %T %v, want *Error", err, err)
			}
			if !known[se.Reason] {
				t.Fatalf("unknown reason %q", se.Reason)
			}
			if len(secret) >= 16 && strings.Contains(err.Error(), secret) {
				t.Fatalf("error text contains the secret: %q", err.Error())
			}
		}
	})
}
