package simulator

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// verifyingServer verifies each delivery with the provider's own library and
// records the verdicts in arrival order.
func verifyingServer(t *testing.T, check func(body []byte, h http.Header) error) (*httptest.Server, func() []error) {
	t.Helper()
	var mu sync.Mutex
	var got []error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := check(body, r.Header)
		mu.Lock()
		got = append(got, err)
		mu.Unlock()
		if err != nil {
			http.Error(w, "rejected", 400)
			return
		}
		w.Write([]byte(`{"status":"processed"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []error { mu.Lock(); defer mu.Unlock(); return append([]error(nil), got...) }
}

func realProfile(t *testing.T, id string) profiles.Profile {
	t.Helper()
	p, err := profiles.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// faultExpectations: which faults the provider's own verifier must reject.
var faultCases = []struct {
	name   string
	f      Faults
	reject bool
}{
	{"clean", Faults{}, false},
	{"tamper", Faults{Tamper: true}, true},
	{"wrong_secret", Faults{WrongSecret: true}, true},
	{"missing_signature", Faults{MissingSignature: true}, true},
	{"stale_10m", Faults{StaleBy: Duration(10 * time.Minute)}, true},
	{"oversize", Faults{OversizeBytes: 300000}, false},
	{"malformed_json", Faults{MalformedJSON: true}, false}, // signed correctly: the signature verifies
}

func runFaultCases(t *testing.T, p profiles.Profile, secret string, check func([]byte, http.Header) error) {
	srv, got := verifyingServer(t, check)
	r, err := NewRunner(Target{URL: srv.URL, Profile: p, Secrets: []string{secret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ev := profiles.Event{Source: p.ID(), Account: "acct_A", ID: NewEventID(1, p.ID(), 0), Type: "payment_intent.succeeded",
		ObjectID: "pi_1", Amount: 1000, Currency: "usd", Status: "succeeded", Created: time.Now().UTC().Truncate(time.Second)}
	for i, c := range faultCases {
		a, err := r.Send(context.Background(), ev, SendOptions{Shape: Shape{Faults: c.f, Timeout: Duration(5 * time.Second)}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		verr := got()[i]
		if (verr != nil) != c.reject {
			t.Errorf("%s %s: verifier error %v, want rejected=%v", p.ID(), c.name, verr, c.reject)
		}
		wantOutcome := history.OutcomeAcknowledged
		if c.reject {
			wantOutcome = history.OutcomeFailed
		}
		if a.Outcome != wantOutcome {
			t.Errorf("%s %s: outcome %s, want %s", p.ID(), c.name, a.Outcome, wantOutcome)
		}
	}
}

func TestStripeProfileWithStripeGoVerifier(t *testing.T) {
	const secret = "whsec_test_hookcert_secret"
	runFaultCases(t, realProfile(t, "stripe"), secret, func(body []byte, h http.Header) error {
		return webhook.ValidatePayload(body, h.Get("Stripe-Signature"), secret)
	})
}

func TestStandardWebhooksProfileWithReferenceVerifier(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	runFaultCases(t, realProfile(t, "standard-webhooks"), secret, func(body []byte, h http.Header) error {
		return wh.Verify(body, h)
	})
}

func TestStripeScheduleRunsCompressed(t *testing.T) {
	// Stripe publishes no intervals; the profile's model starts at 5 min, so at
	// 36000× the first retry comes after about 8 ms of real time.
	const secret = "whsec_test_hookcert_secret"
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.ValidatePayload(body, r.Header.Get("Stripe-Signature"), secret); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k < 3 {
			w.WriteHeader(500)
			return
		}
	}))
	defer srv.Close()
	p := realProfile(t, "stripe")
	r, err := NewRunner(Target{URL: srv.URL, Profile: p, Secrets: []string{secret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Run(context.Background(), &Plan{Seed: 11, TimeScale: 36000, Timeout: Duration(5 * time.Second),
		Events: []EventSpec{{Name: "e", Type: "payment_intent.succeeded", Amount: 10}}, Steps: []Step{{Event: "e", Retry: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 3 || !h.AllAcknowledged() {
		t.Fatalf("attempts: %+v", h.Attempts)
	}
	s := ScheduleFor(p, nil)
	if !s.Modelled {
		t.Fatalf("stripe schedule should be the profile's model: %+v", s)
	}
	for i := 0; i < 2; i++ {
		virt := time.Duration(h.Attempts[i+1].VirtualNS - h.Attempts[i].VirtualNS)
		if virt < s.Delays[i] {
			t.Fatalf("retry %d came after %v provider time, before the %v delay", i+1, virt, s.Delays[i])
		}
	}
	if h.Attempts[0].SignedAt.Equal(time.Time{}) || h.Attempts[0].Key.EventID[:4] != "evt_" {
		t.Fatalf("first attempt: %+v", h.Attempts[0])
	}
}
