package simulator

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"math"
	"net"
	"sync"
	"syscall"
	"time"
)

// The simulator speaks HTTP/1.1 over its own connections instead of
// net/http.Transport: it must know exactly when a request was written in full
// (lost acknowledgements), hold back the last byte for barrier releases, never
// follow redirects or use a proxy, bound what it reads, and stay cheap enough to
// keep up with wrk (see simulator/benchmark).

// pconn is one connection with its reader.
type pconn struct {
	c      net.Conn
	budget *budgetReader
	br     *bufio.Reader
	probe  *prober // liveness probe for reuse (nil: trusted)
	// raw is the TCP socket under c (nil when unavailable), for readSockState.
	raw syscall.RawConn
	// fresh is true until the connection carried one request: only then does
	// "no byte acknowledged" prove the receiver took nothing (on a reused
	// connection its kernel may delay the ACK to piggyback on the answer).
	fresh bool
	// tries is how many connection tries it took to open (0: from the pool).
	tries int
	// idleSince is when it went back to the pool.
	idleSince time.Time
	// ackedBase is tcpi_bytes_acked once the connection was set up (the TLS
	// handshake's bytes), so acked - ackedBase counts request bytes.
	ackedBase int64
	// receivedBase is what had arrived from the receiver before the request:
	// more means it answered. TLS connections disable the check (session
	// tickets arrive after the handshake).
	receivedBase int64
}

// requestAcked returns how many bytes of the request the receiver's kernel
// acknowledged on this fresh connection; ok is false when that cannot be told
// (a reused connection, or no kernel support). 0 means the receiver took none
// of it, so a fresh connection may carry the same attempt again; fewer than
// the request's bytes means it cannot have read the whole request.
func (pc *pconn) requestAcked() (n int64, ok bool) {
	if !pc.fresh {
		return 0, false
	}
	st := readSockState(pc)
	return st.acked - pc.ackedBase, st.known
}

// untouched reports whether the receiver demonstrably took no byte of the
// request on this fresh connection.
func (pc *pconn) untouched() bool {
	n, ok := pc.requestAcked()
	return ok && n == 0
}

// maxIdleReuse is how long a connection may sit idle and still be reused:
// below every common server's keep-alive timeout (gunicorn 2 s; Node, uvicorn
// and Apache 5 s), so the receiver never closes one just as a request on it
// arrives — a race that would look like a request written in full and reset,
// its answer lost, where the receiver did nothing wrong.
const maxIdleReuse = time.Second

// connPool keeps idle keep-alive connections to the target, most recent first.
type connPool struct {
	mu   sync.Mutex
	idle []*pconn
	max  int
}

// get returns an idle connection that passed its liveness probe, with its
// deadline set, or nil. Idle connections keep their last attempt's deadline
// (put does not clear it), so it is set before the probe, which checks it.
func (p *connPool) get(deadline time.Time) *pconn {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			return nil
		}
		pc := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		// A receiver that closed or crashed leaves a half-closed socket: writing
		// to it would look like a request "written in full" with its answer lost.
		if time.Since(pc.idleSince) < maxIdleReuse && pc.c.SetDeadline(deadline) == nil && connAlive(pc) {
			return pc
		}
		pc.c.Close()
	}
}

func (p *connPool) put(pc *pconn) {
	pc.idleSince = time.Now()
	p.mu.Lock()
	if len(p.idle) < p.max {
		p.idle = append(p.idle, pc)
		pc = nil
	}
	p.mu.Unlock()
	if pc != nil {
		pc.c.Close()
	}
}

func (p *connPool) closeAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, pc := range idle {
		pc.c.Close()
	}
}

// Connection tries. A connection the receiver never accepted (refused, or a
// handshake that does not complete because its accept queue is full and the
// SYN was dropped) cannot have carried the request, so the same attempt opens
// a fresh one, as a provider's HTTP client does; the tries are bounded in
// number and by the attempt's deadline.
const (
	// connectTry is the first try's TCP connect timeout; each next try doubles
	// it and the last try has the rest of the attempt's time. A fresh SYN then
	// goes out long before the kernel's own retransmission (1 s, 3 s, …).
	connectTry = 100 * time.Millisecond
	// maxConnectTries bounds the tries of one connection.
	maxConnectTries = 6
	// maxRefusedTries bounds the tries when the receiver refuses: a refusal is
	// quick and usually means nothing listens, so few are worth making.
	maxRefusedTries = 3
	// maxFreshTries bounds the fresh connections of one attempt whose earlier
	// connection the receiver reset or closed before acknowledging any byte.
	maxFreshTries = 3
)

// retryPause is the pause before connection try n+1 (n ≥ 1).
func retryPause(n int) time.Duration { return time.Duration(n) * 10 * time.Millisecond }

// connect opens one connection to the target for an attempt ending at
// deadline, over bounded tries (see connectTry).
func (r *Runner) connect(ctx context.Context, deadline time.Time) (*pconn, error) {
	refused := 0
	for try := 1; ; try++ {
		tryTimeout := connectTry << (try - 1)
		last := try >= maxConnectTries || time.Until(deadline) <= 2*tryTimeout
		if last {
			tryTimeout = 0
		}
		pc, err := r.dial(ctx, deadline, tryTimeout)
		if err == nil {
			pc.tries = try
			return pc, nil
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) || last {
			return nil, err
		}
		switch {
		case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
			// Refused, or reset during the handshake: nothing was sent yet.
			if refused++; refused >= maxRefusedTries {
				return nil, err
			}
		case isTimeout(err):
			// The try's own connect timeout: a fresh SYN now.
		default:
			return nil, err
		}
		if !sleepCtx(ctx, retryPause(try), deadline) {
			return nil, err
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sleepCtx waits d unless ctx ends or the wait would pass deadline.
func sleepCtx(ctx context.Context, d time.Duration, deadline time.Time) bool {
	if !time.Now().Add(d).Before(deadline) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// dial opens one connection to the target (TLS for https): the TCP connect
// within tryTimeout (0: none), the TLS handshake within the deadline.
func (r *Runner) dial(ctx context.Context, deadline time.Time, tryTimeout time.Duration) (*pconn, error) {
	host := r.u.Host
	if r.u.Port() == "" {
		port := "80"
		if r.u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(r.u.Hostname(), port)
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	d := net.Dialer{Timeout: tryTimeout}
	c, err := d.DialContext(dctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	pc := &pconn{fresh: true}
	if sc, ok := c.(syscall.Conn); ok {
		pc.raw, _ = sc.SyscallConn()
	}
	if r.u.Scheme == "https" {
		cfg := &tls.Config{}
		if r.target.TLSConfig != nil {
			cfg = r.target.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = r.u.Hostname()
		}
		// HTTP/1.1 only: the simulator writes requests itself.
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
		pc.ackedBase, pc.receivedBase = readSockState(pc).acked, math.MaxInt64
	} else {
		// Linux counts the SYN in tcpi_bytes_acked: a fresh connection starts at
		// 1, not 0, before any byte of the request.
		pc.ackedBase = readSockState(pc).acked
	}
	pc.c = c
	b := &budgetReader{r: c}
	pc.budget, pc.br, pc.probe = b, bufio.NewReaderSize(b, 4096), newProber(c)
	return pc, nil
}

// aLongTimeAgo is a deadline that makes blocked I/O return at once.
var aLongTimeAgo = time.Unix(1, 0)

// guard cuts the connection's I/O when ctx ends; call the result when done.
func guard(ctx context.Context, c net.Conn) func() bool {
	if ctx.Done() == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
}
