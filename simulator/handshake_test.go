package simulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// shakeProfile is coverProfile with a handshake: a POST of
// {"type":"url_verification","challenge":…} signed like an event, answered
// with the challenge as the body within 300 ms; a badly signed one must be
// refused.
type shakeProfile struct{ coverProfile }

func (shakeProfile) ID() string { return "shakeprof" }

func (shakeProfile) HandshakeFacts() profiles.HandshakeFacts {
	return profiles.HandshakeFacts{Method: "POST", Deadline: 300 * time.Millisecond, Refuse: []string{"bad-signature"},
		Summary: "a signed url_verification POST; answer the challenge", Source: "test"}
}

func (p shakeProfile) HandshakeRequest(in profiles.HandshakeInput, bad string) (profiles.HandshakeHTTP, error) {
	body := []byte(`{"type":"url_verification","challenge":"` + in.Challenge + `"}`)
	secrets := in.Secrets
	if bad == "bad-signature" {
		secrets = wrongSecretsN(secrets, 0)
	}
	h, err := p.Headers(profiles.Event{}, body, profiles.Attempt{SignedAt: in.At, URL: in.URL}, secrets)
	if err != nil {
		return profiles.HandshakeHTTP{}, err
	}
	h.Set("Content-Type", "application/json")
	return profiles.HandshakeHTTP{Method: "POST", Header: h, Body: body}, nil
}

func (shakeProfile) HandshakeAnswer(in profiles.HandshakeInput, status int, _ http.Header, body []byte) error {
	if status != 200 {
		return fmt.Errorf("status %d, want 200", status)
	}
	if got := strings.TrimSpace(string(body)); got != in.Challenge {
		return errors.New("the body is not the challenge")
	}
	return nil
}

