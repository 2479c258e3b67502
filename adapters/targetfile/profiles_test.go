package targetfile

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// acmeProfile is a provider no built-in profile knows: HMAC over
// "<t>:<id>:<body>", the event ID in a header of its own.
const acmeProfile = `profiles:
  - id: acme
    name: Acme
    body:
      envelope: '{"type": {{json .Type}}, "data": {{.Object}}}'
      object_path: $.data
    event_id: {header: Acme-Event-Id}
    event_type: {json_path: $.type}
    timestamp: {tolerance: 5m, source: acme docs}
    signature:
      algorithm: hmac-sha256
      signed: "{{.Timestamp}}:{{.ID}}:{{.Body}}"
      header: Acme-Signature
      format: "t={{.Timestamp}},s={{.Signature}}"
      source: acme docs
    delivery: {timeout: 10s}
    sources: [acme docs]
`

const acmeTarget = `target:
  name: acme-receiver
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: acme, account: acct_A, path: /acme/acct_A, secret: acme_secret_AAAA}
    - {profile: stripe, account: acct_A, path: /stripe/acct_A, secret: whsec_inline_AAAA}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM events WHERE source=$1 AND account=$2 AND event_id=$3
        effects: SELECT count(*) FROM credits WHERE source=$1 AND account=$2 AND event_id=$3
`

func TestDeclaredProfileIsUsable(t *testing.T) {
	tg, err := Parse([]byte(acmeProfile+acmeTarget), testVars, WithProfiles(profiles.IDs()))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(tg.DeclaredProfiles) != 1 || tg.DeclaredProfiles[0].ID != "acme" {
		t.Fatalf("DeclaredProfiles = %+v", tg.DeclaredProfiles)
	}
	p, err := tg.LookupProfile("acme")
	if err != nil {
		t.Fatal(err)
	}
	if f := p.Facts(); f.EventIDHeader != "Acme-Event-Id" || f.Tolerance == nil || *f.Tolerance != 5*time.Minute {
		t.Errorf("acme's facts are not the declaration's: %+v", f)
	}
	// The declared profile signs as declared: a delivery renders and its
	// signature header has the declared format.
	ev := profiles.Event{Source: "acme", Account: "acct_A", ID: "evt_1", Type: "credit.granted", ObjectID: "obj_1", Amount: 100, Currency: "usd", Created: time.Unix(1772366400, 0)}
	body, err := p.Body(ev)
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.Headers(ev, body, profiles.Attempt{N: 1, SignedAt: time.Unix(1772366400, 0), URL: "http://x/acme/acct_A", Method: http.MethodPost}, []string{"acme_secret_AAAA"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("Acme-Signature"); !strings.HasPrefix(got, "t=1772366400,s=") || h.Get("Acme-Event-Id") != "evt_1" {
		t.Errorf("headers = %v", h)
	}
	// A built-in profile still resolves beside it; an unknown one is named
	// with the declared ones among the valid.
	if p, err := tg.LookupProfile("stripe"); err != nil || p.ID() != "stripe" {
		t.Errorf("LookupProfile(stripe) = %v, %v", p, err)
	}
	if _, err := tg.LookupProfile("acmee"); err == nil || !strings.Contains(err.Error(), "acme, adyen") {
		t.Errorf("LookupProfile(acmee) error = %v, want the valid list with acme", err)
	}
	if err := tg.CheckProfiles(profiles.IDs()); err != nil {
		t.Errorf("CheckProfiles: %v", err)
	}
	// A file without profiles: declares none, and an endpoint naming acme
	// is unknown, with the rule.
	_, err = Parse([]byte(acmeTarget), testVars, WithProfiles(profiles.IDs()))
	if err == nil || !strings.Contains(err.Error(), `target.endpoints[0].profile (line 5): unknown profile "acme" (valid: adyen`) {
		t.Errorf("without profiles: error = %v", err)
	}
}

func TestDeclaredProfileErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		profiles string
		want     []string
	}{
		"unknown field": {
			strings.Replace(acmeProfile, "      header: Acme-Signature", "      hedaer: Acme-Signature", 1),
			[]string{"profiles[0].signature.hedaer (line 13): unknown field in profiles[].signature (valid: "},
		},
		"wrong type": {
			strings.Replace(acmeProfile, "sources: [acme docs]", "sources: acme docs", 1),
			[]string{"profiles[0].sources (line 17): must be a list of strings, got a string"},
		},
		"a rule of the contract, at its line": {
			strings.Replace(acmeProfile, "algorithm: hmac-sha256", "algorithm: hmac-md5", 1),
			[]string{"profiles[0].signature.algorithm (line 11): ", "hmac-md5"},
		},
		"a built-in's ID": {
			strings.Replace(acmeProfile, "id: acme", "id: stripe", 1),
			[]string{`profiles[0].id (line 2): "stripe" is a built-in profile: a declared profile needs an ID of its own`},
		},
		"declared twice": {
			acmeProfile + strings.TrimPrefix(acmeProfile, "profiles:\n"),
			[]string{`profiles[1].id (line 18): profile "acme" is declared twice (also profiles[0])`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.profiles+acmeTarget), testVars, WithProfiles(profiles.IDs()))
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if name != "a built-in's ID" && name != "declared twice" && !strings.Contains(err.Error(), `profile "acme" is declared at profiles[0], which has errors`) {
				t.Errorf("the endpoint naming the broken profile is not told why:\n%v", err)
			}
			// ParseProfiles reports the same, for a file of profiles alone.
			if _, err := ParseProfiles([]byte(tc.profiles)); err == nil || !strings.Contains(err.Error(), tc.want[0]) {
				t.Errorf("ParseProfiles error = %v, want %q", err, tc.want[0])
			}
		})
	}
}

