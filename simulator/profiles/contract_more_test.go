package profiles

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestECDSAVectors: a published ECDSA signature carries its own random
// nonce, so a vector is checked by verifying it, with the public key alone
// or with the secret's; a signature over other content is refused.
func TestECDSAVectors(t *testing.T) {
	c := fixtures(t)["x-sendgrid"]
	p := fixture(t, "x-sendgrid")
	sec := drawSecret(t, p, 9)
	der, _ := base64.StdEncoding.DecodeString(sec)
	k, _ := x509.ParsePKCS8PrivateKey(der)
	priv := k.(*ecdsa.PrivateKey)
	pub, _ := p.(PublicKeyer).PublicKey(sec)
	content := []byte(`1700000000[{"sg_event_id":"e1"}]`)
	d := sha256.Sum256(content)
	sig, err := priv.Sign(crand.Reader, d[:], crypto.SHA256) // randomized, as a provider's
	if err != nil {
		t.Fatal(err)
	}
	v := ContractVector{Name: "v", Timestamp: "1700000000", Body: `[{"sg_event_id":"e1"}]`, Signature: base64.StdEncoding.EncodeToString(sig)}
	withPub, withSecret := v, v
	withPub.PublicKey, withSecret.Secret = pub, sec
	c.Vectors = []ContractVector{withPub, withSecret}
	if err := c.Validate("p"); err != nil {
		t.Fatalf("a randomized signature must verify: %v", err)
	}
	bad := withPub
	bad.Body = `[{"sg_event_id":"e2"}]`
	c.Vectors = []ContractVector{bad}
	if err := c.Validate("p"); err == nil || !strings.Contains(err.Error(), "p.vectors[0]: the signature does not verify with the public key") {
		t.Fatalf("other content: %v", err)
	}
	bad = withSecret
	bad.Timestamp = "1700000001"
	c.Vectors = []ContractVector{bad}
	if err := c.Validate("p"); err == nil || !strings.Contains(err.Error(), "does not verify with the secret's public key") {
		t.Fatalf("other timestamp: %v", err)
	}
	z := fixtures(t)["x-zoom"]
	z.Vectors = []ContractVector{{Name: "v", PublicKey: pub, Timestamp: "1", Body: "b", Signature: "00"}}
	if err := z.Validate("p"); err == nil || !strings.Contains(err.Error(), "only ed25519 and ecdsa-p256 vectors can give a public key") {
		t.Fatalf("public key on HMAC: %v", err)
	}
}

// TestKeepSpace: the envelope is compacted unless the provider sends its
// white space.
func TestKeepSpace(t *testing.T) {
	c := baseContract(t)
	c.Body.Envelope = "{\n  \"id\": {{json .ID}},\n  \"type\": {{json .Type}},\n  \"data\": {{.Object}}\n}\n"
	ev := sampleEvents("")[0]
	for _, keep := range []bool{false, true} {
		c.Body.KeepSpace = keep
		p, err := NewContractProfile(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		if spaced := bytes.Contains(b, []byte("\n  \"id\": ")); spaced != keep {
			t.Errorf("keep_space %v: %q", keep, b)
		}
	}
}

// TestContractProfilesConcurrent: contract profiles are safe for concurrent
// use (run with -race): renders, signed headers that read other headers,
// handshakes and verdicts from many goroutines give the same bytes.
func TestContractProfilesConcurrent(t *testing.T) {
	c := baseContract(t)
	c.Headers = map[string]string{"X-Request-Id": "{{.DeliveryID}}"}
	c.Signature.Signed = `{{header "X-Request-Id"}}.{{.Timestamp}}.{{.Body}}`
	hp, err := NewContractProfile(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := []Profile{hp, fixture(t, "x-twilio"), fixture(t, "x-sendgrid"), fixture(t, "x-mailgun"), fixture(t, "x-zoom"), contractOnly(t, "slack")}
	for _, p := range ps {
		sec := drawSecret(t, p, 1)
		ev := Event{Source: "s", Account: "acct", ID: "ev_1", Type: "a.b", ObjectID: "o", Created: time.Unix(1_800_000_000, 0)}
		at := Attempt{N: 1, SignedAt: time.Unix(1_800_000_001, 0), DeliveryID: "d1", URL: "https://r.example/h?x=1"}
		want, wh, err := Render(p, ev, at, []string{sec})
		if err != nil {
			t.Fatalf("%s: %v", p.ID(), err)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 64)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 20; j++ {
					b, h, err := Render(p, ev, at, []string{sec})
					if err != nil || !bytes.Equal(b, want) || len(h) != len(wh) {
						errs <- p.ID()
						return
					}
					for k := range wh {
						if h.Get(k) != wh.Get(k) {
							errs <- p.ID() + " " + k
							return
						}
					}
					if hs, ok := p.(Handshaker); ok {
						in := HandshakeInput{Challenge: "c", VerifyToken: "v", Secrets: []string{sec}, URL: at.URL, At: at.SignedAt}
						if _, err := hs.HandshakeRequest(in, ""); err != nil {
							errs <- err.Error()
							return
						}
						_ = hs.HandshakeAnswer(in, 200, nil, []byte("c"))
					}
					p.Verdict(200+j, nil, nil)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("concurrent render differs: %s", e)
		}
	}
}
