//go:build linux

package simulator

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
)

// listenBacklog listens on a loopback port with an accept queue of backlog
// connections, as small receivers do (Python's http.server uses 5).
func listenBacklog(t *testing.T, backlog int) net.Listener {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, backlog); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// oneAtATime serves one request per connection, one connection at a time:
// accept, read the request, answer, close, accept the next (a single-threaded
// server such as Python's http.server.HTTPServer). valid counts requests whose
// signature verified.
func oneAtATime(l net.Listener, valid *atomic.Int64) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err == nil {
			if _, _, invalid := verify(req, testSecret); invalid == "" {
				valid.Add(1)
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
			} else {
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}
		}
		c.Close()
	}
}

// releases makes n barrier releases of 16 copies and requires every copy
// acknowledged and the receiver to have verified every one.
func releases(t *testing.T, url string, n int, valid *atomic.Int64) {
	t.Helper()
	r := newTestRunner(t, url, testProfile{})
	var held, slowest int64
	for i := 0; i < n; i++ {
		before := valid.Load()
		start := time.Now()
		ev := testEvent()
		recs, rel, err := r.SendCopies(context.Background(), ev, 16, SendOptions{Shape: Shape{Timeout: Duration(10 * time.Second)}, Step: i})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range recs {
			if a.Outcome != history.OutcomeAcknowledged {
				t.Fatalf("release %d copy %d: %s %s %s (release %+v)", i, a.Copy, a.Outcome, a.ErrorClass, a.Error, rel)
			}
		}
		if got := valid.Load() - before; got != 16 {
			t.Fatalf("release %d: receiver verified %d requests, want 16", i, got)
		}
		if rel.Released+rel.Late != 16 || rel.FellBecause == "" || rel.PreopenNS <= 0 {
			t.Fatalf("release %d: %d held + %d late of 16, fell because %q after %dns", i, rel.Released, rel.Late, rel.FellBecause, rel.PreopenNS)
		}
		held += int64(rel.Released)
		slowest = max(slowest, int64(time.Since(start)))
	}
	t.Logf("%d releases: %.1f of 16 copies held by the barrier on average; slowest release %v", n, float64(held)/float64(n), time.Duration(slowest))
}

// A net/http receiver whose accept queue holds 5 connections gets 16 of 16
// copies every time: the barrier holds back bytes only on connections the
// receiver's kernel has accepted, and connections the queue turned away are
// opened again and sent whole.
func TestBarrierSmallAcceptQueue(t *testing.T) {
	t.Parallel() // mostly waiting on the kernel's accept queue
	l := listenBacklog(t, 5)
	var valid atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, invalid := verify(r, testSecret); invalid != "" {
			http.Error(w, invalid, http.StatusBadRequest)
			return
		}
		valid.Add(1)
		w.Write([]byte("ok"))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	releases(t, "http://"+l.Addr().String()+"/hook", 50, &valid)
}

// A single-threaded receiver with an accept queue of 5 cannot hold 16
// connections open at once: the barrier must not wait for it (deadlock) and
// must not fail the copies it could not hold.
func TestBarrierOneRequestAtATime(t *testing.T) {
	t.Parallel()
	for _, backlog := range []int{5, 128} {
		l := listenBacklog(t, backlog)
		var valid atomic.Int64
		go oneAtATime(l, &valid)
		t.Run("backlog "+itoa(backlog), func(t *testing.T) {
			releases(t, "http://"+l.Addr().String()+"/hook", 50, &valid)
		})
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// A receiver whose accept queue is full drops the SYN: the connection try times
// out and a fresh one is made, as a provider's HTTP client does, and the record
// says how many tries the attempt took.
func TestConnectTriesAreRecorded(t *testing.T) {
	l := listenBacklog(t, 1)
	// Fill the accept queue with connections nobody accepts yet.
	var fillers []net.Conn
	for range 4 {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 50*time.Millisecond)
		if err == nil {
			fillers = append(fillers, c)
		}
	}
	t.Cleanup(func() {
		for _, c := range fillers {
			c.Close()
		}
	})
	go func() {
		time.Sleep(150 * time.Millisecond) // longer than the first connection try
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					_ = req.Body.Close()
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
				}
			}()
		}
	}()
	r := newTestRunner(t, "http://"+l.Addr().String()+"/hook", testProfile{})
	a, err := r.Send(context.Background(), testEvent(), SendOptions{Shape: Shape{Timeout: Duration(5 * time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome != history.OutcomeAcknowledged || a.ConnectTries < 2 {
		t.Fatalf("outcome %s after %d connection tries (error %q); want acknowledged after at least 2", a.Outcome, a.ConnectTries, a.Error)
	}
}
