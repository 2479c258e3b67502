package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Profile names accepted by Verify.
const (
	ProfileStripe           = "stripe"
	ProfileStandardWebhooks = "standard-webhooks"
	ProfileSvix             = "svix"
	ProfileGitHub           = "github"
	ProfileShopify          = "shopify"
	ProfileSlack            = "slack"
)

// Reasons carried by *Error. The first four are the sender's fault and deserve a 4xx;
// ReasonUnknownProfile and ReasonInvalidSecret are the receiver's own configuration
// errors (catch them at startup with ValidateSecret).
const (
	ReasonMissingSignature   = "missing_signature"
	ReasonMalformedSignature = "malformed_signature"
	ReasonBadSignature       = "bad_signature"
	ReasonStaleTimestamp     = "stale_timestamp"
	ReasonUnknownProfile     = "unknown_profile"
	ReasonInvalidSecret      = "invalid_secret"
)

// Options tunes Verify. The zero value applies each profile's documented rules.
type Options struct {
	// Tolerance is the accepted distance between the signed timestamp and now.
	// Zero or negative means the profile's documented default (see DefaultTolerance):
	// Stripe warns that a tolerance of 0 disables the recency check, so 0 never does.
	Tolerance time.Duration
	// SkipTimestampCheck disables the recency check. It exists only for the reference
	// receiver's `skip-timestamp-check` defect; a correct receiver never sets it.
	SkipTimestampCheck bool
	// The switches below exist only for the reference receiver's defects of the
	// same names; a correct receiver never sets them.
	//
	// AcceptFuture checks the tolerance in the past only (future-timestamps).
	AcceptFuture bool
	// ComparePrefix compares a signature shorter than the expected one on its
	// own length only (signature-prefix-compare).
	ComparePrefix bool
	// AnyScheme takes a signature whatever scheme or version it is written
	// under: "v0=" for "v1=", "sha1=" for "sha256=" (signature-any-scheme).
	AnyScheme bool
}

// Error is the failure Verify returns. Reason is one of the Reason* constants; Detail
// names the header and the rule that failed. Neither ever contains the secret, the
// expected signature or a header value supplied by the sender.
type Error struct {
	Reason string
	Detail string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Detail == "" {
		return "signature: " + e.Reason
	}
	return "signature: " + e.Reason + ": " + e.Detail
}