func TestParseProfiles(t *testing.T) {
	cs, err := ParseProfiles([]byte(acmeProfile + acmeTarget))
	if err != nil || len(cs) != 1 || cs[0].ID != "acme" {
		t.Fatalf("ParseProfiles(target file) = %+v, %v", cs, err)
	}
	// The rest of a target file is not checked: its secrets need not be set.
	cs, err = ParseProfiles([]byte(acmeProfile + "target: {name: x, endpoints: [{secret_env: NOT_SET_ANYWHERE}]}\n"))
	if err != nil || len(cs) != 1 {
		t.Errorf("ParseProfiles checked the target section: %v", err)
	}
	for _, none := range []string{"", "target: {name: x}\n", "profiles:\n"} {
		if cs, err := ParseProfiles([]byte(none)); err != nil || cs != nil {
			t.Errorf("ParseProfiles(%q) = %v, %v; want none", none, cs, err)
		}
	}
	if _, err := ParseProfiles([]byte("- a\n")); err == nil {
		t.Error("a list at the top level was accepted")
	}
}

// discord-like: Ed25519 over timestamp+body; the secret is the private key's
// 32-byte seed, base64; the receiver is given the public key, hex.
const edProfile = `profiles:
  - id: edsign
    name: Ed Sign
    body: {envelope: '{"id": {{json .ID}}, "type": {{json .Type}}, "data": {{.Object}}}', object_path: $.data}
    event_id: {json_path: $.id}
    event_type: {json_path: $.type}
    timestamp: {header: X-Signature-Timestamp, tolerance: 5m, source: ed docs}
    signature:
      algorithm: ed25519
      key: base64
      public_key_encoding: hex
      signed: "{{.Timestamp}}{{.Body}}"
      header: X-Signature-Ed25519
      source: ed docs
    delivery: {timeout: 3s}
    sources: [ed docs]
`

func TestPublicKeyTemplate(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	priv := base64.StdEncoding.EncodeToString(seed)
	t.Setenv("HOOKCERT_TEST_ED_KEY", priv)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	target := func(env string) string {
		return edProfile + `target:
  name: ed
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: edsign, account: acct_A, path: /ed, secret_env: HOOKCERT_TEST_ED_KEY}
    - {profile: stripe, account: acct_S, path: /stripe, secret: whsec_inline_AAAA}
  lifecycle:
    command: [./bin/receiver]
    env: {` + env + `}
    ready: {http: /healthz}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM events WHERE source=$1 AND account=$2 AND event_id=$3
        effects: SELECT count(*) FROM credits WHERE source=$1 AND account=$2 AND event_id=$3
`
	}
	for _, name := range []string{"acct_A", "edsign"} {
		tg, err := Parse([]byte(target(`PUBLIC_KEY: '{{publicKey "`+name+`"}}'`)), testVars, WithProfiles(profiles.IDs()))
		if err != nil {
			t.Fatalf("publicKey %q: %v", name, err)
		}
		if got := tg.Lifecycle.Env["PUBLIC_KEY"]; got != hexString(pub) {
			t.Errorf("publicKey %q = %q, want %x", name, got, []byte(pub))
		}
		for _, s := range tg.Secrets() {
			if s == hexString(pub) {
				t.Error("the public key is scrubbed as a secret")
			}
		}
	}
	for env, want := range map[string]string{
		`K: '{{publicKey "acct_S"}}'`: `{{publicKey "acct_S"}}: target.endpoints[1] (stripe) signs with a shared secret, not a key pair`,
		`K: '{{publicKey "nobody"}}'`: `{{publicKey "nobody"}}: no endpoint's account, source or profile is "nobody"`,
	} {
		_, err := Parse([]byte(target(env)), testVars, WithProfiles(profiles.IDs()))
		if err == nil || !strings.Contains(err.Error(), "target.lifecycle.env.K (line") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error = %v, want %q", env, err, want)
		}
	}
	// A secret that is not a key: named, never quoted.
	t.Setenv("HOOKCERT_TEST_ED_KEY", "bm90LWEtc2VlZA==")
	_, err := Parse([]byte(target(`K: '{{publicKey "acct_A"}}'`)), testVars, WithProfiles(profiles.IDs()))
	if err == nil || !strings.Contains(err.Error(), "target.endpoints[0]'s secret is not a private key edsign can sign with") || strings.Contains(err.Error(), "bm90LWEtc2VlZA") {
		t.Errorf("bad key: error = %v", err)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
