package simulator

import (
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha1" //nolint:gosec // the provider's algorithm, verified here
	"crypto/sha256"
	"crypto/x509"
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

// ecdsaSigned is a SendGrid-shaped contract: ECDSA P-256 over the
// timestamp and a batch body.
const ecdsaSigned = `
id: x-ecdsa
name: ECDSA-signed batch
body:
  batch: true
  envelope: '{"sg_event_id": {{json .ID}}, "event": {{json .Type}}}'
event_id: {json_path: $.sg_event_id}
event_type: {json_path: $.event}
timestamp: {header: X-Ts}
signature:
  algorithm: ecdsa-p256
  key: base64
  signed: "{{.Timestamp}}{{.Body}}"
  encoding: base64
  header: X-Sig
  source: providers.yaml sendgrid.signature
sources: [providers.yaml sendgrid]
`

// TestForgedDeliveriesOfAnECDSAProfile: the wrong-secret and
// missing-signature faults work for a profile whose secret is a DER key
// (one changed character would be no key at all): the receiver, holding
// the public key, refuses the forged delivery and gets none unsigned.
func TestForgedDeliveriesOfAnECDSAProfile(t *testing.T) {
	cs, err := profiles.ParseContracts([]byte(ecdsaSigned))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiles.NewContractProfile(cs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := p.(profiles.SecretMaker).MakeSecret(crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubB64, err := p.(profiles.PublicKeyer).PublicKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := base64.StdEncoding.DecodeString(pubB64)
	pk, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var verdicts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig, _ := base64.StdEncoding.DecodeString(r.Header.Get("X-Sig"))
		d := sha256.Sum256([]byte(r.Header.Get("X-Ts") + string(body)))
		v := "refused"
		switch {
		case r.Header.Get("X-Sig") == "":
			v = "unsigned"
		case ecdsa.VerifyASN1(pk.(*ecdsa.PublicKey), d[:], sig):
			v = "accepted"
		}
		mu.Lock()
		verdicts = append(verdicts, v)
		mu.Unlock()
	}))
	defer srv.Close()
	r, err := NewRunner(Target{URL: srv.URL + "/hooks", Profile: p, Secrets: []string{secret}, Account: "a"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ev := profiles.Event{Source: "x-ecdsa", Account: "a", ID: "sg_1", Type: "delivered", ObjectID: "o", Created: time.Now()}
	for _, f := range []Faults{{}, {WrongSecret: true}, {MissingSignature: true}} {
		if _, err := r.Send(context.Background(), ev, SendOptions{Shape: Shape{Faults: f}}); err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(verdicts, ",") != "accepted,refused,unsigned" {
		t.Fatalf("verdicts %v", verdicts)
	}
}
