package profiles

// The oracle: the rendering and signing code of simulator/profiles as it was
// before the allocation-free rewrite (commit 6dab854), copied verbatim with an
// "old" prefix. The differential and fuzz tests require the current code to
// produce byte-identical bodies, headers and errors.

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy X-Hub-Signature is HMAC-SHA1.
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// oldRender is the previous Render, dispatching on the profile ID.
func oldRender(id string, ev Event, at Attempt, secrets []string) ([]byte, http.Header, error) {
	var (
		body []byte
		err  error
	)
	if strings.HasPrefix(id, "adyen") {
		body, err = oldAdyenSignedBody(id, ev, secrets)
	} else {
		body, err = oldBody(id, ev)
	}
	if err != nil {
		return nil, nil, err
	}
	h, err := oldHeaders(id, ev, body, at, secrets)
	if err != nil {
		return nil, nil, err
	}
	return body, h, nil
}

func oldBody(id string, ev Event) ([]byte, error) {
	switch id {
	case "stripe":
		return oldStripeBody(id, ev)
	case "github":
		return oldGitHubBody(id, ev)
	case "shopify":
		return oldShopifyBody(id, ev)
	case "standard-webhooks", "svix":
		return oldStdBody(id, ev)
	case "slack":
		return oldSlackBody(id, ev)
	case "paddle":
		return oldPaddleBody(id, ev)
	case "adyen", "adyen-legacy":
		if err := oldAdyenCheck(id, ev); err != nil {
			return nil, err
		}
		return oldAdyenRender(id, oldAdyenItem(ev))
	}
	panic("oracle: unknown profile " + id)
}

func oldHeaders(id string, ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	switch id {
	case "stripe":
		return oldStripeHeaders(id, ev, body, at, secrets)
	case "github":
		return oldGitHubHeaders(id, ev, body, at, secrets)
	case "shopify":
		return oldShopifyHeaders(id, ev, body, at, secrets)
	case "standard-webhooks":
		return oldStdHeaders(id, "webhook-", ev, body, at, secrets)
	case "svix":
		return oldStdHeaders(id, "svix-", ev, body, at, secrets)
	case "slack":
		return oldSlackHeaders(id, ev, body, at, secrets)
	case "paddle":
		return oldPaddleHeaders(id, ev, body, at, secrets)
	case "adyen", "adyen-legacy":
		return oldAdyenHeaders(id, ev, body, at, secrets)
	}
	panic("oracle: unknown profile " + id)
}

// ---- common.go ----

func oldHMACSHA256(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

var oldErrNoSecret = errors.New("secrets: at least one non-empty secret is required")

func oldCheckSecrets(profile string, secrets []string, required bool) error {
	if required && len(secrets) == 0 {
		return fmt.Errorf("%s: %w", profile, oldErrNoSecret)
	}
	for i, s := range secrets {
		if s == "" {
			return fmt.Errorf("%s: secrets[%d]: must not be empty", profile, i)
		}
	}
	return nil
}

func oldCheckEvent(profile string, ev Event, needID bool) error {
	switch {
	case needID && ev.ID == "":
		return fmt.Errorf("%s: event.id: must not be empty", profile)
	case ev.Type == "":
		return fmt.Errorf("%s: event.type: must not be empty", profile)
	case ev.ObjectID == "":
		return fmt.Errorf("%s: event.object_id: must not be empty", profile)
	case ev.Created.IsZero():
		return fmt.Errorf("%s: event.created: must be set (it is rendered into the envelope)", profile)
	}
	return nil
}

func oldCheckAttempt(profile string, at Attempt, signedAt bool) error {
	if at.N < 1 {
		return fmt.Errorf("%s: attempt.n: must be 1 or more, got %d", profile, at.N)
	}
	if signedAt && at.SignedAt.IsZero() {
		return fmt.Errorf("%s: attempt.signed_at: must be set (the scheme signs a timestamp)", profile)
	}
	return nil
}

type oldObject struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
	Version  int64  `json:"version"`
}

func oldDomainObject(ev Event) oldObject {
	return oldObject{ID: ev.ObjectID, Amount: ev.Amount, Currency: ev.Currency, Status: ev.Status, Version: ev.Version}
}

func oldUnix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// ---- sign.go ----

