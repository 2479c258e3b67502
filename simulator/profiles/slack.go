package profiles

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// slackRetryReasons are the documented x-slack-retry-reason values
// (providers.yaml slack_events.delivery_id.retry_headers).
var slackRetryReasons = []string{"http_timeout", "too_many_redirects", "connection_failed", "ssl_error", "http_error", "unknown_error"}

type slackProfile struct{ base }

func newSlack() Profile {
	return slackProfile{base{id: "slack", data: builtinData("slack"), facts: Facts{
		Name:              "Slack Events API",
		ContentType:       "application/json", // providers.yaml slack_events.payload.content_type
		EventIDJSONPath:   "$.event_id",       // "A unique identifier for this specific event, globally unique across all workspaces."
		EventTypeJSONPath: "$.event.type",
		ObjectJSONPath:    "$.event.object",
		// A declared object is the whole inner event (its type included).
		DeclaredObjectJSONPath: "$.event",
		AccountLocation:        "$.team_id (workspace) and $.authorizations[].team_id",
		SignatureHeader:        "X-Slack-Signature",
		SignatureScheme:        `v0=<hex HMAC-SHA256 over "v0:{X-Slack-Request-Timestamp}:{raw body}">; key = signing secret UTF-8 (docs.slack.dev verifying-requests-from-slack)`,
		SuccessRule:            "HTTP 2xx within 3 s; up to 2 redirects (301/302) are followed; a non-2xx with x-slack-no-retry: 1 is not redelivered",
		MaxRedirects:           2,                    // "we'll follow up to two redirects"
		Timeout:                dur(3 * time.Second), // "respond to the event request with an HTTP 2xx within three seconds"
		TimeoutSource:          "https://api.slack.com/apis/connections/events-api",
		Tolerance:              dur(5 * time.Minute), // python-slack-sdk: abs(now - timestamp) > 60 * 5
		ResignsOnRetry:         true,                 // X-Slack-Request-Timestamp is the request time of each delivery
		Retry: RetrySchedule{
			// "The first retry will be sent nearly immediately. The second retry will be
			// attempted after 1 minute. The third and final retry will be sent after 5 minutes."
			Delays:      seconds(0, 60, 300),
			MaxAttempts: 4,
			Horizon:     dur(360 * time.Second), // sum of the documented delays
			Source:      "https://api.slack.com/apis/connections/events-api",
		},
		Ordered:          nil, // undocumented; the user chooses
		OrderedSource:    "undocumented (no ordering statement in the Events API page)",
		ManualRedelivery: boolp(false), // none documented
		Sources: []string{
			"https://api.slack.com/apis/connections/events-api",
			"https://docs.slack.dev/authentication/verifying-requests-from-slack",
		},
		Notes: []string{
			"retries carry x-slack-retry-num (1..3) and x-slack-retry-reason",
			"http_timeout retries are sent after 3 s even while the first request is in flight (secondary, classmethod.jp)",
		},
	}}}
}

// slackID renders a Slack-style ID (prefix + 10 upper-case base-36 chars)
// derived from s, for app and user IDs that must be stable per account.
func slackID(prefix, s string) string {
	return string(appendSlackID(nil, prefix, "", s))
}

// appendSlackID appends slackID(prefix, a+b) without building a+b.
func appendSlackID(dst []byte, prefix, a, b string) []byte {
	n := uint64(stableNumber2(a, b))*2654435761 + 1
	dst = append(dst, prefix...)
	start := len(dst)
	dst = strconv.AppendUint(dst, n%3656158440062976, 36) // 36^10
	for i := start; i < len(dst); i++ {
		if c := dst[i]; c >= 'a' && c <= 'z' {
			dst[i] = c - 'a' + 'A'
		}
	}
	return dst
}

// slackAppID is the constant api_app_id, rendered once.
var slackAppID = slackID("A", "app")

