package simulator

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The simulator speaks HTTP/1.1 over its own connections instead of
// net/http.Transport: it must know exactly when a request was written in full
// (lost acknowledgements), hold back the last byte for barrier releases, never
// follow redirects or use a proxy, bound what it reads, and stay cheap enough to
// keep up with wrk (see simulator/benchmark).

// errResponseTooLarge is returned when a response exceeds its read budget.
var errResponseTooLarge = errors.New("response exceeded its read budget of bytes")

// budgetReader fails once n bytes were read, so a hostile receiver cannot make
// the simulator buffer without bound (endless headers included).
type budgetReader struct {
	r io.Reader
	n int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	return n, err
}

// pconn is one connection with its reader.
type pconn struct {
	c      net.Conn
	budget *budgetReader
	br     *bufio.Reader
}

// connPool keeps idle keep-alive connections to the target, most recent first.
type connPool struct {
	mu   sync.Mutex
	idle []*pconn
	max  int
}

func (p *connPool) get() *pconn {
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
		if connAlive(pc.c) {
			return pc
		}
		pc.c.Close()
	}
}

func (p *connPool) put(pc *pconn) {
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

// dial opens one connection to the target (TLS for https).
func (r *Runner) dial(ctx context.Context) (*pconn, error) {
	host := r.u.Host
	if r.u.Port() == "" {
		port := "80"
		if r.u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(r.u.Hostname(), port)
	}
	var d net.Dialer
	var c net.Conn
	var err error
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
		td := tls.Dialer{NetDialer: &d, Config: cfg}
		c, err = td.DialContext(ctx, "tcp", host)
	} else {
		c, err = d.DialContext(ctx, "tcp", host)
	}
	if err != nil {
		return nil, err
	}
	b := &budgetReader{r: c}
	return &pconn{c: c, budget: b, br: bufio.NewReaderSize(b, 4096)}, nil
}

// serialize writes the request line, headers and body as one buffer.
func (r *Runner) serialize(p *prepared) []byte {
	var b bytes.Buffer
	b.Grow(256 + len(p.body) + 64*len(p.header))
	b.WriteString("POST ")
	b.WriteString(r.u.RequestURI())
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(r.u.Host)
	b.WriteString("\r\n")
	for k, vs := range p.header {
		if k == "Host" || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(len(p.body)))
	b.WriteString("\r\n\r\n")
	b.Write(p.body)
	return b.Bytes()
}

// readResponse reads one response with its body bounded. reusable reports that
// the connection is clean for the next request.
func (r *Runner) readResponse(pc *pconn) (res response, reusable bool) {
	pc.budget.n = maxResponseHeaderBytes + r.opts.ResponseReadLimit + int64(pc.br.Size())
	resp, err := http.ReadResponse(pc.br, nil)
	if err != nil {
		res.err = err
		return res, false
	}
	res.gotResp, res.status, res.header = true, resp.StatusCode, resp.Header
	res.body, res.tooBig, res.err = readBounded(resp.Body, r.opts.ResponseReadLimit)
	if errors.Is(res.err, errResponseTooLarge) {
		res.err, res.tooBig = nil, true
	}
	resp.Body.Close()
	reusable = res.err == nil && !res.tooBig && !resp.Close && pc.br.Buffered() == 0
	return res, reusable
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
