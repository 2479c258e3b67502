package profiles

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// githubUserAgent: real deliveries carry "GitHub-Hookshot/<build hash>"
// (providers.yaml github.other_headers, secondary: captured requests). The
// suffix is a build identifier; ours is fixed so requests stay deterministic.
const githubUserAgent = "GitHub-Hookshot/hookcert"

type githubProfile struct{ base }

func newGitHub() Profile {
	return githubProfile{base{id: "github", data: builtinData("github"), facts: Facts{
		Name:        "GitHub",
		ContentType: "application/json", // configurable per hook; JSON chosen (docs.github.com webhook content type)
		// "If you request a redelivery, the X-GitHub-Delivery header will be the same
		// as in the original delivery." → it is the event key (best-practices page).
		EventIDHeader:    "X-GitHub-Delivery",
		DeliveryIDHeader: "X-GitHub-Delivery",
		EventTypeHeader:  "X-GitHub-Event",
		ObjectJSONPath:   "$.object",
		// A declared object is the whole body (a real payload is the resource
		// with action, repository and sender: the target declares all of it).
		DeclaredObjectJSONPath: "$",
		AccountLocation:        "X-GitHub-Hook-ID and X-GitHub-Hook-Installation-Target-ID headers (hook and its repository/organization/app); hookcert derives both from the account",
		SignatureHeader:        "X-Hub-Signature-256",
		SignatureScheme:        "X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>; legacy X-Hub-Signature: sha1=<hex HMAC-SHA1>; key = the secret's UTF-8 bytes; sent only when a secret is configured (docs.github.com validating-webhook-deliveries)",
		SuccessRule:            "2XX within 10 seconds (docs.github.com best-practices-for-using-webhooks)",
		Timeout:                dur(10 * time.Second), // "respond with a 2XX response within 10 seconds"
		TimeoutSource:          "https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks",
		Tolerance:              nil, // no timestamp is signed
		ResignsOnRetry:         false,
		Retry: RetrySchedule{
			Delays:      []time.Duration{}, // "GitHub does not automatically redeliver failed deliveries."
			MaxAttempts: 1,
			Horizon:     dur(0),
			Source:      "https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries",
		},
		Ordered:                nil, // undocumented; the user chooses
		OrderedSource:          "undocumented (no ordering statement in the webhook docs read)",
		ManualRedelivery:       boolp(true),
		ManualRedeliveryWindow: dur(3 * 24 * time.Hour), // "redeliver webhook deliveries that occurred in the past 3 days" (GHES 3.16+: 7 days)
		// "Payloads are capped at 25 MB." (providers.yaml github.payload.max_size_bytes)
		MaxPayload:       25 << 20,
		MaxPayloadSource: "docs.github.com webhook-events-and-payloads: \"Payloads are capped at 25 MB. If an event generates a larger payload, GitHub will not deliver a payload for that webhook event.\"",
		Sources: []string{
			"https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
			"https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks",
			"https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks",
		},
		Notes: []string{"Verdict Retry means a failed delivery; GitHub itself never retries (MaxAttempts 1), only manual redelivery resends with the same X-GitHub-Delivery."},
	}}}
}

// stableNumber derives a positive numeric ID from s, so hook and target IDs
// are deterministic per account.
func stableNumber(s string) int64 { return stableNumber2("", s) }

// stableNumber2 is stableNumber(a+b) without building the string: FNV-1a 64
// (hash/fnv New64a) inlined over both parts.
func stableNumber2(a, b string) int64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(a); i++ {
		h ^= uint64(a[i])
		h *= prime64
	}
	for i := 0; i < len(b); i++ {
		h ^= uint64(b[i])
		h *= prime64
	}
	return int64(h%900_000_000) + 100_000_000
}

// githubSenderJSON is the constant sender object, rendered once (it was a
// githubSender{Login, ID, Type} struct: field order login, id, type).
var githubSenderJSON = `,"sender":{"login":"hookcert-simulator[bot]","id":` +
	strconv.FormatInt(stableNumber("sender"), 10) + `,"type":"Bot"}}`

// Body renders {"action", "object", "sender"}: the action is the last segment of
// the type (GitHub puts the event name in X-GitHub-Event and the action in
// $.action, providers.yaml github.other_headers). Bytes equal json.Marshal of
// the former githubBody struct (oracle_test.go).
func (p githubProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	if ev.Object != nil {
		return append([]byte(nil), ev.Object...), nil
	}
	action := ev.Type
	if i := strings.LastIndex(action, "."); i >= 0 {
		action = action[i+1:]
	}
	b := make([]byte, 0, len(`{"action":"","object":`)+len(action)+objectSizeHint(&ev)+len(githubSenderJSON))
	b = append(b, `{"action":`...)
	b = appendJSONString(b, action)
	b = append(b, `,"object":`...)
	b = appendObject(b, &ev)
	b = append(b, githubSenderJSON...)
	return b, nil
}

// Canonical forms of GitHub's header names (Header.Set canonicalises
// "X-GitHub-Delivery" to "X-Github-Delivery").
var (
	hGitHubDelivery   = http.CanonicalHeaderKey("X-GitHub-Delivery")
	hGitHubEvent      = http.CanonicalHeaderKey("X-GitHub-Event")
	hGitHubHookID     = http.CanonicalHeaderKey("X-GitHub-Hook-ID")
	hGitHubTargetType = http.CanonicalHeaderKey("X-GitHub-Hook-Installation-Target-Type")
	hGitHubTargetID   = http.CanonicalHeaderKey("X-GitHub-Hook-Installation-Target-ID")
	hHubSig256        = http.CanonicalHeaderKey("X-Hub-Signature-256")
	hHubSig1          = http.CanonicalHeaderKey("X-Hub-Signature")
)

// Headers: X-GitHub-Delivery is the event ID (stable across redeliveries); the
// signature uses the first secret only (no overlap mechanism is documented) and
// is omitted when no secret is configured.
func (p githubProfile) Headers(ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, false); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, false); err != nil {
		return nil, err
	}
	if ev.ID == "" {
		return nil, fmt.Errorf("github: event.id: must not be empty (it is X-GitHub-Delivery)")
	}
	h := newHeader(9)
	h.set(hContentType, p.facts.ContentType)
	h.set(hUserAgent, githubUserAgent)
	h.set(hGitHubDelivery, ev.ID)
	h.set(hGitHubEvent, githubEventName(ev.Type))
	h.set(hGitHubHookID, strconv.FormatInt(stableNumber2("hook:", ev.Account), 10))
	h.set(hGitHubTargetType, "repository")
	h.set(hGitHubTargetID, strconv.FormatInt(stableNumber2("target:", ev.Account), 10))
	if len(secrets) > 0 {
		h.set(hHubSig256, GitHubSignature256(secrets[0], body))
		h.set(hHubSig1, GitHubSignature1(secrets[0], body))
	}
	return h.h, nil
}

// githubEventName is the X-GitHub-Event value of an event type: the type up to
// its last dot ("issues.closed" → "issues"), since GitHub names the event in the
// header and the action in the body's $.action. A type without a dot is the
// event name itself ("ping", "push").
func githubEventName(typ string) string {
	if i := strings.LastIndex(typ, "."); i > 0 {
		return typ[:i]
	}
	return typ
}

// Verdict: 2XX acknowledges; anything else is a failed delivery (which GitHub
// does not retry on its own: see Facts().Retry).
func (p githubProfile) Verdict(status int, _ http.Header, _ []byte) AckVerdict {
	return verdict2xx(status)
}
