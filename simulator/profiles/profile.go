package profiles

import (
	"encoding/json"
	"net/http"
	"time"
)

// Event is one logical provider event in hookcert's conformance domain. A profile
// renders it into that provider's envelope; the receiver maps it onto its own domain.
type Event struct {
	// Source names the provider (and mode) the event comes from, e.g. "stripe".
	// Account is the account scope the receiver derives from its endpoint
	// configuration; it is not trusted from the body.
	Source  string `json:"source"`
	Account string `json:"account"`
	ID      string `json:"id"`
	// Type is the event type, e.g. "payment_intent.succeeded".
	Type string `json:"type"`
	// ObjectID, Version, Amount, Currency and Status describe the business object
	// the event is about (a payment or a subscription).
	ObjectID string    `json:"object_id"`
	Version  int64     `json:"version,omitempty"`
	Amount   int64     `json:"amount,omitempty"`
	Currency string    `json:"currency,omitempty"`
	Status   string    `json:"status,omitempty"`
	Created  time.Time `json:"created"`
	// Object, when set, is a JSON object the target declared for this event
	// (its own business object). Profiles place these bytes verbatim where
	// their envelope carries the business object (Facts.DeclaredObjectJSONPath)
	// instead of the conformance-domain fields above, which then only feed what
	// the envelope derives from them (IDs, headers). Nil renders as before.
	Object json.RawMessage `json:"object,omitempty"`
}

// Key is the event key a safe receiver deduplicates on.
type Key struct {
	Source  string `json:"source"`
	Account string `json:"account"`
	EventID string `json:"event_id"`
}

// Key returns the event's (source, account, event_id) key.
func (e Event) Key() Key { return Key{Source: e.Source, Account: e.Account, EventID: e.ID} }

// Attempt describes one delivery attempt of an event, as a profile needs it to
// build the request.
type Attempt struct {
	// N is the attempt number, 1 for the first delivery.
	N int
	// DeliveryID is the per-attempt delivery identifier, where the provider has one.
	DeliveryID string
	// SignedAt is the time written into the signature (the attempt's send time, or
	// an older time for a replay with a stale timestamp).
	SignedAt time.Time
	// RetryReason says why the previous attempt failed, for providers that send it
	// (Slack's x-slack-retry-reason: http_timeout, too_many_redirects,
	// connection_failed, ssl_error, http_error, unknown_error). Empty means
	// unknown_error on a retry; ignored on the first attempt.
	RetryReason string
	// URL is the full URL the attempt is posted to (scheme, host, port, path,
	// query), for providers that sign it (Twilio, Square, HubSpot); Method is
	// the request's method (POST when empty).
	URL    string
	Method string
}

// AckVerdict is how the provider reads a response.
type AckVerdict int

const (
	// Acknowledged: the provider stops delivering this event.
	Acknowledged AckVerdict = iota
	// Retry: the provider schedules another attempt.
	Retry
	// Stop: the provider gives up on this event without an acknowledgement
	// (Slack's x-slack-no-retry, Standard Webhooks' 410 Gone, Svix's abort header).
	Stop
)

// String returns the verdict's name: acknowledged, retry or stop.
func (v AckVerdict) String() string {
	switch v {
	case Acknowledged:
		return "acknowledged"
	case Retry:
		return "retry"
	case Stop:
		return "stop"
	}
	return "unknown"
}

// Profile is one provider's delivery contract.
//
// Implementations must be safe for concurrent use and deterministic: the same event,
// attempt and secrets give the same request bytes.
type Profile interface {
	// ID is the stable profile name used in configuration, e.g. "stripe".
	ID() string
	// Facts returns the documented delivery contract with sources.
	Facts() Facts
	// Body renders the event in the provider's envelope. The body does not change
	// across attempts (providers resend the original payload).
	Body(ev Event) ([]byte, error)
	// Headers returns the request headers for one attempt, including the signature
	// over body made with every secret given (several during a secret roll, where
	// the provider does that; otherwise the first is used).
	Headers(ev Event, body []byte, at Attempt, secrets []string) (http.Header, error)
	// Verdict reads a response the way the provider does.
	Verdict(status int, header http.Header, body []byte) AckVerdict
}

