package profiles

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jsonAt reads a value at a simple JSONPath ("$", "$.a.b", "$.a[0].b").
func jsonAt(t *testing.T, body []byte, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if path == "$" {
		return v
	}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "$."), ".") {
		idx := -1
		if i := strings.Index(seg, "["); i >= 0 {
			n, err := strconv.Atoi(strings.TrimSuffix(seg[i+1:], "]"))
			if err != nil {
				t.Fatalf("bad path %s", path)
			}
			seg, idx = seg[:i], n
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %q is not inside an object", path, seg)
		}
		if v, ok = m[seg]; !ok {
			t.Fatalf("%s: no field %q in %s", path, seg, body)
		}
		if idx >= 0 {
			a, ok := v.([]any)
			if !ok || idx >= len(a) {
				t.Fatalf("%s: %q is not an array with index %d", path, seg, idx)
			}
			v = a[idx]
		}
	}
	return v
}

// The table "Where each profile puts the fields" of docs/conformance-domain.md,
// transcribed here on purpose (not read from Facts) so the test checks the
// profiles against the document. A "header:" prefix means a request header.
var domainTable = []struct {
	profile, eventID, typ, object string
}{
	{"stripe", "$.id", "$.type", "$.data.object"},
	{"standard-webhooks", "header:webhook-id", "$.type", "$.data"},
	{"svix", "header:svix-id", "$.type", "$.data"},
	{"github", "header:X-GitHub-Delivery", "header:X-GitHub-Event", "$.object"},
	{"shopify", "header:X-Shopify-Event-Id", "header:X-Shopify-Topic", "$"},
	{"paddle", "$.event_id", "$.event_type", "$.data"},
	{"slack", "$.event_id", "$.event.type", "$.event.object"},
	{"adyen", "adyen", "$.notificationItems[0].NotificationRequestItem.eventCode", "$.notificationItems[0].NotificationRequestItem"},
	{"adyen-legacy", "adyen", "$.notificationItems[0].NotificationRequestItem.eventCode", "$.notificationItems[0].NotificationRequestItem"},
}

func read(t *testing.T, body []byte, h http.Header, loc string) string {
	t.Helper()
	if name, ok := strings.CutPrefix(loc, "header:"); ok {
		return h.Get(name)
	}
	s, ok := jsonAt(t, body, loc).(string)
	if !ok {
		t.Fatalf("%s is not a string", loc)
	}
	return s
}

func num(t *testing.T, v any, what string) int64 {
	t.Helper()
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string: // Adyen additionalData values are strings
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q is not a number", what, x)
		}
		return n
	}
	t.Fatalf("%s: unexpected %T", what, v)
	return 0
}

func TestBodiesParseBackPerConformanceDomain(t *testing.T) {
	if got, want := len(domainTable), len(goIDs()); got != want {
		t.Fatalf("domain table covers %d profiles, registry has %d", got, want)
	}
	for _, row := range domainTable {
		t.Run(row.profile, func(t *testing.T) {
			p, err := Lookup(row.profile)
			if err != nil {
				t.Fatal(err)
			}
			ev := testEvent(row.profile)
			ev.ID = "evt_domain_1"
			if row.eventID == "adyen" {
				ev.ID = ""
			}
			secret, err := GenerateSecret(row.profile, strings.NewReader(strings.Repeat("s", 256)))
			if err != nil {
				t.Fatal(err)
			}
			body, h, err := Render(p, ev, Attempt{N: 1, DeliveryID: "d-1", SignedAt: time.Unix(1700000000, 0)}, []string{secret})
			if err != nil {
				t.Fatal(err)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}

			obj, ok := jsonAt(t, body, row.object).(map[string]any)
			if !ok {
				t.Fatalf("object at %s is not a JSON object", row.object)
			}
			var id string
			var amount, version int64
			var currency, status string
			if strings.HasPrefix(row.profile, "adyen") {
				// pspReference is the object ID, amount.value the amount.
				id, _ = obj["pspReference"].(string)
				amt := obj["amount"].(map[string]any)
				amount = num(t, amt["value"], "amount.value")
				currency, _ = amt["currency"].(string)
				ad := obj["additionalData"].(map[string]any)
				status, _ = ad["status"].(string)
				version = num(t, ad["version"], "additionalData.version")
			} else {
				id, _ = obj["id"].(string)
				amount = num(t, obj["amount"], "amount")
				version = num(t, obj["version"], "version")
				currency, _ = obj["currency"].(string)
				status, _ = obj["status"].(string)
			}
			if id != ev.ObjectID || amount != ev.Amount || currency != ev.Currency || status != ev.Status || version != ev.Version {
				t.Fatalf("object read back as id=%s amount=%d currency=%s status=%s version=%d; want %+v", id, amount, currency, status, version, ev)
			}

			got := read(t, body, h, row.typ)
			if row.profile == "github" {
				// GitHub: the event name in the header, the action in the body.
				var b struct{ Action string }
				_ = json.Unmarshal(body, &b)
				got += "." + b.Action
			}
			if got != ev.Type {
				t.Fatalf("type at %s = %q, want %q", row.typ, got, ev.Type)
			}
			wantID := ev.ID
			var gotID string
			if row.eventID == "adyen" {
				wantID = "pi_123:payment_intent.succeeded:true"
				gotID = fmt.Sprintf("%s:%s:%s", obj["pspReference"], obj["eventCode"], obj["success"])
			} else {
				gotID = read(t, body, h, row.eventID)
			}
			if gotID != wantID {
				t.Fatalf("event ID at %s = %q, want %q", row.eventID, gotID, wantID)
			}
			if k := EventKey(p, ev); k.EventID != wantID || k.Account != ev.Account || k.Source != ev.Source {
				t.Fatalf("EventKey = %+v, want event ID %q", k, wantID)
			}

			// Facts agree with the document.
			f := p.Facts()
			if f.ObjectJSONPath != row.object {
				t.Errorf("Facts.ObjectJSONPath %q, doc says %q", f.ObjectJSONPath, row.object)
			}
			if loc, ok := strings.CutPrefix(row.typ, "header:"); ok && f.EventTypeHeader != loc || !ok && f.EventTypeJSONPath != row.typ {
				t.Errorf("Facts event type location %q/%q, doc says %q", f.EventTypeHeader, f.EventTypeJSONPath, row.typ)
			}
			if loc, ok := strings.CutPrefix(row.eventID, "header:"); ok && f.EventIDHeader != loc || !ok && row.eventID != "adyen" && f.EventIDJSONPath != row.eventID {
				t.Errorf("Facts event ID location %q/%q, doc says %q", f.EventIDHeader, f.EventIDJSONPath, row.eventID)
			}

			if err := verifyAsReceiver(row.profile, body, h, secret); err != nil {
				t.Fatalf("receiver-side verification: %v", err)
			}
			body2 := []byte(strings.Replace(string(body), "1130", "1131", 1))
			if err := verifyAsReceiver(row.profile, body2, h, secret); err == nil {
				t.Fatal("receiver-side verification accepted a tampered body")
			}
		})
	}
}