// Body renders the event_callback envelope; team_id is the account. The legacy
// verification token is left out (signatures supersede it). Field order and
// escaping are json.Marshal's for the former slackEnvelope struct
// (oracle_test.go): team_id, api_app_id, event{type, event_ts, object}, type,
// event_id, event_time, authorizations[{enterprise_id, team_id, user_id, is_bot}].
func (p slackProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	if ev.Account == "" {
		return nil, fmt.Errorf("slack: event.account: must not be empty (it is team_id)")
	}
	sec := ev.Created.Unix()
	n := len(ev.Object)
	if ev.Object == nil {
		n = objectSizeHint(&ev)
	}
	b := make([]byte, 0, 256+2*len(ev.Account)+len(ev.Type)+len(ev.ID)+n)
	b = append(b, `{"team_id":`...)
	b = appendJSONString(b, ev.Account)
	b = append(b, `,"api_app_id":`...)
	b = appendJSONString(b, slackAppID)
	if ev.Object != nil {
		b = append(b, `,"event":`...)
		b = append(b, ev.Object...)
		return slackTail(b, &ev, sec), nil
	}
	b = append(b, `,"event":{"type":`...)
	b = appendJSONString(b, ev.Type)
	// event_ts is "%d.%06d" of the Unix seconds and microseconds.
	b = append(b, `,"event_ts":"`...)
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, '.')
	us := ev.Created.Nanosecond() / 1000
	for d := 100000; d > 0; d /= 10 {
		b = append(b, byte('0'+us/d%10))
	}
	b = append(b, `","object":`...)
	b = appendObject(b, &ev)
	b = append(b, '}')
	return slackTail(b, &ev, sec), nil
}

// slackTail appends what follows the inner event: type, event_id, event_time
// and authorizations, closing the envelope.
func slackTail(b []byte, ev *Event, sec int64) []byte {
	b = append(b, `,"type":"event_callback","event_id":`...)
	b = appendJSONString(b, ev.ID)
	b = append(b, `,"event_time":`...)
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, `,"authorizations":[{"enterprise_id":null,"team_id":`...)
	b = appendJSONString(b, ev.Account)
	// The user ID is [0-9A-Z] after "U": nothing to escape.
	b = append(b, `,"user_id":"`...)
	b = appendSlackID(b, "U", "bot:", ev.Account)
	return append(b, `","is_bot":true}]}`...)
}

// Canonical forms of Slack's header names.
var (
	hSlackTimestamp   = http.CanonicalHeaderKey("X-Slack-Request-Timestamp")
	hSlackSignature   = http.CanonicalHeaderKey("X-Slack-Signature")
	hSlackRetryNum    = http.CanonicalHeaderKey("X-Slack-Retry-Num")
	hSlackRetryReason = http.CanonicalHeaderKey("X-Slack-Retry-Reason")
)

// Headers signs with the first secret; retries (N > 1) carry x-slack-retry-num
// = N-1 and x-slack-retry-reason.
func (p slackProfile) Headers(_ Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, true); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	reason := ""
	if at.N > 1 {
		reason = at.RetryReason
		if reason == "" {
			reason = "unknown_error"
		}
		valid := false
		for _, r := range slackRetryReasons {
			valid = valid || r == reason
		}
		if !valid {
			return nil, fmt.Errorf("slack: attempt.retry_reason: %q is not one of %s", reason, strings.Join(slackRetryReasons, ", "))
		}
	}
	h := newHeader(5)
	h.set(hContentType, p.facts.ContentType)
	h.set(hSlackTimestamp, unix(at.SignedAt))
	h.set(hSlackSignature, SlackSignature(secrets[0], at.SignedAt, body))
	if at.N > 1 {
		h.set(hSlackRetryNum, strconv.Itoa(at.N-1))
		h.set(hSlackRetryReason, reason)
	}
	return h.h, nil
}

// Verdict: 2xx acknowledges; a non-2xx with x-slack-no-retry: 1 stops ("you'd
// rather this specific event not be re-delivered"); anything else is retried. A
// 3xx reaching Verdict means the engine did not (or could no longer) follow it.
func (p slackProfile) Verdict(status int, header http.Header, _ []byte) AckVerdict {
	if is2xx(status) {
		return Acknowledged
	}
	if strings.TrimSpace(header.Get("X-Slack-No-Retry")) == "1" {
		return Stop
	}
	return Retry
}

// Slack verifies a Request URL with a url_verification event before it
// delivers (contracts/slack.yaml): the handshake comes from the contract.

// HandshakeFacts is the url_verification contract.
func (p slackProfile) HandshakeFacts() HandshakeFacts {
	return handshakeMethods{p.data}.HandshakeFacts()
}

// HandshakeRequest builds a url_verification request, signed like an event.
func (p slackProfile) HandshakeRequest(in HandshakeInput, bad string) (HandshakeHTTP, error) {
	return handshakeMethods{p.data}.HandshakeRequest(in, bad)
}

// HandshakeAnswer accepts the challenge as plain text, JSON or a form.
func (p slackProfile) HandshakeAnswer(in HandshakeInput, status int, header http.Header, body []byte) error {
	return handshakeMethods{p.data}.HandshakeAnswer(in, status, header, body)
}
