package simulator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// coverProfile signs everything a contract can list as an input: the method,
// the full URL, the event ID header, a nonce header, the timestamp and the
// body, one v1= signature per secret. Its Inputs say so; its handshake is a
// signed POST answered with the challenge as the body.
type coverProfile struct{ testProfile }

func (coverProfile) ID() string { return "coverprof" }

func (p coverProfile) Facts() profiles.Facts {
	f := p.testProfile.Facts()
	f.SignatureHeader = "X-Cover-Signature"
	f.MultipleSignatures = true
	return f
}

func coverSign(secret, method, url, id, nonce string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s\n%s\n%s\n%s\n%d\n", method, url, id, nonce, t)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (p coverProfile) Headers(ev profiles.Event, body []byte, at profiles.Attempt, secrets []string) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("no secret")
	}
	h := http.Header{}
	h.Set("X-Test-Event-Id", ev.ID)
	h.Set("X-Cover-Nonce", "n"+ev.ID)
	sig := "t=" + strconv.FormatInt(at.SignedAt.Unix(), 10)
	for _, s := range secrets {
		sig += ",v1=" + coverSign(s, cmpOr(at.Method, "POST"), at.URL, ev.ID, "n"+ev.ID, at.SignedAt.Unix(), body)
	}
	h.Set("X-Cover-Signature", sig)
	return h, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (coverProfile) Inputs() []profiles.Input {
	return []profiles.Input{
		{Name: "key", Signed: true},
		{Name: "body", Body: true, Signed: true},
		{Name: "id", Header: "X-Test-Event-Id", Signed: true, Identity: true},
		{Name: "timestamp", Header: "X-Cover-Signature", Signed: true},
		{Name: "url", URL: true, Signed: true},
		{Name: "header:X-Cover-Nonce", Header: "X-Cover-Nonce", Signed: true},
		{Name: "object", JSONPath: "$.data.object.id", Signed: true},
		{Name: "method", Signed: true},
	}
}

// coverVerify checks a request of coverProfile; "" when valid.
func coverVerify(r *http.Request, body []byte, secret string) string {
	var ts int64
	var sigs []string
	for _, part := range strings.Split(r.Header.Get("X-Cover-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts, _ = strconv.ParseInt(v, 10, 64)
		case "v1":
			sigs = append(sigs, v)
		}
	}
	url := "http://" + r.Host + r.URL.RequestURI()
	want := coverSign(secret, r.Method, url, r.Header.Get("X-Test-Event-Id"), r.Header.Get("X-Cover-Nonce"), ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return ""
		}
	}
	return fmt.Sprintf("none of %d signatures matches", len(sigs))
}

// coverRequest is one request coverProfile's receiver saw.
type coverRequest struct {
	method  string
	uri     string
	header  http.Header
	body    []byte
	invalid string
}

func coverReceiver(t *testing.T) (*httptest.Server, func() []coverRequest) {
	t.Helper()
	var mu sync.Mutex
	var got []coverRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bad := coverVerify(r, body, testSecret)
		mu.Lock()
		got = append(got, coverRequest{r.Method, r.URL.RequestURI(), r.Header.Clone(), body, bad})
		mu.Unlock()
		if bad != "" {
			http.Error(w, bad, http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []coverRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]coverRequest(nil), got...)
	}
}

// Every input changed after signing breaks the signature, and changes only
// that input, in its format: the clean delivery verifies.
func TestAlterEveryInputOverHTTP(t *testing.T) {
	srv, seen := coverReceiver(t)
	r := newTestRunner(t, srv.URL+"/hook/acct_A?tenant=1", coverProfile{})
	ctx := context.Background()
	// One event for every delivery: its created second is in the body, and a
	// second boundary between two deliveries would change it.
	ev := testEvent()
	clean, err := r.Send(ctx, ev, SendOptions{})
	if err != nil || clean.Status != 200 {
		t.Fatalf("clean delivery: %v %+v", err, clean)
	}
	base := seen()[0]
	for _, in := range (coverProfile{}).Inputs() {
		t.Run(in.Name, func(t *testing.T) {
			a, err := r.Send(ctx, ev, SendOptions{Shape: Shape{Faults: Faults{Alter: in.Name}}})
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: the change after signing must break the signature", a.Status)
			}
			if got := strings.Join(a.Faults, " "); got != "alter:"+in.Name {
				t.Errorf("faults %q, want alter:%s", got, in.Name)
			}
			all := seen()
			req := all[len(all)-1]
			changed := describeChange(base, req)
			var want string
			switch in.Name {
			case "key":
				want = "header X-Cover-Signature"
			case "body":
				want = "body"
			case "id":
				want = "header X-Test-Event-Id"
			case "timestamp":
				want = "header X-Cover-Signature"
			case "url":
				want = "uri"
			case "header:X-Cover-Nonce":
				want = "header X-Cover-Nonce"
			case "object":
				want = "body"
			case "method":
				want = "method"
			}
			// The signature header changes with the timestamp too: it is signed over.
			if in.Name != "key" && in.Name != "timestamp" {
				changed = strings.ReplaceAll(changed, "header X-Cover-Signature", "")
			}
			if strings.TrimSpace(strings.Join(strings.Fields(changed), " ")) != want {
				t.Errorf("changed: %q, want %q alone", changed, want)
			}
		})
	}
}

