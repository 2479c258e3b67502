package simulator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// HTTP/1.1 messages as the simulator writes and reads them on its own
// connections (conn.go): one buffer per request, responses read within a
// budget, with an allocation-light parser for the plain response a healthy
// receiver sends and net/http's for everything else.

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

// wirePool recycles request buffers of single attempts (a barrier's buffer is
// shared by its copies and is left to the collector).
var wirePool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledWire bounds the buffers wirePool keeps.
const maxPooledWire = 64 << 10

// serialize appends the request line, headers and body to dst[:0] as one
// buffer, sized up front so it grows at most once.
func (r *Runner) serialize(p *prepared, dst []byte) []byte {
	const cl = "Content-Length: "
	head := r.reqHead
	if p.head != nil {
		head = p.head
	}
	n := len(head) + len(cl) + 20 + 4 + len(p.body)
	for k, vs := range p.header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	b := slices.Grow(dst[:0], n)
	b = append(b, head...)
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
	if last := r.lastPlain.Load(); last != nil && bytes.HasPrefix(buf, last.raw) {
		// The same bytes as the last plain response parse the same way: the
		// same status line and header block (so the same end of headers and
		// Content-Length), then the same body.
		pc.br.Discard(len(last.raw))
		res.gotResp, res.status, res.header, res.body = true, last.status, last.header, last.body
		return res, pc.br.Buffered() == 0, true
	}
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
	// Kept for the next response when it is small and whole in the buffer.
	var raw []byte
	if total := end + 4 + int(contentLength); total <= maxReusedResponse && total <= len(buf) {
		raw = make([]byte, total)
		copy(raw, buf)
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
	if raw != nil && res.err == nil {
		r.lastPlain.Store(&plainResponse{raw: raw, status: status, header: h, body: res.body})
	}
	return res, res.err == nil && pc.br.Buffered() == 0, true
}

// maxReusedResponse bounds the plain responses kept for reuse (lastPlain).
const maxReusedResponse = 1 << 10

// plainResponse is a parsed plain response and the bytes it was parsed from.
// A receiver answers most deliveries with the same bytes (net/http's Date
// header changes once a second), so the runner keeps the last one and a
// response with the same bytes reuses its parse: no header map, strings or
// body per delivery (BenchmarkSend's allocs/op). Its header and body are
// shared between records and never modified.
type plainResponse struct {
	raw    []byte
	status int
	header http.Header
	body   []byte
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