func oldStripeSignatureHeader(t time.Time, body []byte, secrets ...string) string {
	ts := oldUnix(t)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(oldHMACSHA256([]byte(s), []byte(ts), []byte("."), body)))
	}
	return b.String()
}

func oldStandardWebhooksKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, fmt.Errorf("secret: must be whsec_ followed by standard base64 (Standard Webhooks secret format)")
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("secret: decodes to an empty key")
	}
	return key, nil
}

func oldStandardWebhooksSignature(secret, msgID string, t time.Time, body []byte) (string, error) {
	content := []byte(msgID + "." + oldUnix(t) + "." + string(body))
	if strings.HasPrefix(secret, "whsk_") {
		seed, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsk_"))
		if err != nil || len(seed) != ed25519.SeedSize {
			return "", fmt.Errorf("secret: whsk_ must be followed by the standard base64 of a 32-byte ed25519 seed")
		}
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), content)), nil
	}
	key, err := oldStandardWebhooksKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(oldHMACSHA256(key, content)), nil
}

func oldGitHubSignature256(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(oldHMACSHA256([]byte(secret), body))
}

func oldGitHubSignature1(secret string, body []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

func oldShopifyHMAC(secret string, body []byte) string {
	return base64.StdEncoding.EncodeToString(oldHMACSHA256([]byte(secret), body))
}

func oldSlackSignature(secret string, t time.Time, body []byte) string {
	return "v0=" + hex.EncodeToString(oldHMACSHA256([]byte(secret), []byte("v0:"+oldUnix(t)+":"), body))
}

func oldPaddleSignatureHeader(t time.Time, body []byte, secrets ...string) string {
	ts := oldUnix(t)
	var b strings.Builder
	b.WriteString("ts=" + ts)
	for _, s := range secrets {
		b.WriteString(";h1=")
		b.WriteString(hex.EncodeToString(oldHMACSHA256([]byte(s), []byte(ts+":"), body)))
	}
	return b.String()
}

func oldAdyenSignedContent(it oldAdyenItemT) string {
	return strings.Join([]string{
		it.PSPReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
		strconv.FormatInt(it.Amount.Value, 10), it.Amount.Currency, it.EventCode, it.Success,
	}, ":")
}

func oldAdyenHMAC(hexKey string, it oldAdyenItemT) (string, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil || len(key) == 0 {
		return "", fmt.Errorf("secret: must be a non-empty, even-length hex string (Adyen HMAC key format)")
	}
	return base64.StdEncoding.EncodeToString(oldHMACSHA256(key, []byte(oldAdyenSignedContent(it)))), nil
}

// ---- ids.go ----

func oldFormatUUID(b []byte) string {
	u := make([]byte, 16)
	copy(u, b)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func oldBase36Hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	v := new(big.Int).SetBytes(sum[:])
	out := v.Text(36)
	for len(out) < n {
		out = "0" + out
	}
	return out[:n]
}

// ---- stripe.go ----

type oldStripeObject struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
	Version  int64  `json:"version"`
}

type oldStripeEvent struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	APIVersion string `json:"api_version"`
	Created    int64  `json:"created"`
	Data       struct {
		Object oldStripeObject `json:"object"`
	} `json:"data"`
	Livemode        bool `json:"livemode"`
	PendingWebhooks int  `json:"pending_webhooks"`
	Request         struct {
		ID             *string `json:"id"`
		IdempotencyKey *string `json:"idempotency_key"`
	} `json:"request"`
	Type string `json:"type"`
}

func oldStripeObjectName(typ string) string {
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

func oldStripeBody(id string, ev Event) ([]byte, error) {
	if err := oldCheckEvent(id, ev, true); err != nil {
		return nil, err
	}
	var e oldStripeEvent
	e.ID = ev.ID
	e.Object = "event"
	e.APIVersion = StripeAPIVersion
	e.Created = ev.Created.Unix()
	e.Data.Object = oldStripeObject{ID: ev.ObjectID, Object: oldStripeObjectName(ev.Type), Amount: ev.Amount, Currency: ev.Currency, Status: ev.Status, Version: ev.Version}
	e.PendingWebhooks = 1
	e.Type = ev.Type
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("stripe: encode event: %w", err)
	}
	return b, nil
}

func oldStripeHeaders(id string, ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, true); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Stripe-Signature", oldStripeSignatureHeader(at.SignedAt, body, secrets...))
	return h, nil
}

