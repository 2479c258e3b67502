package simulator

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
)

// hostile is a receiver over loopback that does whatever handle does with each
// connection (net/http cannot misbehave on purpose).
type hostile struct {
	l     net.Listener
	done  chan struct{} // closed when the test ends
	conns atomic.Int64
	mu    sync.Mutex
	open  []net.Conn
}

func newHostile(t *testing.T, handle func(c net.Conn, n int64)) *hostile {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{l: l, done: make(chan struct{})}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := h.conns.Add(1)
			h.mu.Lock()
			h.open = append(h.open, c)
			h.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c, n)
			}()
		}
	}()
	t.Cleanup(func() {
		close(h.done)
		l.Close()
		h.mu.Lock()
		for _, c := range h.open {
			c.Close()
		}
		h.mu.Unlock()
		wg.Wait()
	})
	return h
}

func (h *hostile) url() string { return "http://" + h.l.Addr().String() + "/hook" }

// readRequest reads one whole request (headers and body) and reports it.
func readRequest(c net.Conn) (*http.Request, bool) {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return nil, false
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return req, false
	}
	return req, true
}

// resetClose closes c with a reset (SO_LINGER 0).
func resetClose(c net.Conn) {
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

// sendBoth makes one Send and one SendCopies of n copies and returns every
// record, failing if they took longer than limit.
func sendBoth(t *testing.T, url string, o SendOptions, n int, limit time.Duration) ([]history.Attempt, history.Release) {
	t.Helper()
	r := newTestRunner(t, url, testProfile{})
	start := time.Now()
	a, err := r.Send(context.Background(), testEvent(), o)
	if err != nil {
		t.Fatal(err)
	}
	recs, rel, err := r.SendCopies(context.Background(), testEvent(), n, o)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > limit {
		t.Fatalf("took %v, want at most %v", el, limit)
	}
	return append([]history.Attempt{a}, recs...), rel
}

func wantRecord(t *testing.T, a history.Attempt, outcome history.Outcome, class, errPart string) {
	t.Helper()
	if a.Outcome != outcome || a.ErrorClass != class || !strings.Contains(a.Error, errPart) {
		t.Fatalf("copy %d: outcome %s class %q error %q status %d; want %s %q containing %q", a.Copy, a.Outcome, a.ErrorClass, a.Error, a.Status, outcome, class, errPart)
	}
}

func TestHostileNeverAnswers(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) {
		readRequest(c)
		io.Copy(io.Discard, c) // holds the connection until the client gives up
	})
	recs, _ := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(time.Second)}}, 3, 4*time.Second)
	for _, a := range recs {
		wantRecord(t, a, history.OutcomeUnknown, history.ErrClassTimeout, "timeout")
	}
}

func TestHostileDribblesStatusLine(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) {
		if _, ok := readRequest(c); !ok {
			return
		}
		for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	recs, _ := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(time.Second)}}, 3, 4*time.Second)
	for _, a := range recs {
		wantRecord(t, a, history.OutcomeUnknown, history.ErrClassTimeout, "timeout")
	}
}

func TestHostileEndlessHeaders(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) {
		if _, ok := readRequest(c); !ok {
			return
		}
		line := []byte("X-Padding: " + strings.Repeat("p", 1000) + "\r\n")
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n")); err != nil {
			return
		}
		for {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	})
	recs, _ := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(2 * time.Second)}}, 3, 3*time.Second)
	for _, a := range recs {
		// The receiver read the whole request: it may have processed it.
		wantRecord(t, a, history.OutcomeUnknown, history.ErrClassTooLarge, "response headers exceed 64 KiB")
	}
}

