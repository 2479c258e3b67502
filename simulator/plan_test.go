package simulator

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
)

func basePlan(seed int64) *Plan {
	ev, steps := VersionedStream(seed, "sub", "sub_1", 5, 3)
	return &Plan{
		Name: "t", Seed: seed,
		Events: append([]EventSpec{{Name: "pay", Type: "payment_intent.succeeded", Amount: 100}}, ev...),
		Steps:  append([]Step{{Name: "first", Event: "pay", Copies: 4}}, steps...),
	}
}

func TestResolveSameSeedSamePlan(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := basePlan(42).Resolve("testprof", "acct_A", created)
	if err != nil {
		t.Fatal(err)
	}
	b, err := basePlan(42).Resolve("testprof", "acct_A", created)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed gave different plans:\n%+v\n%+v", a, b)
	}
	c, err := basePlan(43).Resolve("testprof", "acct_A", created)
	if err != nil {
		t.Fatal(err)
	}
	if a.Events["pay"].ID == c.Events["pay"].ID {
		t.Fatalf("seeds 42 and 43 gave the same event ID %s", a.Events["pay"].ID)
	}
	if got := a.Events["pay"]; got.Account != "acct_A" || got.Source != "testprof" || !strings.HasPrefix(got.ID, "evt_") {
		t.Fatalf("resolved event %+v: want account acct_A, source testprof, evt_ ID", got)
	}
	if id := NewEventID(1, "github", 0); len(id) != 36 || strings.Count(id, "-") != 4 {
		t.Fatalf("github event ID %q is not a GUID", id)
	}
}

func TestVersionedStreamSeededShuffledDuplicated(t *testing.T) {
	ev1, st1 := VersionedStream(7, "s", "sub_9", 6, 4)
	ev2, st2 := VersionedStream(7, "s", "sub_9", 6, 4)
	if !reflect.DeepEqual(st1, st2) || !reflect.DeepEqual(ev1, ev2) {
		t.Fatal("same seed gave different streams")
	}
	if len(ev1) != 6 || len(st1) != 10 {
		t.Fatalf("got %d events and %d steps, want 6 and 10", len(ev1), len(st1))
	}
	seen := map[string]int{}
	inOrder := true
	for i, s := range st1 {
		seen[s.Event]++
		if i < 6 && s.Event != ev1[i].Name {
			inOrder = false
		}
	}
	for _, e := range ev1 {
		if seen[e.Name] == 0 {
			t.Fatalf("version %s never delivered", e.Name)
		}
	}
	if inOrder {
		t.Fatal("stream is not shuffled")
	}
	_, st3 := VersionedStream(8, "s", "sub_9", 6, 4)
	if reflect.DeepEqual(st1, st3) {
		t.Fatal("seeds 7 and 8 gave the same order")
	}
}