// ---- github.go ----

type oldGitHubSender struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

type oldGitHubBodyT struct {
	Action string          `json:"action"`
	Object oldObject       `json:"object"`
	Sender oldGitHubSender `json:"sender"`
}

func oldStableNumber(s string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return int64(h.Sum64()%900_000_000) + 100_000_000
}

func oldGitHubBody(id string, ev Event) ([]byte, error) {
	if err := oldCheckEvent(id, ev, true); err != nil {
		return nil, err
	}
	action := ev.Type
	if i := strings.LastIndex(action, "."); i >= 0 {
		action = action[i+1:]
	}
	b, err := json.Marshal(oldGitHubBodyT{
		Action: action,
		Object: oldDomainObject(ev),
		Sender: oldGitHubSender{Login: "hookcert-simulator[bot]", ID: oldStableNumber("sender"), Type: "Bot"},
	})
	if err != nil {
		return nil, fmt.Errorf("github: encode body: %w", err)
	}
	return b, nil
}

func oldGitHubHeaders(id string, ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, false); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, false); err != nil {
		return nil, err
	}
	if ev.ID == "" {
		return nil, fmt.Errorf("github: event.id: must not be empty (it is X-GitHub-Delivery)")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/hookcert")
	h.Set("X-GitHub-Delivery", ev.ID)
	// The event name; the action is the type's last segment, in the body.
	ev2 := ev.Type
	if i := strings.LastIndex(ev2, "."); i > 0 {
		ev2 = ev2[:i]
	}
	h.Set("X-GitHub-Event", ev2)
	h.Set("X-GitHub-Hook-ID", strconv.FormatInt(oldStableNumber("hook:"+ev.Account), 10))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(oldStableNumber("target:"+ev.Account), 10))
	if len(secrets) > 0 {
		h.Set("X-Hub-Signature-256", oldGitHubSignature256(secrets[0], body))
		h.Set("X-Hub-Signature", oldGitHubSignature1(secrets[0], body))
	}
	return h, nil
}

// ---- shopify.go ----

type oldShopifyResource struct {
	ID        string `json:"id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Status    string `json:"status"`
	Version   int64  `json:"version"`
	UpdatedAt string `json:"updated_at"`
}

func oldShopifyBody(id string, ev Event) ([]byte, error) {
	if err := oldCheckEvent(id, ev, true); err != nil {
		return nil, err
	}
	o := oldDomainObject(ev)
	b, err := json.Marshal(oldShopifyResource{
		ID: o.ID, Amount: o.Amount, Currency: o.Currency, Status: o.Status, Version: o.Version,
		UpdatedAt: ev.Created.UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, fmt.Errorf("shopify: encode resource: %w", err)
	}
	return b, nil
}

func oldDerivedUUID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return oldFormatUUID(sum[:16])
}

func oldShopifyHeaders(id string, ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, false); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	if ev.ID == "" || ev.Account == "" {
		return nil, fmt.Errorf("shopify: event.id and event.account: must not be empty (X-Shopify-Event-Id, X-Shopify-Shop-Domain)")
	}
	delivery := at.DeliveryID
	if delivery == "" {
		delivery = oldDerivedUUID("shopify-webhook:" + ev.ID + ":" + strconv.Itoa(at.N))
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Shopify-Topic", ev.Type)
	h.Set("X-Shopify-Event-Id", ev.ID)
	h.Set("X-Shopify-Webhook-Id", delivery)
	h.Set("X-Shopify-Shop-Domain", ev.Account+".myshopify.com")
	h.Set("X-Shopify-Triggered-At", ev.Created.UTC().Format(time.RFC3339Nano))
	h.Set("X-Shopify-API-Version", ShopifyAPIVersion)
	h.Set("X-Shopify-Hmac-Sha256", oldShopifyHMAC(secrets[0], body))
	return h, nil
}

// ---- standardwebhooks.go ----

type oldStdBodyT struct {
	Type      string    `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      oldObject `json:"data"`
}

func oldStdBody(id string, ev Event) ([]byte, error) {
	if err := oldCheckEvent(id, ev, true); err != nil {
		return nil, err
	}
	b, err := json.Marshal(oldStdBodyT{Type: ev.Type, Timestamp: ev.Created.UTC().Format(time.RFC3339Nano), Data: oldDomainObject(ev)})
	if err != nil {
		return nil, fmt.Errorf("%s: encode body: %w", id, err)
	}
	return b, nil
}

