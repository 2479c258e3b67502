package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Published or derived vectors from hookcert's providers.yaml (test_vectors of each profile).
const (
	// stripe derived v1 (published: false, computed like stripe-go ComputeSignature).
	stripeSecret  = "whsec_test_secret"
	stripeTS      = 1700000000
	stripePayload = `{"id":"evt_test_webhook","object":"event"}`
	stripeHeader  = "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990"

	// Standard Webhooks symmetric sign test (published: libraries/go/webhook_test.go).
	swSecret     = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swID         = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS         = 1614265330
	swPayload    = `{"test": 2432232314}`
	swSignature  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	swInvalidSig = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="

	// GitHub docs "Testing the webhook payload validation" (published).
	ghSecret  = "It's a Secret to Everybody"
	ghPayload = "Hello, World!"
	ghHeader  = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

	// shopify derived (published: false).
	shopifySecret  = "shpss_test_secret"
	shopifyPayload = `{"id":"evt_test_webhook","object":"event"}`
	shopifyHeader  = "m72AsY8Tri/FnNAECj0zphiQiDio/g5yAPcgD53MjOw="
)

// otherSWSecret is a valid Standard Webhooks secret that is not swSecret.
var otherSWSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-24-byte-secret!!"))

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func swHeaders(prefix, id string, ts int64, sig string) http.Header {
	return hdr(prefix+"-id", id, prefix+"-timestamp", strconv.FormatInt(ts, 10), prefix+"-signature", sig)
}

// handStripe signs like the Stripe docs describe, independently of the code under test.
func handStripe(secret string, ts int64, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "." + body))
	return hex.EncodeToString(mac.Sum(nil))
}

// handStandard signs like the Standard Webhooks spec describes.
func handStandard(secret, id string, ts int64, body string) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

type tcase struct {
	name    string
	profile string
	h       http.Header
	body    string
	secret  string
	now     time.Time
	opt     Options
	want    string // "" = valid, else the expected Reason
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.profile, c.h, []byte(c.body), c.secret, c.now, c.opt)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Verify = %v (%T), want *Error with reason %s", err, err, c.want)
			}
			if se.Reason != c.want {
				t.Fatalf("reason = %s (%v), want %s", se.Reason, err, c.want)
			}
			msg := err.Error()
			if c.secret != "" && strings.Contains(msg, c.secret) {
				t.Fatalf("error text contains the secret: %q", msg)
			}
			for _, leak := range []string{stripeHeader[len("t=1700000000,v1="):], swSignature[3:], ghHeader[7:], shopifyHeader} {
				if strings.Contains(msg, leak) {
					t.Fatalf("error text contains a signature value: %q", msg)
				}
			}
		})
	}
}

