// Package sink is a downstream HTTP service for the harness: the thing a
// receiver's outbox (or any side effect) calls. It listens on loopback, records
// every call, and applies each operation once per Idempotency-Key the way
// Stripe-style idempotency does: the first request with a key is applied and its
// response stored; a later request with the same key and body gets the stored
// response (with Idempotent-Replayed: true) and applies nothing. Faults can be
// injected per call or per key: answer a status without applying, delay, or apply
// and then drop the connection without answering (the response is lost, the
// effect is not).
//
// It imports nothing from the simulator or the reference receiver.
package sink

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderIdempotencyKey is the request header carrying the operation key.
const HeaderIdempotencyKey = "Idempotency-Key"

// HeaderReplayed is set to "true" on a response replayed for a repeated key
// (Stripe's header name).
const HeaderReplayed = "Idempotent-Replayed"

// Outcomes of a call.
const (
	// OutcomeApplied: the operation was applied and answered.
	OutcomeApplied = "applied"
	// OutcomeReplayed: the key was seen before; the first response was returned
	// and nothing applied.
	OutcomeReplayed = "replayed"
	// OutcomeFailed: an injected status was answered; nothing applied.
	OutcomeFailed = "failed"
	// OutcomeLost: applied, then the connection was closed without a response.
	OutcomeLost = "lost"
	// OutcomeMismatch: the key was first used with another body (400).
	OutcomeMismatch = "key_reused"
	// OutcomeBadRequest: the body could not be read (400).
	OutcomeBadRequest = "bad_request"
)

