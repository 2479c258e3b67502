package profiles

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The handshakes providers make before they deliver, answered the way each
// provider documents it (providers.yaml), computed here from the request the
// engine builds and not from the engine's expectation: the engine must
// accept the right answer and refuse wrong ones.

// handshakeAnswer is a correct receiver's answer to a handshake request.
type handshakeAnswer struct {
	status      int
	contentType string
	body        []byte
}

// answerHandshake answers req as the provider documents it; ok is false
// when the request must be refused. secret is the receiver's signing secret,
// verifyToken its configured verify token (Meta).
func answerHandshake(t *testing.T, id string, req HandshakeHTTP, secret, verifyToken string) (a handshakeAnswer, ok bool) {
	t.Helper()
	var body map[string]any
	if req.Method == http.MethodPost {
		if err := json.Unmarshal(req.Body, &body); err != nil {
			t.Fatalf("%s: the handshake body is not JSON: %v", id, err)
		}
	}
	str := func(m map[string]any, k string) string {
		s, isStr := m[k].(string)
		if !isStr || s == "" {
			t.Fatalf("%s: the handshake body has no string %q", id, k)
		}
		return s
	}
	switch id {
	case "zoom":
		// endpoint.url_validation: {plainToken, encryptedToken = hex
		// HMAC-SHA256(secret token, plainToken)}.
		if body["event"] != "endpoint.url_validation" {
			t.Fatalf("zoom: the handshake event is %v, not endpoint.url_validation", body["event"])
		}
		payload, _ := body["payload"].(map[string]any)
		plain := str(payload, "plainToken")
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(plain))
		b, _ := json.Marshal(map[string]string{"plainToken": plain, "encryptedToken": hex.EncodeToString(m.Sum(nil))})
		return handshakeAnswer{200, "application/json", b}, true
	case "twitch-eventsub":
		// webhook_callback_verification: the challenge as the body.
		if got := req.Header.Get("Twitch-Eventsub-Message-Type"); got != "webhook_callback_verification" {
			t.Fatalf("twitch-eventsub: Twitch-Eventsub-Message-Type is %q", got)
		}
		return handshakeAnswer{200, "text/plain", []byte(str(body, "challenge"))}, true
	case "discord":
		// A PING (type 1) is answered with type 1 (PONG).
		if body["type"] != float64(1) {
			t.Fatalf("discord: the PING has type %v", body["type"])
		}
		return handshakeAnswer{200, "application/json", []byte(`{"type":1}`)}, true
	case "meta-whatsapp":
		// GET hub.mode=subscribe&hub.verify_token&hub.challenge: the challenge
		// as the body when the token is the configured one.
		if req.Query.Get("hub.mode") != "subscribe" || req.Query.Get("hub.verify_token") != verifyToken {
			return handshakeAnswer{status: http.StatusForbidden}, false
		}
		return handshakeAnswer{200, "text/plain", []byte(req.Query.Get("hub.challenge"))}, true
	case "slack":
		// url_verification: the challenge.
		if body["type"] != "url_verification" {
			t.Fatalf("slack: the handshake type is %v", body["type"])
		}
		return handshakeAnswer{200, "text/plain", []byte(str(body, "challenge"))}, true
	}
	t.Fatalf("%s: no independent answer for this handshake: add one here", id)
	return handshakeAnswer{}, false
}

// handshakeProfiles are the providers whose research documents a handshake.
var handshakeProfiles = []string{"discord", "meta-whatsapp", "slack", "twitch-eventsub", "zoom"}

func handshaker(t *testing.T, id string) Handshaker {
	t.Helper()
	p, err := Lookup(id)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	h, ok := p.(Handshaker)
	if !ok {
		t.Fatalf("%s: the profile has no handshake", id)
	}
	return h
}

func handshakeInput(t *testing.T, id string, secretSeed string) HandshakeInput {
	t.Helper()
	secret, err := GenerateSecret(id, newSeededReader(secretSeed+id))
	if err != nil {
		t.Fatal(err)
	}
	return HandshakeInput{Challenge: "chl_" + hex.EncodeToString([]byte(id))[:8] + "Q9x", VerifyToken: "vt_configured_" + id,
		Secrets: []string{secret}, URL: "https://receiver.example/hooks/" + id, At: time.Now().UTC().Truncate(time.Second)}
}