// A receiver that closes every connection as soon as it accepts it never
// reads a request: whether the request reached its kernel first decides
// between failed (no byte acknowledged: retried on a few fresh connections,
// then failed) and unknown (the kernel took it; from outside that is a
// receiver that read it and reset), never acknowledged, in bounded time.
func TestHostileClosesOnAccept(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) { resetClose(c) })
	recs, rel := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(2 * time.Second)}}, 3, 3*time.Second)
	for _, a := range recs {
		switch {
		case a.Outcome == history.OutcomeFailed && a.ErrorClass == history.ErrClassReset:
			// Reset before any byte was acknowledged, during the handshake, or
			// while the request was being written.
		case a.Outcome == history.OutcomeUnknown && a.ErrorClass == history.ErrClassReset:
		default:
			t.Fatalf("copy %d: outcome %s class %q error %q", a.Copy, a.Outcome, a.ErrorClass, a.Error)
		}
	}
	failed := 0
	for _, a := range recs[1:] {
		if a.Outcome == history.OutcomeFailed {
			failed++
		}
	}
	if rel.Released+failed > rel.Copies {
		t.Fatalf("release counted copies the receiver never acknowledged: %+v, %d failed", rel, failed)
	}
	// Each attempt opens at most 1 + maxFreshTries connections.
	if n := h.conns.Load(); n > int64(len(recs)*(1+maxFreshTries)) {
		t.Fatalf("%d connections for %d attempts", n, len(recs))
	}
}

// A receiver that answers 200 on the headers of a request too large to be
// written while it is not read: the answer is no delivery.
func TestHostileEarlyAnswerBeforeBodyIsRead(t *testing.T) {
	var h *hostile
	h = newHostile(t, func(c net.Conn, _ int64) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		<-h.done // never reads the body
	})
	r := newTestRunner(t, h.url(), testProfile{})
	// More than the kernel buffers on both sides hold, so the write blocks.
	const size = 24 << 20
	a, err := r.Send(context.Background(), testEvent(), SendOptions{Shape: Shape{Timeout: Duration(time.Second), Faults: Faults{OversizeBytes: size}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := a.Duration(); d > 3*time.Second {
		t.Fatalf("attempt took %v with a timeout of 1s", d)
	}
	wantRecord(t, a, history.OutcomeUnknown, history.ErrClassEarlyResponse, "answered 200 before the request was written in full")
	if a.Status != 200 || a.BytesSent >= size {
		t.Fatalf("record: status %d bytes sent %d", a.Status, a.BytesSent)
	}
}

// A held copy answered before the barrier wrote its final byte: the barrier
// never writes it, and the 2xx is no delivery ("603 of 604 bytes").
func TestHeldCopyAnsweredBeforeRelease(t *testing.T) {
	answered := make(chan struct{})
	h := newHostile(t, func(c net.Conn, _ int64) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		close(answered)
		io.Copy(io.Discard, br)
	})
	r := newTestRunner(t, h.url(), testProfile{})
	ev := testEvent()
	o := SendOptions{}
	at := r.attemptFor(ev, &o)
	p, err := prepare(r.target.Profile, &r.facts, r.target.Secrets, ev, at, Faults{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wire := r.serialize(p, nil)
	b := &barrier{r: r, ctx: context.Background(), wire: wire, deadline: time.Now().Add(2 * time.Second),
		st: make([]copyState, 1), settled: make(chan bool, 1), fell: make(chan struct{})}
	out := make(chan delivered, 1)
	go func() {
		res, _ := b.run(0)
		out <- res
	}()
	<-answered
	// The copy sees the answer while held (broken) or, on a loaded machine,
	// while still being confirmed (late): either way it must not count as
	// delivered.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st := b.st[0].state.Load(); st == copyBroken || st == copyLate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held copy never saw the answer (state %d)", b.st[0].state.Load())
		}
	}
	b.release()
	res := <-out
	if res.sent != int64(len(wire)-1) {
		t.Fatalf("sent %d bytes, want %d (the final byte held back)", res.sent, len(wire)-1)
	}
	var rec history.Attempt
	r.finish(&rec, res.response, "", time.Now())
	wantRecord(t, rec, history.OutcomeUnknown, history.ErrClassEarlyResponse, "answered 200 before the request was written in full")
	if want := "(" + strconv.Itoa(len(wire)-1) + " of " + strconv.Itoa(len(wire)) + " bytes sent)"; !strings.Contains(rec.Error, want) {
		t.Fatalf("error %q does not say %s", rec.Error, want)
	}
}

func TestHostileHTTP10Response(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) {
		if _, ok := readRequest(c); ok {
			c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nok"))
		}
		c.Close()
	})
	recs, _ := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(2 * time.Second)}}, 3, 3*time.Second)
	for _, a := range recs {
		wantRecord(t, a, history.OutcomeAcknowledged, "", "")
		if a.Status != 200 || a.ResponseExcerpt != "ok" {
			t.Fatalf("record: %+v", a)
		}
	}
}

