package sink

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

func newSink(t *testing.T) *Sink {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type answer struct {
	code     int
	body     string
	replayed bool
}

func post(t *testing.T, c *http.Client, url, key, body string) (answer, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/refunds", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(HeaderIdempotencyKey, key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{resp.StatusCode, string(b), resp.Header.Get(HeaderReplayed) == "true"}, nil
}

func mustPost(t *testing.T, s *Sink, key, body string) answer {
	t.Helper()
	a, err := post(t, http.DefaultClient, s.URL(), key, body)
	if err != nil {
		t.Fatalf("POST key %q: %v", key, err)
	}
	return a
}

func TestRepeatedKeyReplaysFirstResponse(t *testing.T) {
	s := newSink(t)
	first := mustPost(t, s, "k1", `{"amount":5}`)
	again := mustPost(t, s, "k1", `{"amount":5}`)
	if first.code != 200 || first.replayed {
		t.Fatalf("first: %+v", first)
	}
	if again.code != 200 || !again.replayed || again.body != first.body {
		t.Fatalf("repeat got %+v, want the first response %q replayed", again, first.body)
	}
	if n := s.Applied("k1"); n != 1 {
		t.Fatalf("applied %d times, want 1", n)
	}
	// Same key, other parameters: refused, nothing applied.
	if a := mustPost(t, s, "k1", `{"amount":6}`); a.code != 400 {
		t.Fatalf("reused key with another body: %+v", a)
	}
	// No key: every call applies.
	mustPost(t, s, "", `{}`)
	mustPost(t, s, "", `{}`)
	if n := s.Applied(""); n != 2 {
		t.Fatalf("keyless calls applied %d, want 2", n)
	}
	calls := s.Calls()
	want := []string{OutcomeApplied, OutcomeReplayed, OutcomeMismatch, OutcomeApplied, OutcomeApplied}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(calls), len(want))
	}
	for i, c := range calls {
		if c.Outcome != want[i] || c.Seq != i+1 || c.Method != http.MethodPost || c.Path != "/v1/refunds" || len(c.BodySHA256) != 64 {
			t.Fatalf("call %d: %+v, want outcome %s", i, c, want[i])
		}
	}
	if calls[0].IdempotencyKey != "k1" || calls[0].BodySHA256 != calls[1].BodySHA256 || calls[0].BodySHA256 == calls[2].BodySHA256 {
		t.Fatalf("keys or hashes wrong: %+v", calls[:3])
	}
}

func TestFailNextThenApplies(t *testing.T) {
	s := newSink(t)
	s.FailNext(2, http.StatusServiceUnavailable)
	for i := range 2 {
		if a := mustPost(t, s, "k", `{}`); a.code != 503 {
			t.Fatalf("call %d: %+v, want 503", i, a)
		}
	}
	if n := s.Applied("k"); n != 0 {
		t.Fatalf("failed calls applied %d", n)
	}
	if a := mustPost(t, s, "k", `{}`); a.code != 200 || a.replayed {
		t.Fatalf("after the faults: %+v", a)
	}
	if n := s.Applied("k"); n != 1 {
		t.Fatalf("applied %d, want 1", n)
	}
}

func TestFaultForChosenKeyOnly(t *testing.T) {
	s := newSink(t)
	s.FailKey("bad", 1, http.StatusInternalServerError)
	if a := mustPost(t, s, "good", `{}`); a.code != 200 {
		t.Fatalf("other key hit the fault: %+v", a)
	}
	if a := mustPost(t, s, "bad", `{}`); a.code != 500 {
		t.Fatalf("chosen key: %+v", a)
	}
	if a := mustPost(t, s, "bad", `{}`); a.code != 200 {
		t.Fatalf("fault not consumed: %+v", a)
	}
}

func TestLostResponseAppliesOnce(t *testing.T) {
	s := newSink(t)
	s.LoseKey("k", 1)
	_, err := post(t, http.DefaultClient, s.URL(), "k", `{"x":1}`)
	if err == nil {
		t.Fatal("lost response: the client got an answer")
	}
	if n := s.Applied("k"); n != 1 {
		t.Fatalf("lost response: applied %d, want 1 (applied before the connection closed)", n)
	}
	a := mustPost(t, s, "k", `{"x":1}`)
	if a.code != 200 || !a.replayed {
		t.Fatalf("retry after a lost response: %+v, want the stored response replayed", a)
	}
	if n := s.Applied("k"); n != 1 {
		t.Fatalf("retry applied again: %d", n)
	}
	calls := s.Calls()
	if calls[0].Outcome != OutcomeLost || calls[0].Status != 0 || calls[1].Outcome != OutcomeReplayed {
		t.Fatalf("calls: %+v", calls)
	}
}

