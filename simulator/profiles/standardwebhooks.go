package profiles

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// stdProfile serves Standard Webhooks and Svix: the same scheme and envelope
// with webhook- or svix- header names.
type stdProfile struct {
	base
	prefix string    // "webhook-" or "svix-"
	hdr    [3]string // canonical id, timestamp and signature header names
	svix   bool
}

var stdSources = []string{
	"https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md",
	"https://github.com/standard-webhooks/standard-webhooks/tree/main/libraries",
}

func newStandardWebhooks() Profile {
	return stdProfile{prefix: "webhook-", hdr: stdHeaderKeys("webhook-"), base: base{id: "standard-webhooks", data: builtinData("standard-webhooks"), facts: Facts{
		Name:              "Standard Webhooks v1",
		ContentType:       "application/json", // "JSON recommended" (spec)
		EventIDHeader:     "webhook-id",       // "remains the same no matter how many times a webhook that has failed is retried"
		EventTypeJSONPath: "$.type",
		ObjectJSONPath:    "$.data",
		// A declared object is the whole data.
		DeclaredObjectJSONPath: "$.data",
		AccountLocation:        "none: the spec defines no account field; secrets are per endpoint",
		SignatureHeader:        "webhook-signature",
		SignatureScheme:        `space-delimited "v1,<base64>" list, one per secret; HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{raw body}"; key = base64-decode(secret without whsec_); a whsk_<base64 ed25519 seed> secret gives a "v1a,<base64 ed25519>" entry instead`,
		SuccessRule:            "2xx; 3xx failure; 410 Gone: stop sending (disable the endpoint); 429/502/503/504: throttle, honour Retry-After",
		Timeout:                dur(15 * time.Second), // "somewhere between 15 and 30s"; the lower bound
		TimeoutSource:          "spec: \"A recommended request timeout value for webhooks is somewhere between 15 and 30s.\" (15 s used)",
		Tolerance:              dur(5 * time.Minute), // Go library tolerance = 5 * time.Minute, both directions
		ResignsOnRetry:         true,                 // "Every time an attempt is retried the timestamp of the attempt is updated"
		// "The signature header is a space delimited list of signatures ... to support zero downtime secret rotation"
		MultipleSignatures: true,
		HonoursRetryAfter:  true,
		Retry: RetrySchedule{
			Delays:      seconds(5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400),
			MaxAttempts: 10,
			Horizon:     dur(272105 * time.Second), // 75:35:05 per the spec table
			Source:      "spec EXAMPLE schedule (\"retry schedule spanning multiple days, with an exponential backoff ... add some level of random jitter\"); senders may differ",
		},
		Ordered:          nil, // undocumented; the user chooses
		OrderedSource:    "undocumented; the spec says nothing about ordering",
		ManualRedelivery: nil, // undocumented; the user chooses ("recommended" to senders only)
		Sources:          stdSources,
		Notes: []string{
			"410 Gone: \"Sender should disable the webhook endpoint, and stop sending it messages.\"",
			"manual replay is recommended to senders (\"immensely important to give consumers a way to manually replay\"), not guaranteed",
		},
	}}}
}

