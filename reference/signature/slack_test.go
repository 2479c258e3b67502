package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The Slack signing-secret doc example (providers.yaml slack_events.test_vectors,
// published: python-slack-sdk test_signature_verifier.py).
const (
	slackSecret  = "8f742231b10e8888abcd99yyyzzz85a5"
	slackTS      = 1531420618
	slackBody    = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackHeader  = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	slackTSValue = "1531420618"
)

func slackHeaders(ts, sig string) http.Header {
	return hdr("X-Slack-Request-Timestamp", ts, "X-Slack-Signature", sig)
}

// handSlack signs like the Slack docs describe, independently of the code under test.
func handSlack(secret string, ts int64, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + strconv.FormatInt(ts, 10) + ":" + body))
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func TestSlack(t *testing.T) {
	now := time.Unix(slackTS+10, 0)
	if handSlack(slackSecret, slackTS, slackBody) != slackHeader {
		t.Fatal("the hand signer does not reproduce the published vector")
	}
	runCases(t, []tcase{
		{"published vector", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret, now, Options{}, ""},
		{"body changed", "slack", slackHeaders(slackTSValue, slackHeader), slackBody + "x", slackSecret, now, Options{}, ReasonBadSignature},
		{"timestamp changed", "slack", slackHeaders("1531420619", slackHeader), slackBody, slackSecret, now, Options{}, ReasonBadSignature},
		{"wrong secret", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret + "x", now, Options{}, ReasonBadSignature},
		{"v1= is not v0=", "slack", slackHeaders(slackTSValue, "v1="+slackHeader[3:]), slackBody, slackSecret, now, Options{}, ReasonMalformedSignature},
		{"truncated", "slack", slackHeaders(slackTSValue, slackHeader[:35]), slackBody, slackSecret, now, Options{}, ReasonBadSignature},
		{"no signature", "slack", hdr("X-Slack-Request-Timestamp", slackTSValue), slackBody, slackSecret, now, Options{}, ReasonMissingSignature},
		{"no timestamp", "slack", hdr("X-Slack-Signature", slackHeader), slackBody, slackSecret, now, Options{}, ReasonMissingSignature},
		{"timestamp not a number", "slack", slackHeaders("soon", slackHeader), slackBody, slackSecret, now, Options{}, ReasonMalformedSignature},
		{"301 s old", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret, time.Unix(slackTS+301, 0), Options{}, ReasonStaleTimestamp},
		{"299 s ahead is inside", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret, time.Unix(slackTS-299, 0), Options{}, ""},
		{"301 s ahead", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret, time.Unix(slackTS-301, 0), Options{}, ReasonStaleTimestamp},
	})
}

// The defects' switches each let through exactly the mistake they are named
// for, and nothing else.
func TestDefectSwitches(t *testing.T) {
	stripeNow, swNow, slackNow := time.Unix(stripeTS+10, 0), time.Unix(swTS+10, 0), time.Unix(slackTS+10, 0)
	stripeSig := stripeHeader[len("t=1700000000,v1="):]
	swSig := swSignature[3:]
	prefix, anyScheme, future := Options{ComparePrefix: true}, Options{AnyScheme: true}, Options{AcceptFuture: true}
	runCases(t, []tcase{
		// A signature cut to half its length.
		{"stripe half, clean", "stripe", hdr("Stripe-Signature", "t=1700000000,v1="+stripeSig[:32]), stripePayload, stripeSecret, stripeNow, Options{}, ReasonBadSignature},
		{"stripe half, prefix compared", "stripe", hdr("Stripe-Signature", "t=1700000000,v1="+stripeSig[:32]), stripePayload, stripeSecret, stripeNow, prefix, ""},
		{"standard half, prefix compared", "standard-webhooks", swHeaders("webhook", swID, swTS, "v1,"+swSig[:22]), swPayload, swSecret, swNow, prefix, ""},
		{"github half, prefix compared", "github", hdr("X-Hub-Signature-256", ghHeader[:7+32]), ghPayload, ghSecret, time.Unix(0, 0), prefix, ""},
		{"slack half, prefix compared", "slack", slackHeaders(slackTSValue, slackHeader[:3+32]), slackBody, slackSecret, slackNow, prefix, ""},
		{"prefix compared, but an empty one is no signature", "slack", slackHeaders(slackTSValue, "v0="), slackBody, slackSecret, slackNow, prefix, ReasonMalformedSignature},
		{"prefix compared, a wrong half still refused", "stripe", hdr("Stripe-Signature", "t=1700000000,v1="+handStripe("whsec_x", stripeTS, stripePayload)[:32]), stripePayload, stripeSecret, stripeNow, prefix, ReasonBadSignature},
		// A signature under another scheme's prefix.
		{"stripe v0=, clean", "stripe", hdr("Stripe-Signature", "t=1700000000,v0="+stripeSig), stripePayload, stripeSecret, stripeNow, Options{}, ReasonMalformedSignature},
		{"stripe v0=, any scheme", "stripe", hdr("Stripe-Signature", "t=1700000000,v0="+stripeSig), stripePayload, stripeSecret, stripeNow, anyScheme, ""},
		{"standard v0,, any scheme", "standard-webhooks", swHeaders("webhook", swID, swTS, "v0,"+swSig), swPayload, swSecret, swNow, anyScheme, ""},
		{"github sha257=, any scheme", "github", hdr("X-Hub-Signature-256", "sha257="+ghHeader[7:]), ghPayload, ghSecret, time.Unix(0, 0), anyScheme, ""},
		{"slack v1=, any scheme", "slack", slackHeaders(slackTSValue, "v1="+slackHeader[3:]), slackBody, slackSecret, slackNow, anyScheme, ""},
		{"any scheme, a wrong signature still refused", "slack", slackHeaders(slackTSValue, "v1="+handSlack("x", slackTS, slackBody)[3:]), slackBody, slackSecret, slackNow, anyScheme, ReasonBadSignature},
		// A timestamp beyond the tolerance in the future.
		{"standard 1 h ahead, clean", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, swSecret, time.Unix(swTS-3600, 0), Options{}, ReasonStaleTimestamp},
		{"standard 1 h ahead, future accepted", "standard-webhooks", swHeaders("webhook", swID, swTS, swSignature), swPayload, swSecret, time.Unix(swTS-3600, 0), future, ""},
		{"slack 1 h ahead, future accepted", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret, time.Unix(slackTS-3600, 0), future, ""},
		{"future accepted, the past still refused", "slack", slackHeaders(slackTSValue, slackHeader), slackBody, slackSecret, time.Unix(slackTS+3600, 0), future, ReasonStaleTimestamp},
	})
}