func TestSlowCallTimesOutClient(t *testing.T) {
	s := newSink(t)
	s.SlowNext(1, 300*time.Millisecond)
	c := &http.Client{Timeout: 50 * time.Millisecond}
	_, err := post(t, c, s.URL(), "k", `{}`)
	var ne interface{ Timeout() bool }
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("slow call: err %v, want a client timeout", err)
	}
	start := time.Now()
	a := mustPost(t, s, "k2", `{}`)
	if a.code != 200 || time.Since(start) > 250*time.Millisecond {
		t.Fatalf("delay not consumed: %+v after %s", a, time.Since(start))
	}
}

func TestConcurrentSameKeyAppliesOnce(t *testing.T) {
	s := newSink(t)
	const n = 16
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := post(t, http.DefaultClient, s.URL(), "same", `{"a":1}`)
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = a.code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("copy %d: %d", i, c)
		}
	}
	if got := s.Applied("same"); got != 1 {
		t.Fatalf("applied %d, want 1", got)
	}
	if got := len(s.Calls()); got != n {
		t.Fatalf("%d calls recorded, want %d", got, n)
	}
}

func TestRecordIsJSON(t *testing.T) {
	s := newSink(t)
	mustPost(t, s, "k", `{}`)
	b, err := json.Marshal(s.Record())
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Calls) != 1 || back.Calls[0].IdempotencyKey != "k" || back.Applied["k"] != 1 || back.Calls[0].Time.IsZero() {
		t.Fatalf("round trip: %s", b)
	}
}

// Faults can target calls by what their body carries (a harness knows its
// events' IDs, not the keys a receiver derives), calls are found the same way,
// and a withheld answer is an applied call whose caller gave up.
func TestMatchHoldAndMatching(t *testing.T) {
	s := newSink(t)
	s.Inject(Fault{Match: "evt_2", Times: 1, Status: http.StatusServiceUnavailable})
	if a := mustPost(t, s, "k1", `{"event_id":"evt_1"}`); a.code != http.StatusOK {
		t.Fatalf("evt_1: %d, want 200 (the fault is for evt_2)", a.code)
	}
	if a := mustPost(t, s, "k2", `{"event_id":"evt_2"}`); a.code != http.StatusServiceUnavailable {
		t.Fatalf("evt_2: %d, want the injected 503", a.code)
	}
	if a := mustPost(t, s, "k2", `{"event_id":"evt_2"}`); a.code != http.StatusOK || s.Applied("k2") != 1 {
		t.Fatalf("evt_2 again: %d, applied %d", a.code, s.Applied("k2"))
	}
	if got := s.Matching("evt_2"); len(got) != 2 || got[0].Outcome != OutcomeFailed || got[1].Outcome != OutcomeApplied {
		t.Fatalf("Matching(evt_2) = %+v", got)
	}

	s.Inject(Fault{Match: "evt_3", Times: 1, HoldAfterApply: time.Minute})
	c := &http.Client{Timeout: 300 * time.Millisecond}
	if _, err := post(t, c, s.URL(), "k3", `{"event_id":"evt_3"}`); err == nil {
		t.Fatal("a withheld answer arrived")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.Matching("evt_3")
		if len(got) == 1 && got[0].Outcome == OutcomeLost && got[0].Status == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Matching(evt_3) = %+v, want one lost call", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Applied("k3") != 1 {
		t.Fatalf("the withheld call was not applied: %d", s.Applied("k3"))
	}
	// The resend with the same key is replayed, not applied again.
	if a := mustPost(t, s, "k3", `{"event_id":"evt_3"}`); a.code != http.StatusOK || !a.replayed || s.Applied("k3") != 1 {
		t.Fatalf("resend: %+v, applied %d", a, s.Applied("k3"))
	}
}

// The operation key's header is the target's.
func TestKeyHeader(t *testing.T) {
	s, err := NewWith(Options{KeyHeader: "X-Op-Key"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/", bytes.NewReader([]byte(`{}`)))
	req.Header.Set("X-Op-Key", "op-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if calls := s.Calls(); len(calls) != 1 || calls[0].IdempotencyKey != "op-1" {
		t.Fatalf("calls %+v", calls)
	}
}
