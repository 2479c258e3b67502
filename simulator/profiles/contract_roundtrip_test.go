package profiles

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the providers' algorithm, verified here
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The verifications below are written directly on crypto/*, as a receiver
// would, not with the engine's own code.

func macOf(h func() hash.Hash, key, content []byte) []byte {
	m := hmac.New(h, key)
	m.Write(content)
	return m.Sum(nil)
}

func twilioContent(u string, body []byte) string {
	vals, _ := url.ParseQuery(string(body))
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(u)
	for _, k := range keys {
		vs := append([]string(nil), vals[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(k + v)
		}
	}
	return b.String()
}

// drawSecret makes a secret with the profile's generator from a seeded
// stream.
func drawSecret(t *testing.T, p Profile, seed uint64) string {
	t.Helper()
	s, err := p.(SecretMaker).MakeSecret(rand.NewChaCha8([32]byte{byte(seed), 1}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleDelivery(t *testing.T, p Profile, secrets []string) (Event, Attempt, []byte, http.Header) {
	t.Helper()
	ev := Event{Source: p.ID(), Account: "acct_rt", ID: "evt_rt_1", Type: "thing.updated", ObjectID: "obj_1",
		Amount: 42, Currency: "eur", Status: "open", Version: 3, Created: time.Unix(1_800_000_000, 123_000_000)}
	if m, ok := p.(EventIDMaker); ok {
		ev.ID = m.MakeEventID(rand.New(rand.NewPCG(1, 2)))
	}
	at := Attempt{N: 1, SignedAt: time.Unix(1_800_000_100, 0), DeliveryID: "dlv_1",
		URL: "https://receiver.example:8443/hooks/x?acct=acct_rt&b=2", Method: "POST"}
	body, h, err := Render(p, ev, at, secrets)
	if err != nil {
		t.Fatalf("%s: %v", p.ID(), err)
	}
	return ev, at, body, h
}

// TestRoundTripPerAlgorithm signs deliveries with the engine and verifies
// them independently, for each algorithm and encoding.
func TestRoundTripPerAlgorithm(t *testing.T) {
	t.Run("hmac-sha1 form and URL (Twilio)", func(t *testing.T) {
		p := fixture(t, "x-twilio")
		sec := "auth-token-rt"
		_, at, body, h := sampleDelivery(t, p, []string{sec})
		if h.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Fatalf("content type %q", h.Get("Content-Type"))
		}
		vals, err := url.ParseQuery(string(body))
		if err != nil || vals.Get("CallSid") == "" || vals.Get("Digits") != "42" {
			t.Fatalf("form body %q %v", body, err)
		}
		want := base64.StdEncoding.EncodeToString(macOf(sha1.New, []byte(sec), []byte(twilioContent(at.URL, body))))
		if got := h.Get("X-Twilio-Signature"); got != want {
			t.Fatalf("signature %s, want %s", got, want)
		}
		// The signature covers the URL: another URL does not verify.
		other := base64.StdEncoding.EncodeToString(macOf(sha1.New, []byte(sec), []byte(twilioContent(at.URL+"&c=3", body))))
		if other == want {
			t.Fatal("the URL is not covered")
		}
		// Without a URL the engine refuses to sign.
		ev := Event{ID: "CA1", Type: "t", ObjectID: "o", Account: "a", Created: time.Unix(1, 0)}
		b, _ := p.Body(ev)
		if _, err := p.Headers(ev, b, Attempt{N: 1}, []string{sec}); err == nil || !strings.Contains(err.Error(), "attempt.url: must be set") {
			t.Fatalf("no URL: %v", err)
		}
	})
	t.Run("hmac-sha256 hex (Zoom)", func(t *testing.T) {
		p := fixture(t, "x-zoom")
		sec := "zoom-secret-rt"
		_, at, body, h := sampleDelivery(t, p, []string{sec})
		ts := strconv.FormatInt(at.SignedAt.Unix(), 10)
		want := "v0=" + hex.EncodeToString(macOf(sha256.New, []byte(sec), []byte("v0:"+ts+":"+string(body))))
		if h.Get("X-Zm-Signature") != want || h.Get("X-Zm-Request-Timestamp") != ts {
			t.Fatalf("headers %v, want signature %s", h, want)
		}
	})
	t.Run("hmac-sha512 base64url, hex key, several secrets", func(t *testing.T) {
		c := baseContract(t)
		c.Signature.Algorithm, c.Signature.Encoding, c.Signature.Key, c.Signature.Prefix = "hmac-sha512", "base64url", "hex", "k_"
		c.Signature.Multiple, c.Signature.Separator, c.Signature.Format = true, ",", "s={{.Signature}}"
		p, err := NewContractProfile(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		secs := []string{"k_00112233445566778899", "aabbccddeeff"}
		_, at, body, h := sampleDelivery(t, p, secs)
		ts := strconv.FormatInt(at.SignedAt.Unix(), 10)
		var want []string
		for _, s := range secs {
			key, _ := hex.DecodeString(strings.TrimPrefix(s, "k_"))
			want = append(want, "s="+base64.RawURLEncoding.EncodeToString(macOf(sha512.New, key, []byte(ts+"."+string(body)))))
		}
		if got := h.Get("X-Sig"); got != strings.Join(want, ",") {
			t.Fatalf("signature %s\nwant %s", got, strings.Join(want, ","))
		}
	})
	t.Run("ed25519 hex (Discord)", func(t *testing.T) {
		p := fixture(t, "x-discord")
		sec := drawSecret(t, p, 1)
		if len(sec) != 64 {
			t.Fatalf("an ed25519 secret is a hex seed: %d chars", len(sec))
		}
		_, at, body, h := sampleDelivery(t, p, []string{sec})
		pubHex, err := p.(PublicKeyer).PublicKey(sec)
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := hex.DecodeString(pubHex)
		seed, _ := hex.DecodeString(sec)
		if !bytes.Equal(pub, ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)) {
			t.Fatal("public key is not the seed's")
		}
		sig, _ := hex.DecodeString(h.Get("X-Signature-Ed25519"))
		ts := h.Get("X-Signature-Timestamp")
		if ts != strconv.FormatInt(at.SignedAt.Unix(), 10) || !ed25519.Verify(pub, []byte(ts+string(body)), sig) {
			t.Fatalf("does not verify: %v", h)
		}
		if ed25519.Verify(pub, []byte(ts+string(body)+" "), sig) {
			t.Fatal("a changed body verifies")
		}
	})
	t.Run("ecdsa-p256 base64 over a batch (SendGrid)", func(t *testing.T) {
		p := fixture(t, "x-sendgrid")
		sec := drawSecret(t, p, 2)
		der, err := base64.StdEncoding.DecodeString(sec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x509.ParsePKCS8PrivateKey(der); err != nil {
			t.Fatalf("the secret is not PKCS#8: %v", err)
		}
		_, _, body, h := sampleDelivery(t, p, []string{sec})
		var batch []map[string]any
		if err := json.Unmarshal(body, &batch); err != nil || len(batch) != 1 || batch[0]["sg_event_id"] == "" {
			t.Fatalf("a batch of one: %s %v", body, err)
		}
		pubB64, err := p.(PublicKeyer).PublicKey(sec)
		if err != nil {
			t.Fatal(err)
		}
		pubDER, _ := base64.StdEncoding.DecodeString(pubB64)
		pk, err := x509.ParsePKIXPublicKey(pubDER)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := base64.StdEncoding.DecodeString(h.Get("X-Twilio-Email-Event-Webhook-Signature"))
		d := sha256.Sum256([]byte(h.Get("X-Twilio-Email-Event-Webhook-Timestamp") + string(body)))
		if !ecdsa.VerifyASN1(pk.(*ecdsa.PublicKey), d[:], sig) {
			t.Fatal("does not verify")
		}
		// Deterministic (RFC 6979): the same delivery, the same bytes.
		_, _, _, h2 := sampleDelivery(t, p, []string{sec})
		if h2.Get("X-Twilio-Email-Event-Webhook-Signature") != h.Get("X-Twilio-Email-Event-Webhook-Signature") {
			t.Fatal("ECDSA signatures are not deterministic")
		}
		if f := p.Facts(); f.EventIDJSONPath != "$[0].sg_event_id" || f.DeclaredObjectJSONPath != "$[0].object" {
			t.Fatalf("batch paths: %q %q", f.EventIDJSONPath, f.DeclaredObjectJSONPath)
		}
	})
	t.Run("token (GitLab)", func(t *testing.T) {
		p := fixture(t, "x-gitlab")
		ev, _, _, h := sampleDelivery(t, p, []string{"tok-123"})
		if h.Get("X-Gitlab-Token") != "tok-123" || h.Get("Idempotency-Key") != ev.ID {
			t.Fatalf("headers %v", h)
		}
	})
	t.Run("signature in the body (Mailgun)", func(t *testing.T) {
		p := fixture(t, "x-mailgun")
		if _, ok := p.(BodySigner); !ok {
			t.Fatal("not a BodySigner")
		}
		sec := "key-rt"
		ev, _, body, h := sampleDelivery(t, p, []string{sec})
		var b struct {
			Signature struct{ Timestamp, Token, Signature string } `json:"signature"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Signature.Timestamp != strconv.FormatInt(ev.Created.Unix(), 10) || len(b.Signature.Token) != 50 {
			t.Fatalf("signature object %+v", b.Signature)
		}
		want := hex.EncodeToString(macOf(sha256.New, []byte(sec), []byte(b.Signature.Timestamp+b.Signature.Token)))
		if b.Signature.Signature != want {
			t.Fatalf("signature %s want %s", b.Signature.Signature, want)
		}
		if len(h) != 1 {
			t.Fatalf("only the content type is a header: %v", h)
		}
		unsigned, _ := p.Body(ev)
		if bytes.Equal(unsigned, body) || !bytes.Contains(unsigned, []byte(`"signature":""`)) {
			t.Fatalf("Body must be the unsigned body: %s", unsigned)
		}
	})
	t.Run("twitch RFC 3339 timestamp and message id", func(t *testing.T) {
		p := fixture(t, "x-twitch")
		sec := "twitch-rt"
		ev, at, body, h := sampleDelivery(t, p, []string{sec})
		ts := at.SignedAt.UTC().Format(time.RFC3339Nano)
		want := "sha256=" + hex.EncodeToString(macOf(sha256.New, []byte(sec), []byte(ev.ID+ts+string(body))))
		if h.Get("Twitch-Eventsub-Message-Signature") != want || h.Get("Twitch-Eventsub-Message-Timestamp") != ts ||
			h.Get("Twitch-Eventsub-Message-Id") != ev.ID || h.Get("Twitch-Eventsub-Message-Type") != "notification" {
			t.Fatalf("headers %v", h)
		}
	})
	t.Run("hubspot method, URL, body, ms timestamp", func(t *testing.T) {
		p := fixture(t, "x-hubspot")
		sec := "hub-rt"
		_, at, body, h := sampleDelivery(t, p, []string{sec})
		ts := strconv.FormatInt(at.SignedAt.UnixMilli(), 10)
		want := base64.StdEncoding.EncodeToString(macOf(sha256.New, []byte(sec), []byte("POST"+at.URL+string(body)+ts)))
		if h.Get("X-Hubspot-Signature-V3") != want || h.Get("X-Hubspot-Request-Timestamp") != ts {
			t.Fatalf("headers %v want %s", h, want)
		}
	})
}

// TestPublicKeyEncodings: every public key encoding of both asymmetric
// algorithms parses back to the secret's key.
func TestPublicKeyEncodings(t *testing.T) {
	for _, alg := range []string{"ed25519", "ecdsa-p256"} {
		for _, enc := range []string{"hex", "base64", "base64-der"} {
			c := baseContract(t)
			c.Signature.Algorithm, c.Signature.Key, c.Signature.PublicKeyEncoding = alg, "base64", enc
			p, err := NewContractProfile(c, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", alg, enc, err)
			}
			sec := drawSecret(t, p, 3)
			pub, err := p.(PublicKeyer).PublicKey(sec)
			if err != nil {
				t.Fatal(err)
			}
			var raw []byte
			if enc == "hex" {
				raw, err = hex.DecodeString(pub)
			} else {
				raw, err = base64.StdEncoding.DecodeString(pub)
			}
			if err != nil {
				t.Fatalf("%s %s: %v", alg, enc, err)
			}
			key, _ := base64.StdEncoding.DecodeString(sec)
			var want []byte
			var pk any
			if alg == "ed25519" {
				pk = ed25519.NewKeyFromSeed(key).Public()
				want = pk.(ed25519.PublicKey)
			} else {
				k, _ := x509.ParsePKCS8PrivateKey(key)
				pk = &k.(*ecdsa.PrivateKey).PublicKey
				want, _ = pk.(*ecdsa.PublicKey).Bytes()
			}
			if enc == "base64-der" {
				want, _ = x509.MarshalPKIXPublicKey(pk)
			}
			if !bytes.Equal(raw, want) {
				t.Errorf("%s %s: public key differs", alg, enc)
			}
		}
	}
	if _, ok := fixture(t, "x-zoom").(PublicKeyer); ok {
		t.Error("an HMAC profile has no public key")
	}
}

// TestSecretGeneration: generated secrets are deterministic for a seeded
// source, accepted by the signature, and of the declared shape.
func TestSecretGeneration(t *testing.T) {
	for name, p := range everyContract(t) {
		a := drawSecret(t, p.wrap(), 7)
		b := drawSecret(t, p.wrap(), 7)
		c := drawSecret(t, p.wrap(), 8)
		if a != b || a == c {
			t.Errorf("%s: not deterministic per seed", name)
		}
		s := p.bodySig
		if len(p.sigs) > 0 {
			s = p.sigs[0]
		}
		if s.scheme.alg != algToken {
			if _, err := s.scheme.keyBytes(a); err != nil {
				t.Errorf("%s: the signature refuses a generated secret: %v", name, err)
			}
		}
		if pre := p.c.Secret.Prefix; !strings.HasPrefix(a, pre) {
			t.Errorf("%s: %q lacks the prefix %q", name, a, pre)
		}
	}
	if _, err := fixture(t, "x-discord").(SecretMaker).MakeSecret(bytes.NewReader([]byte{1, 2})); err == nil {
		t.Error("a short source must fail")
	}
}

// TestIDShapes: ids.event and ids.delivery draw deterministic IDs of their
// shape; without a shape, evt_ and 24 base-62 characters.
func TestIDShapes(t *testing.T) {
	sh, err := parseIDShape("pre_{{hex 4}}-{{upper36 3}}:{{base36 2}}/{{base62 2}}~{{uuid}}")
	if err != nil {
		t.Fatal(err)
	}
	id := sh.draw(rand.New(rand.NewPCG(1, 1)))
	if id != sh.draw(rand.New(rand.NewPCG(1, 1))) || id == sh.draw(rand.New(rand.NewPCG(2, 1))) {
		t.Fatal("not deterministic per seed")
	}
	parts := strings.FieldsFunc(id, func(r rune) bool { return strings.ContainsRune("_-:/~", r) })
	if len(parts) != 10 || parts[0] != "pre" || len(parts[1]) != 4 || strings.ToUpper(parts[2]) != parts[2] || len(parts[4]) != 2 {
		t.Fatalf("shape: %s %q", id, parts)
	}
	for _, bad := range []string{"", "x{{hex}}", "{{uuid 3}}", "{{ hex 200 }}", "{{rand 4}}", "a}}b{{hex 2}}"} {
		if _, err := parseIDShape(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if got := fixture(t, "x-zoom").(EventIDMaker).MakeEventID(rand.New(rand.NewPCG(1, 1))); !strings.HasPrefix(got, "evt_") || len(got) != 28 {
		t.Errorf("default event ID %q", got)
	}
	tw := fixture(t, "x-twilio").(EventIDMaker).MakeEventID(rand.New(rand.NewPCG(1, 1)))
	if len(tw) != 34 || !strings.HasPrefix(tw, "CA") {
		t.Errorf("twilio-shaped ID %q", tw)
	}
}

// TestVectorsAndTampering: every vector of every contract (embedded and
// fixtures) is reproduced, and changing any one signed input, or the key,
// changes the signature (or makes it fail to verify).
func TestVectorsAndTampering(t *testing.T) {
	n := 0
	for name, p := range everyContract(t) {
		s := p.bodySig
		if len(p.sigs) > 0 {
			s = p.sigs[0]
		}
		for i, v := range p.c.Vectors {
			n++
			where := fmt.Sprintf("%s vectors[%d]", name, i)
			got, _, err := p.signVector(v)
			if err != nil || got != v.Signature {
				t.Errorf("%s: got %q %v, want %q", where, got, err, v.Signature)
				continue
			}
			tampered := map[string]ContractVector{}
			r := s.refs.fields
			if r["Body"] {
				w := v
				w.Body += " "
				tampered["body"] = w
			}
			if r["ID"] {
				w := v
				w.ID += "x"
				tampered["id"] = w
			}
			if r["Timestamp"] {
				w := v
				ts, _ := parseTimestamp(p.ts.format, v.Timestamp)
				w.Timestamp = formatTimestamp(p.ts.format, ts.Add(time.Second))
				tampered["timestamp"] = w
			}
			if r["URL"] {
				w := v
				w.URL += "&x=1"
				tampered["url"] = w
			}
			if r["Method"] {
				w := v
				w.Method = "PUT"
				tampered["method"] = w
			}
			if r["DeliveryID"] {
				w := v
				w.DeliveryID += "x"
				tampered["delivery-id"] = w
			}
			if r["Form"] {
				vals, _ := url.ParseQuery(v.Body)
				for k := range vals {
					w := v
					changed := url.Values{}
					for kk, vv := range vals {
						changed[kk] = append([]string(nil), vv...)
					}
					changed[k][0] += "x"
					w.Body = changed.Encode()
					tampered["form:"+k] = w
				}
			}
			w := v
			sc := s.schemeFor(v.Secret)
			if sc.alg == algToken {
				w.Secret += "x"
			} else {
				key, _ := sc.keyBytes(v.Secret)
				wk, _ := sc.wrongKey(key)
				w.Secret = encodeKey(sc.keyEncoding(), sc.prefix, wk)
			}
			tampered["key"] = w
			if len(tampered) < 2 && sc.alg != algToken {
				t.Errorf("%s: only %d inputs to tamper with", where, len(tampered))
			}
			for what, w := range tampered {
				if got, _, err := p.signVector(w); err == nil && got == v.Signature {
					t.Errorf("%s: a changed %s gives the same signature", where, what)
				}
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d vectors", n)
	}
}

// TestContractInputs: the inputs follow from what each contract signs and
// where its values live.
func TestContractInputs(t *testing.T) {
	names := func(in []Input) map[string]Input {
		m := map[string]Input{}
		for _, x := range in {
			m[x.Name] = x
		}
		return m
	}
	cases := map[string][]Input{
		"x-twilio": {
			{Name: "key", Signed: true},
			{Name: "body", Body: true, Signed: true},
			{Name: "id", Form: "CallSid", Signed: true, Identity: true},
			{Name: "account", Form: "AccountSid", Signed: true, Identity: true},
			{Name: "url", URL: true, Signed: true},
			{Name: "form:AccountSid", Form: "AccountSid", Signed: true},
			{Name: "form:CallSid", Form: "CallSid", Signed: true},
			{Name: "form:CallStatus", Form: "CallStatus", Signed: true},
			{Name: "form:Caller", Form: "Caller", Signed: true},
			{Name: "form:Digits", Form: "Digits", Signed: true},
		},
		"x-mailgun": {
			{Name: "key", Signed: true},
			{Name: "body", Body: true},
			{Name: "id", JSONPath: "$.event-data.id", Identity: true},
			{Name: "timestamp", JSONPath: "$.signature.timestamp", Signed: true},
			{Name: "delivery-id", JSONPath: "$.signature.token", Signed: true},
		},
		"x-gitlab": {
			{Name: "key", Signed: true},
			{Name: "body", Body: true},
			{Name: "id", Header: "Idempotency-Key", Identity: true},
		},
		"x-hubspot": {
			{Name: "key", Signed: true},
			{Name: "body", Body: true, Signed: true},
			{Name: "id", JSONPath: "$[0].eventId", Signed: true, Identity: true},
			{Name: "timestamp", Header: "X-HubSpot-Request-Timestamp", Signed: true},
			{Name: "url", URL: true, Signed: true},
			{Name: "method", Signed: true},
		},
		"x-twitch": {
			{Name: "key", Signed: true},
			{Name: "body", Body: true, Signed: true},
			{Name: "id", Header: "Twitch-Eventsub-Message-Id", Signed: true, Identity: true},
			{Name: "timestamp", Header: "Twitch-Eventsub-Message-Timestamp", Signed: true},
		},
	}
	for id, want := range cases {
		got := fixture(t, id).(InputLister).Inputs()
		if !reflect.DeepEqual(names(got), names(want)) {
			t.Errorf("%s inputs:\n got %+v\nwant %+v", id, got, want)
		}
	}
	// A header the signature reads is a signed input of its own.
	c := baseContract(t)
	c.Headers = map[string]string{"X-Request-Id": "{{.DeliveryID}}"}
	c.Signature.Signed = `{{header "X-Request-Id"}}.{{.Timestamp}}.{{.Body}}`
	p, err := NewContractProfile(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := names(p.(InputLister).Inputs())
	if x, ok := in["header:X-Request-Id"]; !ok || !x.Signed || x.Header != "X-Request-Id" {
		t.Errorf("header input: %+v", in)
	}
	ev, at, body, h := sampleDelivery(t, p, []string{"k"})
	_ = ev
	ts := strconv.FormatInt(at.SignedAt.Unix(), 10)
	want := hex.EncodeToString(macOf(sha256.New, []byte("k"), []byte("dlv_1."+ts+"."+string(body))))
	if h.Get("X-Sig") != want {
		t.Errorf("a signed header: %v want %s", h, want)
	}
	// Adyen's, by hand.
	ad := names(mustLookup(t, "adyen").(InputLister).Inputs())
	for _, n := range []string{"key", "id", "account", "field:eventCode", "field:success", "field:amount.value"} {
		if x, ok := ad[n]; !ok || !x.Signed {
			t.Errorf("adyen: %s missing or unsigned: %+v", n, x)
		}
	}
	if ad["body"].Signed || !ad["id"].Identity || !ad["field:success"].Identity || ad["field:amount.value"].Identity {
		t.Errorf("adyen: %+v", ad)
	}
}

// TestWrongSecret: every contract makes a wrong secret its signature
// accepts, and it signs differently.
func TestWrongSecret(t *testing.T) {
	for name, cp := range everyContract(t) {
		p := cp.wrap()
		sec := drawSecret(t, p, 5)
		wrong, err := p.(WrongSecreter).WrongSecret(sec)
		if err != nil || wrong == sec {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ev, at, _, h := sampleDelivery(t, p, []string{sec})
		body, hw, err := Render(p, ev, at, []string{wrong})
		if err != nil {
			t.Errorf("%s: the wrong secret does not sign: %v", name, err)
			continue
		}
		right, _, _ := Render(p, ev, at, []string{sec})
		if reflect.DeepEqual(h, hw) && bytes.Equal(body, right) {
			t.Errorf("%s: the wrong secret signs alike", name)
		}
	}
}
