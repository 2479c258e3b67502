package simulator

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
)

// parserRunner is a runner for reading responses only (nothing is sent).
func parserRunner(tb testing.TB, limit int64) *Runner {
	tb.Helper()
	r, err := NewRunner(Target{URL: "http://127.0.0.1:1/hook", Profile: testProfile{}, Secrets: []string{testSecret}}, Options{ResponseReadLimit: limit})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// endlessHeaders is a response whose header block never ends.
type endlessHeaders struct{ sent int }

func (e *endlessHeaders) Read(p []byte) (int, error) {
	const head = "HTTP/1.1 200 OK\r\n"
	n := 0
	for n < len(p) {
		var chunk string
		if e.sent == 0 {
			chunk = head
		} else {
			chunk = "X-Padding: " + strings.Repeat("p", 40) + "\r\n"
		}
		c := copy(p[n:], chunk)
		n += c
		e.sent++
		if c < len(chunk) {
			break // the rest of the line is lost; the stream stays endless
		}
	}
	return n, nil
}

func TestInterimResponsesAreSkipped(t *testing.T) {
	r := parserRunner(t, 64)
	cases := []struct {
		name, raw string
		status    int
		body      string
	}{
		{"100 Continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok"},
		{"102 then 103 with headers", "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", 503, "busy"},
		{"three 100s then chunked", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 3) + "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 201, "ok"},
		{"101 is final", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n", 101, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, slow := range []bool{false, true} {
				var pc *pconn
				if slow {
					pc = testPconn(r, oneByteReader{strings.NewReader(c.raw)})
				} else {
					pc = testPconn(r, strings.NewReader(c.raw))
				}
				res, _ := r.readResponse(pc)
				if res.err != nil || !res.gotResp || res.status != c.status || string(res.body) != c.body {
					t.Fatalf("slow %v: status %d body %q err %v, want %d %q", slow, res.status, res.body, res.err, c.status, c.body)
				}
			}
		})
	}
	endless := testPconn(r, strings.NewReader(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInterimResponses+2)+"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	if res, _ := r.readResponse(endless); res.gotResp || classify(res.err) != history.ErrClassTooLarge {
		t.Fatalf("%d interim responses: status %d err %v (class %s), want class too_large", maxInterimResponses+2, res.status, res.err, classify(res.err))
	}
}

func TestEndlessHeadersAreTooLarge(t *testing.T) {
	r := parserRunner(t, DefaultResponseReadLimit)
	src := &endlessHeaders{}
	res, reusable := r.readResponse(testPconn(r, src))
	if res.gotResp || reusable || res.err == nil || classify(res.err) != history.ErrClassTooLarge || res.err.Error() != "response headers exceed 64 KiB" {
		t.Fatalf("endless headers: gotResp %v err %v (class %s)", res.gotResp, res.err, classify(res.err))
	}
	// Bounded: the limit and one buffer of slack, not the stream.
	if read := src.sent * 53; read > maxResponseHeaderBytes+3*4096 {
		t.Fatalf("read about %d bytes of endless headers, want at most about %d", read, maxResponseHeaderBytes+3*4096)
	}
	// Headers just under the limit still parse.
	big := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Padding: "+strings.Repeat("p", 40)+"\r\n", (maxResponseHeaderBytes-4096)/53) + "Content-Length: 2\r\n\r\nok"
	if res, _ := r.readResponse(testPconn(r, strings.NewReader(big))); res.err != nil || res.status != 200 || string(res.body) != "ok" {
		t.Fatalf("%d bytes of headers: status %d err %v", len(big), res.status, res.err)
	}
}

// FuzzResponseParser feeds arbitrary bytes to the response reader: the fast
// path must agree with net/http's parser (whole and byte by byte), never
// panic, never keep more body than the limit, and only ever report a final
// status.
func FuzzResponseParser(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n{\"status\":\"processed\"}",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 503\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\nno",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1\r\nx\r\n", 80) + "0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil EOF",
		"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 99 Low\r\n\r\n",
		"HTTP/1.1 1000 High\r\n\r\n",
		"SSH-2.0-OpenSSH\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk",
		"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
		"HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Padding: "+strings.Repeat("p", 40)+"\r\n", 90) + "Content-Length: 2\r\n\r\nok", // beyond one read buffer
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	r := parserRunner(f, 64)
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := string(raw)
		got, gotReuse := r.readResponse(testPconn(r, strings.NewReader(s)))
		want, wantReuse := r.readAnyResponse(testPconn(r, strings.NewReader(s)))
		compareResponses(t, got, gotReuse, want, wantReuse)
		slow, slowReuse := r.readResponse(testPconn(r, oneByteReader{strings.NewReader(s)}))
		if slowReuse && !wantReuse {
			// Bytes after the response that have not arrived yet cannot make a
			// connection unusable at parse time; the pool's liveness probe finds
			// them before any reuse. Only the opposite would be a parser bug.
			slowReuse = false
		}
		compareResponses(t, slow, slowReuse, want, wantReuse)
		if int64(len(got.body)) > r.opts.ResponseReadLimit {
			t.Fatalf("kept %d body bytes, limit %d", len(got.body), r.opts.ResponseReadLimit)
		}
		if got.gotResp && (got.status < 100 || got.status > 999 || (got.status < 200 && got.status != 101)) {
			t.Fatalf("reported status %d", got.status)
		}
		if got.gotResp != (got.err == nil || got.status != 0) {
			t.Fatalf("gotResp %v with status %d and err %v", got.gotResp, got.status, got.err)
		}
	})
}
