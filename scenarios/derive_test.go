package scenarios

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The derived guarantees take everything from the profile's data. These tests
// give them a profile that exists only here — it signs the URL, a header, the
// event ID, the timestamp and the body, sends several signatures, refuses
// future timestamps and verifies endpoints with a re-validated handshake —
// and a small receiver over real HTTP that keeps its events in memory, clean
// or with one mistake, and hold the verdicts to the mistake.

type derivProfile struct{}

func (derivProfile) ID() string { return "derivprof" }

func (derivProfile) Facts() profiles.Facts {
	tol, to := 5*time.Minute, 5*time.Second
	return profiles.Facts{Name: "derived test", ContentType: "application/json", EventIDJSONPath: "$.id",
		SignatureHeader: "X-D-Signature", MultipleSignatures: true, Tolerance: &tol, Timeout: &to}
}

func (derivProfile) Body(ev profiles.Event) ([]byte, error) {
	return json.Marshal(map[string]any{"id": ev.ID, "type": ev.Type, "data": map[string]any{"object": map[string]any{
		"id": ev.ObjectID, "amount": ev.Amount, "currency": ev.Currency}}})
}

func derivSign(secret, url, nonce string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s\n%s\n%d\n", url, nonce, t)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (derivProfile) Headers(ev profiles.Event, body []byte, at profiles.Attempt, secrets []string) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no secret")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	nonce := "n-" + strconv.Itoa(len(body))
	h.Set("X-D-Nonce", nonce)
	v := "t=" + strconv.FormatInt(at.SignedAt.Unix(), 10)
	for _, s := range secrets {
		v += ",v1=" + derivSign(s, at.URL, nonce, at.SignedAt.Unix(), body)
	}
	h.Set("X-D-Signature", v)
	return h, nil
}

func (derivProfile) Verdict(status int, _ http.Header, _ []byte) profiles.AckVerdict {
	if is2xx(status) {
		return profiles.Acknowledged
	}
	return profiles.Retry
}

func (derivProfile) Inputs() []profiles.Input {
	return []profiles.Input{
		{Name: "key", Signed: true},
		{Name: "body", Body: true, Signed: true},
		{Name: "id", JSONPath: "$.id", Signed: true, Identity: true},
		{Name: "timestamp", Header: "X-D-Signature", Signed: true},
		{Name: "url", URL: true, Signed: true},
		{Name: "header:X-D-Nonce", Header: "X-D-Nonce", Signed: true},
	}
}

func (derivProfile) Contract() profiles.Contract {
	future := true
	return profiles.Contract{ID: "derivprof", Timestamp: &profiles.ContractTimestamp{Tolerance: "5m", Future: &future}}
}

func (derivProfile) HandshakeFacts() profiles.HandshakeFacts {
	return profiles.HandshakeFacts{Method: "POST", Deadline: time.Second, Refuse: []string{"bad-signature"}, Revalidate: 72 * time.Hour,
		Summary: "a signed url_verification; answer the challenge", Source: "test"}
}

func (p derivProfile) HandshakeRequest(in profiles.HandshakeInput, bad string) (profiles.HandshakeHTTP, error) {
	body := []byte(`{"type":"url_verification","challenge":"` + in.Challenge + `"}`)
	secrets := in.Secrets
	if bad == "bad-signature" {
		secrets = []string{"another-secret"}
	}
	h, err := p.Headers(profiles.Event{}, body, profiles.Attempt{SignedAt: in.At, URL: in.URL}, secrets)
	return profiles.HandshakeHTTP{Method: "POST", Header: h, Body: body}, err
}

func (derivProfile) HandshakeAnswer(in profiles.HandshakeInput, status int, _ http.Header, body []byte) error {
	if status != 200 || strings.TrimSpace(string(body)) != in.Challenge {
		return fmt.Errorf("status %d: the body is not the challenge", status)
	}
	return nil
}

// derivMistakes are the receiver's mistakes, one per test.
type derivMistakes struct {
	prefixCompare, anyScheme, ignoreURL, futureOK, caseFold, truncate bool
	wrongEcho, unsignedHandshake, storeHandshake, onceOnly            bool
}

// memReceiver verifies derivProfile's deliveries and keeps events in memory.
type memReceiver struct {
	m      derivMistakes
	secret string
	url    string
	mu     sync.Mutex
	keys   map[string]string // dedup key → stored event ID
	effect map[string]int    // stored event ID → effects
	shaken int
}

