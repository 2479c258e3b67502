package profiles

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ShopifyAPIVersion is the X-Shopify-API-Version value hookcert sends. Shopify
// sends the API version the payload was serialized with (providers.yaml
// shopify.account_scope); the value itself is ours, not a documented default.
const ShopifyAPIVersion = "2025-10"

// shopifyModel is hookcert's MODEL of Shopify's schedule: 8 retries doubling
// from 56 s (56 s … 7168 s, 14280 s = 3 h 58 min in all), fitting "a total of 8
// times over 4 hours using an exponential backoff schedule" (shopify.dev
// changelog updates-to-webhook-retry-mechanism). The intervals are unpublished.
var shopifyModel = func() []time.Duration {
	var d []time.Duration
	for i := 0; i < 8; i++ {
		d = append(d, (56*time.Second)<<i)
	}
	return d
}()

type shopifyProfile struct{ base }

func newShopify() Profile {
	return shopifyProfile{base{id: "shopify", data: builtinData("shopify"), facts: Facts{
		Name:             "Shopify",
		ContentType:      "application/json",     // providers.yaml shopify.payload.content_type
		EventIDHeader:    "X-Shopify-Event-Id",   // "A unique ID shared across all deliveries produced by the same merchant action." (delivery-structure)
		DeliveryIDHeader: "X-Shopify-Webhook-Id", // "A unique composite key per delivery."; stability across retries unconfirmed: the engine chooses via Attempt.DeliveryID
		EventTypeHeader:  "X-Shopify-Topic",
		ObjectJSONPath:   "$",
		// A declared object is the whole body, as the resource is.
		DeclaredObjectJSONPath: "$",
		AccountLocation:        "X-Shopify-Shop-Domain header: \"The myshopify.com domain of the store that triggered the event.\" (account + \".myshopify.com\")",
		SignatureHeader:        "X-Shopify-Hmac-Sha256",
		SignatureScheme:        "base64 HMAC-SHA256 of the raw body keyed with the client secret's UTF-8 bytes; no timestamp signed (shopify.dev verify-deliveries)",
		SuccessRule:            "200-series response within 5 s; redirects are failures (Shopify staff, community.shopify.dev)",
		Timeout:                dur(5 * time.Second), // secondary: dev.to/webhookadmin and hookrescue.com quoting Shopify's HTTPS delivery page
		TimeoutSource:          "secondary: \"1 second to accept the connection and 5 seconds to respond\" (Shopify HTTPS delivery page as quoted by dev.to/webhookadmin, hookrescue.com)",
		Tolerance:              nil, // X-Shopify-Triggered-At is not signed
		ResignsOnRetry:         false,
		Retry: RetrySchedule{
			Delays:      nil, // "exact exponential intervals not published": undocumented; the user chooses (or Modelled)
			MaxAttempts: 9,   // "retried a total of 8 times" + the first attempt
			Horizon:     dur(4 * time.Hour),
			Source:      "https://shopify.dev/changelog/updates-to-webhook-retry-mechanism: \"Webhooks will now be retried a total of 8 times over 4 hours using an exponential backoff schedule.\"",
			Modelled:    shopifyModel,
			ModelNote:   "MODEL, not published: 8 retries doubling from 56 s (3 h 58 min in all)",
		},
		Ordered:          boolp(false),
		OrderedSource:    "\"Shopify doesn't guarantee ordering within a topic, or across different topics for the same resource.\" (shopify.dev/docs/apps/build/webhooks)",
		ManualRedelivery: boolp(false), // no replay feature documented (best-practices: re-subscribe and reconcile)
		Sources: []string{
			"https://shopify.dev/docs/apps/build/webhooks/delivery-structure",
			"https://shopify.dev/docs/apps/build/webhooks/verify-deliveries",
			"https://shopify.dev/changelog/updates-to-webhook-retry-mechanism",
		},
		Notes: []string{
			"after 8 consecutive failures the subscription is removed (Shopify staff / troubleshooting doc as quoted by hookrescue.com)",
			"X-Shopify-Webhook-Id stability across retries is unconfirmed: pass the same Attempt.DeliveryID to model a stable one, a new one otherwise",
		},
	}}}
}

