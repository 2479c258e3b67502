package profiles

import (
	"crypto/sha256"
	"net/http"
	"time"
)

// paddleModel is hookcert's MODEL of Paddle's live schedule: 60 retries over 3
// days "using exponential backoff" (developer.paddle.com respond-to-webhooks),
// intervals unpublished. Modelled as doubling from 1 min to 32 min (6 retries),
// then 54 equal retries of 4730 s, so the 60 retries end exactly at 3 days.
var paddleModel = func() []time.Duration {
	var d []time.Duration
	for i := 0; i < 6; i++ {
		d = append(d, time.Minute<<i)
	}
	rest := (72*time.Hour - sum(d)) / 54
	for i := 0; i < 54; i++ {
		d = append(d, rest)
	}
	return d
}()

type paddleProfile struct{ base }

func newPaddle() Profile {
	return paddleProfile{base{id: "paddle", data: builtinData("paddle"), facts: Facts{
		Name:               "Paddle Billing",
		ContentType:        "application/json",  // providers.yaml paddle_billing.payload.content_type
		EventIDJSONPath:    "$.event_id",        // "make your handler idempotent using event_id as a deduplication key"
		DeliveryIDJSONPath: "$.notification_id", // one per destination; hookcert derives it from (account, event ID)
		EventTypeJSONPath:  "$.event_type",
		ObjectJSONPath:     "$.data",
		// A declared object is the whole data.
		DeclaredObjectJSONPath: "$.data",
		AccountLocation:        "none in the request (separate sandbox and live accounts); from endpoint configuration",
		SignatureHeader:        "Paddle-Signature",
		SignatureScheme:        `ts=<unix>;h1=<hex HMAC-SHA256 over "{ts}:{raw body}">, one h1 per secret during rotation (secondary); key = secret UTF-8 (developer.paddle.com signature-verification)`,
		SuccessRule:            "HTTP 200 within 5 s (\"Your server must respond with HTTP 200 within five seconds\"); other 2xx codes are not documented as success",
		Timeout:                dur(5 * time.Second),
		TimeoutSource:          "https://developer.paddle.com/webhooks/about/respond-to-webhooks",
		Tolerance:              dur(5 * time.Second), // "The SDK helper methods enforce a five-second timestamp tolerance by default"
		ResignsOnRetry:         true,                 // with a 5 s tolerance a retry must be signed at send time
		MultipleSignatures:     true,                 // secondary (hookdeck skill): multiple h1 during rotation
		Retry: RetrySchedule{
			Delays:      nil, // not published: undocumented; the user chooses (or Modelled)
			MaxAttempts: 61,  // "up to 60 times" + the first attempt
			Horizon:     dur(72 * time.Hour),
			Source:      "developer.paddle.com: \"For live accounts, Paddle retries failed deliveries up to 60 times over 3 days using exponential backoff\"",
			Modelled:    paddleModel,
			ModelNote:   "MODEL, not published: doubling 1–32 min (6 retries), then 54 retries every 4730 s, ending at 3 days",
		},
		Ordered:          boolp(false),
		OrderedSource:    "\"Use occurred_at rather than arrival time to reason about event order, since webhooks can be delivered out of sequence.\"",
		ManualRedelivery: boolp(true), // "exhausted notifications can be manually replayed via the API"; window undocumented
		Sources: []string{
			"https://developer.paddle.com/webhooks/about/how-webhooks-work",
			"https://developer.paddle.com/webhooks/about/respond-to-webhooks",
			"https://developer.paddle.com/webhooks/about/signature-verification",
		},
		Notes: []string{"sandbox: 3 retries over 15 minutes (secondary: hookdeck guide)"},
	}}}
}

// appendPaddleNotificationID appends the per-destination notification ID, the
// same for every attempt of one event at one account's endpoint: "ntf_" + 26
// base-36 characters of SHA-256("paddle-notification:{account}:{id}").
func appendPaddleNotificationID(dst []byte, ev *Event) []byte {
	var tmp [128]byte
	in := append(tmp[:0], "paddle-notification:"...)
	in = append(in, ev.Account...)
	in = append(in, ':')
	in = append(in, ev.ID...)
	sum := sha256.Sum256(in)
	return appendBase36(append(dst, "ntf_"...), &sum, 26)
}

// Body renders {event_id, event_type, occurred_at, notification_id, data}, in
// the field order of the former paddleBody struct (oracle_test.go).
func (p paddleProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	n := len(ev.Object)
	if ev.Object == nil {
		n = objectSizeHint(&ev)
	}
	b := make([]byte, 0, 150+len(ev.ID)+len(ev.Type)+n)
	b = append(b, `{"event_id":`...)
	b = appendJSONString(b, ev.ID)
	b = append(b, `,"event_type":`...)
	b = appendJSONString(b, ev.Type)
	b = append(b, `,"occurred_at":`...)
	b = appendJSONTime(b, ev.Created, time.RFC3339Nano)
	// The notification ID is ntf_ + [0-9a-z]: nothing to escape.
	b = append(b, `,"notification_id":"`...)
	b = appendPaddleNotificationID(b, &ev)
	b = append(b, `","data":`...)
	if ev.Object != nil {
		b = append(b, ev.Object...)
	} else {
		b = appendObject(b, &ev)
	}
	return append(b, '}'), nil
}

// hPaddleSignature is the canonical Paddle-Signature header name.
var hPaddleSignature = http.CanonicalHeaderKey("Paddle-Signature")

// Headers signs with every secret (one h1 each).
func (p paddleProfile) Headers(_ Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, true); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	h := newHeader(2)
	h.set(hContentType, p.facts.ContentType)
	h.set(hPaddleSignature, PaddleSignatureHeader(at.SignedAt, body, secrets...))
	return h.h, nil
}

// Verdict: only HTTP 200 is documented as an acknowledgement; anything else is
// retried.
func (p paddleProfile) Verdict(status int, _ http.Header, _ []byte) AckVerdict {
	if status == http.StatusOK {
		return Acknowledged
	}
	return Retry
}