func TestPublishedVectors(t *testing.T) {
	stripeNow := time.Unix(stripeTS+10, 0)
	swNow := time.Unix(swTS+10, 0)
	anyNow := time.Unix(1800000000, 0) // GitHub and Shopify sign no timestamp
	runCases(t, []tcase{
		{"stripe/derived", "stripe", hdr("Stripe-Signature", stripeHeader), stripePayload, stripeSecret, stripeNow, Options{}, ""},
		{"stripe/body byte changed", "stripe", hdr("Stripe-Signature", stripeHeader), strings.Replace(stripePayload, "evt_test", "evt_tesT", 1), stripeSecret, stripeNow, Options{}, ReasonBadSignature},
		{"stripe/wrong secret", "stripe", hdr("Stripe-Signature", stripeHeader), stripePayload, "whsec_test_secreT", stripeNow, Options{}, ReasonBadSignature},
		{"stripe/timestamp shifted", "stripe", hdr("Stripe-Signature", strings.Replace(stripeHeader, "t=1700000000", "t=1700000001", 1)), stripePayload, stripeSecret, stripeNow, Options{}, ReasonBadSignature},
		// The key is the whole whsec_ string, not its base64 decoding.
		{"stripe/secret without prefix is a different key", "stripe", hdr("Stripe-Signature", stripeHeader), stripePayload, "test_secret", stripeNow, Options{}, ReasonBadSignature},

		{"standard-webhooks/published", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, swSecret, swNow, Options{}, ""},
		{"standard-webhooks/secret without whsec_", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, strings.TrimPrefix(swSecret, "whsec_"), swNow, Options{}, ""},
		{"standard-webhooks/invalid signature fixture", "standard-webhooks", swHeaders("webhook", swID, swTS, swInvalidSig), swPayload, swSecret, swNow, Options{}, ReasonBadSignature},
		{"standard-webhooks/body byte changed", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), `{"test": 2432232315}`, swSecret, swNow, Options{}, ReasonBadSignature},
		{"standard-webhooks/wrong secret", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, otherSWSecret, swNow, Options{}, ReasonBadSignature},
		{"standard-webhooks/timestamp shifted", "standard-webhooks", swHeaders("webhook", swID, swTS+1, swSignature), swPayload, swSecret, swNow, Options{}, ReasonBadSignature},
		{"standard-webhooks/id changed", "standard-webhooks", swHeaders("webhook", swID+"x", swTS, swSignature), swPayload, swSecret, swNow, Options{}, ReasonBadSignature},

		{"svix/published", "svix", swHeaders("svix", swID, swTS, swSignature), swPayload, swSecret, swNow, Options{}, ""},
		{"svix/invalid signature fixture", "svix", swHeaders("svix", swID, swTS, swInvalidSig), swPayload, swSecret, swNow, Options{}, ReasonBadSignature},
		{"svix/body byte changed", "svix", swHeaders("svix", swID, swTS, swSignature), `{"test": 2432232310}`, swSecret, swNow, Options{}, ReasonBadSignature},
		{"svix/wrong secret", "svix", swHeaders("svix", swID, swTS, swSignature), swPayload, otherSWSecret, swNow, Options{}, ReasonBadSignature},
		{"svix/timestamp shifted", "svix", swHeaders("svix", swID, swTS-1, swSignature), swPayload, swSecret, swNow, Options{}, ReasonBadSignature},
		// The svix profile reads svix-* headers only.
		{"svix/webhook-* headers are not svix", "svix", swHeaders("webhook", swID, swTS, swSignature), swPayload, swSecret, swNow, Options{}, ReasonMissingSignature},

		{"github/docs vector", "github", hdr("X-Hub-Signature-256", ghHeader), ghPayload, ghSecret, anyNow, Options{}, ""},
		{"github/body byte changed", "github", hdr("X-Hub-Signature-256", ghHeader), "Hello, World?", ghSecret, anyNow, Options{}, ReasonBadSignature},
		{"github/wrong secret", "github", hdr("X-Hub-Signature-256", ghHeader), ghPayload, "It's a secret to Everybody", anyNow, Options{}, ReasonBadSignature},

		{"shopify/derived", "shopify", hdr("X-Shopify-Hmac-Sha256", shopifyHeader), shopifyPayload, shopifySecret, anyNow, Options{}, ""},
		{"shopify/body byte changed", "shopify", hdr("X-Shopify-Hmac-Sha256", shopifyHeader), strings.Replace(shopifyPayload, "event", "Event", 1), shopifySecret, anyNow, Options{}, ReasonBadSignature},
		{"shopify/wrong secret", "shopify", hdr("X-Shopify-Hmac-Sha256", shopifyHeader), shopifyPayload, "shpss_test_secrets", anyNow, Options{}, ReasonBadSignature},
	})
}