// Body is the resource itself (providers.yaml shopify.payload.body: "full REST
// resource for the topic"): id, amount, currency, status, version and
// updated_at (Shopify suggests updated_at to order deliveries), in the field
// order of the former shopifyResource struct (oracle_test.go).
func (p shopifyProfile) Body(ev Event) ([]byte, error) {
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	if ev.Object != nil {
		return append([]byte(nil), ev.Object...), nil
	}
	b := make([]byte, 0, objectSizeHint(&ev)+len(`,"updated_at":""`)+len(time.RFC3339Nano)+8)
	b = appendObject(b, &ev)
	b = append(b[:len(b)-1], `,"updated_at":`...) // reopen the object
	b = appendJSONTime(b, ev.Created, time.RFC3339Nano)
	return append(b, '}'), nil
}

// shopifyDeliveryUUID derives a per-attempt X-Shopify-Webhook-Id: the first
// 16 bytes of SHA-256("shopify-webhook:{id}:{n}") formatted as a
// version-4-shaped UUID, a deterministic stand-in where the caller passes none.
func shopifyDeliveryUUID(id string, n int) string {
	var tmp [128]byte
	in := append(tmp[:0], "shopify-webhook:"...)
	in = append(in, id...)
	in = append(in, ':')
	in = strconv.AppendInt(in, int64(n), 10)
	sum := sha256.Sum256(in)
	return formatUUID(sum[:16])
}

// MakeDeliveryID makes shopify a DeliveryIDMaker: X-Shopify-Webhook-Id is a
// GUID (the shape is ours; Shopify documents none).
func (shopifyProfile) MakeDeliveryID(r RandSource) string { return randUUID(r) }

// Canonical forms of Shopify's header names.
var (
	hShopifyTopic       = http.CanonicalHeaderKey("X-Shopify-Topic")
	hShopifyEventID     = http.CanonicalHeaderKey("X-Shopify-Event-Id")
	hShopifyWebhookID   = http.CanonicalHeaderKey("X-Shopify-Webhook-Id")
	hShopifyShopDomain  = http.CanonicalHeaderKey("X-Shopify-Shop-Domain")
	hShopifyTriggeredAt = http.CanonicalHeaderKey("X-Shopify-Triggered-At")
	hShopifyAPIVersion  = http.CanonicalHeaderKey("X-Shopify-API-Version")
	hShopifyHMAC        = http.CanonicalHeaderKey("X-Shopify-Hmac-Sha256")
)

// Headers: X-Shopify-Webhook-Id is Attempt.DeliveryID, or, when empty, one
// derived from (event ID, attempt number), i.e. a new one per attempt.
func (p shopifyProfile) Headers(ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, false); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	if ev.ID == "" || ev.Account == "" {
		return nil, fmt.Errorf("shopify: event.id and event.account: must not be empty (X-Shopify-Event-Id, X-Shopify-Shop-Domain)")
	}
	delivery := at.DeliveryID
	if delivery == "" {
		delivery = shopifyDeliveryUUID(ev.ID, at.N)
	}
	h := newHeader(8)
	h.set(hContentType, p.facts.ContentType)
	h.set(hShopifyTopic, ev.Type)
	h.set(hShopifyEventID, ev.ID)
	h.set(hShopifyWebhookID, delivery)
	h.set(hShopifyShopDomain, ev.Account+".myshopify.com")
	h.set(hShopifyTriggeredAt, ev.Created.UTC().Format(time.RFC3339Nano))
	h.set(hShopifyAPIVersion, ShopifyAPIVersion)
	// One signature only: a rotated secret switches over within an hour, no overlap.
	h.set(hShopifyHMAC, ShopifyHMAC(secrets[0], body))
	return h.h, nil
}

// Verdict: a 200-series response acknowledges; anything else, redirects
// included, is a failure.
func (p shopifyProfile) Verdict(status int, _ http.Header, _ []byte) AckVerdict {
	return verdict2xx(status)
}