func TestParsePlanYAML(t *testing.T) {
	src := `
name: lost-ack
seed: 9
time_scale: 3600
timeout: 2s
retry_delays: [5s, 1h]
events:
  - {name: e1, type: payment_intent.succeeded, amount: 250}
steps:
  - name: first
    event: e1
    copies: 16
    faults: {lost_ack: close, stale_by: 10m}
    retry: true
  - event: e1
    wait: 1h
    replay: {of: first, original_timestamp: true}
`
	p, err := ParsePlan([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].Copies != 16 || p.Steps[0].Faults.LostAck != "close" || p.Steps[0].Faults.StaleBy.D() != 10*time.Minute ||
		p.RetryDelays[1].D() != time.Hour || p.Steps[1].Wait.D() != time.Hour || !p.Steps[1].Replay.OriginalTimestamp {
		t.Fatalf("parsed plan wrong: %+v", p)
	}
	bad := map[string]string{
		"copies must be between 1 and 1024": strings.Replace(src, "copies: 16", "copies: 2000", 1),
		"field colour not found":            strings.Replace(src, "retry: true", "retry: true\n    colour: red", 1),
		"lost_ack must be one of":           strings.Replace(src, "lost_ack: close", "lost_ack: maybe", 1),
		"must name an earlier step":         strings.Replace(src, "of: first", "of: nope", 1),
		"time: invalid duration":            strings.Replace(src, "wait: 1h", "wait: soon", 1),
		"steps[0].event \"e2\" must name":   strings.Replace(src, "event: e1\n    copies", "event: e2\n    copies", 1),
	}
	for want, s := range bad {
		if _, err := ParsePlan([]byte(s)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error containing %q, got %v", want, err)
		}
	}
}

func TestHistoryJSONLRoundTrip(t *testing.T) {
	h := &history.History{
		Meta: history.Meta{Seed: 3, Profile: "testprof", TargetURL: "http://127.0.0.1:1/x", TimeScale: 3600, Started: time.Now().UTC()},
		Attempts: []history.Attempt{{
			Step: 1, Attempt: 2, Copy: 3, DeliveryID: "dlv_1", StartNS: 10, EndNS: 20, VirtualNS: 36000,
			WallStart: time.Now().UTC(), SignedAt: time.Unix(1700000000, 0).UTC(), BytesSent: 512, Status: 503,
			ResponseExcerpt: `{"status":"retry"}`, ErrorClass: history.ErrClassTooLarge, Error: "cut", Faults: []string{"tamper"},
			Verdict: "retry", Outcome: history.OutcomeFailed, RetryAfterNS: int64(time.Second),
		}, {Attempt: 1, Outcome: history.OutcomeUnknown, Verdict: "retry", WallStart: time.Now().UTC(), SignedAt: time.Now().UTC()}},
		Releases: []history.Release{{Step: 1, Attempt: 1, Copies: 16, Released: 16, SpreadNS: 12345, StartNS: 5}},
	}
	h.Attempts[0].Key.EventID = "evt_1"
	var buf bytes.Buffer
	if err := h.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 4 {
		t.Fatalf("want 4 lines, got %d", n)
	}
	got, err := history.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, got) {
		t.Fatalf("round trip differs:\nwant %+v\ngot  %+v", h, got)
	}
	if _, err := history.ReadJSONL(strings.NewReader(`{"kind":"bogus"}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("want a line-numbered error for a bad kind, got %v", err)
	}
}

func TestScheduleFor(t *testing.T) {
	s := ScheduleFor(testProfile{}, nil)
	if !s.Undocumented || !reflect.DeepEqual(s.Delays, DefaultRetryDelays) || s.MaxAttempts != len(DefaultRetryDelays)+1 {
		t.Fatalf("undocumented schedule: %+v", s)
	}
	s = ScheduleFor(testProfile{delays: []time.Duration{time.Hour, 2 * time.Hour}}, &Plan{MaxAttempts: 2})
	if s.Undocumented || s.MaxAttempts != 2 {
		t.Fatalf("schedule: %+v", s)
	}
	if d, ok := s.Next(2, 0, 0, nil); !ok || d != time.Hour {
		t.Fatalf("next(2) = %v %v", d, ok)
	}
	if _, ok := s.Next(3, 0, 0, nil); ok {
		t.Fatal("attempt 3 allowed beyond max_attempts 2")
	}
	s.HonourRetryAfter = true
	if d, _ := s.Next(2, 0, 3*time.Hour, nil); d != 3*time.Hour {
		t.Fatalf("retry-after ignored: %v", d)
	}
	s.Horizon = 30 * time.Minute
	if _, ok := s.Next(2, 0, 0, nil); ok {
		t.Fatal("retry beyond horizon allowed")
	}
	c := Clock{Scale: 3600}
	if c.Real(time.Hour) != time.Second || c.Virtual(time.Second) != time.Hour {
		t.Fatalf("clock 3600: real(1h)=%v virtual(1s)=%v", c.Real(time.Hour), c.Virtual(time.Second))
	}
}

func TestWrongSecretKeepsShape(t *testing.T) {
	got := wrongSecrets([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "abcdef0123", "Zz9"})
	want := []string{"whsec_NfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "bbcdef0123", "Yz9"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("wrongSecrets = %q, want %q", got, want)
	}
}

func TestDocExamplePlanParses(t *testing.T) {
	src := `
name: lost-ack-then-replay
seed: 42
time_scale: 3600          # one provider hour per real second
timeout: 10s              # per attempt, real time (default: the profile's)
retry_delays: [5s, 5m]    # only where the profile publishes none
events:
  - {name: pay, type: payment_intent.succeeded, amount: 1000}
steps:
  - {name: first, event: pay, copies: 16, faults: {lost_ack: close}, retry: true}
  - {event: pay, wait: 24h, replay: {of: first, original_timestamp: true}}
`
	p, err := ParsePlan([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps[1].Wait.D() != 24*time.Hour || p.Steps[0].Copies != 16 {
		t.Fatalf("parsed: %+v", p)
	}
}

// Steps marked with_previous start together; attempt numbers and sources reach the
// records; RunNotify reports every attempt as it ends.
func TestPlanGroupsAttemptsAndNotify(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	defer srv.Close()
	r, err := NewRunner(Target{URL: srv.URL, Profile: testProfile{}, Secrets: []string{"s"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan := &Plan{Seed: 2, Events: []EventSpec{{Name: "a", ID: "evt_a", Type: "t", Source: "src"}, {Name: "b", ID: "evt_b", Type: "t"}, {Name: "c", ID: "evt_c", Type: "t"}},
		Steps: []Step{{Event: "a"}, {Event: "b", WithPrevious: true}, {Event: "c", WithPrevious: true, Shape: Shape{Attempt: 3}}}}
	var notified atomic.Int32
	h, err := r.RunNotify(context.Background(), plan, func(history.Attempt) { notified.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if most != 3 || len(h.Attempts) != 3 || notified.Load() != 3 {
		t.Fatalf("%d at once, %d attempts, %d notified", most, len(h.Attempts), notified.Load())
	}
	for _, a := range h.Attempts {
		if a.Key.EventID == "evt_c" && a.Attempt != 3 || a.Key.EventID == "evt_a" && a.Key.Source != "src" {
			t.Fatalf("attempt %+v", a)
		}
	}
	bad := *plan
	bad.Steps = []Step{{Event: "a", WithPrevious: true}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "with_previous needs a step before it") {
		t.Fatalf("with_previous on the first step: %v", err)
	}
}
