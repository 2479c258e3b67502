package simulator

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

const testSecret = "whsec_c2VjcmV0LWZvci10ZXN0cw=="

// seen is one request as the receiver saw it.
type seen struct {
	header  http.Header
	body    []byte
	signed  time.Time
	invalid string
	at      time.Time // after the whole body was read
}

// receiver is a real HTTP server over loopback that verifies and records.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []seen
	inflight atomic.Int64
	maxIn    atomic.Int64
	// respond decides the answer; nil answers 200 for valid, 400 for invalid.
	respond func(w http.ResponseWriter, n int, s seen)
}

func newReceiver(t *testing.T, respond func(w http.ResponseWriter, n int, s seen)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := rc.inflight.Add(1)
		defer rc.inflight.Add(-1)
		for {
			m := rc.maxIn.Load()
			if cur <= m || rc.maxIn.CompareAndSwap(m, cur) {
				break
			}
		}
		body, signed, invalid := verify(r, testSecret)
		s := seen{header: r.Header.Clone(), body: body, signed: signed, invalid: invalid, at: time.Now()}
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, s)
		n := len(rc.reqs)
		rc.mu.Unlock()
		if rc.respond != nil {
			rc.respond(w, n, s)
			return
		}
		if invalid != "" {
			http.Error(w, invalid, http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"status":"processed"}`))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.reqs)
}

func (rc *receiver) get(i int) seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.reqs[i]
}

func newTestRunner(t *testing.T, url string, p profiles.Profile) *Runner {
	t.Helper()
	r, err := NewRunner(Target{URL: url, Profile: p, Secrets: []string{testSecret}, Account: "acct_A"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func testEvent() profiles.Event {
	return profiles.Event{Source: "testprof", Account: "acct_A", ID: "evt_123", Type: "payment_intent.succeeded",
		ObjectID: "pi_1", Amount: 4200, Currency: "usd", Created: time.Now().UTC().Truncate(time.Second)}
}