// Call is one request the sink received: JSON-serialisable so a checker can read
// it from a run's history.
type Call struct {
	// Seq numbers calls from 1 in arrival order.
	Seq int `json:"seq"`
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Method and Path of the request.
	Method string `json:"method"`
	Path   string `json:"path"`
	// IdempotencyKey is the Idempotency-Key header ("" when absent).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// BodySHA256 is the hex SHA-256 of the request body.
	BodySHA256 string `json:"body_sha256"`
	// BodyBytes is the body's length.
	BodyBytes int `json:"body_bytes"`
	// Status answered; 0 when the response was lost.
	Status int `json:"status"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Duration from arrival to answer (or to the dropped connection).
	Duration time.Duration `json:"duration_ns"`
}

// Record is a snapshot of everything the sink saw and did.
type Record struct {
	Calls []Call `json:"calls"`
	// Applied counts applications per key; requests without a key are counted
	// under "".
	Applied map[string]int `json:"applied"`
}

// Fault is an injected misbehaviour, consumed one call at a time.
type Fault struct {
	// Key restricts the fault to calls with this Idempotency-Key; "" matches any call.
	Key string
	// Match restricts the fault to calls whose body contains it (a harness
	// knows its events' IDs, not the operation keys a receiver derives).
	Match string
	// Times is how many matching calls it affects (at least 1).
	Times int
	// Delay is slept before the call is handled.
	Delay time.Duration
	// Status, if set, is answered without applying anything.
	Status int
	// Lose applies the operation, then closes the connection without answering.
	Lose bool
	// HoldAfterApply applies the operation, then holds the response this long
	// (or until the caller goes away): the window in which a harness kills a
	// receiver that has sent but not yet recorded the call.
	HoldAfterApply time.Duration
}

type stored struct {
	bodyHash string
	status   int
	body     []byte
}

// Sink is a running downstream service. Its methods are safe for concurrent use.
type Sink struct {
	srv *http.Server
	ln  net.Listener
	url string

	mu        sync.Mutex
	calls     []Call
	applied   map[string]int
	keys      map[string]*stored
	faults    []*Fault
	ops       int
	keyHeader string
	// bodies holds each call's body (up to maxKeptBody), by Seq-1, for Matching.
	bodies [][]byte
}

// maxKeptBody bounds the body kept per call for attribution.
const maxKeptBody = 64 << 10

// New starts a sink on a free loopback port.
func New() (*Sink, error) { return NewWith(Options{}) }

// Options configure a sink.
type Options struct {
	// KeyHeader is the request header carrying the operation key
	// (HeaderIdempotencyKey when empty).
	KeyHeader string
}

// NewWith starts a sink on a free loopback port with options.
func NewWith(o Options) (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sink: listen: %w", err)
	}
	if o.KeyHeader == "" {
		o.KeyHeader = HeaderIdempotencyKey
	}
	s := &Sink{ln: ln, url: "http://" + ln.Addr().String(), applied: map[string]int{}, keys: map[string]*stored{}, keyHeader: o.KeyHeader}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the sink's base URL (http://127.0.0.1:PORT); every path is accepted.
func (s *Sink) URL() string { return s.url }

// Close stops the sink and closes every connection.
func (s *Sink) Close() error { return s.srv.Close() }

// Inject adds a fault; faults are matched in the order they were added.
func (s *Sink) Inject(f Fault) {
	if f.Times < 1 {
		f.Times = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, &f)
	s.mu.Unlock()
}

// FailNext answers status to the next k calls without applying them.
func (s *Sink) FailNext(k, status int) { s.Inject(Fault{Times: k, Status: status}) }

// FailKey answers status to the next k calls with key without applying them.
func (s *Sink) FailKey(key string, k, status int) {
	s.Inject(Fault{Key: key, Times: k, Status: status})
}

// SlowNext delays the next k calls by d.
func (s *Sink) SlowNext(k int, d time.Duration) { s.Inject(Fault{Times: k, Delay: d}) }

// SlowKey delays the next k calls with key by d.
func (s *Sink) SlowKey(key string, k int, d time.Duration) {
	s.Inject(Fault{Key: key, Times: k, Delay: d})
}

// LoseNext applies the next k calls and drops their responses.
func (s *Sink) LoseNext(k int) { s.Inject(Fault{Times: k, Lose: true}) }

// LoseKey applies the next k calls with key and drops their responses.
func (s *Sink) LoseKey(key string, k int) { s.Inject(Fault{Key: key, Times: k, Lose: true}) }

// Calls returns every call so far, in arrival order.
func (s *Sink) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Matching returns the calls whose body (its first 64 KiB) or operation key
// contains sub, in arrival order.
func (s *Sink) Matching(sub string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for i, c := range s.calls {
		if strings.Contains(c.IdempotencyKey, sub) || bytes.Contains(s.bodies[i], []byte(sub)) {
			out = append(out, c)
		}
	}
	return out
}

// MatchingEach is Matching for many substrings at once, in one pass over the
// calls rather than one per substring: for each of subs, the calls whose body
// (its first 64 KiB) or operation key contains it, in arrival order. A call
// whose key or a string value of whose JSON body is one of subs is given to
// that one alone (an event ID found whole is not also searched for inside
// the others); only the other calls are searched for each of subs.
func (s *Sink) MatchingEach(subs []string) map[string][]Call {
	want := make(map[string]bool, len(subs))
	for _, sub := range subs {
		want[sub] = true
	}
	out := make(map[string][]Call, len(subs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.calls {
		found := false
		if want[c.IdempotencyKey] {
			out[c.IdempotencyKey] = append(out[c.IdempotencyKey], c)
			found = true
		}
		for _, v := range jsonStrings(s.bodies[i]) {
			if want[v] && v != c.IdempotencyKey {
				out[v] = append(out[v], c)
				found = true
			}
		}
		if found {
			continue
		}
		for _, sub := range subs {
			if strings.Contains(c.IdempotencyKey, sub) || bytes.Contains(s.bodies[i], []byte(sub)) {
				out[sub] = append(out[sub], c)
			}
		}
	}
	return out
}

// jsonStrings are the distinct string values (not keys) of a JSON body, nil
// when it is not JSON.
func jsonStrings(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var out []string
	seen := map[string]bool{}
	// Within an object, tokens alternate key, value; a nested value opens
	// its own alternation.
	type level struct{ object, key bool }
	var stack []level
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		isKey := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].key
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = !stack[len(stack)-1].key
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{object: true, key: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					// The closed value was a value: the next token is a key.
					stack[len(stack)-1].key = true
				}
			}
		case string:
			if !isKey && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
}

// Applied is how many times the operation of key was applied (1 at most for a
// non-empty key; every call without a key counts under "").
func (s *Sink) Applied(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied[key]
}

// Record returns a snapshot of calls and applications.
func (s *Sink) Record() Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Record{Calls: append([]Call(nil), s.calls...), Applied: make(map[string]int, len(s.applied))}
	for k, v := range s.applied {
		r.Applied[k] = v
	}
	return r
}

// takeFault consumes one use of the first fault matching key and body.
func (s *Sink) takeFault(key string, body []byte) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Key != "" && f.Key != key {
			continue
		}
		if f.Match != "" && !bytes.Contains(body, []byte(f.Match)) {
			continue
		}
		got := *f
		f.Times--
		if f.Times == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return got
	}
	return Fault{}
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, readErr := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	sum := sha256.Sum256(body)
	c := Call{Time: start, Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get(s.keyHeader),
		BodySHA256: hex.EncodeToString(sum[:]), BodyBytes: len(body)}
	s.mu.Lock()
	c.Seq = len(s.calls) + 1
	s.calls = append(s.calls, c) // placeholder, completed by finish
	s.bodies = append(s.bodies, bytes.Clone(body[:min(len(body), maxKeptBody)]))
	s.mu.Unlock()
	finish := func(status int, outcome string) {
		s.mu.Lock()
		c := &s.calls[c.Seq-1]
		c.Status, c.Outcome, c.Duration = status, outcome, time.Since(start)
		s.mu.Unlock()
	}
	if readErr != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unreadable_body"}, false)
		finish(http.StatusBadRequest, OutcomeBadRequest)
		return
	}

	f := s.takeFault(c.IdempotencyKey, body)
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
		}
	}
	if f.Status != 0 {
		writeJSON(w, f.Status, map[string]any{"error": "injected_failure"}, false)
		finish(f.Status, OutcomeFailed)
		return
	}

	key := c.IdempotencyKey
	var st *stored
	s.mu.Lock()
	if key != "" {
		if prev, ok := s.keys[key]; ok {
			s.mu.Unlock()
			switch {
			case prev.bodyHash != c.BodySHA256:
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "idempotency_key_reused"}, false)
				finish(http.StatusBadRequest, OutcomeMismatch)
			default:
				writeRaw(w, prev.status, prev.body, true)
				finish(prev.status, OutcomeReplayed)
			}
			return
		}
		st = &stored{bodyHash: c.BodySHA256}
		s.keys[key] = st
	}
	// Apply, under the same lock as the key's registration, so concurrent copies
	// of one key see either nothing or the stored response. The effect exists from
	// here on, whatever happens to the response.
	s.ops++
	s.applied[key]++
	resp, _ := json.Marshal(map[string]any{"id": "op_" + strconv.Itoa(s.ops), "idempotency_key": key, "applied": true})
	resp = append(resp, '\n')
	if st != nil {
		st.status, st.body = http.StatusOK, resp
	}
	s.mu.Unlock()

	if f.HoldAfterApply > 0 {
		select {
		case <-time.After(f.HoldAfterApply):
		case <-r.Context().Done():
			finish(0, OutcomeLost)
			return
		}
	}
	if f.Lose {
		loseResponse(w)
		finish(0, OutcomeLost)
		return
	}
	writeRaw(w, http.StatusOK, resp, false)
	finish(http.StatusOK, OutcomeApplied)
}

// loseResponse closes the connection without writing a byte.
func loseResponse(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the connection without a response
	}
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, code int, v any, replayed bool) {
	b, _ := json.Marshal(v)
	writeRaw(w, code, append(b, '\n'), replayed)
}

func writeRaw(w http.ResponseWriter, code int, b []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	if replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