func (r *memReceiver) verify(req *http.Request, body []byte) bool {
	var ts int64
	var sigs []string
	for _, part := range strings.Split(req.Header.Get("X-D-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch {
		case k == "t":
			ts, _ = strconv.ParseInt(v, 10, 64)
		case k == "v1" || r.m.anyScheme:
			sigs = append(sigs, v)
		}
	}
	url := "http://" + req.Host + req.URL.RequestURI()
	if r.m.ignoreURL {
		// The URL it was configured with, not the one the request came to.
		url = r.url
	}
	want := derivSign(r.secret, url, req.Header.Get("X-D-Nonce"), ts, body)
	ok := false
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) || r.m.prefixCompare && len(s) > 0 && strings.HasPrefix(want, s) {
			ok = true
		}
	}
	age := time.Since(time.Unix(ts, 0))
	return ok && age < 5*time.Minute && (r.m.futureOK || age > -5*time.Minute)
}

func (r *memReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var env struct {
		ID, Type, Challenge string
	}
	if json.Unmarshal(body, &env) != nil {
		http.Error(w, "bad json", 400)
		return
	}
	signed := r.verify(req, body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if env.Type == "url_verification" {
		r.shaken++
		switch {
		case !signed && !r.m.unsignedHandshake:
			http.Error(w, "bad signature", 401)
		case r.m.onceOnly && r.shaken > 2:
			http.Error(w, "already verified", 409)
		default:
			if r.m.storeHandshake {
				r.keys[""] = ""
			}
			ans := env.Challenge
			if r.m.wrongEcho {
				ans = `{"challenge":"` + ans + `"}`
			}
			w.Write([]byte(ans))
		}
		return
	}
	if !signed {
		http.Error(w, "bad signature", 401)
		return
	}
	k := env.ID
	if r.m.caseFold {
		k = strings.ToLower(k)
	}
	if r.m.truncate && len(k) > 32 {
		k = k[:32]
	}
	if _, dup := r.keys[k]; !dup {
		r.keys[k] = env.ID
		r.effect[env.ID]++
	}
	w.Write([]byte("ok"))
}

func (r *memReceiver) EventRows(_ context.Context, k profiles.Key) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range r.keys {
		if id == k.EventID {
			n++
		}
	}
	return n, nil
}

func (r *memReceiver) Effects(_ context.Context, k profiles.Key, _ string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.effect[k.EventID], nil
}

func (r *memReceiver) ObjectEffects(context.Context, string, string, string) (int, error) {
	return 0, nil
}
func (r *memReceiver) Object(context.Context, string, string, string) (int64, string, bool, error) {
	return 0, "", false, nil
}
func (r *memReceiver) Payment(context.Context, string, string, string) (string, bool, error) {
	return "", false, nil
}
func (r *memReceiver) KeyTTL(context.Context, profiles.Key) (time.Duration, bool, bool, error) {
	return 0, false, false, errors.New("no key_ttl")
}

