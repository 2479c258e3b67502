package profiles

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StripeAPIVersion is the api_version written into simulated Stripe events. It
// matches the release train stripe-go v85 (the version in go.mod) accepts
// (stripe-go v85 api_version.go APIVersion = "2026-03-25.dahlia"), so receivers
// using that library do not reject the envelope on a version mismatch.
const StripeAPIVersion = "2026-03-25.dahlia"

// stripeModel is hookcert's MODEL of Stripe's live schedule: exponential back-off
// doubling from 5 minutes (9 retries, 2555 minutes in all), then one last retry
// that lands exactly on the documented 3-day horizon. Stripe publishes only
// "up to three days with an exponential back off" (docs.stripe.com/webhooks).
var stripeModel = func() []time.Duration {
	var d []time.Duration
	for i := 0; i < 9; i++ {
		d = append(d, (5*time.Minute)<<i)
	}
	return append(d, 72*time.Hour-sum(d))
}()

type stripeProfile struct{ base }

func newStripe() Profile {
	return stripeProfile{base{id: "stripe", data: builtinData("stripe"), facts: Facts{
		Name:            "Stripe",
		ContentType:     "application/json", // providers.yaml stripe.payload.content_type
		EventIDJSONPath: "$.id",             // docs.stripe.com/webhooks: log processed event IDs
		// No per-attempt delivery ID header is documented (providers.yaml stripe.delivery_id).
		EventTypeJSONPath: "$.type",
		ObjectJSONPath:    "$.data.object",
		// A declared object replaces the whole data.object.
		DeclaredObjectJSONPath: "$.data.object",
		AccountLocation:        "$.account on Connect events only; absent for own-account events (docs.stripe.com/api/events/object). hookcert renders own-account events.",
		SignatureHeader:        "Stripe-Signature",
		SignatureScheme:        `t=<unix>,v1=<hex>[,v1=<hex>…]; HMAC-SHA256 over "{t}.{raw body}"; key = the whole whsec_ string as UTF-8 (docs.stripe.com/webhooks; stripe-go ComputeSignature)`,
		SuccessRule:            "any 2xx; redirects are failures (\"We consider redirect responses to webhook requests as failures.\" docs.stripe.com/webhooks)",
		// Timeout: undocumented; the user chooses (docs list only "(Timed out) ERR").
		Timeout:            nil, // undocumented; the user chooses
		TimeoutSource:      "undocumented; the user chooses (docs.stripe.com/webhooks lists only a \"(Timed out) ERR\" status)",
		Tolerance:          dur(300 * time.Second), // stripe-go DefaultTolerance = 300s
		ResignsOnRetry:     true,                   // "we generate a new signature and timestamp for the new delivery attempt"
		MultipleSignatures: true,                   // "Stripe generates one signature per secret until expiration" (roll, up to 24 h)
		Retry: RetrySchedule{
			Delays:      nil, // individual intervals undocumented; the user chooses (or Modelled)
			MaxAttempts: 0,   // undocumented; the user chooses
			Horizon:     dur(72 * time.Hour),
			Source:      "docs.stripe.com/webhooks: \"Stripe attempts to deliver events to your destination for up to three days with an exponential back off in live mode.\"",
			Modelled:    stripeModel,
			ModelNote:   "MODEL, not published: doubling from 5 min (9 retries), then one retry at the 3-day horizon; 11 attempts in all",
		},
		Ordered:                boolp(false),
		OrderedSource:          "docs.stripe.com/webhooks: \"Stripe doesn't guarantee the delivery of events in the order that they're generated.\"",
		ManualRedelivery:       boolp(true),
		ManualRedeliveryWindow: dur(30 * 24 * time.Hour), // CLI resend: up to 30 days after creation (Dashboard: 15 days)
		Sources:                []string{"https://docs.stripe.com/webhooks", "https://docs.stripe.com/api/events/object", "https://github.com/stripe/stripe-go/blob/master/webhook/client.go"},
		Notes: []string{
			"sandbox: \"We retry event deliveries created in a sandbox three times over the course of a few hours.\" (docs.stripe.com/webhooks)",
			"manual resend: Dashboard up to 15 days, Stripe CLI up to 30 days after creation (docs.stripe.com/webhooks)",
			"duplicates: two separate Event objects (new evt_ IDs) may be sent for one change (docs.stripe.com/webhooks)",
		},
	}}}
}