func TestTolerance(t *testing.T) {
	sw := func(prefix string) http.Header { return swHeaders(prefix, swID, swTS, swSignature) }
	st := hdr("Stripe-Signature", stripeHeader)
	at := func(ts int64, d int64) time.Time { return time.Unix(ts+d, 0) }
	runCases(t, []tcase{
		{"stripe/300s old is inside", "stripe", st, stripePayload, stripeSecret, at(stripeTS, 300), Options{}, ""},
		{"stripe/301s old is outside", "stripe", st, stripePayload, stripeSecret, at(stripeTS, 301), Options{}, ReasonStaleTimestamp},
		{"stripe/a day old", "stripe", st, stripePayload, stripeSecret, at(stripeTS, 86400), Options{}, ReasonStaleTimestamp},
		// stripe-go checks only time.Since(t) > tolerance: a future t is accepted.
		{"stripe/future is accepted like stripe-go", "stripe", st, stripePayload, stripeSecret, at(stripeTS, -3600), Options{}, ""},
		{"stripe/custom tolerance 10s", "stripe", st, stripePayload, stripeSecret, at(stripeTS, 11), Options{Tolerance: 10 * time.Second}, ReasonStaleTimestamp},
		{"stripe/skip timestamp check", "stripe", st, stripePayload, stripeSecret, at(stripeTS, 86400), Options{SkipTimestampCheck: true}, ""},
		{"stripe/skip timestamp check still checks the signature", "stripe", st, stripePayload + " ", stripeSecret, at(stripeTS, 86400), Options{SkipTimestampCheck: true}, ReasonBadSignature},
		// Signature first: a forged old delivery is bad_signature, not stale_timestamp.
		{"stripe/forged and old is bad_signature", "stripe", st, stripePayload + " ", stripeSecret, at(stripeTS, 86400), Options{}, ReasonBadSignature},

		{"standard-webhooks/300s old is inside", "standard-webhooks", sw("webhook"), swPayload, swSecret, at(swTS, 300), Options{}, ""},
		{"standard-webhooks/301s old is outside", "standard-webhooks", sw("webhook"), swPayload, swSecret, at(swTS, 301), Options{}, ReasonStaleTimestamp},
		{"standard-webhooks/300s in the future is inside", "standard-webhooks", sw("webhook"), swPayload, swSecret, at(swTS, -300), Options{}, ""},
		{"standard-webhooks/301s in the future is outside", "standard-webhooks", sw("webhook"), swPayload, swSecret, at(swTS, -301), Options{}, ReasonStaleTimestamp},
		{"standard-webhooks/skip timestamp check", "standard-webhooks", sw("webhook"), swPayload, swSecret, at(swTS, 1e6), Options{SkipTimestampCheck: true}, ""},
		{"standard-webhooks/custom tolerance future", "standard-webhooks", sw("webhook"), swPayload, swSecret, at(swTS, -61), Options{Tolerance: time.Minute}, ReasonStaleTimestamp},
		{"svix/301s old is outside", "svix", sw("svix"), swPayload, swSecret, at(swTS, 301), Options{}, ReasonStaleTimestamp},
		{"svix/301s in the future is outside", "svix", sw("svix"), swPayload, swSecret, at(swTS, -301), Options{}, ReasonStaleTimestamp},
		{"svix/299s in the future is inside", "svix", sw("svix"), swPayload, swSecret, at(swTS, -299), Options{}, ""},
	})
}

func TestMultipleSignatures(t *testing.T) {
	const oldSecret, newSecret = "whsec_old_secret_before_roll", "whsec_new_secret_after_roll"
	ts := int64(1700000500)
	now := time.Unix(ts, 0)
	body := `{"id":"evt_roll","object":"event"}`
	rolled := "t=" + strconv.FormatInt(ts, 10) + ",v1=" + handStripe(oldSecret, ts, body) + ",v1=" + handStripe(newSecret, ts, body)
	swOld := "whsec_" + base64.StdEncoding.EncodeToString([]byte("old-key-old-key-old-key!"))
	swNew := "whsec_" + base64.StdEncoding.EncodeToString([]byte("new-key-new-key-new-key!"))
	swRolled := handStandard(swOld, "msg_roll", ts, body) + " " + handStandard(swNew, "msg_roll", ts, body)
	runCases(t, []tcase{
		{"stripe/second v1 matches", "stripe", hdr("Stripe-Signature", rolled), body, newSecret, now, Options{}, ""},
		{"stripe/first v1 matches", "stripe", hdr("Stripe-Signature", rolled), body, oldSecret, now, Options{}, ""},
		{"stripe/neither matches", "stripe", hdr("Stripe-Signature", rolled), body, "whsec_third", now, Options{}, ReasonBadSignature},
		{"stripe/v0 and unparsable v1 ignored", "stripe", hdr("Stripe-Signature", "t="+strconv.FormatInt(ts, 10)+",v1=zz-not-hex,v0=6ffbb59b,scheme2=x,v1="+handStripe(newSecret, ts, body)), body, newSecret, now, Options{}, ""},
		{"stripe/only v0 is malformed", "stripe", hdr("Stripe-Signature", "t="+strconv.FormatInt(ts, 10)+",v0="+handStripe(newSecret, ts, body)), body, newSecret, now, Options{}, ReasonMalformedSignature},
		{"standard-webhooks/second v1 matches", "standard-webhooks", swHeaders("webhook", "msg_roll", ts, swRolled), body, swNew, now, Options{}, ""},
		{"standard-webhooks/first v1 matches", "standard-webhooks", swHeaders("webhook", "msg_roll", ts, swRolled), body, swOld, now, Options{}, ""},
		{"standard-webhooks/v1a and junk skipped", "standard-webhooks", swHeaders("webhook", "msg_roll", ts, "v1a,AAAA junk "+handStandard(swNew, "msg_roll", ts, body)), body, swNew, now, Options{}, ""},
		{"standard-webhooks/only v1a is malformed", "standard-webhooks", swHeaders("webhook", "msg_roll", ts, "v1a,AAAA"), body, swNew, now, Options{}, ReasonMalformedSignature},
		{"svix/second v1 matches", "svix", swHeaders("svix", "msg_roll", ts, swRolled), body, swNew, now, Options{}, ""},
	})
}