func TestHandshakesAreAnsweredAsProvidersDocument(t *testing.T) {
	for _, id := range handshakeProfiles {
		t.Run(id, func(t *testing.T) {
			h := handshaker(t, id)
			in := handshakeInput(t, id, "handshake:")
			req, err := h.HandshakeRequest(in, "")
			if err != nil {
				t.Fatal(err)
			}
			// An HMAC receiver is configured with the secret; only Zoom's
			// answer uses it (Discord signs with a private key, but its PING
			// answer needs none).
			a, ok := answerHandshake(t, id, req, in.Secrets[0], in.VerifyToken)
			if !ok {
				t.Fatalf("the real handshake request would be refused (status %d)", a.status)
			}
			hdr := http.Header{"Content-Type": {a.contentType}}
			if err := h.HandshakeAnswer(in, a.status, hdr, a.body); err != nil {
				t.Fatalf("the documented answer is refused: %v", err)
			}
			// White space around the answer is not content.
			if err := h.HandshakeAnswer(in, a.status, hdr, append(append([]byte("\n"), a.body...), '\n')); err != nil {
				t.Errorf("the documented answer with surrounding new lines is refused: %v", err)
			}
			wrong := map[string]handshakeAnswer{
				"a server error": {500, a.contentType, a.body},
				"a 4xx":          {http.StatusUnauthorized, a.contentType, a.body},
				"an empty body":  {a.status, a.contentType, nil},
			}
			if strings.Contains(string(a.body), in.Challenge) {
				wrong["the answer to another challenge"] = handshakeAnswer{a.status, a.contentType, []byte(strings.Replace(string(a.body), in.Challenge, tamperText(in.Challenge), 1))}
			}
			switch id {
			case "zoom":
				// encryptedToken keyed with another secret, or a plain echo.
				other := handshakeInput(t, id, "handshake-other:")
				m := hmac.New(sha256.New, []byte(other.Secrets[0]))
				m.Write([]byte(in.Challenge))
				b, _ := json.Marshal(map[string]string{"plainToken": in.Challenge, "encryptedToken": hex.EncodeToString(m.Sum(nil))})
				wrong["encryptedToken made with another secret"] = handshakeAnswer{200, "application/json", b}
				b, _ = json.Marshal(map[string]string{"plainToken": in.Challenge, "encryptedToken": base64.StdEncoding.EncodeToString(m.Sum(nil))})
				wrong["encryptedToken in base64"] = handshakeAnswer{200, "application/json", b}
				wrong["the challenge alone"] = handshakeAnswer{200, "text/plain", []byte(in.Challenge)}
			case "discord":
				wrong["type 4 instead of a PONG"] = handshakeAnswer{200, "application/json", []byte(`{"type":4}`)}
			default:
				wrong["the verify token instead of the challenge"] = handshakeAnswer{a.status, a.contentType, []byte(in.VerifyToken)}
			}
			for name, w := range wrong {
				if string(w.body) == string(a.body) && w.status == a.status {
					t.Errorf("%s: the wrong answer is the right one (the request does not carry the challenge?)", name)
					continue
				}
				if err := h.HandshakeAnswer(in, w.status, http.Header{"Content-Type": {w.contentType}}, w.body); err == nil {
					t.Errorf("%s: accepted", name)
				}
			}
		})
	}
}

// The handshake facts the research documents.
func TestHandshakeFacts(t *testing.T) {
	for _, c := range []struct {
		id           string
		method       string
		deadline     time.Duration
		revalidate   time.Duration
		refuse       []string
		refuseStatus int
	}{
		// "deadline_seconds: 3", "revalidation: every 72 hours"
		{id: "zoom", method: http.MethodPost, deadline: 3 * time.Second, revalidate: 72 * time.Hour},
		{id: "twitch-eventsub", method: http.MethodPost},
		// "Discord also sends deliberately invalid signatures and expects 401"
		{id: "discord", method: http.MethodPost, refuse: []string{BadSignature}, refuseStatus: 401},
		// "refuse a wrong verify token"
		{id: "meta-whatsapp", method: http.MethodGet, refuse: []string{WrongVerifyToken}},
	} {
		f := handshaker(t, c.id).HandshakeFacts()
		if f.Method != c.method || f.Deadline != c.deadline || f.Revalidate != c.revalidate || f.RefuseStatus != c.refuseStatus ||
			fmt.Sprint(f.Refuse) != fmt.Sprint(c.refuse) {
			t.Errorf("%s: facts %+v, want method %s deadline %v revalidate %v refuse %v (status %d)", c.id, f, c.method, c.deadline, c.revalidate, c.refuse, c.refuseStatus)
		}
		if f.Source == "" || f.Summary == "" {
			t.Errorf("%s: the handshake facts need a source and a summary: %+v", c.id, f)
		}
	}
}