// Facts is a provider's documented delivery contract. Pointers are nil where the
// provider does not document the value; Source fields cite where a value was read.
type Facts struct {
	Name        string
	ContentType string
	// EventIDHeader or EventIDJSONPath says where the event ID lives.
	EventIDHeader   string
	EventIDJSONPath string
	// EventIDRule explains how the event ID is derived when the provider sends
	// none (Adyen); empty otherwise. Use EventKey to compute it.
	EventIDRule string
	// DeliveryIDHeader is the per-attempt delivery ID header, if any.
	// DeliveryIDJSONPath is a delivery ID carried in the body (Paddle's
	// notification_id, one per destination, not per attempt).
	DeliveryIDHeader   string
	DeliveryIDJSONPath string
	// EventTypeHeader or EventTypeJSONPath says where the event type lives.
	EventTypeHeader   string
	EventTypeJSONPath string
	// ObjectJSONPath says where the business object (id, amount, currency,
	// status, version) lives in the body; "$" when the body is the object.
	ObjectJSONPath string
	// DeclaredObjectJSONPath says where a declared Event.Object is placed ("$"
	// when it is the whole body); "" when the profile does not support
	// declared objects (Adyen's NotificationRequestItem has fixed fields).
	DeclaredObjectJSONPath string
	// AccountLocation describes where the provider puts the account in the
	// request. Receivers must take the account from endpoint configuration; this
	// is informational (a receiver may cross-check it).
	AccountLocation string
	// SignatureHeader names the header carrying the signature ("" when the
	// signature lives in the body, as with Adyen). SignatureScheme describes the
	// exact signed content, key handling and encoding.
	SignatureHeader string
	SignatureScheme string
	// SuccessRule says what the provider counts as an acknowledgement.
	SuccessRule string
	// MaxRedirects is how many redirects the provider follows before it counts
	// the attempt as failed (0: a 3xx is a failure).
	MaxRedirects int
	// HonoursRetryAfter is true when the provider takes a Retry-After response
	// header into account when scheduling the next attempt (see RetryAfter).
	HonoursRetryAfter bool
	// Timeout is the per-attempt response timeout; nil: undocumented; the user chooses.
	Timeout       *time.Duration
	TimeoutSource string
	// Tolerance is the signature timestamp tolerance receivers apply; nil when the
	// scheme signs no timestamp.
	Tolerance *time.Duration
	// ResignsOnRetry is true when each attempt gets a new signed timestamp.
	ResignsOnRetry bool
	// MultipleSignatures is true when the provider sends one signature per active
	// secret during a secret roll.
	MultipleSignatures bool
	Retry              RetrySchedule
	// Ordered is nil when the provider says nothing about ordering: undocumented;
	// the user chooses.
	Ordered       *bool
	OrderedSource string
	// ManualRedeliveryWindow is how long after creation a person can resend an
	// event (nil when unavailable, or undocumented; the user chooses).
	ManualRedeliveryWindow *time.Duration
	// ManualRedelivery is nil when undocumented, else whether people can resend.
	ManualRedelivery *bool
	// MaxPayload is the largest body the provider documents it may send, in
	// bytes; 0: undocumented. MaxPayloadSource quotes where it is documented.
	MaxPayload       int
	MaxPayloadSource string
	Sources          []string
	// Notes carries documented caveats (sandbox schedules, secondary sources).
	Notes []string
}

// RetrySchedule is the provider's automatic redelivery behaviour.
type RetrySchedule struct {
	// Delays lists the wait before each retry, relative to the previous attempt.
	// Nil when the provider does not publish its intervals: undocumented; the
	// user chooses (or takes Modelled, see Effective).
	Delays []time.Duration
	// MaxAttempts counts the first attempt; 0: undocumented; the user chooses.
	MaxAttempts int
	// Horizon is how long after the first attempt automatic retries may still
	// arrive; nil: undocumented; the user chooses.
	Horizon *time.Duration
	Source  string
	// ContinuesUntilHorizon is true when the provider keeps retrying after the
	// listed Delays until Horizon at an undocumented cadence (Adyen's queue).
	ContinuesUntilHorizon bool
	// Modelled is hookcert's MODEL of the schedule where the provider does not
	// publish its intervals (or not all of them): delays relative to the previous
	// attempt, fitted to the documented attempt count and horizon. It is not a
	// published schedule; the engine uses it only when the user chooses none.
	// Nil when Delays is complete.
	Modelled  []time.Duration
	ModelNote string
}

// Effective returns the delays the engine should use when the user chooses
// none: the published Delays when complete, otherwise the Modelled ones.
// modelled reports which one it is.
func (r RetrySchedule) Effective() (delays []time.Duration, modelled bool) {
	if r.Modelled != nil {
		return append([]time.Duration(nil), r.Modelled...), true
	}
	return append([]time.Duration(nil), r.Delays...), false
}
