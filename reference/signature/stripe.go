package signature

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// verifyStripe implements Stripe's v1 scheme as documented at
// https://docs.stripe.com/webhooks and implemented by stripe-go webhook/client.go:
// header "t=<unix>,v1=<hex>[,v1=<hex>...][,v0=<hex>]"; signed content "{t}.{raw_body}";
// key = the whole whsec_ string as bytes (not base64-decoded); any v1 may match
// (one per active secret during a roll); v0, unknown schemes and unparsable v1 values
// are ignored; timestamps older than the tolerance are rejected (stripe-go rejects only
// too-old ones, so a future t is accepted).
func verifyStripe(h http.Header, body []byte, secret string, now time.Time, opt Options) *Error {
	const name = "Stripe-Signature"
	v, err := single(h, name)
	if err != nil {
		return err
	}
	var (
		ts    int64
		haveT bool
		sigs  [][]byte
	)
	for i, pair := range strings.Split(v, ",") {
		key, val, ok := strings.Cut(pair, "=")
		// stripe-go refuses any element that is not exactly one key=value pair.
		if !ok || strings.Contains(val, "=") {
			return fail(ReasonMalformedSignature, "header %s: element %d must be key=value", name, i+1)
		}
		switch key {
		case "t":
			if haveT {
				return fail(ReasonMalformedSignature, "header %s: t= must appear once", name)
			}
			n, perr := strconv.ParseInt(val, 10, 64)
			if perr != nil {
				return fail(ReasonMalformedSignature, "header %s: t= must be integer unix seconds", name)
			}
			ts, haveT = n, true
		case "v1":
			sig, derr := hex.DecodeString(val)
			if derr != nil {
				continue // stripe-go: "Ignore invalid signatures"
			}
			sigs = append(sigs, sig)
		default:
			if !opt.AnyScheme {
				// v0 (test-mode legacy) and unknown schemes are not ours to check.
				continue
			}
			// The any-scheme defect: every element but t= is taken for a signature.
			sig, derr := hex.DecodeString(val)
			if derr != nil {
				continue // stripe-go: "Ignore invalid signatures"
			}
			sigs = append(sigs, sig)
		}
	}
	if !haveT {
		return fail(ReasonMalformedSignature, "header %s: t= timestamp required", name)
	}
	if len(sigs) == 0 {
		return fail(ReasonMalformedSignature, "header %s: no parsable v1 signature", name)
	}
	// stripe-go signs fmt.Sprintf("%d", t.Unix()), i.e. the parsed integer re-formatted.
	expected := hmacSHA256([]byte(secret), []byte(strconv.FormatInt(ts, 10)), []byte("."), body)
	matched := false
	for _, sig := range sigs {
		// No early exit: the time taken does not tell which entry matched.
		if sigEqual(expected, sig, opt) {
			matched = true
		}
	}
	if !matched {
		return fail(ReasonBadSignature, "header %s: none of %d v1 signatures matches the body", name, len(sigs))
	}
	// stripe-go checks the past only.
	return checkAge(name, time.Unix(ts, 0), now, opt, false)
}
