package profiles

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func handshakeIn(secret string) HandshakeInput {
	return HandshakeInput{Challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", VerifyToken: "vt_123",
		Secrets: []string{secret}, URL: "https://receiver.example/hooks?x=1", At: time.Unix(1_800_000_000, 0)}
}

// TestSlackHandshake: the registry's Go slack profile carries its contract's
// url_verification: a signed POST of the documented payload, answered with
// the challenge as plain text, JSON or a form.
func TestSlackHandshake(t *testing.T) {
	p, ok := mustLookup(t, "slack").(Handshaker)
	if !ok {
		t.Fatal("slack is not a Handshaker")
	}
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	in := handshakeIn(secret)
	req, err := p.HandshakeRequest(in, "")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	if req.Method != "POST" || body["type"] != "url_verification" || body["challenge"] != in.Challenge || body["token"] != in.VerifyToken {
		t.Fatalf("request %s %s", req.Method, req.Body)
	}
	ts := req.Header.Get("X-Slack-Request-Timestamp")
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":" + string(req.Body)))
	if ts != "1800000000" || req.Header.Get("X-Slack-Signature") != "v0="+hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("not signed like an event: %v", req.Header)
	}
	if req.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %v", req.Header)
	}
	for _, ok := range []string{in.Challenge, "  " + in.Challenge + "\n", `{"challenge":"` + in.Challenge + `"}`, `{"challenge":"` + in.Challenge + `","x":1}`, "challenge=" + in.Challenge} {
		if err := p.HandshakeAnswer(in, 200, nil, []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "nope", `{"challenge":"nope"}`, "challenge=nope", `{"Challenge":"` + in.Challenge + `"}`} {
		if err := p.HandshakeAnswer(in, 200, nil, []byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if err := p.HandshakeAnswer(in, 202, nil, []byte(in.Challenge)); err == nil || !strings.Contains(err.Error(), "status 202, the provider expects 200") {
		t.Errorf("status: %v", err)
	}
	if _, err := p.HandshakeRequest(in, BadSignature); err == nil {
		t.Error("slack's contract lists no bad variant; bad-signature must be refused")
	}
	f := p.HandshakeFacts()
	if f.Method != "POST" || f.Source == "" || !strings.Contains(f.Summary, "url_verification") {
		t.Errorf("facts %+v", f)
	}
}

// TestZoomHandshake: endpoint.url_validation answered with plainToken and
// encryptedToken = hex HMAC-SHA256(secret, plainToken).
func TestZoomHandshake(t *testing.T) {
	p := fixture(t, "x-zoom").(Handshaker)
	in := handshakeIn("zoom_secret_token")
	req, err := p.HandshakeRequest(in, "")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Event   string
		Payload struct{ PlainToken string }
	}
	if err := json.Unmarshal(req.Body, &body); err != nil || body.Event != "endpoint.url_validation" || body.Payload.PlainToken != in.Challenge {
		t.Fatalf("request %s %v", req.Body, err)
	}
	m := hmac.New(sha256.New, []byte("zoom_secret_token"))
	m.Write([]byte(in.Challenge))
	enc := hex.EncodeToString(m.Sum(nil))
	answer := `{"plainToken":"` + in.Challenge + `","encryptedToken":"` + enc + `"}`
	if err := p.HandshakeAnswer(in, 200, nil, []byte(answer)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"plainToken":"` + in.Challenge + `"}`, `{"plainToken":"` + in.Challenge + `","encryptedToken":"` + enc[:10] + `"}`, in.Challenge} {
		if err := p.HandshakeAnswer(in, 200, nil, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	f := p.HandshakeFacts()
	if f.Deadline != 3*time.Second || f.Revalidate != 72*time.Hour {
		t.Errorf("facts %+v", f)
	}
}

// TestDiscordHandshake: a signed PING answered {"type":1}; the bad-signature
// variant carries a signature the public key refuses.
func TestDiscordHandshake(t *testing.T) {
	p := fixture(t, "x-discord")
	hs := p.(Handshaker)
	sec := drawSecret(t, p, 4)
	pubHex, _ := p.(PublicKeyer).PublicKey(sec)
	pub, _ := hex.DecodeString(pubHex)
	in := handshakeIn(sec)
	verifies := func(r HandshakeHTTP) bool {
		sig, _ := hex.DecodeString(r.Header.Get("X-Signature-Ed25519"))
		return ed25519.Verify(pub, []byte(r.Header.Get("X-Signature-Timestamp")+string(r.Body)), sig)
	}
	good, err := hs.HandshakeRequest(in, "")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := hs.HandshakeRequest(in, BadSignature)
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(good) || verifies(bad) || string(good.Body) != string(bad.Body) {
		t.Fatalf("good verifies %v, bad verifies %v", verifies(good), verifies(bad))
	}
	var ping map[string]any
	if json.Unmarshal(good.Body, &ping) != nil || ping["type"] != 1.0 {
		t.Fatalf("PING %s", good.Body)
	}
	if err := hs.HandshakeAnswer(in, 200, nil, []byte(`{"type": 1}`)); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{`{"type":"1"}`, `{"type":2}`, `{}`, `1`} {
		if err := hs.HandshakeAnswer(in, 200, nil, []byte(b)); err == nil {
			t.Errorf("%s accepted", b)
		}
	}
	if f := hs.HandshakeFacts(); f.RefuseStatus != 401 || len(f.Refuse) != 1 || f.Refuse[0] != BadSignature {
		t.Errorf("facts %+v", f)
	}
	// Deterministic per challenge.
	again, _ := hs.HandshakeRequest(in, "")
	if string(again.Body) != string(good.Body) || again.Header.Get("X-Signature-Ed25519") != good.Header.Get("X-Signature-Ed25519") {
		t.Error("handshake requests differ for one challenge")
	}
}

// TestGETHandshake: Meta's GET with hub.challenge; the wrong-verify-token
// variant carries another token.
func TestGETHandshake(t *testing.T) {
	hs := fixture(t, "x-meta").(Handshaker)
	in := handshakeIn("app-secret")
	req, err := hs.HandshakeRequest(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "GET" || req.Body != nil || req.Query.Get("hub.challenge") != in.Challenge ||
		req.Query.Get("hub.verify_token") != in.VerifyToken || req.Query.Get("hub.mode") != "subscribe" {
		t.Fatalf("request %+v", req)
	}
	if req.Header.Get("X-Hub-Signature-256") != "" {
		t.Error("a GET handshake is not signed")
	}
	wrong, err := hs.HandshakeRequest(in, WrongVerifyToken)
	if err != nil {
		t.Fatal(err)
	}
	if tok := wrong.Query.Get("hub.verify_token"); tok == "" || tok == in.VerifyToken || wrong.Query.Get("hub.challenge") != in.Challenge {
		t.Fatalf("wrong token variant %+v", wrong.Query)
	}
	if err := hs.HandshakeAnswer(in, 200, nil, []byte(in.Challenge)); err != nil {
		t.Fatal(err)
	}
	in.VerifyToken = ""
	if _, err := hs.HandshakeRequest(in, ""); err == nil || !strings.Contains(err.Error(), "verify_token") {
		t.Errorf("no verify token: %v", err)
	}
}

// TestTwitchHandshake: signed like a notification (message id, RFC 3339
// timestamp), with its own message type header; the challenge comes back
// as plain text.
func TestTwitchHandshake(t *testing.T) {
	hs := fixture(t, "x-twitch").(Handshaker)
	in := handshakeIn("twitch-secret")
	req, err := hs.HandshakeRequest(in, "")
	if err != nil {
		t.Fatal(err)
	}
	id, ts := req.Header.Get("Twitch-Eventsub-Message-Id"), req.Header.Get("Twitch-Eventsub-Message-Timestamp")
	m := hmac.New(sha256.New, []byte("twitch-secret"))
	m.Write([]byte(id + ts + string(req.Body)))
	if len(id) != 36 || ts != in.At.UTC().Format(time.RFC3339Nano) || req.Header.Get("Twitch-Eventsub-Message-Type") != "webhook_callback_verification" ||
		req.Header.Get("Twitch-Eventsub-Message-Signature") != "sha256="+hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("headers %v", req.Header)
	}
	if err := hs.HandshakeAnswer(in, 200, http.Header{}, []byte(in.Challenge)); err != nil {
		t.Fatal(err)
	}
	if err := hs.HandshakeAnswer(in, 200, nil, []byte(`{"challenge":"`+in.Challenge+`"}`)); err == nil {
		t.Error("Twitch takes the challenge as plain text only")
	}
	if _, err := hs.HandshakeRequest(HandshakeInput{At: in.At, Secrets: in.Secrets}, ""); err == nil {
		t.Error("an empty challenge must be refused")
	}
	if _, err := hs.HandshakeRequest(HandshakeInput{Challenge: "c", At: in.At}, ""); err == nil {
		t.Error("a signed handshake without a secret must be refused")
	}
}

// TestOptionalInterfacesFollowTheData: Handshaker, DeliveryIDMaker and
// PublicKeyer are implemented exactly where the data says.
func TestOptionalInterfacesFollowTheData(t *testing.T) {
	for name, cp := range everyContract(t) {
		p := cp.wrap()
		_, h := p.(Handshaker)
		_, d := p.(DeliveryIDMaker)
		_, k := p.(PublicKeyer)
		if h != (cp.c.Handshake != nil) || d != (cp.c.IDs.Delivery != "") || k != isAsymmetric(cp.c.Signature.Algorithm) {
			t.Errorf("%s: handshaker %v, delivery IDs %v, public key %v", name, h, d, k)
		}
		if unwrapContract(p) != cp {
			t.Errorf("%s: unwrap", name)
		}
	}
}
