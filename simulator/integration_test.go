package simulator

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
)

func TestSendCleanIsAcknowledged(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL+"/hook?token=abc", testProfile{})
	a, err := r.Send(context.Background(), testEvent(), SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome != history.OutcomeAcknowledged || a.Status != 200 || a.Verdict != "acknowledged" || a.BytesSent == 0 ||
		a.EndNS <= a.StartNS || a.ResponseExcerpt != `{"status":"processed"}` || a.Key.EventID != "evt_123" {
		t.Fatalf("record: %+v", a)
	}
	if s := rc.get(0); s.invalid != "" {
		t.Fatalf("receiver rejected a clean delivery: %s", s.invalid)
	}
	if strings.Contains(r.History().Meta.TargetURL, "token") {
		t.Fatalf("target URL query kept in history: %s", r.History().Meta.TargetURL)
	}
}

// With NoHistory the records are returned, not kept: the caller keeps them.
func TestNoHistoryReturnsRecordsWithoutKeepingThem(t *testing.T) {
	rc := newReceiver(t, nil)
	r, err := NewRunner(Target{URL: rc.srv.URL + "/hook", Profile: testProfile{}, Secrets: []string{testSecret}, Account: "acct_A"}, Options{NoHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, err := r.Send(context.Background(), testEvent(), SendOptions{})
	if err != nil || a.Outcome != history.OutcomeAcknowledged {
		t.Fatalf("send: %v, record %+v", err, a)
	}
	recs, rel, err := r.SendCopies(context.Background(), testEvent(), 2, SendOptions{Shape: Shape{Attempt: 2}})
	if err != nil || len(recs) != 2 || rel.Copies != 2 {
		t.Fatalf("copies: %v, %d records, release %+v", err, len(recs), rel)
	}
	if h := r.History(); len(h.Attempts) != 0 || len(h.Releases) != 0 {
		t.Fatalf("history keeps %d attempts and %d releases, want none", len(h.Attempts), len(h.Releases))
	}
}

func TestBadInputFaults(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	ctx := context.Background()
	cases := []struct {
		f     Faults
		check func(s seen) string
	}{
		{Faults{Tamper: true}, func(s seen) string { return want(s.invalid == "bad signature", "tampered body verified") }},
		{Faults{WrongSecret: true}, func(s seen) string { return want(s.invalid == "bad signature", "wrong secret verified") }},
		{Faults{MissingSignature: true}, func(s seen) string {
			return want(s.invalid == "missing signature" && s.header.Get("X-Test-Event-Id") != "", "signature header not the only one dropped")
		}},
		{Faults{MissingID: true}, func(s seen) string {
			return want(s.invalid == "" && s.header.Get("X-Test-Event-Id") == "", "event ID header still present")
		}},
		{Faults{MalformedJSON: true}, func(s seen) string {
			return want(s.invalid == "" && !json.Valid(s.body), "malformed body is valid JSON or unsigned")
		}},
		{Faults{OversizeBytes: 100000}, func(s seen) string {
			return want(s.invalid == "" && len(s.body) == 100000 && json.Valid(s.body), "oversize body wrong size, unsigned or invalid")
		}},
		{Faults{StaleBy: Duration(10 * time.Minute)}, func(s seen) string {
			age := time.Since(s.signed)
			return want(s.invalid == "" && age > 9*time.Minute && age < 11*time.Minute, "stale timestamp not ~10m old")
		}},
	}
	for i, c := range cases {
		a, err := r.Send(ctx, testEvent(), SendOptions{Shape: Shape{Faults: c.f}})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if problem := c.check(rc.get(i)); problem != "" {
			t.Errorf("faults %v: %s (record %+v)", c.f.List(), problem, a)
		}
		if len(a.Faults) == 0 {
			t.Errorf("faults %v not recorded", c.f.List())
		}
	}
	if rc.count() != len(cases) {
		t.Fatalf("receiver saw %d requests, want %d", rc.count(), len(cases))
	}
}

func want(ok bool, msg string) string {
	if ok {
		return ""
	}
	return msg
}

func TestLostAckReachesReceiverButIsUnknown(t *testing.T) {
	for _, mode := range []string{LostAckClose, LostAckDiscard} {
		t.Run(mode, func(t *testing.T) {
			processed := make(chan struct{}, 4)
			rc := newReceiver(t, func(w http.ResponseWriter, n int, s seen) {
				if s.invalid != "" {
					http.Error(w, s.invalid, 400)
					return
				}
				processed <- struct{}{}
				time.Sleep(20 * time.Millisecond) // the response comes after the simulator stopped listening
				w.Write([]byte("ok"))
			})
			r := newTestRunner(t, rc.srv.URL, testProfile{delays: []time.Duration{time.Hour}, resign: true})
			plan := &Plan{Seed: 1, TimeScale: 36000,
				Events: []EventSpec{{Name: "e", Type: "customer_cash_balance_transaction.created", Amount: 5}},
				Steps:  []Step{{Event: "e", Shape: Shape{Faults: Faults{LostAck: mode}}, Retry: true}}}
			h, err := r.Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Attempts) != 2 {
				t.Fatalf("want 2 attempts, got %+v", h.Attempts)
			}
			first, second := h.Attempts[0], h.Attempts[1]
			if first.Outcome != history.OutcomeUnknown || first.Faults[0] != "lost_ack:"+mode {
				t.Fatalf("first attempt: %+v", first)
			}
			if mode == LostAckDiscard && first.Status != 200 {
				t.Fatalf("discard mode did not record the response: %+v", first)
			}
			if second.Outcome != history.OutcomeAcknowledged || second.Attempt != 2 || len(second.Faults) != 0 {
				t.Fatalf("redelivery: %+v", second)
			}
			if got := len(processed); got != 2 {
				t.Fatalf("receiver processed %d deliveries, want 2 (the lost-ack one really arrived)", got)
			}
			if !h.AllAcknowledged() {
				t.Fatalf("delivery did not end acknowledged: %+v", h.Deliveries())
			}
		})
	}
}

func TestTimeoutRetryOverlapsFirstAttempt(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, n int, s seen) {
		if n == 1 {
			time.Sleep(800 * time.Millisecond) // slower than the provider's timeout
		}
		w.Write([]byte("ok"))
	})
	r := newTestRunner(t, rc.srv.URL, testProfile{delays: []time.Duration{time.Hour}})
	plan := &Plan{Seed: 2, TimeScale: 36000, Timeout: Duration(200 * time.Millisecond),
		Events: []EventSpec{{Name: "e", Type: "payment_intent.succeeded"}},
		Steps:  []Step{{Event: "e", Retry: true}}}
	start := time.Now()
	h, err := r.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 2 || h.Attempts[0].ErrorClass != history.ErrClassTimeout || h.Attempts[0].Outcome != history.OutcomeUnknown ||
		h.Attempts[1].Outcome != history.OutcomeAcknowledged {
		t.Fatalf("attempts: %+v", h.Attempts)
	}
	if d := h.Attempts[0].Duration(); d < 150*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("first attempt lasted %v, want about the 200ms timeout", d)
	}
	if rc.maxIn.Load() < 2 {
		t.Fatalf("receiver never saw the retry while the first attempt was running (max in flight %d)", rc.maxIn.Load())
	}
	t.Logf("retry overlapped the first attempt at the receiver; run took %v", time.Since(start))
}