func TestHostileInterimThenFinal(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) {
		defer c.Close()
		if _, ok := readRequest(c); !ok {
			return
		}
		for _, s := range []string{"HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 102 Processing\r\n\r\n",
			"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"} {
			if _, err := c.Write([]byte(s)); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond) // separate reads, so no single buffer holds them all
		}
	})
	recs, _ := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(2 * time.Second)}}, 3, 3*time.Second)
	for _, a := range recs {
		wantRecord(t, a, history.OutcomeAcknowledged, "", "")
		if a.Status != 200 {
			t.Fatalf("record: %+v", a)
		}
	}
}

func TestHostileBadStatusLine(t *testing.T) {
	h := newHostile(t, func(c net.Conn, _ int64) {
		defer c.Close()
		if _, ok := readRequest(c); ok {
			c.Write([]byte("HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	})
	recs, _ := sendBoth(t, h.url(), SendOptions{Shape: Shape{Timeout: Duration(2 * time.Second)}}, 3, 3*time.Second)
	for _, a := range recs {
		// Read in full, answered unreadably: the receiver may have processed it.
		wantRecord(t, a, history.OutcomeUnknown, history.ErrClassOther, "malformed HTTP status code")
	}
}

// A receiver that resets connections at random points: before reading,
// part-way through the request, after reading it all, or not at all. Whatever
// happens, an attempt is acknowledged only if the receiver answered it, and
// failed only if the receiver never read all of it.
func TestHostileRandomResets(t *testing.T) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 11))
	fullRead := map[string]bool{}
	answered := map[string]bool{}
	h := newHostile(t, func(c net.Conn, _ int64) {
		mu.Lock()
		choice, cut := rng.IntN(4), rng.IntN(400)
		mu.Unlock()
		if choice == 0 {
			resetClose(c)
			return
		}
		br := bufio.NewReader(c)
		if choice == 1 {
			io.CopyN(io.Discard, br, int64(cut))
			resetClose(c)
			return
		}
		req, ok := readRequest2(br)
		if !ok {
			resetClose(c)
			return
		}
		id := req.Header.Get("X-Test-Delivery")
		mu.Lock()
		fullRead[id] = true
		mu.Unlock()
		if choice == 2 {
			resetClose(c)
			return
		}
		mu.Lock()
		answered[id] = true
		mu.Unlock()
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
		c.Close()
	})
	r := newTestRunner(t, h.url(), testProfile{})
	start := time.Now()
	outcomes := map[history.Outcome]int{}
	for i := 0; i < 60; i++ {
		a, err := r.Send(context.Background(), testEvent(), SendOptions{Step: i, Shape: Shape{Timeout: Duration(time.Second)}})
		if err != nil {
			t.Fatal(err)
		}
		outcomes[a.Outcome]++
		mu.Lock()
		fr, an := fullRead[a.DeliveryID], answered[a.DeliveryID]
		mu.Unlock()
		switch a.Outcome {
		case history.OutcomeAcknowledged:
			if !an {
				t.Fatalf("attempt %d acknowledged but never answered: %+v", i, a)
			}
		case history.OutcomeFailed:
			if fr {
				t.Fatalf("attempt %d failed although the receiver read it all: %+v", i, a)
			}
			if a.ErrorClass != history.ErrClassReset {
				t.Fatalf("attempt %d: %+v", i, a)
			}
		case history.OutcomeUnknown:
			if a.ErrorClass != history.ErrClassReset {
				t.Fatalf("attempt %d: %+v", i, a)
			}
		}
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Fatalf("60 attempts took %v", el)
	}
	if outcomes[history.OutcomeAcknowledged] == 0 || outcomes[history.OutcomeUnknown] == 0 {
		t.Fatalf("outcomes %v: the random resets did not cover both answered and unanswered requests", outcomes)
	}
	t.Logf("outcomes %v over %d connections", outcomes, h.conns.Load())
}

func readRequest2(br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return req, false
	}
	return req, true
}
