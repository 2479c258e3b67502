package profiles

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The oracle (testdata/oracle/verify.mjs) verifies requests the way each
// provider's receivers do, with the provider's own npm library where one
// exists and node:crypto following the provider's docs elsewhere; it shares
// no code with the engine. These tests render requests with the engine for
// every embedded contract and hold the two to the same answers, both ways:
// what the engine signs verifies, and what it lists as signed (Inputs) is
// exactly what the oracle refuses once changed.

// oracleCase is one request for verify.mjs (see its header comment).
type oracleCase struct {
	Op          string            `json:"op,omitempty"`
	Name        string            `json:"name"`
	Profile     string            `json:"profile"`
	Method      string            `json:"method,omitempty"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        string            `json:"body,omitempty"` // base64
	Secret      string            `json:"secret,omitempty"`
	PublicKey   string            `json:"public_key,omitempty"`
	VerifyToken string            `json:"verify_token,omitempty"`
}

type oracleResult struct {
	Name        string  `json:"name"`
	OK          bool    `json:"ok"`
	Verifier    string  `json:"verifier"`
	Error       string  `json:"error"`
	Status      int     `json:"status"`
	ContentType string  `json:"content_type"`
	Answer      *string `json:"answer"` // base64; nil: the request must be refused
}

// runOracle sends cases to verify.mjs in one process and returns its
// results in order. It skips the test when Node or the oracle's packages
// are missing.
func runOracle(t *testing.T, cases []oracleCase) []oracleResult {
	t.Helper()
	dir := filepath.Join("testdata", "oracle")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; install Node.js 20+, then run npm ci in simulator/profiles/testdata/oracle")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skip("the oracle's packages are missing: run npm ci in simulator/profiles/testdata/oracle")
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("oracle: %v\n%s", err, stderr.String())
	}
	var out []oracleResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("oracle: unreadable answer: %v\n%s", err, stderr.String())
	}
	if len(out) != len(cases) {
		t.Fatalf("oracle: %d results for %d cases", len(out), len(cases))
	}
	return out
}

// flatHeaders is the first value of every header, as a receiver reads it.
func flatHeaders(h http.Header) map[string]string {
	m := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	return m
}

// seededReader is a deterministic io.Reader for secrets and key pairs.
type seededReader struct{ r *rand.ChaCha8 }

func newSeededReader(seed string) *seededReader {
	var s [32]byte
	copy(s[:], seed)
	return &seededReader{rand.NewChaCha8(s)}
}

func (s *seededReader) Read(p []byte) (int, error) { return s.r.Read(p) }

// verifyKey is what the receiver is configured with: the secret, or the
// public key of an asymmetric one.
func verifyKey(t *testing.T, p Profile, secret string) (sec, pub string) {
	t.Helper()
	if k, ok := p.(PublicKeyer); ok {
		pub, err := k.PublicKey(secret)
		if err != nil {
			t.Fatalf("%s: public key: %v", p.ID(), err)
		}
		return "", pub
	}
	return secret, ""
}

// tamperText changes the last character of s to another of its kind, so a
// tampered value keeps its format (a digit stays a digit, hex stays hex).
func tamperText(s string) string {
	if s == "" {
		return "x"
	}
	b := []byte(s)
	c := &b[len(b)-1]
	switch {
	case *c >= '0' && *c <= '8', *c >= 'a' && *c <= 'e', *c >= 'A' && *c <= 'E':
		*c++
	case *c == '9':
		*c = '0'
	case *c == 'f':
		*c = 'a'
	case *c == 'F':
		*c = 'A'
	case *c >= 'g' && *c < 'z', *c >= 'G' && *c < 'Z':
		*c++
	default:
		*c = 'b'
	}
	return string(b)
}

// tamperJSONValue changes a JSON scalar: a string's last character, a
// number's last digit.
func tamperJSONValue(raw []byte) ([]byte, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return json.Marshal(tamperText(s))
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return []byte(tamperText(n.String())), nil
	}
	return nil, fmt.Errorf("%s is neither a string nor a number", raw)
}

// request is one rendered delivery as the oracle gets it.
type request struct {
	method, url string
	header      http.Header
	body        []byte
}

func (r request) clone() request {
	return request{method: r.method, url: r.url, header: r.header.Clone(), body: append([]byte(nil), r.body...)}
}

// tamper changes exactly the one input in of r; the error says why it
// cannot (the test then fails: every input must be testable).
func tamper(r request, in Input, sigHeaders map[string]bool, signedAt time.Time) (request, error) {
	out := r.clone()
	switch {
	case in.Name == "method":
		out.method = http.MethodPut
	case in.URL:
		u, err := url.Parse(r.url)
		if err != nil {
			return out, err
		}
		u.Path += "x"
		out.url = u.String()
	case in.Body:
		// A JSON body's bytes change while its parsed content stays the
		// same (a space): a receiver that signs the raw body notices, one
		// that signs parsed fields (Mailgun) does not. A form gains a
		// parameter: every parameter is signed where the form is (Twilio).
		if bytes.HasPrefix(out.body, []byte("{")) || bytes.HasPrefix(out.body, []byte("[")) {
			out.body = append(append([]byte(nil), out.body[:1]...), append([]byte(" "), out.body[1:]...)...)
			break
		}
		out.body = append(out.body, "&HookcertTampered=1"...)
	case in.Header != "" && sigHeaders[http.CanonicalHeaderKey(in.Header)] && in.Name == "timestamp":
		// The timestamp is written inside the signature header (Stripe's t=,
		// Paddle's ts=): change it there.
		v := out.header.Get(in.Header)
		ts := strconv.FormatInt(signedAt.Unix(), 10)
		if !strings.Contains(v, ts) {
			return out, fmt.Errorf("the signature header does not hold the timestamp %s", ts)
		}
		out.header.Set(in.Header, strings.Replace(v, ts, strconv.FormatInt(signedAt.Unix()+1, 10), 1))
	case in.Header != "":
		v := out.header.Get(in.Header)
		if v == "" {
			return out, fmt.Errorf("header %s is not sent", in.Header)
		}
		out.header.Set(in.Header, tamperText(v))
	case in.JSONPath != "":
		raw, err := jsonAtPath(out.body, in.JSONPath)
		if err != nil {
			return out, fmt.Errorf("%s: %v", in.JSONPath, err)
		}
		nv, err := tamperJSONValue(raw)
		if err != nil {
			return out, fmt.Errorf("%s: %v", in.JSONPath, err)
		}
		if out.body, err = replaceAtPath(out.body, in.JSONPath, nv); err != nil {
			return out, err
		}
	case in.Form != "":
		vals, err := url.ParseQuery(string(out.body))
		if err != nil || vals.Get(in.Form) == "" {
			return out, fmt.Errorf("form field %s is not sent", in.Form)
		}
		vals.Set(in.Form, tamperText(vals.Get(in.Form)))
		out.body = []byte(vals.Encode())
	default:
		return out, fmt.Errorf("has no location to change")
	}
	if bytes.Equal(out.body, r.body) && out.url == r.url && out.method == r.method && fmt.Sprint(out.header) == fmt.Sprint(r.header) {
		return out, fmt.Errorf("changing it changed nothing")
	}
	return out, nil
}

// expectation is what a case must give: verified or refused.
type expectation struct {
	verifies bool
	why      string
}

// oracleDelivery renders one delivery of a contract's profile.
func oracleDelivery(t *testing.T, p Profile, secrets []string, now time.Time, seed string) (request, Event) {
	t.Helper()
	r := rand.New(rand.NewChaCha8([32]byte([]byte(fmt.Sprintf("%-32.32s", seed)))))
	id, err := NewEventID(p.ID(), r)
	if err != nil {
		t.Fatalf("%s: %v", p.ID(), err)
	}
	ev := Event{Source: p.ID(), Account: "acct_oracle", ID: id, Type: "payment.succeeded", ObjectID: "obj_oracle_1",
		Version: 3, Amount: 1250, Currency: "eur", Status: "succeeded", Created: now.Add(-time.Second)}
	at := Attempt{N: 1, SignedAt: now, URL: "https://receiver.example:8443/hooks/" + p.ID() + "?tenant=a&x=1", Method: http.MethodPost}
	if d, err := NewDeliveryID(p.ID(), r); err == nil {
		at.DeliveryID = d
	}
	body, h, err := Render(p, ev, at, secrets)
	if err != nil {
		t.Fatalf("%s: render: %v", p.ID(), err)
	}
	return request{method: at.Method, url: at.URL, header: h, body: body}, ev
}

func (r request) oracleCase(name, profile, secret, pub string) oracleCase {
	return oracleCase{Name: name, Profile: profile, Method: r.method, URL: r.url, Headers: flatHeaders(r.header),
		Body: base64.StdEncoding.EncodeToString(r.body), Secret: secret, PublicKey: pub}
}

// bodySigned reports whether the engine lists the body as signed.
func bodySigned(p Profile) bool {
	il, _ := p.(InputLister)
	if il == nil {
		return false
	}
	for _, in := range il.Inputs() {
		if in.Body {
			return in.Signed
		}
	}
	return false
}

// contractSigHeaders are the headers a contract writes signatures into.
func contractSigHeaders(c Contract) map[string]bool {
	m := map[string]bool{}
	if c.Signature.Header != "" {
		m[http.CanonicalHeaderKey(c.Signature.Header)] = true
	}
	for _, a := range c.Signature.Also {
		m[http.CanonicalHeaderKey(a.Header)] = true
	}
	return m
}

// resolved is a contract with its same_as chain merged.
func resolved(t *testing.T, c Contract) Contract {
	t.Helper()
	r, err := resolveContract(c, ContractOf)
	if err != nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	return r
}

func TestProvidersVerifyWithTheirOwnLibraries(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	var (
		cases  []oracleCase
		expect []expectation
	)
	add := func(c oracleCase, verifies bool, why string) {
		cases = append(cases, c)
		expect = append(expect, expectation{verifies: verifies, why: why})
	}
	for _, c := range Contracts() {
		p, err := Lookup(c.ID)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		rc := resolved(t, c)
		secret, err := GenerateSecret(c.ID, newSeededReader("oracle:"+c.ID))
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		other, err := GenerateSecret(c.ID, newSeededReader("oracle-other:"+c.ID))
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		sec, pub := verifyKey(t, p, secret)
		real, _ := oracleDelivery(t, p, []string{secret}, now, c.ID)
		add(real.oracleCase(c.ID+": the delivery as rendered", c.ID, sec, pub), true, "the engine's delivery must verify")

		wrong, _ := oracleDelivery(t, p, []string{other}, now, c.ID)
		add(wrong.oracleCase(c.ID+": signed with another key", c.ID, sec, pub), false, "another key's signature must be refused")

		if rc.Signature.Multiple {
			roll, _ := oracleDelivery(t, p, []string{other, secret}, now, c.ID)
			add(roll.oracleCase(c.ID+": a secret roll (another key, then the receiver's)", c.ID, sec, pub), true,
				"during a roll one signature per secret is sent and any may match")
		}

		il, ok := p.(InputLister)
		if !ok {
			t.Errorf("%s: the profile lists no Inputs", c.ID)
			continue
		}
		sigHeaders := contractSigHeaders(rc)
		bodySeen := false
		for _, in := range il.Inputs() {
			if in.Name == "key" {
				continue // the case signed with another key
			}
			bodySeen = bodySeen || in.Body
			tr, err := tamper(real, in, sigHeaders, now)
			if err != nil {
				t.Errorf("%s: input %s: %v", c.ID, in.Name, err)
				continue
			}
			why := "the engine lists it as unsigned: a receiver cannot notice the change"
			if in.Signed {
				why = "the engine lists it as signed: the provider's verification must refuse the change"
			}
			add(tr.oracleCase(fmt.Sprintf("%s: %s changed after signing", c.ID, in.Name), c.ID, sec, pub), !in.Signed, why)
		}
		if !bodySeen {
			t.Errorf("%s: Inputs lists no body", c.ID)
		}
		// The business object itself changed: refused exactly where the body
		// is signed (not by Mailgun, which signs timestamp and token only).
		if path := rc.Body.ObjectPath; path != "" {
			if rc.Body.Batch {
				path = "$[0]" + path[1:]
			}
			tb := real.clone()
			if tb.body, err = replaceAtPath(tb.body, path, []byte(`{"id":"obj_tampered","amount":1}`)); err != nil {
				t.Errorf("%s: body.object_path %s: %v", c.ID, path, err)
			} else {
				add(tb.oracleCase(c.ID+": the object in the body changed after signing", c.ID, sec, pub), !bodySigned(p),
					"the object is covered by the signature exactly where the body is")
			}
		}
	}
	results := runOracle(t, cases)
	verifiers := map[string]string{}
	for i, r := range results {
		if r.Error != "" && strings.HasPrefix(r.Error, "no verifier") {
			t.Errorf("%s: %s: the oracle has no verifier for this profile (add one to testdata/oracle/verify.mjs)", cases[i].Name, r.Error)
			continue
		}
		verifiers[cases[i].Profile] = r.Verifier
		switch {
		case expect[i].verifies && !r.OK:
			t.Errorf("%s: refused by %s (%s); %s", r.Name, r.Verifier, r.Error, expect[i].why)
		case !expect[i].verifies && r.OK:
			t.Errorf("%s: verified by %s; %s", r.Name, r.Verifier, expect[i].why)
		}
	}
	for _, c := range Contracts() {
		t.Logf("%-18s verified with %s", c.ID, verifiers[c.ID])
	}
}

// Every vector of every contract, published or derived, must also verify
// with the provider's own library: the vectors were computed without the
// engine, and the libraries did not compute them either.
func TestContractVectorsVerifyWithTheirOwnLibraries(t *testing.T) {
	var (
		cases []oracleCase
		names []string
	)
	for _, c := range Contracts() {
		rc := resolved(t, c)
		switch rc.Signature.Header {
		case "webhook-signature", "svix-signature":
			// standardwebhooks and svix refuse a timestamp more than 5 minutes
			// from now, and the published vectors are from 2021: the library
			// tests check these (TestProvidersVerifyWithTheirOwnLibraries).
			t.Logf("%s: vectors not sent to the oracle (its library checks the timestamp against now)", c.ID)
			continue
		}
		for i, v := range c.Vectors {
			r, err := vectorRequest(rc, v)
			if err != nil {
				t.Errorf("%s: vectors[%d] %q: %v", c.ID, i, v.Name, err)
				continue
			}
			secret, pub := v.Secret, v.PublicKey
			if pub == "" && (rc.Signature.Algorithm == "ed25519" || rc.Signature.Algorithm == "ecdsa-p256") {
				p, err := Lookup(c.ID)
				if err != nil {
					t.Fatal(err)
				}
				secret, pub = verifyKey(t, p, v.Secret)
			}
			cases = append(cases, r.oracleCase(fmt.Sprintf("%s: vectors[%d] %s", c.ID, i, v.Name), c.ID, secret, pub))
			names = append(names, fmt.Sprintf("%s vectors[%d] (%s)", c.ID, i, v.Name))
		}
	}
	if len(cases) == 0 {
		t.Fatal("no vector to verify")
	}
	for i, r := range runOracle(t, cases) {
		if !r.OK {
			t.Errorf("%s: refused by %s: %s", names[i], r.Verifier, r.Error)
		}
	}
}

// vectorRequest lays a vector out as the request the provider would send:
// the signature (and the timestamp, ID and delivery ID where the contract
// puts them) in their headers or their places in the body.
func vectorRequest(c Contract, v ContractVector) (request, error) {
	r := request{method: v.Method, url: v.URL, header: http.Header{}, body: []byte(v.Body)}
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.url == "" {
		r.url = "https://receiver.example/hooks"
	}
	for k, val := range v.Headers {
		r.header.Set(k, val)
	}
	if c.Signature.JSONPath != "" {
		// A signature inside the body signs values of the body: build the
		// smallest body that holds them.
		doc := map[string]any{}
		set := func(path, val string) error {
			steps := strings.Split(strings.TrimPrefix(path, "$."), ".")
			m := doc
			for _, s := range steps[:len(steps)-1] {
				next, ok := m[s].(map[string]any)
				if !ok {
					next = map[string]any{}
					m[s] = next
				}
				m = next
			}
			m[steps[len(steps)-1]] = val
			return nil
		}
		_ = set(c.Signature.JSONPath, v.Signature)
		if c.Timestamp != nil && c.Timestamp.JSONPath != "" {
			_ = set(c.Timestamp.JSONPath, v.Timestamp)
		}
		if c.DeliveryID != nil && c.DeliveryID.JSONPath != "" {
			_ = set(c.DeliveryID.JSONPath, v.DeliveryID)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return r, err
		}
		r.body = b
		return r, nil
	}
	if c.Signature.Header == "" {
		return r, fmt.Errorf("the signature has no header")
	}
	r.header.Set(c.Signature.Header, v.Signature)
	if c.Timestamp != nil && c.Timestamp.Header != "" {
		r.header.Set(c.Timestamp.Header, v.Timestamp)
	}
	if c.EventID.Header != "" && v.ID != "" {
		r.header.Set(c.EventID.Header, v.ID)
	}
	if c.DeliveryID != nil && c.DeliveryID.Header != "" && v.DeliveryID != "" {
		r.header.Set(c.DeliveryID.Header, v.DeliveryID)
	}
	return r, nil
}