func oldStdHeaders(id, prefix string, ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, true); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	if ev.ID == "" || strings.Contains(ev.ID, ".") {
		return nil, fmt.Errorf("%s: event.id: must be non-empty and contain no '.' (it is signed as {id}.{ts}.{body})", id)
	}
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sig, err := oldStandardWebhooksSignature(s, ev.ID, at.SignedAt, body)
		if err != nil {
			return nil, fmt.Errorf("%s: secrets[%d]: %w", id, i, err)
		}
		sigs[i] = sig
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(prefix+"id", ev.ID)
	h.Set(prefix+"timestamp", oldUnix(at.SignedAt))
	h.Set(prefix+"signature", strings.Join(sigs, " "))
	return h, nil
}

// ---- slack.go ----

var oldSlackRetryReasons = []string{"http_timeout", "too_many_redirects", "connection_failed", "ssl_error", "http_error", "unknown_error"}

type oldSlackAuthorization struct {
	EnterpriseID *string `json:"enterprise_id"`
	TeamID       string  `json:"team_id"`
	UserID       string  `json:"user_id"`
	IsBot        bool    `json:"is_bot"`
}

type oldSlackInner struct {
	Type    string    `json:"type"`
	EventTS string    `json:"event_ts"`
	Object  oldObject `json:"object"`
}

type oldSlackEnvelope struct {
	TeamID         string                  `json:"team_id"`
	APIAppID       string                  `json:"api_app_id"`
	Event          oldSlackInner           `json:"event"`
	Type           string                  `json:"type"`
	EventID        string                  `json:"event_id"`
	EventTime      int64                   `json:"event_time"`
	Authorizations []oldSlackAuthorization `json:"authorizations"`
}

func oldSlackID(prefix, s string) string {
	n := uint64(oldStableNumber(s))*2654435761 + 1
	return prefix + strings.ToUpper(strconv.FormatUint(n%3656158440062976, 36))
}

func oldSlackBody(id string, ev Event) ([]byte, error) {
	if err := oldCheckEvent(id, ev, true); err != nil {
		return nil, err
	}
	if ev.Account == "" {
		return nil, fmt.Errorf("slack: event.account: must not be empty (it is team_id)")
	}
	b, err := json.Marshal(oldSlackEnvelope{
		TeamID:   ev.Account,
		APIAppID: oldSlackID("A", "app"),
		Event: oldSlackInner{
			Type:    ev.Type,
			EventTS: fmt.Sprintf("%d.%06d", ev.Created.Unix(), ev.Created.Nanosecond()/1000),
			Object:  oldDomainObject(ev),
		},
		Type:           "event_callback",
		EventID:        ev.ID,
		EventTime:      ev.Created.Unix(),
		Authorizations: []oldSlackAuthorization{{TeamID: ev.Account, UserID: oldSlackID("U", "bot:"+ev.Account), IsBot: true}},
	})
	if err != nil {
		return nil, fmt.Errorf("slack: encode envelope: %w", err)
	}
	return b, nil
}

func oldSlackHeaders(id string, _ Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, true); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Slack-Request-Timestamp", oldUnix(at.SignedAt))
	h.Set("X-Slack-Signature", oldSlackSignature(secrets[0], at.SignedAt, body))
	if at.N > 1 {
		reason := at.RetryReason
		if reason == "" {
			reason = "unknown_error"
		}
		valid := false
		for _, r := range oldSlackRetryReasons {
			valid = valid || r == reason
		}
		if !valid {
			return nil, fmt.Errorf("slack: attempt.retry_reason: %q is not one of %s", reason, strings.Join(oldSlackRetryReasons, ", "))
		}
		h.Set("X-Slack-Retry-Num", strconv.Itoa(at.N-1))
		h.Set("X-Slack-Retry-Reason", reason)
	}
	return h, nil
}

// ---- paddle.go ----

type oldPaddleBodyT struct {
	EventID        string    `json:"event_id"`
	EventType      string    `json:"event_type"`
	OccurredAt     string    `json:"occurred_at"`
	NotificationID string    `json:"notification_id"`
	Data           oldObject `json:"data"`
}