func TestMalformedAndMissing(t *testing.T) {
	stripeNow := time.Unix(stripeTS, 0)
	swNow := time.Unix(swTS, 0)
	runCases(t, []tcase{
		{"stripe/no header", "stripe", hdr(), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMissingSignature},
		{"stripe/empty header", "stripe", hdr("Stripe-Signature", ""), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMissingSignature},
		{"stripe/header twice", "stripe", hdr("Stripe-Signature", stripeHeader, "Stripe-Signature", stripeHeader), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe/no t", "stripe", hdr("Stripe-Signature", "v1="+stripeHeader[len("t=1700000000,v1="):]), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe/t twice", "stripe", hdr("Stripe-Signature", "t=1700000000,"+stripeHeader), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe/t not a number", "stripe", hdr("Stripe-Signature", strings.Replace(stripeHeader, "1700000000", "17e8", 1)), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe/element without =", "stripe", hdr("Stripe-Signature", stripeHeader+",garbage"), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe/no v1", "stripe", hdr("Stripe-Signature", "t=1700000000"), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe/empty secret", "stripe", hdr("Stripe-Signature", stripeHeader), stripePayload, "", stripeNow, Options{}, ReasonInvalidSecret},

		{"standard-webhooks/no signature", "standard-webhooks", hdr("webhook-id", swID, "webhook-timestamp", "1614265330"), swPayload, swSecret, swNow, Options{}, ReasonMissingSignature},
		{"standard-webhooks/no id", "standard-webhooks", hdr("webhook-timestamp", "1614265330", "webhook-signature", swSignature), swPayload, swSecret, swNow, Options{}, ReasonMissingSignature},
		{"standard-webhooks/no timestamp", "standard-webhooks", hdr("webhook-id", swID, "webhook-signature", swSignature), swPayload, swSecret, swNow, Options{}, ReasonMissingSignature},
		{"standard-webhooks/timestamp not a number", "standard-webhooks", hdr("webhook-id", swID, "webhook-timestamp", "2021-02-25T15:02:10Z", "webhook-signature", swSignature), swPayload, swSecret, swNow, Options{}, ReasonMalformedSignature},
		{"standard-webhooks/id twice", "standard-webhooks", hdr("webhook-id", swID, "webhook-id", "msg_other", "webhook-timestamp", "1614265330", "webhook-signature", swSignature), swPayload, swSecret, swNow, Options{}, ReasonMalformedSignature},
		{"standard-webhooks/secret not base64", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, "whsec_not base64!", swNow, Options{}, ReasonInvalidSecret},
		{"standard-webhooks/empty secret", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, "whsec_", swNow, Options{}, ReasonInvalidSecret},

		{"github/no header", "github", hdr(), ghPayload, ghSecret, swNow, Options{}, ReasonMissingSignature},
		{"github/only legacy sha1 header", "github", hdr("X-Hub-Signature", "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"), ghPayload, ghSecret, swNow, Options{}, ReasonMissingSignature},
		{"github/no sha256= prefix", "github", hdr("X-Hub-Signature-256", ghHeader[7:]), ghPayload, ghSecret, swNow, Options{}, ReasonMalformedSignature},
		{"github/not hex", "github", hdr("X-Hub-Signature-256", "sha256=xyz"), ghPayload, ghSecret, swNow, Options{}, ReasonMalformedSignature},
		{"github/truncated", "github", hdr("X-Hub-Signature-256", ghHeader[:len(ghHeader)-2]), ghPayload, ghSecret, swNow, Options{}, ReasonBadSignature},
		{"github/empty secret", "github", hdr("X-Hub-Signature-256", ghHeader), ghPayload, "", swNow, Options{}, ReasonInvalidSecret},

		{"shopify/no header", "shopify", hdr(), shopifyPayload, shopifySecret, swNow, Options{}, ReasonMissingSignature},
		{"shopify/not base64", "shopify", hdr("X-Shopify-Hmac-Sha256", "not*base64"), shopifyPayload, shopifySecret, swNow, Options{}, ReasonMalformedSignature},
		{"shopify/hex instead of base64", "shopify", hdr("X-Shopify-Hmac-Sha256", "9bbd80b18f13ae2fc59cd3040a3d33a6189088a8"), shopifyPayload, shopifySecret, swNow, Options{}, ReasonBadSignature},

		{"unknown profile", "paypal", hdr(), "{}", "whsec_unknown_profile_secret", swNow, Options{}, ReasonUnknownProfile},
		{"profile names are exact", "Stripe", hdr("Stripe-Signature", stripeHeader), stripePayload, stripeSecret, stripeNow, Options{}, ReasonUnknownProfile},
	})
}

