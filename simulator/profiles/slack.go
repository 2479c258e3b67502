package profiles

import (
	"encoding/json"
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
	return slackProfile{base{id: "slack", facts: Facts{
		Name:              "Slack Events API",
		ContentType:       "application/json", // providers.yaml slack_events.payload.content_type
		EventIDJSONPath:   "$.event_id",       // "A unique identifier for this specific event, globally unique across all workspaces."
		EventTypeJSONPath: "$.event.type",
		ObjectJSONPath:    "$.event.object",
		AccountLocation:   "$.team_id (workspace) and $.authorizations[].team_id",
		SignatureHeader:   "X-Slack-Signature",
		SignatureScheme:   `v0=<hex HMAC-SHA256 over "v0:{X-Slack-Request-Timestamp}:{raw body}">; key = signing secret UTF-8 (docs.slack.dev verifying-requests-from-slack)`,
		SuccessRule:       "HTTP 2xx within 3 s; up to 2 redirects (301/302) are followed; a non-2xx with x-slack-no-retry: 1 is not redelivered",
		MaxRedirects:      2,                    // "we'll follow up to two redirects"
		Timeout:           dur(3 * time.Second), // "respond to the event request with an HTTP 2xx within three seconds"
		TimeoutSource:     "https://api.slack.com/apis/connections/events-api",
		Tolerance:         dur(5 * time.Minute), // python-slack-sdk: abs(now - timestamp) > 60 * 5
		ResignsOnRetry:    true,                 // X-Slack-Request-Timestamp is the request time of each delivery
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

type slackAuthorization struct {
	EnterpriseID *string `json:"enterprise_id"`
	TeamID       string  `json:"team_id"`
	UserID       string  `json:"user_id"`
	IsBot        bool    `json:"is_bot"`
}

type slackInner struct {
	Type    string `json:"type"`
	EventTS string `json:"event_ts"`
	Object  object `json:"object"`
}

type slackEnvelope struct {
	TeamID         string               `json:"team_id"`
	APIAppID       string               `json:"api_app_id"`
	Event          slackInner           `json:"event"`
	Type           string               `json:"type"`
	EventID        string               `json:"event_id"`
	EventTime      int64                `json:"event_time"`
	Authorizations []slackAuthorization `json:"authorizations"`
}

// slackID renders a Slack-style ID (prefix + 10 upper-case base-36 chars)
// derived from s, for app and user IDs that must be stable per account.
func slackID(prefix, s string) string {
	n := uint64(stableNumber(s))*2654435761 + 1
	return prefix + strings.ToUpper(strconv.FormatUint(n%3656158440062976, 36)) // 36^10
}

// Body renders the event_callback envelope; team_id is the account. The legacy
// verification token is left out (signatures supersede it).
func (p slackProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	if ev.Account == "" {
		return nil, fmt.Errorf("slack: event.account: must not be empty (it is team_id)")
	}
	b, err := json.Marshal(slackEnvelope{
		TeamID:   ev.Account,
		APIAppID: slackID("A", "app"),
		Event: slackInner{
			Type:    ev.Type,
			EventTS: fmt.Sprintf("%d.%06d", ev.Created.Unix(), ev.Created.Nanosecond()/1000),
			Object:  domainObject(ev),
		},
		Type:           "event_callback",
		EventID:        ev.ID,
		EventTime:      ev.Created.Unix(),
		Authorizations: []slackAuthorization{{TeamID: ev.Account, UserID: slackID("U", "bot:"+ev.Account), IsBot: true}},
	})
	if err != nil {
		return nil, fmt.Errorf("slack: encode envelope: %w", err)
	}
	return b, nil
}

// Headers signs with the first secret; retries (N > 1) carry x-slack-retry-num
// = N-1 and x-slack-retry-reason.
func (p slackProfile) Headers(_ Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, true); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", p.facts.ContentType)
	h.Set("X-Slack-Request-Timestamp", unix(at.SignedAt))
	h.Set("X-Slack-Signature", SlackSignature(secrets[0], at.SignedAt, body))
	if at.N > 1 {
		reason := at.RetryReason
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
		h.Set("X-Slack-Retry-Num", strconv.Itoa(at.N-1))
		h.Set("X-Slack-Retry-Reason", reason)
	}
	return h, nil
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