// describeChange names what differs between two requests of one event sent
// at the same second, besides the signature.
func describeChange(a, b coverRequest) string {
	var out []string
	if a.method != b.method {
		out = append(out, "method")
	}
	if a.uri != b.uri {
		out = append(out, "uri")
	}
	for _, k := range []string{"X-Test-Event-Id", "X-Cover-Nonce", "X-Cover-Signature"} {
		if a.header.Get(k) != b.header.Get(k) {
			out = append(out, "header "+k)
		}
	}
	if string(a.body) != string(b.body) {
		out = append(out, "body")
	}
	return strings.Join(out, " ")
}

func TestAlterValues(t *testing.T) {
	at := time.Unix(1700000000, 0)
	for _, c := range []struct {
		name string
		in   profiles.Input
		body string
		hdr  string // X-H as sent
		want string // body or header after
	}{
		{"json string id", profiles.Input{Name: "id", JSONPath: "$.id"}, `{"id":"evt_abc","n":1}`, "", `{"id":"evt_abd","n":1}`},
		{"json nested, spaces", profiles.Input{Name: "id", JSONPath: "$.a.b"}, `{"x": [1,{"b":2}], "a" : { "b" : "q9" } }`, "", `{"x": [1,{"b":2}], "a" : { "b" : "q8" } }`},
		{"json escape left alone", profiles.Input{Name: "id", JSONPath: "$.id"}, `{"id":"a1\n"}`, "", `{"id":"a0\n"}`},
		{"json batch element", profiles.Input{Name: "id", JSONPath: "$.id"}, `[{"id":"e1"}]`, "", `[{"id":"e0"}]`},
		{"json number timestamp", profiles.Input{Name: "timestamp", JSONPath: "$.ts"}, `{"ts":1700000000}`, "", `{"ts":1700000001}`},
		{"header id", profiles.Input{Name: "id", Header: "X-H"}, `{}`, "msg_2a-", "msg_2b-"},
		{"timestamp inside a header", profiles.Input{Name: "timestamp", Header: "X-H"}, `{}`, "t=1700000000,v1=abc", "t=1700000001,v1=abc"},
		{"timestamp in milliseconds", profiles.Input{Name: "timestamp", Header: "X-H"}, `{}`, "1700000000000", "1700000000001"},
		{"form field", profiles.Input{Name: "form:Amount", Form: "Amount"}, `To=%2B1555&Amount=100&From=x`, "", `To=%2B1555&Amount=101&From=x`},
		{"form field, escapes kept", profiles.Input{Name: "form:To", Form: "To"}, `To=%2B1%2F&Amount=100`, "", `To=%2B0%2F&Amount=100`},
		{"form field empty", profiles.Input{Name: "form:X", Form: "X"}, `X=&Y=1`, "", `X=x&Y=1`},
		{"whole body", profiles.Input{Name: "body", Body: true}, `{"a":12,"b":"z"}`, "", `{"a":13,"b":"z"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.hdr != "" {
				h.Set("X-H", c.hdr)
			}
			b, u, err := alterInput(c.in, []byte(c.body), h, profiles.Attempt{SignedAt: at})
			if err != nil {
				t.Fatal(err)
			}
			if u != "" {
				t.Errorf("url %q, want none", u)
			}
			got := string(b)
			if c.hdr != "" {
				got = h.Get("X-H")
				if string(b) != c.body {
					t.Errorf("body changed: %s", b)
				}
			}
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
			if strings.HasPrefix(c.body, "{") || strings.HasPrefix(c.body, "[") {
				if !json.Valid(b) {
					t.Errorf("not valid JSON: %s", b)
				}
			}
		})
	}
	u, err := func() (string, error) {
		_, u, err := alterInput(profiles.Input{Name: "url", URL: true}, nil, http.Header{}, profiles.Attempt{URL: "http://h/p?a=1"})
		return u, err
	}()
	if err != nil || u != "http://h/p?a=1&"+alterQuery {
		t.Errorf("url: %q %v", u, err)
	}
}

// Bad input names the field and the rule.
func TestAlterErrors(t *testing.T) {
	r := newTestRunner(t, "http://127.0.0.1:1/x", coverProfile{})
	plain := newTestRunner(t, "http://127.0.0.1:1/x", testProfile{})
	ctx := context.Background()
	for _, c := range []struct {
		r    *Runner
		f    Faults
		want string
	}{
		{r, Faults{Alter: "nonce"}, `faults.alter: profile coverprof has no input "nonce" (its inputs: key, body, id, timestamp, url, header:X-Cover-Nonce, object, method)`},
		{plain, Faults{Alter: "body"}, "faults.alter: profile testprof lists no inputs"},
		{plain, Faults{Signature: SignatureAllInvalid}, "faults.signature: all-invalid needs a profile that sends several signatures; testprof sends one"},
		{plain, Faults{Signature: SignaturePrefix}, "faults.signature: profile testprof sends its signature in the body, not a header"},
		{r, Faults{Signature: "half"}, `faults.signature must be one of`},
		{r, Faults{Alter: "body", Tamper: true}, "alter and signature must each be the only signature fault"},
	} {
		_, err := c.r.Send(ctx, testEvent(), SendOptions{Shape: Shape{Faults: c.f}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to say %q", c.f, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), testSecret) {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

// The signature faults: the format prefix changed, the signature cut, two
// invalid signatures refused, one valid among invalid ones accepted.
func TestSignatureFaultsOverHTTP(t *testing.T) {
	srv, seen := coverReceiver(t)
	r := newTestRunner(t, srv.URL+"/hook", coverProfile{})
	ctx := context.Background()
	// One signed time for every delivery: the signatures compare byte for byte.
	at := time.Now().Truncate(time.Second)
	clean, err := r.Send(ctx, testEvent(), SendOptions{SignedAt: at})
	if err != nil || clean.Status != 200 {
		t.Fatalf("clean: %v %+v", err, clean)
	}
	cleanSig := seen()[0].header.Get("X-Cover-Signature")
	_, sig, _ := strings.Cut(cleanSig, ",v1=")
	for _, c := range []struct {
		fault  string
		status int
		check  func(v string) error
	}{
		{SignaturePrefix, 401, func(v string) error {
			if !strings.Contains(v, ",v0="+sig) {
				return fmt.Errorf("want v0= before the same signature, got %s", v)
			}
			return nil
		}},
		{SignatureTruncate, 401, func(v string) error {
			if !strings.HasSuffix(v, ",v1="+sig[:len(sig)/2]) {
				return fmt.Errorf("want the signature cut to half, got %s", v)
			}
			return nil
		}},
		{SignatureAllInvalid, 401, func(v string) error {
			if n := strings.Count(v, "v1="); n != 2 || strings.Contains(v, sig) {
				return fmt.Errorf("want two signatures, none valid, got %s", v)
			}
			return nil
		}},
		{SignatureValidAmongInvalid, 200, func(v string) error {
			if n := strings.Count(v, "v1="); n != 2 || !strings.HasSuffix(v, ",v1="+sig) {
				return fmt.Errorf("want an invalid signature then the valid one, got %s", v)
			}
			return nil
		}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			a, err := r.Send(ctx, testEvent(), SendOptions{Shape: Shape{Faults: Faults{Signature: c.fault}}, SignedAt: at})
			if err != nil {
				t.Fatal(err)
			}
			all := seen()
			v := all[len(all)-1].header.Get("X-Cover-Signature")
			if a.Status != c.status {
				t.Errorf("status %d, want %d", a.Status, c.status)
			}
			if err := c.check(v); err != nil {
				t.Error(err)
			}
		})
	}
}

// A plan without the new faults is written as before.
func TestNewFaultsLeavePlansAlone(t *testing.T) {
	b, err := json.Marshal(Step{Event: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "alter") || strings.Contains(string(b), "signature") {
		t.Errorf("unset faults written: %s", b)
	}
	b, _ = json.Marshal(Step{Event: "e", Shape: Shape{Faults: Faults{Alter: "id", Signature: ""}}})
	if !strings.Contains(string(b), `"faults":{"alter":"id"}`) {
		t.Errorf("alter not written: %s", b)
	}
}

func TestSignatureFormat(t *testing.T) {
	for _, c := range []struct {
		p    profiles.Profile
		want string
	}{{coverProfile{}, "v1="}, {testProfile{}, ""}} {
		got, err := SignatureFormat(c.p, []string{testSecret})
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.p.ID(), got, err, c.want)
		}
	}
	for id, want := range map[string]string{"stripe": "v1=", "github": "sha256=", "shopify": "", "slack": "v0=", "standard-webhooks": "v1,"} {
		p, err := profiles.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := profiles.GenerateSecret(id, strings.NewReader(strings.Repeat("k", 256)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := SignatureFormat(p, []string{sec}); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", id, got, err, want)
		}
	}
}

// Every registered profile that sends several signatures gets two wrong
// secrets distinct from its own and from each other: a wrong secret made
// twice must not be the right one again (a flip of one byte would be).
func TestAllInvalidSignaturesUseTwoWrongKeys(t *testing.T) {
	for _, p := range profiles.All() {
		facts := p.Facts()
		if !facts.MultipleSignatures {
			continue
		}
		secret, err := profiles.GenerateSecret(p.ID(), rand.Reader)
		if err != nil {
			t.Fatalf("%s: %v", p.ID(), err)
		}
		two, err := alterSecrets(p, &facts, []string{secret}, Faults{Signature: SignatureAllInvalid})
		if err != nil {
			t.Errorf("%s: %v", p.ID(), err)
			continue
		}
		if len(two) != 2 || two[0] == secret || two[1] == secret || two[0] == two[1] {
			t.Errorf("%s: all-invalid secrets are not two wrong keys (equal to the endpoint's: %v, %v; to each other: %v)", p.ID(), two[0] == secret, two[1] == secret, two[0] == two[1])
		}
	}
}