func TestBarrierReleases16ConcurrentCopies(t *testing.T) {
	const n = 16
	all := make(chan struct{})
	var once sync.Once
	rc := newReceiver(t, func(w http.ResponseWriter, k int, s seen) {
		if k == n {
			once.Do(func() { close(all) })
		}
		select { // hold every copy until all 16 are inside the handler
		case <-all:
		case <-time.After(3 * time.Second):
		}
		w.Write([]byte("ok"))
	})
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	recs, rel, err := r.SendCopies(context.Background(), testEvent(), n, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.maxIn.Load() != n {
		t.Fatalf("receiver saw at most %d concurrent requests, want %d", rc.maxIn.Load(), n)
	}
	if rel.Released != n || rel.Copies != n || rel.SpreadNS <= 0 {
		t.Fatalf("release: %+v", rel)
	}
	for _, a := range recs {
		if a.Outcome != history.OutcomeAcknowledged || a.BytesSent == 0 {
			t.Fatalf("copy %d: %+v", a.Copy, a)
		}
	}
	var at []time.Time
	for i := 0; i < n; i++ {
		s := rc.get(i)
		if s.invalid != "" {
			t.Fatalf("copy rejected: %s", s.invalid)
		}
		at = append(at, s.at)
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	t.Logf("send spread %v, receiver-side arrival spread %v", time.Duration(rel.SpreadNS), at[n-1].Sub(at[0]))
}

func TestRedirectIsTheResponse(t *testing.T) {
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/other", http.StatusFound) })
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := newTestRunner(t, srv.URL+"/hook", testProfile{})
	a, _ := r.Send(context.Background(), testEvent(), SendOptions{})
	recs, _, _ := r.SendCopies(context.Background(), testEvent(), 2, SendOptions{})
	for _, x := range append(recs, a) {
		if x.Status != http.StatusFound || x.Outcome != history.OutcomeFailed || x.Verdict != "retry" {
			t.Fatalf("record: %+v", x)
		}
	}
	if followed.Load() != 0 {
		t.Fatalf("redirect followed %d times", followed.Load())
	}
}

func TestEndlessResponseBoundedByDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	r := newTestRunner(t, srv.URL, testProfile{timeout: 300 * time.Millisecond})
	start := time.Now()
	a, _ := r.Send(context.Background(), testEvent(), SendOptions{})
	recs, _, _ := r.SendCopies(context.Background(), testEvent(), 3, SendOptions{})
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("endless responses took %v, want about 2×300ms", el)
	}
	for _, x := range append(recs, a) {
		if x.ErrorClass != history.ErrClassTimeout || x.Outcome != history.OutcomeUnknown {
			t.Fatalf("record: %+v", x)
		}
	}
}

func TestHugeResponseBodyBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("y", 64<<10))
		for i := 0; i < 160; i++ { // 10 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	r := newTestRunner(t, srv.URL, testProfile{})
	a, _ := r.Send(context.Background(), testEvent(), SendOptions{})
	recs, _, _ := r.SendCopies(context.Background(), testEvent(), 2, SendOptions{})
	for _, x := range append(recs, a) {
		if x.ErrorClass != history.ErrClassTooLarge || len(x.ResponseExcerpt) != ExcerptLimit || x.Status != 200 || x.Outcome != history.OutcomeAcknowledged {
			t.Fatalf("record: class %q excerpt %d status %d outcome %s err %s", x.ErrorClass, len(x.ResponseExcerpt), x.Status, x.Outcome, x.Error)
		}
	}
}

func TestUnreachableAndReset(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := newTestRunner(t, "http://"+addr+"/hook", testProfile{})
	a, _ := r.Send(context.Background(), testEvent(), SendOptions{})
	recs, rel, _ := r.SendCopies(context.Background(), testEvent(), 2, SendOptions{})
	for _, x := range append(recs, a) {
		if x.ErrorClass != history.ErrClassRefused || x.Outcome != history.OutcomeFailed || x.BytesSent != 0 {
			t.Fatalf("refused record: %+v", x)
		}
	}
	if rel.Released != 0 {
		t.Fatalf("release counted unopened copies: %+v", rel)
	}

	// A receiver that reads the request and drops the connection without answering.
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verify(r, testSecret)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}))
	defer reset.Close()
	r2 := newTestRunner(t, reset.URL, testProfile{})
	b, _ := r2.Send(context.Background(), testEvent(), SendOptions{})
	recs, _, _ = r2.SendCopies(context.Background(), testEvent(), 2, SendOptions{})
	for _, x := range append(recs, b) {
		if x.ErrorClass != history.ErrClassReset || x.Outcome != history.OutcomeUnknown {
			t.Fatalf("reset record: %+v", x)
		}
	}
}