func TestHeaderNamesCaseInsensitive(t *testing.T) {
	// Header maps built by hand (not canonicalised), as after HTTP/2 lowercasing.
	cases := []tcase{
		{"stripe lower", "stripe", http.Header{"stripe-signature": {stripeHeader}}, stripePayload, stripeSecret, time.Unix(stripeTS, 0), Options{}, ""},
		{"standard-webhooks upper", "standard-webhooks", http.Header{"WEBHOOK-ID": {swID}, "Webhook-Timestamp": {"1614265330"}, "webhook-signature": {swSignature}}, swPayload, swSecret, time.Unix(swTS, 0), Options{}, ""},
		{"svix canonical", "svix", http.Header{"Svix-Id": {swID}, "Svix-Timestamp": {"1614265330"}, "Svix-Signature": {swSignature}}, swPayload, swSecret, time.Unix(swTS, 0), Options{}, ""},
		{"github lower", "github", http.Header{"x-hub-signature-256": {ghHeader}}, ghPayload, ghSecret, time.Unix(0, 0), Options{}, ""},
		{"shopify lower", "shopify", http.Header{"x-shopify-hmac-sha256": {shopifyHeader}}, shopifyPayload, shopifySecret, time.Unix(0, 0), Options{}, ""},
		// The same header under two spellings is two copies, hence ambiguous.
		{"two spellings of one header", "github", http.Header{"x-hub-signature-256": {ghHeader}, "X-Hub-Signature-256": {ghHeader}}, ghPayload, ghSecret, time.Unix(0, 0), Options{}, ReasonMalformedSignature},
	}
	runCases(t, cases)
}

func TestSupportedAndDefaults(t *testing.T) {
	want := []string{"github", "shopify", "slack", "standard-webhooks", "stripe", "svix"}
	if got := Supported(); !slices.Equal(got, want) {
		t.Fatalf("Supported() = %v, want %v", got, want)
	}
	for p, d := range map[string]time.Duration{"stripe": 300 * time.Second, "standard-webhooks": 300 * time.Second, "svix": 300 * time.Second, "slack": 300 * time.Second, "github": 0, "shopify": 0, "nope": 0} {
		if got := DefaultTolerance(p); got != d {
			t.Errorf("DefaultTolerance(%q) = %v, want %v", p, got, d)
		}
	}
}

func TestValidateSecret(t *testing.T) {
	for _, c := range []struct {
		profile, secret, want string
	}{
		{"stripe", stripeSecret, ""},
		{"stripe", "", ReasonInvalidSecret},
		{"standard-webhooks", swSecret, ""},
		{"svix", strings.TrimPrefix(swSecret, "whsec_"), ""},
		{"svix", "whsec_***", ReasonInvalidSecret},
		{"github", ghSecret, ""},
		{"shopify", "", ReasonInvalidSecret},
		{"nope", "secret_for_unknown_profile", ReasonUnknownProfile},
	} {
		err := ValidateSecret(c.profile, c.secret)
		if c.want == "" {
			if err != nil {
				t.Errorf("ValidateSecret(%s) = %v, want nil", c.profile, err)
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || se.Reason != c.want {
			t.Errorf("ValidateSecret(%s) = %v, want reason %s", c.profile, err, c.want)
		} else if c.secret != "" && strings.Contains(err.Error(), c.secret) {
			t.Errorf("ValidateSecret error leaks the secret: %v", err)
		}
	}
}

// TestZeroNowMeansWallClock pins the documented default of the now argument.
func TestZeroNowMeansWallClock(t *testing.T) {
	ts := time.Now().Unix()
	h := hdr("Stripe-Signature", "t="+strconv.FormatInt(ts, 10)+",v1="+handStripe(stripeSecret, ts, stripePayload))
	if err := Verify("stripe", h, []byte(stripePayload), stripeSecret, time.Time{}, Options{}); err != nil {
		t.Fatalf("fresh signature with zero now: %v", err)
	}
	old := ts - 3600
	h = hdr("Stripe-Signature", "t="+strconv.FormatInt(old, 10)+",v1="+handStripe(stripeSecret, old, stripePayload))
	var se *Error
	if err := Verify("stripe", h, []byte(stripePayload), stripeSecret, time.Time{}, Options{}); !errors.As(err, &se) || se.Reason != ReasonStaleTimestamp {
		t.Fatalf("hour-old signature with zero now = %v, want stale_timestamp", err)
	}
}
