package simulator

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the provider's algorithm, verified here
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// urlSigned is a Twilio-shaped contract: a form body signed together with
// the full URL the request is posted to.
const urlSigned = `
id: x-url-signed
name: URL-signed form
body:
  format: form
  fields:
    EventSid: "{{.ID}}"
    Status: "{{.Status}}"
event_id: {form: EventSid}
event_type: {header: X-Type}
signature:
  algorithm: hmac-sha1
  signed: "{{.URL}}{{.Form}}"
  encoding: base64
  header: X-Twilio-Signature
  source: providers.yaml twilio.signature
sources: [https://www.twilio.com/docs/usage/webhooks/webhooks-security]
`

// TestAttemptsCarryTheURLTheReceiverSees: the runner gives the profile the
// URL a request is posted to, as the receiver reads it (no userinfo, the
// query kept), so a URL-signing provider's signature verifies there, on
// single sends, copies released together and seeded deliveries alike.
func TestAttemptsCarryTheURLTheReceiverSees(t *testing.T) {
	cs, err := profiles.ParseContracts([]byte(urlSigned))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiles.NewContractProfile(cs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "auth-token-for-tests"
	var mu sync.Mutex
	var bad []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		vals, _ := url.ParseQuery(string(body))
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		content := "http://" + r.Host + r.URL.RequestURI()
		for _, k := range keys {
			content += k + vals.Get(k)
		}
		m := hmac.New(sha1.New, []byte(secret))
		m.Write([]byte(content))
		mu.Lock()
		defer mu.Unlock()
		n++
		if r.Method != http.MethodPost || r.Header.Get("X-Twilio-Signature") != base64.StdEncoding.EncodeToString(m.Sum(nil)) {
			bad = append(bad, r.Method+" "+content)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	target := strings.Replace(srv.URL, "http://", "http://user:pw@", 1) + "/hooks/twilio?acct=AC1&x=a%20b"
	r, err := NewRunner(Target{URL: target, Profile: p, Secrets: []string{secret}, Account: "AC1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	ev := profiles.Event{Source: "x-url-signed", Account: "AC1", ID: "EV1", Type: "call.completed", ObjectID: "CA1",
		Status: "completed", Created: time.Now()}
	if a, err := r.Send(ctx, ev, SendOptions{}); err != nil || a.Status != http.StatusOK {
		t.Fatalf("send: %+v %v", a, err)
	}
	ev.ID = "EV2"
	if as, _, err := r.SendCopies(ctx, ev, 3, SendOptions{}); err != nil || len(as) != 3 {
		t.Fatalf("copies: %v", err)
	}
	ev.ID = "EV3"
	if _, _, err := r.Deliver(ctx, 7, []Delivery{{Event: ev}}, nil); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 5 || len(bad) > 0 {
		t.Fatalf("%d requests, refused: %q", n, bad)
	}
}