// Signed handshakes verify with the provider's verification (the oracle),
// their bad-signature variant does not, and the oracle's own answer (from
// the provider's library or docs) is the one the engine accepts; Meta's
// wrong verify token is refused.
func TestHandshakesWithTheOracle(t *testing.T) {
	type probe struct {
		id, variant string
		in          HandshakeInput
		req         HandshakeHTTP
	}
	var (
		probes []probe
		cases  []oracleCase
	)
	for _, id := range handshakeProfiles {
		h := handshaker(t, id)
		in := handshakeInput(t, id, "handshake-oracle:")
		p, _ := Lookup(id)
		sec, pub := verifyKey(t, p, in.Secrets[0])
		variants := append([]string{""}, h.HandshakeFacts().Refuse...)
		for _, v := range variants {
			req, err := h.HandshakeRequest(in, v)
			if err != nil {
				t.Fatalf("%s %q: %v", id, v, err)
			}
			u, _ := url.Parse(in.URL)
			if len(req.Query) > 0 {
				u.RawQuery = req.Query.Encode()
			}
			c := oracleCase{Profile: id, Method: req.Method, URL: u.String(), Headers: flatHeaders(req.Header),
				Body: base64.StdEncoding.EncodeToString(req.Body), Secret: sec, PublicKey: pub, VerifyToken: in.VerifyToken}
			if c.Secret == "" {
				c.Secret = in.Secrets[0] // Zoom-style answers are keyed with it; asymmetric verifiers ignore it
			}
			if req.Method == http.MethodPost && !handshakeUnsigned(id) {
				vc := c
				vc.Op, vc.Name = "verify", fmt.Sprintf("%s handshake %q: signature", id, v)
				if pub != "" {
					vc.Secret = ""
				}
				probes = append(probes, probe{id, "verify:" + v, in, req})
				cases = append(cases, vc)
			}
			ac := c
			ac.Op, ac.Name = "answer", fmt.Sprintf("%s handshake %q: answer", id, v)
			probes = append(probes, probe{id, "answer:" + v, in, req})
			cases = append(cases, ac)
		}
	}
	results := runOracle(t, cases)
	for i, r := range results {
		pr := probes[i]
		h := handshaker(t, pr.id)
		switch pr.variant {
		case "verify:":
			if !r.OK {
				t.Errorf("%s: the handshake request does not verify with %s: %s", pr.id, r.Verifier, r.Error)
			}
		case "verify:" + BadSignature:
			if r.OK {
				t.Errorf("%s: the bad-signature handshake verifies with %s", pr.id, r.Verifier)
			}
		case "answer:":
			if !r.OK || r.Answer == nil {
				t.Errorf("%s: the oracle refuses the real handshake: %s (status %d)", pr.id, r.Error, r.Status)
				continue
			}
			body, _ := base64.StdEncoding.DecodeString(*r.Answer)
			if err := h.HandshakeAnswer(pr.in, r.Status, http.Header{"Content-Type": {r.ContentType}}, body); err != nil {
				t.Errorf("%s: the oracle's answer (%s) is refused: %v", pr.id, r.Verifier, err)
			}
			mine, _ := answerHandshake(t, pr.id, pr.req, pr.in.Secrets[0], pr.in.VerifyToken)
			if !jsonOrTextEqual(mine.body, body) {
				t.Errorf("%s: the oracle answers %q, this test %q", pr.id, body, mine.body)
			}
		case "answer:" + WrongVerifyToken:
			if r.OK && r.Answer != nil {
				t.Errorf("%s: the oracle answers a handshake with a wrong verify token", pr.id)
			}
			if _, ok := answerHandshake(t, pr.id, pr.req, pr.in.Secrets[0], pr.in.VerifyToken); ok {
				t.Errorf("%s: the wrong-verify-token request carries the configured token", pr.id)
			}
		}
	}
}

// handshakeUnsigned reports whether a contract's handshake goes unsigned.
func handshakeUnsigned(id string) bool {
	c, _ := ContractOf(id)
	return c.Handshake != nil && c.Handshake.Unsigned
}

func jsonOrTextEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil {
		return fmt.Sprint(x) == fmt.Sprint(y)
	}
	return string(a) == string(b)
}
