package simulator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v85/webhook"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// got is one request a capturing receiver saw, with its own verifier's verdict.
type got struct {
	header http.Header
	body   []byte
	err    error
}

// capturing is a loopback receiver that verifies each request with check (400
// when it fails, else the status fail returns for the n-th request, 200 by
// default) and keeps what it saw.
func capturing(t *testing.T, check func([]byte, http.Header) error, fail func(n int) int) (*httptest.Server, func() []got) {
	t.Helper()
	var mu sync.Mutex
	var seenReqs []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := check(body, r.Header)
		mu.Lock()
		seenReqs = append(seenReqs, got{r.Header.Clone(), body, err})
		n := len(seenReqs)
		mu.Unlock()
		switch {
		case err != nil:
			http.Error(w, "rejected", http.StatusBadRequest)
		case fail != nil && fail(n) != 0:
			w.WriteHeader(fail(n))
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []got { mu.Lock(); defer mu.Unlock(); return append([]got(nil), seenReqs...) }
}

func runPlan(t *testing.T, url string, p profiles.Profile, secret string, plan *Plan) *history.History {
	t.Helper()
	r, err := NewRunner(Target{URL: url, Profile: p, Secrets: []string{secret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

const stripeSecret = "whsec_test_hookcert_secret"

// A target's own object, with whitespace and key order a re-encoding would lose.
const targetObject = `{"id": "in_77", "object": "invoice", "amount_due": 1999, "lines": {"data": [{"sku": "a<b"}]}, "customer": null}`

func TestStripeDeclaredObjectVerifiesAndSitsAtDataObject(t *testing.T) {
	srv, seenReqs := capturing(t, func(b []byte, h http.Header) error {
		_, err := webhook.ConstructEvent(b, h.Get("Stripe-Signature"), stripeSecret)
		return err
	}, nil)
	created := time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)
	h := runPlan(t, srv.URL, realProfile(t, "stripe"), stripeSecret, &Plan{Seed: 3,
		Events: []EventSpec{{Name: "inv", Type: "invoice.paid", Object: json.RawMessage(targetObject), Created: created}},
		Steps:  []Step{{Event: "inv"}}})
	if !h.AllAcknowledged() {
		t.Fatalf("not acknowledged: %+v", h.Attempts)
	}
	g := seenReqs()[0]
	ev, err := webhook.ConstructEvent(g.body, g.header.Get("Stripe-Signature"), stripeSecret)
	if err != nil {
		t.Fatal(err)
	}
	if string(ev.Data.Raw) != targetObject {
		t.Fatalf("data.object is\n%s\nwant the declared bytes\n%s", ev.Data.Raw, targetObject)
	}
	if ev.ID != h.Attempts[0].Key.EventID || string(ev.Type) != "invoice.paid" || ev.Created != created.Unix() {
		t.Fatalf("envelope: id %s type %s created %d; want %s invoice.paid %d", ev.ID, ev.Type, ev.Created, h.Attempts[0].Key.EventID, created.Unix())
	}
	if h.Attempts[0].BodyBytes != len(g.body) {
		t.Fatalf("body_bytes %d, receiver read %d", h.Attempts[0].BodyBytes, len(g.body))
	}
}

func TestGitHubAndShopifyBodyIsTheDeclaredObject(t *testing.T) {
	const secret = "hookcert-test-secret"
	mac := func(b []byte) []byte { m := hmac.New(sha256.New, []byte(secret)); m.Write(b); return m.Sum(nil) }
	checks := map[string]func([]byte, http.Header) error{
		"github": func(b []byte, h http.Header) error {
			if h.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac(b)) {
				return io.ErrUnexpectedEOF
			}
			return nil
		},
		"shopify": func(b []byte, h http.Header) error {
			if h.Get("X-Shopify-Hmac-Sha256") != base64.StdEncoding.EncodeToString(mac(b)) {
				return io.ErrUnexpectedEOF
			}
			return nil
		},
	}
	for id, check := range checks {
		t.Run(id, func(t *testing.T) {
			srv, seenReqs := capturing(t, check, nil)
			h := runPlan(t, srv.URL, realProfile(t, id), secret, &Plan{Seed: 4,
				Events: []EventSpec{{Name: "o", Type: "orders.create", Object: json.RawMessage(targetObject)}},
				Steps:  []Step{{Event: "o"}}})
			g := seenReqs()[0]
			if !h.AllAcknowledged() || g.err != nil {
				t.Fatalf("not acknowledged (%v): %+v", g.err, h.Attempts)
			}
			if string(g.body) != targetObject {
				t.Fatalf("body\n%s\nwant exactly the declared object", g.body)
			}
		})
	}
}

func TestStandardWebhooksDeclaredObjectVerifiesWithItsLibrary(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv, seenReqs := capturing(t, func(b []byte, h http.Header) error { return wh.Verify(b, h) }, nil)
	created := time.Date(2025, 6, 1, 12, 30, 0, 250_000_000, time.UTC)
	h := runPlan(t, srv.URL, realProfile(t, "standard-webhooks"), secret, &Plan{Seed: 5,
		Events: []EventSpec{{Name: "e", Type: "invoice.paid", Object: json.RawMessage(targetObject), Created: created}},
		Steps:  []Step{{Event: "e"}}})
	g := seenReqs()[0]
	if !h.AllAcknowledged() || g.err != nil {
		t.Fatalf("not acknowledged (%v): %+v", g.err, h.Attempts)
	}
	var env struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(g.body, &env); err != nil {
		t.Fatal(err)
	}
	if string(env.Data) != targetObject || env.Type != "invoice.paid" || !env.Timestamp.Equal(created) {
		t.Fatalf("envelope %+v", env)
	}
}

func TestAheadBySignsInTheFuture(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv, seenReqs := capturing(t, func(b []byte, h http.Header) error { return wh.Verify(b, h) }, nil)
	r, err := NewRunner(Target{URL: srv.URL, Profile: realProfile(t, "standard-webhooks"), Secrets: []string{secret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ev := profiles.Event{Source: "standard-webhooks", Account: "acct_A", ID: "msg_ahead", Type: "t", ObjectID: "o", Created: time.Now()}
	for i, c := range []struct {
		ahead  time.Duration
		reject bool
	}{{10 * time.Minute, true}, {time.Minute, false}} {
		before := time.Now()
		a, err := r.Send(context.Background(), ev, SendOptions{Shape: Shape{Faults: Faults{AheadBy: Duration(c.ahead)}, Timeout: Duration(5 * time.Second)}})
		if err != nil {
			t.Fatal(err)
		}
		g := seenReqs()[i]
		ts, _ := strconv.ParseInt(g.header.Get("Webhook-Timestamp"), 10, 64)
		if d := time.Unix(ts, 0).Sub(before); d < c.ahead-time.Second || d > c.ahead+2*time.Second {
			t.Fatalf("ahead %v: signed timestamp is %v from the send", c.ahead, d)
		}
		if d := a.SignedAt.Sub(before); d < c.ahead || d > c.ahead+time.Second {
			t.Fatalf("ahead %v: record's signed_at %v from the send", c.ahead, d)
		}
		if (g.err != nil) != c.reject {
			t.Fatalf("ahead %v: library said %v, want rejected=%v", c.ahead, g.err, c.reject)
		}
		if want := []string{"ahead_by:" + c.ahead.String()}; !reflect.DeepEqual(a.Faults, want) {
			t.Fatalf("faults %v, want %v", a.Faults, want)
		}
	}
	for f, want := range map[Faults]string{
		{AheadBy: -1}:                    "ahead_by must not be negative",
		{AheadBy: 1, StaleBy: 1}:         "must not both be set",
		{OversizeBytes: MaxPadBytes + 1}: "oversize_bytes must be between",
	} {
		if _, err := r.Send(context.Background(), ev, SendOptions{Shape: Shape{Faults: f}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("faults %+v: %v, want %q", f, err, want)
		}
	}
}

func TestPadToExactSizeVerifiesAndRetriesPadded(t *testing.T) {
	srv, seenReqs := capturing(t, func(b []byte, h http.Header) error {
		_, err := webhook.ConstructEvent(b, h.Get("Stripe-Signature"), stripeSecret)
		return err
	}, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	const size = 64 << 10
	h := runPlan(t, srv.URL, realProfile(t, "stripe"), stripeSecret, &Plan{Seed: 6, TimeScale: 1e6, RetryDelays: []Duration{Duration(time.Second)},
		Events: []EventSpec{{Name: "e", Type: "payment_intent.succeeded", Amount: 10}},
		Steps:  []Step{{Event: "e", Shape: Shape{PadTo: size}, Retry: true}}})
	reqs := seenReqs()
	if len(reqs) != 2 || len(h.Attempts) != 2 || !h.AllAcknowledged() {
		t.Fatalf("%d requests, attempts %+v", len(reqs), h.Attempts)
	}
	for i, g := range reqs {
		if len(g.body) != size || g.err != nil {
			t.Fatalf("request %d: %d bytes, verifier %v", i, len(g.body), g.err)
		}
		a := h.Attempts[i]
		if a.BodyBytes != size || a.PadTo != size || len(a.Faults) != 0 {
			t.Fatalf("attempt %d: body_bytes %d pad_to %d faults %v", i, a.BodyBytes, a.PadTo, a.Faults)
		}
		var v map[string]any
		if err := json.Unmarshal(g.body, &v); err != nil || v["hookcert_padding"] != nil {
			t.Fatalf("padded body decodes to %v (%v): the JSON value must be unchanged", v, err)
		}
		if got, want := bytes.TrimSpace(g.body[1:]), mustBody(t, h.Attempts[i].Key.EventID)[1:]; len(got) != len(want) {
			t.Fatalf("the padding is not pure whitespace after the opening brace")
		}
	}

	// Too small a pad, and bounds.
	r, err := NewRunner(Target{URL: srv.URL, Profile: realProfile(t, "stripe"), Secrets: []string{stripeSecret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ev := profiles.Event{Source: "stripe", Account: "acct_A", ID: "evt_pad", Type: "t.x", ObjectID: "o", Created: time.Now()}
	for o, want := range map[SendOptions]string{
		{Shape: Shape{PadTo: 10}}:                                        "pad_to: must be at least the body size",
		{Shape: Shape{PadTo: -1}}:                                        "pad_to must be between 0 and",
		{Shape: Shape{PadTo: MaxPadBytes + 1}}:                           "pad_to must be between 0 and",
		{Shape: Shape{PadTo: 9000, Faults: Faults{OversizeBytes: 9000}}}: "must not both be set",
	} {
		if _, err := r.Send(context.Background(), ev, o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", o, err, want)
		}
	}
	plan := &Plan{Events: []EventSpec{{Name: "e", Type: "t"}}, Steps: []Step{{Event: "e", Shape: Shape{PadTo: -1}}}}
	if err := plan.Validate(); err == nil || !strings.Contains(err.Error(), "steps[0].pad_to") {
		t.Fatalf("plan validation: %v", err)
	}
}

// mustBody is the unpadded Stripe body the padding test's plan renders.
func mustBody(t *testing.T, id string) []byte {
	t.Helper()
	rp, err := (&Plan{Seed: 6, Events: []EventSpec{{Name: "e", ID: id, Type: "payment_intent.succeeded", Amount: 10}},
		Steps: []Step{{Event: "e"}}}).Resolve("stripe", "acct_A", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := realProfile(t, "stripe").Body(rp.Events["e"])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPadWhitespace(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:    `{   "a":1}`,
		` [1]`:       ` [  1]`,
		`"s"`:        `"s"   `,
		`{"a":1}   `: `{"a":1}   `,
	} {
		b, err := padWhitespace([]byte(in), len(want))
		if err != nil || string(b) != want {
			t.Errorf("padWhitespace(%q) = %q, %v; want %q", in, b, err, want)
		}
	}
}

// A form grows by a parameter of its own: its fields keep their values, the
// padding is one more field, and the length is exact.
func TestPadForm(t *testing.T) {
	for in, want := range map[string]string{
		"A=1&B=two": "A=1&B=two&hookcert_padding=xxxx",
		"":          "hookcert_padding=xx",
	} {
		b, err := padForm([]byte(in), len(want))
		if err != nil || string(b) != want {
			t.Errorf("padForm(%q) = %q, %v; want %q", in, b, err, want)
		}
		q, err := url.ParseQuery(string(b))
		if err != nil || (in != "" && q.Get("B") != "two") {
			t.Errorf("padForm(%q) = %q: the form's fields changed (%v)", in, b, q)
		}
	}
	if _, err := padForm([]byte("A=1"), 10); err == nil {
		t.Error("padForm to fewer bytes than the body and its parameter: no error")
	}
}

func TestEventSpecObjectAndCreatedRoundTrip(t *testing.T) {
	created := time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)
	plan := &Plan{Name: "p", Seed: 9,
		Events: []EventSpec{{Name: "e", Type: "invoice.paid", Object: json.RawMessage(`{"id":"in_1","total":5}`), Created: created}, {Name: "plain", Type: "t"}},
		Steps:  []Step{{Event: "e", Shape: Shape{PadTo: 4096, Faults: Faults{AheadBy: Duration(time.Minute)}}}, {Event: "plain"}}}

	// Through a history's JSON Lines (a caller's run description keeps plans there).
	raw, err := json.Marshal(map[string]any{"plan": plan})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := (&history.History{Meta: history.Meta{Seed: 9, Run: raw}}).WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"object":{"id":"in_1","total":5}`, `"created":"2025-06-01T12:30:00Z"`, `"pad_to":4096`, `"ahead_by":"1m0s"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("history lacks %s:\n%s", want, buf.String())
		}
	}
	if strings.Count(buf.String(), `"created"`) != 1 || strings.Count(buf.String(), `"object"`) != 1 {
		t.Errorf("unset created/object written:\n%s", buf.String())
	}
	h, err := history.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ Plan Plan }
	if err := json.Unmarshal(h.Meta.Run, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Plan, *plan) {
		t.Fatalf("JSON round trip changed the plan:\n%+v\n%+v", back.Plan, *plan)
	}

	// Through YAML: written as a JSON string, read back byte for byte.
	y, err := yaml.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParsePlan(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if !reflect.DeepEqual(again.Events, plan.Events) || !reflect.DeepEqual(again.Steps, plan.Steps) {
		t.Fatalf("YAML round trip changed the plan:\n%s\n%+v", y, again)
	}

	// Resolve: the declared object and creation time reach the event; zero
	// created stays the run's start.
	start := time.Date(2026, 1, 1, 0, 0, 0, 500, time.UTC)
	rp, err := plan.Resolve("stripe", "acct_A", start)
	if err != nil {
		t.Fatal(err)
	}
	if e := rp.Events["e"]; string(e.Object) != `{"id":"in_1","total":5}` || !e.Created.Equal(created) {
		t.Fatalf("resolved %+v", e)
	}
	if e := rp.Events["plain"]; e.Object != nil || !e.Created.Equal(start.Truncate(time.Second)) {
		t.Fatalf("resolved %+v", e)
	}
}

func TestPlanYAMLObjectForms(t *testing.T) {
	const doc = `
seed: 1
events:
  - name: mapped
    type: invoice.paid
    created: 2025-06-01T12:30:00Z
    object:
      id: in_1
      total: 5
      tags: [a, b]
      note: "x<y"
      nested: {ok: true, none: null}
  - name: verbatim
    type: invoice.paid
    created: "2025-06-01T12:30:00+02:00"
    object: '{ "z": 1, "a": 2 }'
steps:
  - event: mapped
    pad_to: 2048
  - event: verbatim
    faults: {ahead_by: 90s}
`
	p, err := ParsePlan([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Events[0].Object); got != `{"id":"in_1","nested":{"none":null,"ok":true},"note":"x<y","tags":["a","b"],"total":5}` {
		t.Fatalf("mapping became %s", got)
	}
	if got := string(p.Events[1].Object); got != `{ "z": 1, "a": 2 }` {
		t.Fatalf("string became %s", got)
	}
	if !p.Events[0].Created.Equal(time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)) || !p.Events[1].Created.Equal(time.Date(2025, 6, 1, 10, 30, 0, 0, time.UTC)) {
		t.Fatalf("created %v, %v", p.Events[0].Created, p.Events[1].Created)
	}
	if p.Steps[0].PadTo != 2048 || p.Steps[1].Faults.AheadBy != Duration(90*time.Second) {
		t.Fatalf("steps %+v", p.Steps)
	}
	for bad, want := range map[string]string{
		"object: '[1]'":          "must be a JSON object",
		"object: 'nope'":         "must be valid JSON",
		"object: [1, 2]":         "must be a mapping or a string",
		"object: 7":              "must be a mapping or a string",
		"objet: {}":              "field objet not found",
		"created: yesterday":     "created must be an RFC 3339 time",
		"object: {a: .inf}":      "not representable as JSON",
		"object: {}\n    bad: 1": "field bad not found",
	} {
		doc := "seed: 1\nevents:\n  - name: e\n    type: t\n    " + bad + "\nsteps:\n  - event: e\n"
		if _, err := ParsePlan([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
	if err := (&Plan{Events: []EventSpec{{Name: "e", Type: "t", Object: json.RawMessage(`null`)}}, Steps: []Step{{Event: "e"}}}).Validate(); err == nil || !strings.Contains(err.Error(), "events[0].object") {
		t.Fatalf("JSON null object: %v", err)
	}
}

func TestPreviewSendsNothingAndShowsTheWire(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	defer l.Close()
	r, err := NewRunner(Target{URL: "http://user:pw@" + l.Addr().String() + "/hooks?x=1", Profile: realProfile(t, "stripe"),
		Secrets: []string{stripeSecret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan := &Plan{Seed: 8,
		Events: []EventSpec{{Name: "e", Type: "invoice.paid", Object: json.RawMessage(targetObject)}},
		Steps: []Step{{Name: "first", Event: "e", Copies: 3, Shape: Shape{PadTo: 1000}},
			{Event: "e", Shape: Shape{Faults: Faults{Tamper: true}}},
			{Replay: &Replay{Of: "first", OriginalTimestamp: true}, Shape: Shape{Faults: Faults{StaleBy: Duration(time.Hour)}}}}}
	reqs, err := r.Preview(plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	q := reqs[0]
	if q.Method != "POST" || q.URL != "http://user:xxxxx@"+l.Addr().String()+"/hooks?x=1" || q.Copies != 3 || q.Event != "e" || q.StepName != "first" {
		t.Fatalf("request %+v", q)
	}
	if len(q.Body) != 1000 || q.Header.Get("Content-Length") != "1000" || q.Header.Get("Host") != l.Addr().String() || q.PadTo != 1000 {
		t.Fatalf("body %d bytes, headers %v", len(q.Body), q.Header)
	}
	if _, err := webhook.ConstructEvent(q.Body, q.Header.Get("Stripe-Signature"), stripeSecret); err != nil {
		t.Fatalf("previewed request does not verify: %v", err)
	}
	if _, err := webhook.ConstructEvent(reqs[1].Body, reqs[1].Header.Get("Stripe-Signature"), stripeSecret); err == nil || !reflect.DeepEqual(reqs[1].Faults, []string{"tamper"}) {
		t.Fatalf("tampered preview verifies (%v) or lacks its fault %v", err, reqs[1].Faults)
	}
	if d := q.SignedAt.Sub(reqs[2].SignedAt); d != time.Hour || reqs[2].Event != "e" {
		t.Fatalf("replay with the original timestamp, stale by 1h: %v apart, event %q", d, reqs[2].Event)
	}
	for _, q := range reqs {
		if strings.Contains(string(q.Body), stripeSecret) || strings.Contains(q.URL, "pw") {
			t.Fatal("a secret in the preview")
		}
		for k, v := range q.Header {
			if strings.Contains(k+strings.Join(v, ","), stripeSecret) {
				t.Fatalf("secret in header %s", k)
			}
		}
	}
	select {
	case <-accepted:
		t.Fatal("Preview connected to the target")
	case <-time.After(50 * time.Millisecond):
	}
	if len(r.History().Attempts) != 0 {
		t.Fatal("Preview recorded attempts")
	}
}