func TestCancelStopsRunPromptly(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	plan := &Plan{Seed: 1, Events: []EventSpec{{Name: "e", Type: "x"}},
		Steps: []Step{{Event: "e"}, {Event: "e", Wait: Duration(time.Hour)}}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	h, err := r.Run(ctx, plan)
	if err == nil || time.Since(start) > time.Second {
		t.Fatalf("run returned %v after %v", err, time.Since(start))
	}
	if len(h.Attempts) != 1 {
		t.Fatalf("want the 1 attempt made before cancel, got %d", len(h.Attempts))
	}
}

func TestCompressedScheduleAndRetryAfter(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, n int, s seen) {
		switch n {
		case 1:
			w.WriteHeader(500)
		case 2:
			w.Header().Set("Retry-After", "10800") // 3 h, longer than the 2 h schedule step
			w.WriteHeader(503)
		default:
			w.Write([]byte("ok"))
		}
	})
	p := testProfile{delays: []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour}, resign: true, honour: true}
	r := newTestRunner(t, rc.srv.URL, p)
	plan := &Plan{Seed: 5, TimeScale: 36000, // 1 h = 100 ms
		Events: []EventSpec{{Name: "e", Type: "x"}}, Steps: []Step{{Event: "e", Retry: true}}}
	h, err := r.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 3 || h.Attempts[2].Outcome != history.OutcomeAcknowledged {
		t.Fatalf("attempts: %+v", h.Attempts)
	}
	for i, wantV := range []time.Duration{time.Hour, 3 * time.Hour} {
		prev, next := h.Attempts[i], h.Attempts[i+1]
		real := time.Duration(next.StartNS - prev.EndNS)
		virt := time.Duration(next.VirtualNS - prev.VirtualNS)
		wantR := wantV / 36000
		if real < wantR || real > wantR+80*time.Millisecond {
			t.Errorf("gap %d: real wait %v, want about %v", i, real, wantR)
		}
		if virt < wantV || virt > wantV+30*time.Minute {
			t.Errorf("gap %d: provider-time wait %v, want about %v", i, virt, wantV)
		}
		t.Logf("gap %d: provider time %v ↔ real %v", i, virt.Round(time.Second), real.Round(time.Millisecond))
	}
	// Re-signing per attempt: every signature is fresh wall-clock time.
	for i := 0; i < 3; i++ {
		if age := time.Since(rc.get(i).signed); age > 5*time.Second || rc.get(i).invalid != "" {
			t.Fatalf("attempt %d signed %v ago (%s)", i+1, age, rc.get(i).invalid)
		}
	}
}

func TestStopVerdictEndsRetries(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, n int, s seen) { w.WriteHeader(http.StatusGone) })
	r := newTestRunner(t, rc.srv.URL, testProfile{delays: []time.Duration{time.Second}})
	h, err := r.Run(context.Background(), &Plan{Seed: 1, TimeScale: 1000,
		Events: []EventSpec{{Name: "e", Type: "x"}}, Steps: []Step{{Event: "e", Retry: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 1 || h.Attempts[0].Verdict != "stop" || rc.count() != 1 {
		t.Fatalf("attempts: %+v", h.Attempts)
	}
}

func TestReplayStaleAndFresh(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	plan := &Plan{Seed: 4, Events: []EventSpec{{Name: "e", Type: "x"}},
		Steps: []Step{
			{Name: "orig", Event: "e"},
			{Event: "e", Wait: Duration(1100 * time.Millisecond), Replay: &Replay{Of: "orig", OriginalTimestamp: true}},
			{Event: "e", Replay: &Replay{Of: "orig"}},
		}}
	h, err := r.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	a := h.Attempts
	if len(a) != 3 || a[0].Key != a[1].Key || a[1].Key != a[2].Key {
		t.Fatalf("attempts: %+v", a)
	}
	if !a[1].SignedAt.Equal(a[0].SignedAt) || !a[2].SignedAt.After(a[0].SignedAt) {
		t.Fatalf("signed times: orig %v stale %v fresh %v", a[0].SignedAt, a[1].SignedAt, a[2].SignedAt)
	}
	if !rc.get(1).signed.Equal(rc.get(0).signed.Truncate(time.Second)) {
		t.Fatalf("receiver saw stale replay signed at %v, original %v", rc.get(1).signed, rc.get(0).signed)
	}
}

func TestPlanWithCopiesAndLostAckRecordsRelease(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL, testProfile{delays: []time.Duration{time.Hour}})
	h, err := r.Run(context.Background(), &Plan{Seed: 8, TimeScale: 36000,
		Events: []EventSpec{{Name: "e", Type: "x"}},
		Steps:  []Step{{Event: "e", Copies: 8, Shape: Shape{Faults: Faults{LostAck: LostAckClose}}, Retry: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Releases) != 1 || h.Releases[0].Released != 8 || len(h.Attempts) != 16 || !h.AllAcknowledged() {
		t.Fatalf("releases %+v, %d attempts, deliveries %+v", h.Releases, len(h.Attempts), h.Deliveries())
	}
	if c := h.OutcomeCounts(); c[history.OutcomeUnknown] != 8 || c[history.OutcomeAcknowledged] != 8 || rc.count() != 16 {
		t.Fatalf("outcomes %v, receiver saw %d", c, rc.count())
	}
}
