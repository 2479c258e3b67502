package profiles

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v85/webhook"
)

// Independent verification: the providers' own libraries accept what the
// profiles send.

func testEvent(source string) Event {
	return Event{
		Source: source, Account: "acct_A", ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
		Type: "payment_intent.succeeded", ObjectID: "pi_123", Version: 3,
		Amount: 1130, Currency: "eur", Status: "succeeded",
		Created: time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC),
	}
}

func TestStripeGoAcceptsDeliveries(t *testing.T) {
	p, _ := Lookup("stripe")
	ev := testEvent("stripe")
	oldSecret, newSecret := "whsec_old_secret_value", "whsec_new_secret_value"
	now := time.Now()

	body, h, err := Render(p, ev, Attempt{N: 1, SignedAt: now}, []string{newSecret})
	if err != nil {
		t.Fatal(err)
	}
	got, err := webhook.ConstructEventWithOptions(body, h.Get("Stripe-Signature"), newSecret, webhook.ConstructEventOptions{})
	if err != nil {
		t.Fatalf("stripe-go rejected a delivery: %v", err)
	}
	if got.ID != ev.ID || string(got.Type) != ev.Type || got.Livemode {
		t.Fatalf("stripe-go parsed id=%s type=%s livemode=%v", got.ID, got.Type, got.Livemode)
	}
	if got.Data == nil || got.Data.Raw == nil || !strings.Contains(string(got.Data.Raw), `"id":"pi_123"`) {
		t.Fatalf("data.object not parsed: %+v", got.Data)
	}

	// Roll: both secrets active, the verifier knows only the second.
	body, h, err = Render(p, ev, Attempt{N: 2, SignedAt: now}, []string{oldSecret, newSecret})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(h.Get("Stripe-Signature"), "v1="); n != 2 {
		t.Fatalf("roll: want 2 v1 entries, got %d", n)
	}
	if err := webhook.ValidatePayloadWithTolerance(body, h.Get("Stripe-Signature"), newSecret, webhook.DefaultTolerance); err != nil {
		t.Fatalf("roll: verifier with the new secret rejected: %v", err)
	}
	if err := webhook.ValidatePayloadWithTolerance(body, h.Get("Stripe-Signature"), "whsec_other", webhook.DefaultTolerance); !errors.Is(err, webhook.ErrNoValidSignature) {
		t.Fatalf("roll: an unrelated secret must not verify, got %v", err)
	}

	// Tampered body.
	tampered := []byte(strings.Replace(string(body), `"amount":1130`, `"amount":9999`, 1))
	if string(tampered) == string(body) {
		t.Fatal("tamper did not change the body")
	}
	if err := webhook.ValidatePayloadWithTolerance(tampered, h.Get("Stripe-Signature"), newSecret, webhook.DefaultTolerance); !errors.Is(err, webhook.ErrNoValidSignature) {
		t.Fatalf("tampered body: want ErrNoValidSignature, got %v", err)
	}

	// Stale replay: an old SignedAt fails the library's tolerance but the
	// signature itself is valid.
	_, h, err = Render(p, ev, Attempt{N: 3, SignedAt: now.Add(-10 * time.Minute)}, []string{newSecret})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.ValidatePayloadWithTolerance(body, h.Get("Stripe-Signature"), newSecret, webhook.DefaultTolerance); !errors.Is(err, webhook.ErrTooOld) {
		t.Fatalf("stale timestamp: want ErrTooOld, got %v", err)
	}
	if err := webhook.ValidatePayloadIgnoringTolerance(body, h.Get("Stripe-Signature"), newSecret); err != nil {
		t.Fatalf("stale timestamp: signature should still be valid: %v", err)
	}
}

// renamed copies svix-* headers to webhook-*, as a receiver using the Standard
// Webhooks library for Svix does.
func renamed(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range []string{"id", "timestamp", "signature"} {
		out.Set("webhook-"+k, h.Get("svix-"+k))
	}
	return out
}

func TestStandardWebhooksLibraryAcceptsDeliveries(t *testing.T) {
	secretA := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB, err := GenerateSecret("svix", strings.NewReader(strings.Repeat("k", 24)))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"standard-webhooks", "svix"} {
		t.Run(id, func(t *testing.T) {
			p, _ := Lookup(id)
			ev := testEvent(id)
			ev.ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
			body, h, err := Render(p, ev, Attempt{N: 1, SignedAt: time.Now()}, []string{secretA, secretB})
			if err != nil {
				t.Fatal(err)
			}
			if id == "svix" {
				if h.Get("webhook-id") != "" {
					t.Fatal("svix profile must send svix- headers")
				}
				h = renamed(h)
			}
			for _, s := range []string{secretA, secretB} {
				wh, err := standardwebhooks.NewWebhook(s)
				if err != nil {
					t.Fatal(err)
				}
				if err := wh.Verify(body, h); err != nil {
					t.Fatalf("library rejected a delivery signed with both secrets: %v", err)
				}
				tampered := append([]byte{}, body...)
				tampered[len(tampered)-2] ^= 1
				if err := wh.Verify(tampered, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
					t.Fatalf("tampered body: want ErrNoMatchingSignature, got %v", err)
				}
			}
			other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 32))
			if err := other.Verify(body, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("unrelated secret: want ErrNoMatchingSignature, got %v", err)
			}

			// Stale replay.
			_, hs, err := Render(p, ev, Attempt{N: 2, SignedAt: time.Now().Add(-time.Hour)}, []string{secretA})
			if err != nil {
				t.Fatal(err)
			}
			if id == "svix" {
				hs = renamed(hs)
			}
			wh, _ := standardwebhooks.NewWebhook(secretA)
			if err := wh.Verify(body, hs); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
				t.Fatalf("stale: want ErrMessageTooOld, got %v", err)
			}
			if err := wh.VerifyIgnoringTimestamp(body, hs); err != nil {
				t.Fatalf("stale: signature should still be valid: %v", err)
			}
		})
	}
}

// An asymmetric (whsk_) secret yields a v1a entry that ed25519 verifies with the
// derived public key, next to a v1 entry for a symmetric secret during a roll.
func TestStandardWebhooksAsymmetricThroughProfile(t *testing.T) {
	p, _ := Lookup("standard-webhooks")
	ev := testEvent("standard-webhooks")
	ev.ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	sk := "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="
	body, h, err := Render(p, ev, Attempt{N: 1, SignedAt: time.Now()}, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", sk})
	if err != nil {
		t.Fatal(err)
	}
	entries := strings.Fields(h.Get("webhook-signature"))
	if len(entries) != 2 || !strings.HasPrefix(entries[0], "v1,") || !strings.HasPrefix(entries[1], "v1a,") {
		t.Fatalf("entries: %q", entries)
	}
	pk, err := StandardWebhooksPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(pk, "whpk_"))
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(entries[1], "v1a,"))
	content := []byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body))
	if !ed25519.Verify(ed25519.PublicKey(pub), content, sig) {
		t.Fatal("v1a signature does not verify")
	}
	// The symmetric library still accepts the delivery (it skips v1a entries).
	wh, _ := standardwebhooks.NewWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err := wh.Verify(body, h); err != nil {
		t.Fatal(err)
	}
}
