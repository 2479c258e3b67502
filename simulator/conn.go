package simulator

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	// timeout is set when a read hit the connection's deadline: a parser
	// that then reports a malformed partial line is describing the cut, not
	// the receiver's answer.
	timeout error
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
	if err != nil && b.timeout == nil && isTimeout(err) {
		b.timeout = err
	}
	return n, err
}

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
		if pc.c.SetDeadline(deadline) == nil && connAlive(pc) {
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

// wirePool recycles request buffers of single attempts (a barrier's buffer is
// shared by its copies and is left to the collector).
var wirePool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledWire bounds the buffers wirePool keeps.
const maxPooledWire = 64 << 10

// serialize appends the request line, headers and body to dst[:0] as one
// buffer, sized up front so it grows at most once.
func (r *Runner) serialize(p *prepared, dst []byte) []byte {
	const cl = "Content-Length: "
	n := len(r.reqHead) + len(cl) + 20 + 4 + len(p.body)
	for k, vs := range p.header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	b := slices.Grow(dst[:0], n)
	b = append(b, r.reqHead...)
	for k, vs := range p.header {
		if k == "Host" || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, cl...)
	b = strconv.AppendInt(b, int64(len(p.body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, p.body...)
}

// readResponse reads one response with its body bounded. reusable reports that
// the connection is clean for the next request.
func (r *Runner) readResponse(pc *pconn) (res response, reusable bool) {
	pc.budget.n = maxResponseHeaderBytes + r.opts.ResponseReadLimit + int64(pc.br.Size())
	if res, reusable, ok := r.readPlainResponse(pc); ok {
		return res, reusable
	}
	return r.readAnyResponse(pc)
}

// errHeadersTooLarge is the error of a response whose headers (interim
// responses included) do not end within maxResponseHeaderBytes.
var errHeadersTooLarge = errors.New("response headers exceed 64 KiB")

// maxInterimResponses bounds the 1xx responses skipped before the final one.
const maxInterimResponses = 32

// errTooManyInterim is the error of a receiver that keeps sending 1xx.
var errTooManyInterim = fmt.Errorf("more than %d interim (1xx) responses before the final one", maxInterimResponses)

// readAnyResponse reads one response of any shape with net/http's parser.
// Interim responses (1xx other than 101) are skipped, as an HTTP client does:
// the final response is the answer.
func (r *Runner) readAnyResponse(pc *pconn) (res response, reusable bool) {
	// The headers get their own budget: what is buffered was already read, and
	// one buffer of slack lets the parser see the line that crosses the limit.
	pc.budget.n = maxResponseHeaderBytes - int64(pc.br.Buffered()) + int64(pc.br.Size())
	var resp *http.Response
	for interim := 0; ; interim++ {
		var err error
		resp, err = http.ReadResponse(pc.br, nil)
		if err != nil {
			switch {
			case pc.budget.n <= 0 || errors.Is(err, errResponseTooLarge):
				err = errHeadersTooLarge
			case pc.budget.timeout != nil:
				err = pc.budget.timeout
			}
			res.err = err
			return res, false
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if interim >= maxInterimResponses {
			res.err = errTooManyInterim
			return res, false
		}
	}
	pc.budget.n = maxResponseHeaderBytes + r.opts.ResponseReadLimit + int64(pc.br.Size())
	res.gotResp, res.status, res.header = true, resp.StatusCode, resp.Header
	res.body, res.tooBig, res.err = readBounded(resp.Body, r.opts.ResponseReadLimit)
	if errors.Is(res.err, errResponseTooLarge) {
		res.err, res.tooBig = nil, true
	}
	resp.Body.Close()
	reusable = res.err == nil && !res.tooBig && !resp.Close && pc.br.Buffered() == 0 && resp.StatusCode != http.StatusSwitchingProtocols
	return res, reusable
}

// readPlainResponse is the fast path of readResponse for the response a
// healthy receiver sends: HTTP/1.1, a final status with a body, every header
// line already buffered, well-formed, a single Content-Length within the read
// limit, no Transfer-Encoding and no Connection header. It parses without
// consuming anything until it has decided; ok false means "not plain" and the
// reader is untouched, so http.ReadResponse handles everything else exactly as
// before. net/http's parser costs about 20 allocations per response; this
// costs 4 (header text, values, map, body).
func (r *Runner) readPlainResponse(pc *pconn) (res response, reusable, ok bool) {
	if _, err := pc.br.Peek(1); err != nil {
		// What http.ReadResponse reports for a failed first read.
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return response{err: err}, false, true
	}
	buf, _ := pc.br.Peek(pc.br.Buffered())
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		return res, false, false
	}
	line, rest, _ := bytes.Cut(buf[:end+2], crlf)
	status, okStatus := plainStatus(line)
	if !okStatus {
		return res, false, false
	}
	// One string holds every header line; keys and values are substrings of it.
	// Control bytes other than tab are invalid in a header line, and CR and LF
	// may only appear as a pair ending a line; anything else is net/http's call.
	lines := 0
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '\r':
			if i+1 >= len(rest) || rest[i+1] != '\n' {
				return res, false, false
			}
			lines++
			i++
		case (c < ' ' && c != '\t') || c == 0x7f:
			return res, false, false
		}
	}
	hs := string(rest)
	vals := make([]string, 0, lines)
	h := make(http.Header, lines)
	contentLength := int64(-1)
	for len(hs) > 0 {
		i := strings.IndexByte(hs, '\r') // always followed by \n (checked above)
		kv := hs[:i]
		hs = hs[i+2:]
		colon := strings.IndexByte(kv, ':')
		if colon <= 0 {
			return res, false, false
		}
		k := kv[:colon]
		for j := 0; j < len(k); j++ {
			if !tokenByte[k[j]] {
				return res, false, false // includes obs-fold and space before ':'
			}
		}
		v := strings.Trim(kv[colon+1:], " \t")
		k = textproto.CanonicalMIMEHeaderKey(k)
		switch k {
		case "Transfer-Encoding", "Connection":
			return res, false, false
		case "Content-Length":
			n, okLen := plainContentLength(v)
			if !okLen || contentLength >= 0 {
				return res, false, false // net/http rules on repeats
			}
			contentLength = n
		}
		vals = append(vals, v)
		if old, dup := h[k]; dup {
			h[k] = append(old, v)
		} else {
			h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	if contentLength < 0 || contentLength > r.opts.ResponseReadLimit {
		return res, false, false
	}
	pc.br.Discard(end + 4)
	res.gotResp, res.status, res.header = true, status, h
	if contentLength > 0 {
		body := make([]byte, contentLength)
		n, err := io.ReadFull(pc.br, body)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // as net/http's body reader reports a short body
		}
		res.body, res.err = body[:n], err
	}
	return res, res.err == nil && pc.br.Buffered() == 0, true
}

var (
	crlf     = []byte("\r\n")
	crlfcrlf = []byte("\r\n\r\n")
)

// plainStatus parses "HTTP/1.1 NNN[ reason]" for a final status with a body
// (not 1xx, 204 or 304, whose body rules differ).
func plainStatus(line []byte) (int, bool) {
	const proto = "HTTP/1.1 "
	if len(line) < len(proto)+3 || string(line[:len(proto)]) != proto {
		return 0, false
	}
	d := line[len(proto) : len(proto)+3]
	if len(line) > len(proto)+3 && line[len(proto)+3] != ' ' {
		return 0, false
	}
	code := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == 204 || code == 304 {
		return 0, false
	}
	// A control byte in the reason (a bare LF above all) ends the line for
	// net/http: its call.
	for _, c := range line[len(proto)+3:] {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return 0, false
		}
	}
	return code, true
}

// plainContentLength accepts only plain decimal digits (net/http decides the
// rest: signs, spaces, overflow).
func plainContentLength(v string) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// tokenByte marks the bytes that may appear in a header field name (RFC 9110
// token characters).
var tokenByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		t[c] = b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
	}
	return t
}()

// aLongTimeAgo is a deadline that makes blocked I/O return at once.
var aLongTimeAgo = time.Unix(1, 0)

// guard cuts the connection's I/O when ctx ends; call the result when done.
func guard(ctx context.Context, c net.Conn) func() bool {
	if ctx.Done() == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
}