func oldPaddleNotificationID(ev Event) string {
	return "ntf_" + oldBase36Hash("paddle-notification:"+ev.Account+":"+ev.ID, 26)
}

func oldPaddleBody(id string, ev Event) ([]byte, error) {
	if err := oldCheckEvent(id, ev, true); err != nil {
		return nil, err
	}
	b, err := json.Marshal(oldPaddleBodyT{
		EventID: ev.ID, EventType: ev.Type,
		OccurredAt:     ev.Created.UTC().Format(time.RFC3339Nano),
		NotificationID: oldPaddleNotificationID(ev),
		Data:           oldDomainObject(ev),
	})
	if err != nil {
		return nil, fmt.Errorf("paddle: encode body: %w", err)
	}
	return b, nil
}

func oldPaddleHeaders(id string, _ Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, true); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Paddle-Signature", oldPaddleSignatureHeader(at.SignedAt, body, secrets...))
	return h, nil
}

// ---- adyen.go ----

type oldAdyenAmount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

type oldAdyenItemT struct {
	AdditionalData      map[string]string `json:"additionalData,omitempty"`
	Amount              oldAdyenAmount    `json:"amount"`
	EventCode           string            `json:"eventCode"`
	EventDate           string            `json:"eventDate"`
	MerchantAccountCode string            `json:"merchantAccountCode"`
	MerchantReference   string            `json:"merchantReference"`
	OriginalReference   string            `json:"originalReference,omitempty"`
	PSPReference        string            `json:"pspReference"`
	Success             string            `json:"success"`
}

type oldAdyenWrapped struct {
	NotificationRequestItem oldAdyenItemT `json:"NotificationRequestItem"`
}

type oldAdyenBodyT struct {
	Live              string            `json:"live"`
	NotificationItems []oldAdyenWrapped `json:"notificationItems"`
}

func oldAdyenItem(ev Event) oldAdyenItemT {
	ad := map[string]string{}
	if ev.Status != "" {
		ad["status"] = ev.Status
	}
	if ev.Version != 0 {
		ad["version"] = strconv.FormatInt(ev.Version, 10)
	}
	return oldAdyenItemT{
		AdditionalData:      ad,
		Amount:              oldAdyenAmount{Value: ev.Amount, Currency: ev.Currency},
		EventCode:           ev.Type,
		EventDate:           ev.Created.UTC().Format(time.RFC3339),
		MerchantAccountCode: ev.Account,
		MerchantReference:   ev.ObjectID,
		PSPReference:        ev.ObjectID,
		Success:             "true",
	}
}

func oldAdyenDerivedEventID(ev Event) string { return ev.ObjectID + ":" + ev.Type + ":true" }

func oldAdyenCheck(id string, ev Event) error {
	if err := oldCheckEvent(id, ev, false); err != nil {
		return err
	}
	if ev.Account == "" {
		return fmt.Errorf("%s: event.account: must not be empty (it is merchantAccountCode)", id)
	}
	if want := oldAdyenDerivedEventID(ev); ev.ID != "" && ev.ID != want {
		return fmt.Errorf("%s: event.id: Adyen has no event ID; leave it empty or set it to pspReference:eventCode:success (%q), see EventKey", id, want)
	}
	return nil
}

func oldAdyenRender(id string, it oldAdyenItemT) ([]byte, error) {
	b, err := json.Marshal(oldAdyenBodyT{Live: "false", NotificationItems: []oldAdyenWrapped{{NotificationRequestItem: it}}})
	if err != nil {
		return nil, fmt.Errorf("%s: encode body: %w", id, err)
	}
	return b, nil
}

func oldAdyenSignedBody(id string, ev Event, secrets []string) ([]byte, error) {
	if err := oldAdyenCheck(id, ev); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	it := oldAdyenItem(ev)
	sig, err := oldAdyenHMAC(secrets[0], it)
	if err != nil {
		return nil, fmt.Errorf("%s: secrets[0]: %w", id, err)
	}
	it.AdditionalData["hmacSignature"] = sig
	return oldAdyenRender(id, it)
}

func oldAdyenHeaders(id string, _ Event, _ []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := oldCheckAttempt(id, at, false); err != nil {
		return nil, err
	}
	if err := oldCheckSecrets(id, secrets, true); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return h, nil
}