// judgeDerived runs the derived guarantees against a receiver with mistakes m
// and returns each one's deviation codes (the reconciliation's left out).
func judgeDerived(t *testing.T, m derivMistakes) map[string][]string {
	t.Helper()
	rc := &memReceiver{m: m, secret: "s3cret-derived", keys: map[string]string{}, effect: map[string]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	rc.url = srv.URL + "/hook?tenant=a"
	env := &Env{RunID: "drv", Observer: rc, TimeScale: 3600,
		Endpoints: []Endpoint{{Profile: derivProfile{}, Account: "acct_A", URL: rc.url, Secrets: []string{rc.secret}}}}
	run, err := NewRun(env, RunOptions{Seed: 5, LabelFilter: "ACK-8 || ACK-9 || DEDUP-8"}, history.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := run.All(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := run.History()
	out := map[string][]string{}
	for _, sc := range h.Scenarios {
		if sc.State != history.ScenarioRan {
			t.Fatalf("%s: %s: %s", sc.Guarantee, sc.State, sc.Reason)
		}
		var atts []history.Attempt
		for _, a := range h.Attempts {
			if a.Scenario == sc.Index {
				atts = append(atts, a)
			}
		}
		var obs []history.Observation
		for _, o := range h.Observations {
			if o.Scenario == sc.Index {
				obs = append(obs, o)
			}
		}
		v := newView(sc, atts, obs, nil)
		g, _ := Lookup(sc.Guarantee)
		g.judge.check(v)
		if v.errReason != "" {
			t.Fatalf("%s could not be judged: %s", sc.Guarantee, v.errReason)
		}
		codes := []string{}
		for _, d := range v.devs {
			if !slices.Contains(codes, d.Code) {
				codes = append(codes, d.Code)
			}
		}
		slices.Sort(codes)
		out[sc.Guarantee] = codes
		if strings.Contains(fmt.Sprint(v.devs, sc.Notes), rc.secret) {
			t.Errorf("%s: the secret appears in the evidence", sc.Guarantee)
		}
	}
	return out
}

func TestDerivedChecksFromTheProfileData(t *testing.T) {
	none := []string{}
	for _, c := range []struct {
		name string
		m    derivMistakes
		want map[string][]string
	}{
		{"clean", derivMistakes{}, map[string][]string{"ACK-8": none, "ACK-9": none, "DEDUP-8": none}},
		{"compares a prefix of the signature", derivMistakes{prefixCompare: true},
			map[string][]string{"ACK-8": none, "ACK-9": {"ack.signature-truncated-accepted"}, "DEDUP-8": none}},
		{"reads any scheme's signature", derivMistakes{anyScheme: true},
			map[string][]string{"ACK-8": none, "ACK-9": {"ack.signature-format-accepted"}, "DEDUP-8": none}},
		{"verifies the path, not the query", derivMistakes{ignoreURL: true},
			map[string][]string{"ACK-8": none, "ACK-9": {"ack.unsigned-url"}, "DEDUP-8": none}},
		{"accepts future timestamps", derivMistakes{futureOK: true},
			map[string][]string{"ACK-8": none, "ACK-9": {"ack.future-accepted"}, "DEDUP-8": none}},
		{"keys on lower-cased IDs", derivMistakes{caseFold: true},
			map[string][]string{"ACK-8": none, "ACK-9": none, "DEDUP-8": {"dedup.identity-case-folded"}}},
		{"keys on 32 bytes of the ID", derivMistakes{truncate: true},
			map[string][]string{"ACK-8": none, "ACK-9": none, "DEDUP-8": {"dedup.identity-truncated"}}},
		{"answers the challenge in JSON", derivMistakes{wrongEcho: true},
			map[string][]string{"ACK-8": {"ack.handshake-revalidation", "ack.handshake-wrong"}, "ACK-9": none, "DEDUP-8": none}},
		{"answers unsigned handshakes", derivMistakes{unsignedHandshake: true},
			map[string][]string{"ACK-8": {"ack.handshake-bad-accepted"}, "ACK-9": none, "DEDUP-8": none}},
		{"stores handshakes", derivMistakes{storeHandshake: true},
			map[string][]string{"ACK-8": {"ack.handshake-stored"}, "ACK-9": none, "DEDUP-8": none}},
		{"answers only the first handshake", derivMistakes{onceOnly: true},
			map[string][]string{"ACK-8": {"ack.handshake-revalidation"}, "ACK-9": none, "DEDUP-8": none}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := judgeDerived(t, c.m)
			for id, want := range c.want {
				if !slices.Equal(got[id], want) {
					t.Errorf("%s: codes %v, want %v", id, got[id], want)
				}
			}
		})
	}
}

// Without the data, the derived guarantees are not applicable, and say why,
// naming the profiles.
func TestDerivedNeedTheProfileData(t *testing.T) {
	p, err := profiles.Lookup("github")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Endpoints: []Endpoint{{Profile: plainProfile{p}, Account: "a"}}}
	for _, c := range []string{"handshake", "signed-inputs", "event-identity"} {
		ok, why := env.has(c)
		if ok || !strings.Contains(why, "(github)") {
			t.Errorf("%s: %v %q, want not applicable naming github", c, ok, why)
		}
	}
	env.Endpoints = append(env.Endpoints, Endpoint{Profile: derivProfile{}, Account: "a"})
	for _, c := range []string{"handshake", "signed-inputs", "event-identity"} {
		if ok, why := env.has(c); !ok {
			t.Errorf("%s: not applicable with a profile that has the data: %s", c, why)
		}
	}
}

// plainProfile hides every optional interface of the profile it wraps.
type plainProfile struct{ profiles.Profile }
