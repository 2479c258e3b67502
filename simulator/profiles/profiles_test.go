package profiles

import (
	"bytes"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func renderFor(t *testing.T, p Profile, ev Event, at Attempt, secrets []string) ([]byte, http.Header) {
	t.Helper()
	if strings.HasPrefix(p.ID(), "adyen") {
		ev.ID = ""
	}
	b, h, err := Render(p, ev, at, secrets)
	if err != nil {
		t.Fatalf("%s: %v", p.ID(), err)
	}
	return b, h
}

func secretFor(t *testing.T, id string, seed byte) string {
	t.Helper()
	s, err := GenerateSecret(id, bytes.NewReader(bytes.Repeat([]byte{seed}, 512)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDeterminismAndResigning(t *testing.T) {
	for _, p := range goProfiles() {
		t.Run(p.ID(), func(t *testing.T) {
			ev := testEvent(p.ID())
			sec := []string{secretFor(t, p.ID(), 7)}
			at1 := Attempt{N: 1, DeliveryID: "d1", SignedAt: time.Unix(1700000000, 0)}
			b1, h1 := renderFor(t, p, ev, at1, sec)
			b2, h2 := renderFor(t, p, ev, at1, sec)
			if !bytes.Equal(b1, b2) || !reflect.DeepEqual(h1, h2) {
				t.Fatal("same inputs gave different bytes")
			}
			// A later attempt keeps the body (providers resend the original payload).
			at2 := Attempt{N: 2, DeliveryID: "d2", SignedAt: at1.SignedAt.Add(time.Minute), RetryReason: "http_timeout"}
			b3, h3 := renderFor(t, p, ev, at2, sec)
			if !bytes.Equal(b1, b3) {
				t.Fatal("body changed across attempts")
			}
			sig := p.Facts().SignatureHeader
			if p.Facts().ResignsOnRetry {
				if sig == "" || h1.Get(sig) == h3.Get(sig) {
					t.Fatalf("ResignsOnRetry but %s did not change", sig)
				}
			} else if sig != "" && h1.Get(sig) != h3.Get(sig) {
				t.Fatalf("no signed timestamp, yet %s changed across attempts", sig)
			}
			// A different secret changes the signature.
			b4, h4 := renderFor(t, p, ev, at1, []string{secretFor(t, p.ID(), 9)})
			if sig != "" && h1.Get(sig) == h4.Get(sig) || sig == "" && bytes.Equal(b1, b4) {
				t.Fatal("signature does not depend on the secret")
			}
			// A different event changes the body.
			ev2 := ev
			ev2.Version++
			if b5, _ := renderFor(t, p, ev2, at1, sec); bytes.Equal(b1, b5) {
				t.Fatal("body does not depend on the event")
			}
		})
	}
}

func TestMultipleSignatures(t *testing.T) {
	for _, p := range goProfiles() {
		ev := testEvent(p.ID())
		a, b := secretFor(t, p.ID(), 1), secretFor(t, p.ID(), 2)
		_, h1 := renderFor(t, p, ev, Attempt{N: 1, SignedAt: time.Unix(1700000000, 0)}, []string{a})
		_, h2 := renderFor(t, p, ev, Attempt{N: 1, SignedAt: time.Unix(1700000000, 0)}, []string{a, b})
		sig := p.Facts().SignatureHeader
		if sig == "" {
			continue
		}
		if p.Facts().MultipleSignatures {
			if !strings.HasPrefix(h2.Get(sig), h1.Get(sig)) || len(h2.Get(sig)) <= len(h1.Get(sig)) {
				t.Errorf("%s: second secret did not add a signature: %q vs %q", p.ID(), h1.Get(sig), h2.Get(sig))
			}
		} else if h1.Get(sig) != h2.Get(sig) {
			t.Errorf("%s: single-signature provider changed with a second secret", p.ID())
		}
	}
}

func TestSlackRetryHeaders(t *testing.T) {
	p, _ := Lookup("slack")
	ev := testEvent("slack")
	sec := []string{"8f742231b10e8888abcd99yyyzzz85a5"}
	_, h := renderFor(t, p, ev, Attempt{N: 1, SignedAt: time.Unix(1, 0)}, sec)
	if h.Get("X-Slack-Retry-Num") != "" || h.Get("X-Slack-Retry-Reason") != "" {
		t.Fatalf("first attempt carries retry headers: %v", h)
	}
	_, h = renderFor(t, p, ev, Attempt{N: 3, SignedAt: time.Unix(1, 0), RetryReason: "http_timeout"}, sec)
	if h.Get("X-Slack-Retry-Num") != "2" || h.Get("X-Slack-Retry-Reason") != "http_timeout" {
		t.Fatalf("retry headers: %v", h)
	}
	if _, _, err := Render(p, ev, Attempt{N: 2, SignedAt: time.Unix(1, 0), RetryReason: "bogus"}, sec); err == nil || !strings.Contains(err.Error(), "attempt.retry_reason") {
		t.Fatalf("bad retry reason: %v", err)
	}
}

func TestShopifyDeliveryID(t *testing.T) {
	p, _ := Lookup("shopify")
	ev := testEvent("shopify")
	sec := []string{"s"}
	_, h := renderFor(t, p, ev, Attempt{N: 1, DeliveryID: "fixed"}, sec)
	if h.Get("X-Shopify-Webhook-Id") != "fixed" || h.Get("X-Shopify-Shop-Domain") != "acct_A.myshopify.com" {
		t.Fatalf("headers: %v", h)
	}
	_, h1 := renderFor(t, p, ev, Attempt{N: 1}, sec)
	_, h2 := renderFor(t, p, ev, Attempt{N: 2}, sec)
	if h1.Get("X-Shopify-Webhook-Id") == "" || h1.Get("X-Shopify-Webhook-Id") == h2.Get("X-Shopify-Webhook-Id") {
		t.Fatal("derived delivery IDs must be set and differ per attempt")
	}
	if h1.Get("X-Shopify-Event-Id") != h2.Get("X-Shopify-Event-Id") {
		t.Fatal("event ID must be stable across attempts")
	}
}

func TestGitHubWithoutSecretSendsNoSignature(t *testing.T) {
	p, _ := Lookup("github")
	_, h := renderFor(t, p, testEvent("github"), Attempt{N: 1}, nil)
	if h.Get("X-Hub-Signature-256") != "" || h.Get("X-Hub-Signature") != "" {
		t.Fatalf("signature sent without a secret: %v", h)
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "GitHub-Hookshot/") || h.Get("X-GitHub-Hook-ID") == "" {
		t.Fatalf("headers: %v", h)
	}
}

func TestAdyenBodyAndEventID(t *testing.T) {
	p, _ := Lookup("adyen")
	ev := testEvent("adyen")
	if _, err := p.Body(ev); err == nil || !strings.Contains(err.Error(), "event.id") {
		t.Fatalf("an ID that is not pspReference:eventCode:success must be refused, got %v", err)
	}
	ev.ID = EventKey(p, Event{ObjectID: ev.ObjectID, Type: ev.Type}).EventID
	unsigned, err := p.Body(ev)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(unsigned, []byte("hmacSignature")) {
		t.Fatal("Body must be unsigned")
	}
	signed, _, err := Render(p, ev, Attempt{N: 1}, []string{secretFor(t, "adyen", 3)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(signed, []byte(`"hmacSignature"`)) || !bytes.Contains(signed, []byte(`"live":"false"`)) {
		t.Fatalf("signed body: %s", signed)
	}
}

func TestBadInputErrorsNameTheFieldAndHideSecrets(t *testing.T) {
	ev := testEvent("x")
	at := Attempt{N: 1, SignedAt: time.Unix(1700000000, 0)}
	secretLike := "whsec_!!!not-base64-SECRETVALUE"
	cases := []struct {
		id      string
		ev      Event
		at      Attempt
		secrets []string
		field   string
	}{
		{"stripe", ev, at, nil, "secrets"},
		{"stripe", ev, at, []string{""}, "secrets[0]"},
		{"stripe", ev, Attempt{N: 1}, []string{"whsec_x"}, "attempt.signed_at"},
		{"stripe", ev, Attempt{N: 0, SignedAt: at.SignedAt}, []string{"whsec_x"}, "attempt.n"},
		{"stripe", Event{Type: "t", ObjectID: "o", Created: ev.Created}, at, []string{"whsec_x"}, "event.id"},
		{"paddle", Event{ID: "e", ObjectID: "o", Created: ev.Created}, at, []string{"x"}, "event.type"},
		{"slack", Event{ID: "e", Type: "t", Created: ev.Created}, at, []string{"x"}, "event.object_id"},
		{"shopify", Event{ID: "e", Type: "t", ObjectID: "o"}, at, []string{"x"}, "event.created"},
		{"standard-webhooks", ev, at, []string{secretLike}, "secrets[0]"},
		{"svix", ev, at, []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("k")), secretLike}, "secrets[1]"},
		{"adyen", Event{Account: "a", Type: "t", ObjectID: "o", Created: ev.Created}, at, []string{"ZZ" + secretLike}, "secrets[0]"},
	}
	for _, c := range cases {
		p, err := Lookup(c.id)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Render(p, c.ev, c.at, c.secrets)
		if err == nil {
			t.Errorf("%s: want an error naming %s", c.id, c.field)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %q does not name %s", c.id, err, c.field)
		}
		if strings.Contains(err.Error(), "SECRETVALUE") {
			t.Errorf("%s: error leaks the secret: %q", c.id, err)
		}
	}
	if _, _, err := Render(mustLookup(t, "standard-webhooks"), Event{ID: "a.b", Type: "t", ObjectID: "o", Created: ev.Created}, at, []string{secretFor(t, "svix", 1)}); err == nil || !strings.Contains(err.Error(), "'.'") {
		t.Errorf("standard-webhooks must refuse an ID with '.': %v", err)
	}
}

func mustLookup(t *testing.T, id string) Profile {
	t.Helper()
	p, err := Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// goProfiles are the hand-written Go profiles (the fast path), sorted by
// ID: the tests here pin what they render. The profiles served by their
// contract alone are held by the contract and provider tests.
func goProfiles() []Profile {
	var out []Profile
	for _, p := range All() {
		if unwrapContract(p) == nil {
			out = append(out, p)
		}
	}
	return out
}

func goIDs() []string {
	var ids []string
	for _, p := range goProfiles() {
		ids = append(ids, p.ID())
	}
	return ids
}

func TestRegistry(t *testing.T) {
	want := []string{"adyen", "adyen-legacy", "github", "paddle", "shopify", "slack", "standard-webhooks", "stripe", "svix"}
	if got := goIDs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("goIDs() = %v", got)
	}
	// Every embedded contract is served too, beside the Go profiles.
	all := map[string]bool{}
	for _, id := range want {
		all[id] = true
	}
	for _, c := range Contracts() {
		all[c.ID] = true
	}
	if got := IDs(); len(got) != len(all) {
		t.Fatalf("IDs() = %v, want the Go profiles and every embedded contract", got)
	}
	for i, p := range goProfiles() {
		if p.ID() != want[i] {
			t.Fatalf("goProfiles()[%d] = %s", i, p.ID())
		}
		if q := mustLookup(t, p.ID()); q.ID() != p.ID() {
			t.Fatal("Lookup mismatch")
		}
	}
	_, err := Lookup("strpie")
	if err == nil || !strings.Contains(err.Error(), "strpie") || !strings.Contains(err.Error(), strings.Join(IDs(), ", ")) {
		t.Fatalf("unknown profile error must name it and list valid IDs: %v", err)
	}
}

func TestFacts(t *testing.T) {
	for _, p := range goProfiles() {
		f := p.Facts()
		id := p.ID()
		if f.Name == "" || f.ContentType != "application/json" || len(f.Sources) == 0 || f.SuccessRule == "" || f.SignatureScheme == "" || f.Retry.Source == "" {
			t.Errorf("%s: incomplete facts", id)
		}
		if f.EventIDHeader == "" && f.EventIDJSONPath == "" && f.EventIDRule == "" {
			t.Errorf("%s: event ID location missing", id)
		}
		if (f.Timeout == nil) != (id == "stripe") {
			t.Errorf("%s: timeout %v (only stripe's is undocumented)", id, f.Timeout)
		}
		if f.Timeout == nil && !strings.Contains(f.TimeoutSource, "undocumented") {
			t.Errorf("%s: nil timeout must say undocumented", id)
		}
		r := f.Retry
		delays, modelled := r.Effective()
		if modelled != (r.Modelled != nil) || len(delays) == 0 && id != "github" {
			t.Errorf("%s: Effective() = %d delays, modelled %v", id, len(delays), modelled)
		}
		if r.Delays == nil && r.Modelled == nil {
			t.Errorf("%s: no published and no modelled delays", id)
		}
		if r.Modelled != nil && !strings.Contains(r.ModelNote, "MODEL") {
			t.Errorf("%s: modelled schedule not labelled", id)
		}
		if r.MaxAttempts > 0 && len(delays) != r.MaxAttempts-1 {
			t.Errorf("%s: %d delays for %d attempts", id, len(delays), r.MaxAttempts)
		}
		if r.Horizon != nil && sum(delays) > *r.Horizon {
			t.Errorf("%s: delays sum %v beyond horizon %v", id, sum(delays), *r.Horizon)
		}
		// Facts returns a copy.
		if len(f.Sources) > 0 {
			f.Sources[0] = "changed"
			if p.Facts().Sources[0] == "changed" {
				t.Errorf("%s: Facts shares its slices", id)
			}
		}
	}
	// Published figures, spot-checked against providers.yaml.
	checks := map[string]time.Duration{
		"svix":              99305 * time.Second,
		"standard-webhooks": 272105 * time.Second,
		"stripe":            72 * time.Hour,
		"shopify":           4 * time.Hour,
		"paddle":            72 * time.Hour,
	}
	for id, h := range checks {
		f := mustLookup(t, id).Facts()
		if *f.Retry.Horizon != h {
			t.Errorf("%s horizon %v want %v", id, *f.Retry.Horizon, h)
		}
		if id == "svix" || id == "standard-webhooks" {
			if sum(f.Retry.Delays) != h {
				t.Errorf("%s: published delays sum %v != horizon %v", id, sum(f.Retry.Delays), h)
			}
		}
	}
	if d, _ := mustLookup(t, "stripe").Facts().Retry.Effective(); sum(d) != 72*time.Hour {
		t.Errorf("stripe model should end at 3 days, ends at %v", sum(d))
	}
	if d, _ := mustLookup(t, "paddle").Facts().Retry.Effective(); sum(d) != 72*time.Hour {
		t.Errorf("paddle model should end at 3 days, ends at %v", sum(d))
	}
	if f := mustLookup(t, "github").Facts(); f.Retry.MaxAttempts != 1 || *f.ManualRedeliveryWindow != 72*time.Hour {
		t.Errorf("github: %+v", f.Retry)
	}
}

func TestIDGenerators(t *testing.T) {
	patterns := map[string]*regexp.Regexp{
		"stripe":            regexp.MustCompile(`^evt_[0-9A-Za-z]{24}$`),
		"standard-webhooks": regexp.MustCompile(`^msg_[0-9A-Za-z]{27}$`),
		"svix":              regexp.MustCompile(`^msg_[0-9A-Za-z]{27}$`),
		"github":            regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
		"shopify":           regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
		"slack":             regexp.MustCompile(`^Ev[0-9A-Z]{10}$`),
		"paddle":            regexp.MustCompile(`^evt_[0-9a-z]{26}$`),
	}
	for id, re := range patterns {
		r1, r2 := rand.New(rand.NewPCG(42, 1)), rand.New(rand.NewPCG(42, 1))
		seen := map[string]bool{}
		for i := 0; i < 200; i++ {
			a, err := NewEventID(id, r1)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewEventID(id, r2)
			if a != b {
				t.Fatalf("%s: same seed, different IDs %s %s", id, a, b)
			}
			if !re.MatchString(a) {
				t.Fatalf("%s: %q does not match %s", id, a, re)
			}
			if seen[a] {
				t.Fatalf("%s: repeated ID %s", id, a)
			}
			seen[a] = true
		}
		if other, _ := NewEventID(id, rand.New(rand.NewPCG(43, 1))); seen[other] {
			t.Fatalf("%s: another seed repeated an ID", id)
		}
	}
	for _, id := range []string{"adyen", "adyen-legacy"} {
		if _, err := NewEventID(id, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "EventKey") {
			t.Errorf("%s: NewEventID should explain there is no event ID: %v", id, err)
		}
	}
	if _, err := NewEventID("nope", rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "valid profiles") {
		t.Errorf("unknown profile: %v", err)
	}
	d, err := NewDeliveryID("shopify", rand.New(rand.NewPCG(5, 5)))
	if err != nil || !patterns["shopify"].MatchString(d) {
		t.Errorf("shopify delivery ID %q %v", d, err)
	}
	for _, id := range []string{"github", "stripe", "slack"} {
		if _, err := NewDeliveryID(id, rand.New(rand.NewPCG(5, 5))); err == nil {
			t.Errorf("%s: no per-attempt delivery ID expected", id)
		}
	}
	if psp := NewAdyenPSPReference(rand.New(rand.NewPCG(7, 7))); !regexp.MustCompile(`^[1-9][0-9]{15}$`).MatchString(psp) {
		t.Errorf("pspReference %q", psp)
	}
}

func TestGenerateSecret(t *testing.T) {
	checks := map[string]func(string) bool{
		"stripe": regexp.MustCompile(`^whsec_[0-9A-Za-z]{32}$`).MatchString,
		"standard-webhooks": func(s string) bool {
			k, err := StandardWebhooksKey(s)
			return strings.HasPrefix(s, "whsec_") && err == nil && len(k) == 24
		},
		"adyen": func(s string) bool {
			k, err := hex.DecodeString(s)
			return err == nil && len(k) == 32 && s == strings.ToUpper(s)
		},
		"github":  regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString,
		"shopify": regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString,
		"paddle":  regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString,
		"slack":   regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString,
	}
	checks["svix"] = checks["standard-webhooks"]
	checks["adyen-legacy"] = checks["adyen"]
	for _, id := range goIDs() {
		ok := checks[id]
		if ok == nil {
			t.Fatalf("%s: no secret check", id)
		}
		s1, err := GenerateSecret(id, crand.Reader)
		if err != nil || !ok(s1) {
			t.Errorf("%s: secret %q err %v", id, s1, err)
		}
		s2, _ := GenerateSecret(id, crand.Reader)
		if s1 == s2 {
			t.Errorf("%s: two random secrets are equal", id)
		}
		if _, err := GenerateSecret(id, bytes.NewReader([]byte{1, 2})); err == nil {
			t.Errorf("%s: short random source must fail", id)
		}
	}
	// Stripe's rejection sampling must still yield 32 characters from a source
	// full of rejected bytes followed by usable ones.
	src := append(bytes.Repeat([]byte{255}, 40), bytes.Repeat([]byte{61}, 64)...)
	if s, err := GenerateSecret("stripe", bytes.NewReader(src)); err != nil || s != "whsec_"+strings.Repeat("z", 32) {
		t.Errorf("stripe rejection sampling: %q %v", s, err)
	}
}

func TestConcurrentRender(t *testing.T) {
	var wg sync.WaitGroup
	for _, p := range goProfiles() {
		ev := testEvent(p.ID())
		sec := []string{secretFor(t, p.ID(), 4)}
		want, _ := renderFor(t, p, ev, Attempt{N: 1, SignedAt: time.Unix(1, 0)}, sec)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := ev
				if strings.HasPrefix(p.ID(), "adyen") {
					e.ID = ""
				}
				got, _, err := Render(p, e, Attempt{N: 1, SignedAt: time.Unix(1, 0)}, sec)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: concurrent render differs: %v", p.ID(), err)
				}
			}()
		}
	}
	wg.Wait()
}