func newSvix() Profile {
	return stdProfile{prefix: "svix-", hdr: stdHeaderKeys("svix-"), svix: true, base: base{id: "svix", data: builtinData("svix"), facts: Facts{
		Name:              "Svix",
		ContentType:       "application/json", // "application/json (most common)"
		EventIDHeader:     "svix-id",          // "will be the same when the same webhook is being resent"
		EventTypeJSONPath: "$.type",
		ObjectJSONPath:    "$.data",
		// A declared object is the whole data.
		DeclaredObjectJSONPath: "$.data",
		AccountLocation:        "none: Svix applications and endpoints scope delivery; nothing account-like beyond the payload",
		SignatureHeader:        "svix-signature",
		SignatureScheme:        `Standard Webhooks v1 with svix- headers: "v1,<base64>" list, one per secret; HMAC-SHA256 over "{svix-id}.{svix-timestamp}.{raw body}"; key = base64-decode(secret without whsec_)`,
		SuccessRule:            "2xx (200-299) within 15 s; 3xx failure; response header webhook-delivery: abort-message stops retries (docs.svix.com/retries)",
		Timeout:                dur(15 * time.Second), // "within a reasonable time-frame (15s with Svix)"
		TimeoutSource:          "https://docs.svix.com/retries",
		Tolerance:              dur(5 * time.Minute), // "more than five minutes away (past or future)"
		ResignsOnRetry:         true,                 // svix-timestamp and svix-signature change per attempt
		MultipleSignatures:     true,
		Retry: RetrySchedule{
			// "Immediately, 5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours, 10 hours"
			Delays:      seconds(5, 300, 1800, 7200, 18000, 36000, 36000),
			MaxAttempts: 8,
			Horizon:     dur(99305 * time.Second),
			Source:      "https://docs.svix.com/retries",
		},
		Ordered:          boolp(false),
		OrderedSource:    "docs.svix.com FIFO endpoints: \"regular webhooks ... are delivered independently and order is on a best effort basis\" (FIFO endpoints are an option)",
		ManualRedelivery: boolp(true), // resend / recover (secondary); payloads retained 90 days
		Sources:          append([]string{"https://docs.svix.com/retries", "https://docs.svix.com/receiving/verifying-payloads/how-manual", "https://docs.svix.com/retention/"}, stdSources...),
		Notes: []string{
			"white-label: Professional/Enterprise tiers can use webhook- headers instead of svix- (use the standard-webhooks profile)",
			"manual resend window undocumented; payloads are retained 90 days (docs.svix.com/retention)",
		},
	}}}
}

// Body renders {type, timestamp (event time, RFC 3339), data} (spec payload),
// in the field order of the former stdBody struct (oracle_test.go).
func (p stdProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	n := len(ev.Object)
	if ev.Object == nil {
		n = objectSizeHint(&ev)
	}
	b := make([]byte, 0, len(`{"type":"","timestamp":"","data":}`)+len(ev.Type)+len(time.RFC3339Nano)+8+n)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, ev.Type)
	b = append(b, `,"timestamp":`...)
	b = appendJSONTime(b, ev.Created, time.RFC3339Nano)
	b = append(b, `,"data":`...)
	if ev.Object != nil {
		b = append(b, ev.Object...)
	} else {
		b = appendObject(b, &ev)
	}
	return append(b, '}'), nil
}

// stdHeaderKeys are the canonical id, timestamp and signature header names
// for a prefix ("webhook-" → "Webhook-Id", …).
func stdHeaderKeys(prefix string) [3]string {
	return [3]string{
		http.CanonicalHeaderKey(prefix + "id"),
		http.CanonicalHeaderKey(prefix + "timestamp"),
		http.CanonicalHeaderKey(prefix + "signature"),
	}
}

// Headers signs with every secret ("v1,<sig>" entries joined by spaces).
func (p stdProfile) Headers(ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, true); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	// The spec asks that the id not contain "." since it is a field separator.
	if ev.ID == "" || strings.Contains(ev.ID, ".") {
		return nil, fmt.Errorf("%s: event.id: must be non-empty and contain no '.' (it is signed as {id}.{ts}.{body})", p.id)
	}
	var sigs strings.Builder
	sigs.Grow(len(secrets) * (len("v1, ") + b64SHA256Len))
	for i, s := range secrets {
		if i > 0 {
			sigs.WriteByte(' ')
		}
		if err := writeStandardWebhooksSignature(&sigs, s, ev.ID, at.SignedAt, body); err != nil {
			return nil, fmt.Errorf("%s: secrets[%d]: %w", p.id, i, err)
		}
	}
	h := newHeader(4)
	h.set(hContentType, p.facts.ContentType)
	h.set(p.hdr[0], ev.ID)
	h.set(p.hdr[1], unix(at.SignedAt))
	h.set(p.hdr[2], sigs.String())
	return h.h, nil
}

// Verdict: 2xx acknowledges. Standard Webhooks: 410 Gone stops. Svix: a response
// header webhook-delivery: abort-message stops. Anything else is retried (use
// RetryAfter for 429/503 when Facts().HonoursRetryAfter).
func (p stdProfile) Verdict(status int, header http.Header, _ []byte) AckVerdict {
	if is2xx(status) {
		return Acknowledged
	}
	if p.svix {
		// "Retries will be stopped if the receiving end includes the header
		// webhook-delivery: abort-message in its response" (docs.svix.com/retries)
		if strings.EqualFold(strings.TrimSpace(header.Get("webhook-delivery")), "abort-message") {
			return Stop
		}
		return Retry
	}
	if status == http.StatusGone {
		return Stop
	}
	return Retry
}