// shakeReceiver answers handshakes as answer says, after delay.
func shakeReceiver(t *testing.T, delay time.Duration, verify bool, answer func(challenge string) string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if verify {
			if bad := coverVerify(r, body, testSecret); bad != "" {
				http.Error(w, bad, http.StatusUnauthorized)
				return
			}
		}
		time.Sleep(delay)
		_, rest, _ := strings.Cut(string(body), `"challenge":"`)
		challenge, _, _ := strings.Cut(rest, `"`)
		w.Write([]byte(answer(challenge)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHandshakeRecords(t *testing.T) {
	echo := func(c string) string { return c }
	key := profiles.Key{Source: "shakeprof", Account: "acct_A"}
	for _, c := range []struct {
		name    string
		delay   time.Duration
		verify  bool
		answer  func(string) string
		bad     string
		outcome history.Outcome
		class   string
		slow    bool
	}{
		{"answered", 0, true, echo, "", history.OutcomeAcknowledged, "", false},
		{"answered wrongly", 0, true, func(c string) string { return c + "x" }, "", history.OutcomeFailed, ErrClassHandshake, false},
		{"answered late, measured and not cut", 500 * time.Millisecond, true, echo, "", history.OutcomeAcknowledged, "", true},
		{"badly signed, refused", 0, true, echo, "bad-signature", history.OutcomeFailed, "", false},
		{"badly signed, answered", 0, false, echo, "bad-signature", history.OutcomeAcknowledged, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := shakeReceiver(t, c.delay, c.verify, c.answer)
			r := newTestRunner(t, srv.URL+"/hook", shakeProfile{})
			a, err := r.Handshake(context.Background(), Handshake{Key: key, Challenge: "chal_" + strconv.Itoa(len(c.name)), Bad: c.bad})
			if err != nil {
				t.Fatal(err)
			}
			if a.Outcome != c.outcome || a.ErrorClass != c.class {
				t.Errorf("outcome %s class %q (%s), want %s %q", a.Outcome, a.ErrorClass, a.Error, c.outcome, c.class)
			}
			want := "handshake"
			if c.bad != "" {
				want = "handshake:" + c.bad
			}
			if len(a.Faults) != 1 || a.Faults[0] != want || a.Key != key {
				t.Errorf("faults %v key %+v, want [%s] %+v", a.Faults, a.Key, want, key)
			}
			if late := a.Duration() > 300*time.Millisecond; late != c.slow {
				t.Errorf("took %s; late %v, want %v", a.Duration(), late, c.slow)
			}
			if a.ErrorClass == ErrClassHandshake && strings.Contains(a.Error, testSecret) {
				t.Errorf("error quotes the secret: %s", a.Error)
			}
		})
	}
}

func TestHandshakeErrors(t *testing.T) {
	ctx := context.Background()
	plain := newTestRunner(t, "http://127.0.0.1:1/x", testProfile{})
	if _, err := plain.Handshake(ctx, Handshake{Challenge: "c"}); err == nil || !strings.Contains(err.Error(), "profile testprof makes no handshake") {
		t.Errorf("a profile without a handshake: %v", err)
	}
	r := newTestRunner(t, "http://127.0.0.1:1/x", shakeProfile{})
	if _, err := r.Handshake(ctx, Handshake{Challenge: "c", Bad: "wrong-verify-token"}); err == nil || !strings.Contains(err.Error(), `handshake.bad: "wrong-verify-token" is not one of the variants profile shakeprof refuses (bad-signature)`) {
		t.Errorf("an unknown variant: %v", err)
	}
	if _, err := r.Handshake(ctx, Handshake{}); err == nil || !strings.Contains(err.Error(), "handshake.challenge must not be empty") {
		t.Errorf("no challenge: %v", err)
	}
	// Nobody listening: recorded, not an error.
	a, err := r.Handshake(ctx, Handshake{Challenge: "c", Timeout: time.Second})
	if err != nil || a.Outcome == history.OutcomeAcknowledged || a.ErrorClass == "" {
		t.Errorf("no receiver: %v %+v", err, a)
	}
}

// quietProfile is shakeProfile whose contract lists nothing to refuse, and
// whose handshake is signed or not.
type quietProfile struct {
	shakeProfile
	unsigned bool
}

func (q quietProfile) HandshakeFacts() profiles.HandshakeFacts {
	f := q.shakeProfile.HandshakeFacts()
	f.Refuse = nil
	return f
}

func (q quietProfile) HandshakeRequest(in profiles.HandshakeInput, bad string) (profiles.HandshakeHTTP, error) {
	if q.unsigned {
		in.Secrets = []string{"constant"}
	}
	return q.shakeProfile.HandshakeRequest(in, bad)
}

// A signed handshake's bad-signature variant is sent even where the contract
// leaves it out of its refuse list: it is the real one made with another key.
func TestHandshakeBadSignatureDerived(t *testing.T) {
	srv := shakeReceiver(t, 0, true, func(c string) string { return c })
	key := profiles.Key{Source: "shakeprof", Account: "acct_A"}
	r := newTestRunner(t, srv.URL+"/hook", quietProfile{})
	if signed, err := r.HandshakeSigned(); err != nil || !signed {
		t.Fatalf("signed: %v %v", signed, err)
	}
	a, err := r.Handshake(context.Background(), Handshake{Key: key, Challenge: "c1", Bad: "bad-signature"})
	if err != nil || a.Status != http.StatusUnauthorized || a.Outcome != history.OutcomeFailed {
		t.Fatalf("the derived bad signature: %v %+v, want a 401 from the verifying receiver", err, a)
	}
	u := newTestRunner(t, srv.URL+"/hook", quietProfile{unsigned: true})
	if signed, err := u.HandshakeSigned(); err != nil || signed {
		t.Fatalf("an unsigned handshake taken for signed: %v %v", signed, err)
	}
	if _, err := u.Handshake(context.Background(), Handshake{Key: key, Challenge: "c1", Bad: "bad-signature"}); err == nil || !strings.Contains(err.Error(), "handshake is not signed") {
		t.Fatalf("an unsigned handshake's bad signature: %v", err)
	}
}

// idShakeProfile's handshake carries an event ID, where its events carry it.
type idShakeProfile struct{ shakeProfile }

func (p idShakeProfile) HandshakeRequest(in profiles.HandshakeInput, bad string) (profiles.HandshakeHTTP, error) {
	req, err := p.shakeProfile.HandshakeRequest(in, bad)
	req.Header.Set("X-Test-Event-Id", "hs_"+in.Challenge)
	return req, err
}

// A handshake that carries an event ID is recorded under it: a receiver that
// stores the handshake stores it there.
func TestHandshakeRecordedUnderItsEventID(t *testing.T) {
	srv := shakeReceiver(t, 0, false, func(c string) string { return c })
	r := newTestRunner(t, srv.URL+"/hook", idShakeProfile{})
	a, err := r.Handshake(context.Background(), Handshake{Key: profiles.Key{Source: "s", Account: "a"}, Challenge: "c9"})
	if err != nil || a.Key.EventID != "hs_c9" {
		t.Fatalf("%v: key %+v, want event ID hs_c9", err, a.Key)
	}
}
