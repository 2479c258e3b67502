package simulator

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func TestClosedIdleConnectionIsNotReused(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	ctx := context.Background()
	if a, _ := r.Send(ctx, testEvent(), SendOptions{}); a.Outcome != history.OutcomeAcknowledged {
		t.Fatalf("first send: %+v", a)
	}
	// The receiver drops its keep-alive connections (restart, idle timeout).
	rc.srv.CloseClientConnections()
	time.Sleep(20 * time.Millisecond)
	a, _ := r.Send(ctx, testEvent(), SendOptions{})
	if a.Outcome != history.OutcomeAcknowledged || rc.count() != 2 {
		t.Fatalf("send after the receiver closed the pooled connection: %+v (receiver saw %d)", a, rc.count())
	}
}

// countingServer answers 200 "ok" and counts the connections it accepted.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	conns := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

func TestKeepAliveReusesConnection(t *testing.T) {
	srv, conns := countingServer(t)
	r := newTestRunner(t, srv.URL, testProfile{})
	for i := 0; i < 20; i++ {
		if a, _ := r.Send(context.Background(), testEvent(), SendOptions{}); a.Outcome != history.OutcomeAcknowledged {
			t.Fatalf("send %d: %+v", i, a)
		}
	}
	if conns.Load() > 1 {
		t.Fatalf("20 sequential sends opened %d connections, want 1 kept alive", conns.Load())
	}
}

// A connection idle longer than maxIdleReuse is not reused: a receiver whose
// keep-alive timeout is about to close it (gunicorn's 2 s) would reset the
// request written on it.
func TestLongIdleConnectionIsNotReused(t *testing.T) {
	srv, conns := countingServer(t)
	r := newTestRunner(t, srv.URL, testProfile{})
	for i, wait := range []time.Duration{0, 0, maxIdleReuse + 100*time.Millisecond} {
		time.Sleep(wait)
		if a, _ := r.Send(context.Background(), testEvent(), SendOptions{}); a.Outcome != history.OutcomeAcknowledged {
			t.Fatalf("send %d: %+v", i, a)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("three sends, the last after %s idle, opened %d connections; want 2 (one reused at once, a fresh one after the idle)", maxIdleReuse, n)
	}
}

func TestTLSTarget(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	r, err := NewRunner(Target{URL: srv.URL, Profile: testProfile{}, Secrets: []string{testSecret}, TLSConfig: cfg}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, _ := r.Send(context.Background(), testEvent(), SendOptions{})
	recs, rel, _ := r.SendCopies(context.Background(), testEvent(), 4, SendOptions{})
	for _, x := range append(recs, a) {
		if x.Outcome != history.OutcomeAcknowledged {
			t.Fatalf("TLS delivery: %+v", x)
		}
	}
	if rel.Released != 4 {
		t.Fatalf("release: %+v", rel)
	}
	// Without the test CA the handshake fails: error class tls, nothing written.
	bad, _ := NewRunner(Target{URL: srv.URL, Profile: testProfile{}, Secrets: []string{testSecret}}, Options{})
	defer bad.Close()
	b, _ := bad.Send(context.Background(), testEvent(), SendOptions{})
	if b.ErrorClass != history.ErrClassTLS || b.Outcome != history.OutcomeFailed {
		t.Fatalf("untrusted certificate: %+v", b)
	}
}

func TestRetryFollowsSchedule(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, n int, s seen) {
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	})
	r := newTestRunner(t, rc.srv.URL, testProfile{delays: []time.Duration{time.Minute, time.Minute, time.Minute}})
	ev := testEvent()
	h, err := r.Run(context.Background(), &Plan{Seed: 1, TimeScale: 6000,
		Events: []EventSpec{{Name: "e", ID: ev.ID, Type: ev.Type}}, Steps: []Step{{Event: "e", Retry: true}}})
	if err != nil {
		t.Fatal(err)
	}
	recs := h.Attempts
	if len(recs) != 3 || recs[2].Outcome != history.OutcomeAcknowledged || recs[1].Outcome != history.OutcomeFailed || recs[1].Attempt != 2 {
		t.Fatalf("attempts: %+v", recs)
	}
	if recs[0].DeliveryID == recs[1].DeliveryID {
		t.Fatal("retries reuse the delivery ID")
	}
	var _ profiles.Profile = testProfile{}
}
