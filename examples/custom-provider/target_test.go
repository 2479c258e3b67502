package main

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// TestTargetDeclaresWhatTheReceiverVerifies loads target.yaml with hookcert's
// loader and holds its declared profile to the receiver: a delivery the
// profile renders and signs is one the receiver's own check accepts, at the
// edges of the tolerance too, and one signed with another secret it refuses.
// The contract in the file and the code cannot drift apart unnoticed.
func TestTargetDeclaresWhatTheReceiverVerifies(t *testing.T) {
	t.Setenv("ACME_SECRET_ACCT_ALPHA", testSecret)
	t.Setenv("ACME_SECRET_ACCT_BETA", "acme_sk_test_beta_0123456789abcdef")
	tg, err := targetfile.Load("target.yaml", targetfile.PlaceholderVars, targetfile.WithProfiles(profiles.IDs()))
	if err != nil {
		t.Fatalf("target.yaml does not load: %v", err)
	}
	p, err := tg.LookupProfile("acme")
	if err != nil {
		t.Fatal(err)
	}
	f := p.Facts()
	if f.Tolerance == nil || *f.Tolerance != DefaultTolerance || f.EventIDHeader != HeaderEventID || f.SignatureHeader != HeaderSignature {
		t.Fatalf("the declared contract is not the receiver's: tolerance %v, event ID header %q, signature header %q", f.Tolerance, f.EventIDHeader, f.SignatureHeader)
	}
	s := NewServer(nil, Config{Now: func() time.Time { return now }}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ev := profiles.Event{Source: "acme", Account: "acct_alpha", ID: "evt_0123456789abcdefghijklmn", Type: "credit.granted",
		ObjectID: "cr_1", Amount: 100, Currency: "usd", Created: now,
		Object: []byte(`{"id": "cr_1", "wallet": "w_1", "amount": 100, "currency": "usd"}`)}
	body, err := p.Body(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		at     time.Time
		secret string
		ok     bool
	}{
		{"now", now, testSecret, true},
		{"4 minutes old", now.Add(-4 * time.Minute), testSecret, true},
		{"4 minutes ahead", now.Add(4 * time.Minute), testSecret, true},
		{"6 minutes old", now.Add(-6 * time.Minute), testSecret, false},
		{"another secret", now, "acme_sk_someone_else", false},
	} {
		h, err := p.Headers(ev, body, profiles.Attempt{N: 1, SignedAt: tc.at, URL: "http://127.0.0.1/acme/acct_alpha/events", Method: http.MethodPost}, []string{tc.secret})
		if err != nil {
			t.Fatal(err)
		}
		err = s.verify(h.Get(HeaderSignature), h.Get(HeaderEventID), body, []string{testSecret})
		if (err == nil) != tc.ok {
			t.Errorf("%s: the receiver's verify = %v, want ok %v (header %q)", tc.name, err, tc.ok, h.Get(HeaderSignature))
		}
	}
}

// TestDocumentedErrors: the errors docs/target.md quotes for this file with
// a broken algorithm are the loader's, lines included.
func TestDocumentedErrors(t *testing.T) {
	t.Setenv("ACME_SECRET_ACCT_ALPHA", testSecret)
	t.Setenv("ACME_SECRET_ACCT_BETA", "acme_sk_test_beta_0123456789abcdef")
	data, err := os.ReadFile("target.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/target.md")
	if err != nil {
		t.Fatal(err)
	}
	// The docs wrap the quotes over lines.
	docText := strings.Join(strings.Fields(string(doc)), " ")
	broken := strings.Replace(string(data), "algorithm: hmac-sha256", "algorithm: hmac-md5", 1)
	err = targetfile.Validate([]byte(broken), profiles.IDs())
	if err == nil {
		t.Fatal("a contract with hmac-md5 was accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want the algorithm's error and each endpoint's, got:\n%v", err)
	}
	for _, l := range lines[:2] {
		// The docs quote the start of each: up to the rule's first clause.
		quote := l
		if i := strings.Index(l, ", which has errors"); i >= 0 {
			quote = l[:i+len(", which has errors")]
		} else if i := strings.Index(l, " is not one of"); i >= 0 {
			quote = l[:i+len(" is not one of")]
		}
		if !strings.Contains(docText, quote) {
			t.Errorf("docs/target.md does not quote %q", quote)
		}
	}
}
