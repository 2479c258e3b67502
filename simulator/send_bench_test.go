package simulator

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// rawReceiver is a minimal keep-alive HTTP/1.1 receiver that reads each
// request (headers and Content-Length body) and answers a canned 200. It
// allocates nothing per request once a connection is set up, so a benchmark's
// allocs/op are the simulator's own; net/http would add its per-request
// allocations to the same process's counters.
type rawReceiver struct {
	l    net.Listener
	reqs atomic.Int64
}

var rawOK = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n{\"status\":\"processed\"}")

func newRawReceiver(tb testing.TB) *rawReceiver {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	rr := &rawReceiver{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go rr.conn(c)
		}
	}()
	tb.Cleanup(func() { l.Close() })
	return rr
}

func (rr *rawReceiver) url() string { return "http://" + rr.l.Addr().String() + "/hook" }

func (rr *rawReceiver) conn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 16<<10)
	clKey := []byte("content-length:")
	for {
		cl := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			if len(line) > len(clKey) && bytes.EqualFold(line[:len(clKey)], clKey) {
				n, err := strconv.Atoi(string(bytes.TrimSpace(line[len(clKey):])))
				if err != nil {
					return
				}
				cl = n
			}
		}
		if cl < 0 {
			return // the simulator always sends Content-Length
		}
		if _, err := br.Discard(cl); err != nil {
			return
		}
		rr.reqs.Add(1)
		if _, err := c.Write(rawOK); err != nil {
			return
		}
	}
}

func benchStripe(tb testing.TB) profiles.Profile {
	p, err := profiles.Lookup("stripe")
	if err != nil {
		tb.Fatalf("lookup stripe: %v", err)
	}
	return p
}

func benchEvent(i int) profiles.Event {
	return profiles.Event{Source: "stripe", Account: "acct_bench", ID: NewEventID(1, "stripe", i),
		Type: "payment_intent.succeeded", ObjectID: "pi_bench", Amount: 1000, Currency: "usd",
		Status: "succeeded", Created: time.Unix(1_700_000_000, 0).UTC()}
}

// BenchmarkSend measures one signed, recorded delivery over a keep-alive
// connection to a minimal receiver: the simulator's per-delivery cost
// (rendering, signing, serialising, writing, parsing the response, recording).
// Events are built outside the timer. allocs/op are per delivery.
func BenchmarkSend(b *testing.B) {
	rr := newRawReceiver(b)
	r, err := NewRunner(Target{URL: rr.url(), Profile: benchStripe(b), Secrets: []string{"whsec_hookcert_benchmark_only"}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	evs := make([]profiles.Event, 1024)
	for i := range evs {
		evs[i] = benchEvent(i)
	}
	ctx := context.Background()
	// Warm the connection so the loop measures keep-alive deliveries only.
	if _, err := r.Send(ctx, evs[0], SendOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := r.Send(ctx, evs[i%len(evs)], SendOptions{Shape: Shape{Timeout: Duration(5 * time.Second)}})
		if err != nil {
			b.Fatal(err)
		}
		if a.Outcome != history.OutcomeAcknowledged {
			b.Fatalf("delivery %d: %s %s %s", i, a.Outcome, a.ErrorClass, a.Error)
		}
	}
	b.StopTimer()
	if got := rr.reqs.Load(); got != int64(b.N)+1 {
		b.Fatalf("receiver saw %d requests, want %d", got, b.N+1)
	}
	if got := len(r.History().Attempts); got != b.N+1 {
		b.Fatalf("history has %d attempts, want %d", got, b.N+1)
	}
}

// BenchmarkSendParallel is BenchmarkSend from GOMAXPROCS×4 goroutines sharing
// one runner, so pool and recorder locking show up.
func BenchmarkSendParallel(b *testing.B) {
	rr := newRawReceiver(b)
	r, err := NewRunner(Target{URL: rr.url(), Profile: benchStripe(b), Secrets: []string{"whsec_hookcert_benchmark_only"}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	evs := make([]profiles.Event, 1024)
	for i := range evs {
		evs[i] = benchEvent(i)
	}
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			a, err := r.Send(ctx, evs[i%len(evs)], SendOptions{Shape: Shape{Timeout: Duration(5 * time.Second)}})
			if err != nil {
				b.Error(err)
				return
			}
			if a.Outcome != history.OutcomeAcknowledged {
				b.Errorf("delivery %d: %s %s %s", i, a.Outcome, a.ErrorClass, a.Error)
				return
			}
		}
	})
	b.StopTimer()
	if got := len(r.History().Attempts); int64(got) != n.Load() {
		b.Fatalf("history has %d attempts, want %d", got, n.Load())
	}
}