// verifyAsReceiver is an independent, from-the-docs verifier for each scheme,
// written without the package's signing helpers.
func verifyAsReceiver(profile string, body []byte, h http.Header, secret string) error {
	mac := func(key []byte, parts ...string) []byte {
		m := hmac.New(sha256.New, key)
		for _, p := range parts {
			m.Write([]byte(p))
		}
		return m.Sum(nil)
	}
	eq := func(got, want string) error {
		if !hmac.Equal([]byte(got), []byte(want)) {
			return fmt.Errorf("signature mismatch")
		}
		return nil
	}
	switch profile {
	case "stripe":
		var ts string
		var v1 []string
		for _, kv := range strings.Split(h.Get("Stripe-Signature"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "t" {
				ts = v
			} else if k == "v1" {
				v1 = append(v1, v)
			}
		}
		want := hex.EncodeToString(mac([]byte(secret), ts, ".", string(body)))
		for _, s := range v1 {
			if s == want {
				return nil
			}
		}
		return fmt.Errorf("no v1 matches")
	case "standard-webhooks", "svix":
		pre := "webhook-"
		if profile == "svix" {
			pre = "svix-"
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			return err
		}
		want := "v1," + base64.StdEncoding.EncodeToString(mac(key, h.Get(pre+"id"), ".", h.Get(pre+"timestamp"), ".", string(body)))
		for _, s := range strings.Fields(h.Get(pre + "signature")) {
			if s == want {
				return nil
			}
		}
		return fmt.Errorf("no v1 matches")
	case "github":
		if err := eq(h.Get("X-Hub-Signature-256"), "sha256="+hex.EncodeToString(mac([]byte(secret), string(body)))); err != nil {
			return err
		}
		return nil
	case "shopify":
		return eq(h.Get("X-Shopify-Hmac-Sha256"), base64.StdEncoding.EncodeToString(mac([]byte(secret), string(body))))
	case "slack":
		ts := h.Get("X-Slack-Request-Timestamp")
		return eq(h.Get("X-Slack-Signature"), "v0="+hex.EncodeToString(mac([]byte(secret), "v0:"+ts+":"+string(body))))
	case "paddle":
		parts := strings.Split(h.Get("Paddle-Signature"), ";")
		ts := strings.TrimPrefix(parts[0], "ts=")
		return eq(strings.TrimPrefix(parts[1], "h1="), hex.EncodeToString(mac([]byte(secret), ts+":"+string(body))))
	case "adyen", "adyen-legacy":
		var b struct {
			NotificationItems []struct {
				NotificationRequestItem struct {
					PSPReference, OriginalReference, MerchantAccountCode, MerchantReference, EventCode, Success string
					Amount                                                                                      struct {
						Value    int64
						Currency string
					}
					AdditionalData map[string]string
				}
			}
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return err
		}
		it := b.NotificationItems[0].NotificationRequestItem
		key, err := hex.DecodeString(secret)
		if err != nil {
			return err
		}
		content := strings.Join([]string{it.PSPReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
			strconv.FormatInt(it.Amount.Value, 10), it.Amount.Currency, it.EventCode, it.Success}, ":")
		return eq(it.AdditionalData["hmacSignature"], base64.StdEncoding.EncodeToString(mac(key, content)))
	}
	return fmt.Errorf("no verifier for %s", profile)
}