func fail(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// verifyFunc checks one profile's signature with opt (its Tolerance resolved).
// It returns nil or an *Error.
type verifyFunc func(h http.Header, body []byte, secret string, now time.Time, opt Options) *Error

type profile struct {
	// tolerance is the documented default; 0 means the scheme signs no timestamp.
	tolerance time.Duration
	// checkSecret validates the configured secret without revealing it.
	checkSecret func(secret string) *Error
	verify      verifyFunc
}

var profiles = map[string]profile{
	// Stripe: "Our libraries have a default tolerance of 5 minutes" (https://docs.stripe.com/webhooks);
	// stripe-go webhook.DefaultTolerance = 300 * time.Second.
	ProfileStripe: {tolerance: 300 * time.Second, checkSecret: checkRawSecret, verify: verifyStripe},
	// Standard Webhooks Go library: `tolerance = 5 * time.Minute`, both directions
	// (https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook.go).
	ProfileStandardWebhooks: {tolerance: 300 * time.Second, checkSecret: checkStandardSecret, verify: standardVerifier(
		"webhook-id", "webhook-timestamp", "webhook-signature")},
	// Svix: "automatically reject webhooks with a timestamp that are more than five minutes
	// away (past or future)" (https://docs.svix.com/receiving/verifying-payloads/how-manual).
	ProfileSvix: {tolerance: 300 * time.Second, checkSecret: checkStandardSecret, verify: standardVerifier(
		"svix-id", "svix-timestamp", "svix-signature")},
	// GitHub and Shopify sign no timestamp: tolerance 0, replay protection is the event key.
	ProfileGitHub:  {checkSecret: checkRawSecret, verify: verifyGitHub},
	ProfileShopify: {checkSecret: checkRawSecret, verify: verifyShopify},
	// Slack: "The request timestamp is more than five minutes from local time"
	// (python-slack-sdk: abs(now - timestamp) > 60 * 5), both directions.
	ProfileSlack: {tolerance: 300 * time.Second, checkSecret: checkRawSecret, verify: verifySlack},
}

// Verify checks the signature of one delivery: profile is one of Supported(), h the
// request headers (names matched case-insensitively), body the raw request body
// exactly as received, secret the endpoint's signing secret as the provider issues it,
// now the receiver's clock (the zero time means time.Now()). It returns nil or an *Error.
func Verify(profile string, h http.Header, body []byte, secret string, now time.Time, opt Options) error {
	p, ok := profiles[profile]
	if !ok {
		return fail(ReasonUnknownProfile, "profile %q is not one of %s", profile, strings.Join(Supported(), ", "))
	}
	if err := p.checkSecret(secret); err != nil {
		return err
	}
	if now.IsZero() {
		now = time.Now()
	}
	if opt.Tolerance <= 0 {
		opt.Tolerance = p.tolerance
	}
	if err := p.verify(h, body, secret, now, opt); err != nil {
		return err
	}
	return nil
}

// ValidateSecret reports whether secret can be used to verify deliveries of profile, so
// a receiver can refuse a bad configuration at startup instead of rejecting every
// delivery. The error names the rule, never the secret.
func ValidateSecret(profile, secret string) error {
	p, ok := profiles[profile]
	if !ok {
		return fail(ReasonUnknownProfile, "profile %q is not one of %s", profile, strings.Join(Supported(), ", "))
	}
	if err := p.checkSecret(secret); err != nil {
		return err
	}
	return nil
}

// Supported lists the profiles Verify knows, sorted.
func Supported() []string {
	out := make([]string, 0, len(profiles))
	for name := range profiles {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// DefaultTolerance returns the profile's documented tolerance (0 for schemes without a
// signed timestamp, and for unknown profiles).
func DefaultTolerance(profile string) time.Duration {
	return profiles[profile].tolerance
}

// checkRawSecret accepts any non-empty secret: an empty HMAC key would let anyone
// forge a signature, so it is a configuration error, not "no signing".
func checkRawSecret(secret string) *Error {
	if secret == "" {
		return fail(ReasonInvalidSecret, "secret: must not be empty")
	}
	return nil
}

// headerValues returns every value of the header called name, matching names
// case-insensitively even in a header map built by hand (HTTP/2 lowercases names;
// Shopify: "Treat header names as case-insensitive in your code").
func headerValues(h http.Header, name string) []string {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			out = append(out, vs...)
		}
	}
	return out
}

// single returns the one value of a required header. A repeated header is refused:
// which copy a proxy or framework would pick is undefined, so neither is trusted.
func single(h http.Header, name string) (string, *Error) {
	vs := headerValues(h, name)
	switch {
	case len(vs) == 0 || (len(vs) == 1 && strings.TrimSpace(vs[0]) == ""):
		return "", fail(ReasonMissingSignature, "header %s: required", name)
	case len(vs) > 1:
		return "", fail(ReasonMalformedSignature, "header %s: must appear once, appears %d times", name, len(vs))
	}
	return strings.TrimSpace(vs[0]), nil
}

// sigEqual compares a signature as received with the expected one, in
// constant time. opt.ComparePrefix (a defect) compares a shorter one on its
// own length only.
func sigEqual(expected, got []byte, opt Options) bool {
	if opt.ComparePrefix && len(got) > 0 && len(got) < len(expected) {
		return hmac.Equal(expected[:len(got)], got)
	}
	return hmac.Equal(expected, got)
}

// checkAge holds a signed time to the tolerance: in the past always, in the
// future too where the scheme's libraries do (both) and opt.AcceptFuture (a
// defect) does not say otherwise.
func checkAge(header string, signed, now time.Time, opt Options, both bool) *Error {
	if opt.SkipTimestampCheck {
		return nil
	}
	if age := now.Sub(signed); age > opt.Tolerance {
		return fail(ReasonStaleTimestamp, "header %s: signed %ds ago, tolerance %ds", header, int64(age/time.Second), int64(opt.Tolerance/time.Second))
	}
	if both && !opt.AcceptFuture && signed.After(now.Add(opt.Tolerance)) {
		return fail(ReasonStaleTimestamp, "header %s: signed %ds in the future, tolerance %ds", header, int64(signed.Sub(now)/time.Second), int64(opt.Tolerance/time.Second))
	}
	return nil
}

// hmacSHA256 returns HMAC-SHA256(key, parts[0] || parts[1] || ...).
func hmacSHA256(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}