// stripeObjectName guesses the resource name Stripe puts in data.object.object
// from the event type: "payment_intent.succeeded" → "payment_intent",
// "customer.subscription.updated" → "subscription".
func stripeObjectName(typ string) string {
	i := strings.LastIndex(typ, ".")
	if i <= 0 {
		return typ
	}
	prefix := typ[:i]
	if j := strings.LastIndex(prefix, "."); j >= 0 {
		return prefix[j+1:]
	}
	return prefix
}

// Body renders the Stripe Event object (docs.stripe.com/api/events/object):
// test-mode (livemode false), request id/idempotency_key null as for events not
// caused by an API request. Field order and escaping are encoding/json's for
// the former stripeEvent struct (id, object, api_version, created,
// data.object{id, object, amount, currency, status, version}, livemode,
// pending_webhooks, request, type); oracle_test.go holds that struct's
// json.Marshal rendering as the oracle.
func (p stripeProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	if ev.Object != nil {
		return p.declaredBody(&ev), nil
	}
	objName := stripeObjectName(ev.Type)
	b := make([]byte, 0, len(stripeHead)+len(stripeMid)+len(stripeTail)+objectSizeHint(&ev)+
		len(ev.ID)+len(objName)+len(ev.Type)+40)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, ev.ID)
	b = append(b, stripeHead...)
	b = strconv.AppendInt(b, ev.Created.Unix(), 10)
	b = append(b, `,"data":{"object":{"id":`...)
	b = appendJSONString(b, ev.ObjectID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, objName)
	b = append(b, `,"amount":`...)
	b = strconv.AppendInt(b, ev.Amount, 10)
	b = append(b, `,"currency":`...)
	b = appendJSONString(b, ev.Currency)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, ev.Status)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, ev.Version, 10)
	b = append(b, stripeMid...)
	b = appendJSONString(b, ev.Type)
	b = append(b, stripeTail...)
	return b, nil
}

// declaredBody is Body with the declared object verbatim as data.object.
func (p stripeProfile) declaredBody(ev *Event) []byte {
	b := make([]byte, 0, len(stripeHead)+len(stripeMid)+len(stripeTail)+len(ev.Object)+len(ev.ID)+len(ev.Type)+40)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, ev.ID)
	b = append(b, stripeHead...)
	b = strconv.AppendInt(b, ev.Created.Unix(), 10)
	b = append(b, `,"data":{"object":`...)
	b = append(b, ev.Object...)
	b = append(b, stripeMid[1:]...) // stripeMid starts by closing the built-in object
	b = appendJSONString(b, ev.Type)
	return append(b, stripeTail...)
}

// Static parts of the Stripe envelope.
var (
	stripeHead = string(appendJSONString([]byte(`,"object":"event","api_version":`), StripeAPIVersion)) + `,"created":`
	stripeMid  = `}},"livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":`
	stripeTail = `}`
	hStripeSig = http.CanonicalHeaderKey("Stripe-Signature")
)

// Headers signs with every secret given: one v1 per active secret during a roll.
func (p stripeProfile) Headers(ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, true); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	h := newHeader(2)
	h.set(hContentType, p.facts.ContentType)
	h.set(hStripeSig, StripeSignatureHeader(at.SignedAt, body, secrets...))
	return h.h, nil
}

// Verdict: any 2xx acknowledges; everything else, redirects included, is retried.
func (p stripeProfile) Verdict(status int, _ http.Header, _ []byte) AckVerdict {
	return verdict2xx(status)
}
