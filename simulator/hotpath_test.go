package simulator

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
)

// fnvIDHash is the original idHash on hash/fnv, kept as the reference the
// allocation-free hasher must match byte for byte (IDs are stored in histories
// and must not change between versions).
func fnvIDHash(seed int64, parts ...any) [16]byte {
	h := fnv.New128a()
	h.Write([]byte(strconv.FormatInt(seed, 10)))
	for _, p := range parts {
		h.Write([]byte{'/'})
		switch v := p.(type) {
		case string:
			h.Write([]byte(v))
		case int:
			h.Write([]byte(strconv.Itoa(v)))
		case int64:
			h.Write([]byte(strconv.FormatInt(v, 10)))
		default:
			fmt.Fprint(h, v)
		}
	}
	var out [16]byte
	h.Sum(out[:0])
	return out
}

func TestIDHashMatchesHashFNV(t *testing.T) {
	cases := [][]any{
		{}, {"event", 0}, {"event", 123456}, {"delivery", "stripe", "acct_1", "evt_x", 0, 0, 1},
		{"delivery", "", "", "", -1, 1 << 40, int64(-9)}, {"ünïcode", 3.5, true},
	}
	for _, seed := range []int64{0, 1, -1, 42, 1 << 62} {
		for _, c := range cases {
			if got, want := idHash(seed, c...), fnvIDHash(seed, c...); got != want {
				t.Fatalf("idHash(%d, %v) = %x, hash/fnv gives %x", seed, c, got, want)
			}
		}
	}
	// A fixed value (computed with the original hash/fnv code) guards against the
	// reference and the copy drifting together.
	h := idHash(7, "delivery", "stripe", "acct", "evt_1", 2, 3, 4)
	if got := hex.EncodeToString(h[:]); got != "b50d72dc025d083aac9542adf22aed63" {
		t.Fatalf("fixed vector: %s", got)
	}
	if got := attemptDeliveryID(7, nil, "stripe", "acct", "evt_1", 2, 3, 4); got != "dlv_b50d72dc025d083aac9542ad" {
		t.Fatalf("fixed delivery ID: %s", got)
	}
}

func TestAttemptDeliveryIDMatchesNewDeliveryID(t *testing.T) {
	for _, prof := range []string{"stripe", "shopify", "github", "testprof"} {
		for _, seed := range []int64{0, 9} {
			for attempt := 1; attempt < 4; attempt++ {
				want := NewDeliveryID(seed, prof, "src", "acct_a", "evt_1", 5, 2, attempt)
				got := attemptDeliveryID(seed, deliveryIDMakerOf(lookupProfile(prof)), "src", "acct_a", "evt_1", 5, 2, attempt)
				if got != want {
					t.Fatalf("%s seed %d attempt %d: %q, want %q", prof, seed, attempt, got, want)
				}
			}
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		_ = attemptDeliveryID(1, nil, "stripe", "acct_bench", "evt_123", 0, 0, 1)
	}); allocs > 1 {
		t.Fatalf("attemptDeliveryID allocates %.0f times, want at most 1 (the string)", allocs)
	}
}

// oneByteReader returns one byte per Read, so nothing arrives "at once".
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func testPconn(r *Runner, src io.Reader) *pconn {
	b := &budgetReader{r: src}
	pc := &pconn{budget: b, br: bufio.NewReaderSize(b, 4096)}
	pc.budget.n = maxResponseHeaderBytes + r.opts.ResponseReadLimit + int64(pc.br.Size())
	return pc
}

// TestPlainResponseMatchesNetHTTP reads each response with readResponse (fast
// path first) and with net/http's parser alone and requires the same status,
// headers, body, error class, and reuse decision; plain responses must take
// the fast path, the rest must fall back untouched.
func TestPlainResponseMatchesNetHTTP(t *testing.T) {
	r, err := NewRunner(Target{URL: "http://127.0.0.1:1/hook", Profile: testProfile{}, Secrets: []string{testSecret}}, Options{ResponseReadLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 65)
	cases := []struct {
		name  string
		raw   string
		plain bool
	}{
		{"go net/http 200", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Mon, 30 Nov 2026 16:00:00 GMT\r\nContent-Length: 22\r\n\r\n{\"status\":\"processed\"}", true},
		{"empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
		{"no reason", "HTTP/1.1 503\r\nContent-Length: 2\r\nRetry-After: 7\r\n\r\nno", true},
		{"lower-case keys, padded values, repeats", "HTTP/1.1 429 Too Many Requests\r\ncontent-length: 3\r\nx-a:  one \t\r\nX-A: two\r\nretry-after:\t120\r\n\r\nabc", true},
		{"obs-text value", "HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 1\r\n\r\nk", true},
		{"pipelined extra bytes", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nkHTTP/1.1 200 OK\r\n", true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true},
		{"nothing", "", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false},
		{"no length, close-delimited", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil EOF", false},
		{"204", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", false},
		{"304", "HTTP/1.1 304 Not Modified\r\n\r\n", false},
		{"100 then 200", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false},
		{"too large", "HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n" + long, false},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk", false},
		{"same length twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", false},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", false},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok", false},
		{"line without colon", "HTTP/1.1 200 OK\r\nbogus\r\nContent-Length: 2\r\n\r\nok", false},
		{"space before colon", "HTTP/1.1 200 OK\r\nX-A : 1\r\nContent-Length: 2\r\n\r\nok", false},
		{"control byte in value", "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok", false},
		{"bare CR in value", "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok", false},
		{"bare LF in header block", "HTTP/1.1 200 OK\r\nX-A: a\nX-B: b\r\nContent-Length: 2\r\n\r\nok", false},
		{"bare LF lines", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false},
		{"bad status", "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok", false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast := testPconn(r, strings.NewReader(c.raw))
			_, _, ok := r.readPlainResponse(testPconn(r, strings.NewReader(c.raw)))
			if ok != c.plain {
				t.Fatalf("fast path taken = %v, want %v", ok, c.plain)
			}
			got, gotReuse := r.readResponse(fast)
			want, wantReuse := r.readAnyResponse(testPconn(r, strings.NewReader(c.raw)))
			compareResponses(t, got, gotReuse, want, wantReuse)
			// Byte by byte nothing is buffered at once: always the fallback, which
			// leaves the reader as net/http found it.
			slow, slowReuse := r.readResponse(testPconn(r, oneByteReader{strings.NewReader(c.raw)}))
			want, wantReuse = r.readAnyResponse(testPconn(r, oneByteReader{strings.NewReader(c.raw)}))
			compareResponses(t, slow, slowReuse, want, wantReuse)
		})
	}
}

// TestRepeatedPlainResponseReusesItsParse reads a sequence of responses on one
// connection, the same bytes repeated and then changed (status, a header, the
// body, and a prefix of an earlier one), each compared with net/http's parse:
// a response with the last one's bytes reuses its parse, any other is parsed.
func TestRepeatedPlainResponseReusesItsParse(t *testing.T) {
	r, err := NewRunner(Target{URL: "http://127.0.0.1:1/hook", Profile: testProfile{}, Secrets: []string{testSecret}}, Options{ResponseReadLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	a := "HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 16:00:00 GMT\r\nContent-Length: 2\r\n\r\nok"
	seq := []string{a, a,
		"HTTP/1.1 500 Internal Server Error\r\nDate: Mon, 30 Nov 2026 16:00:00 GMT\r\nContent-Length: 2\r\n\r\nok",
		a,
		"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 16:00:01 GMT\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 16:00:01 GMT\r\nContent-Length: 2\r\n\r\nno",
		"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 16:00:01 GMT\r\nContent-Length: 3\r\n\r\nnoo",
		"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 16:00:01 GMT\r\nContent-Length: 3\r\n\r\nnoo",
		"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 16:00:01 GMT\r\nContent-Length: 3\r\n\r\nno",
	}
	pc := testPconn(r, strings.NewReader(strings.Join(seq, "")))
	for i, raw := range seq {
		got, _ := r.readResponse(pc)
		want, _ := r.readAnyResponse(testPconn(r, strings.NewReader(raw)))
		// Reuse is not compared: the next responses are buffered behind this one.
		t.Logf("response %d", i)
		compareResponses(t, got, false, want, false)
	}
	if last := r.lastPlain.Load(); last == nil || string(last.raw) != seq[len(seq)-3] {
		t.Fatalf("last plain response kept: %+v, want the last whole one read", last)
	}
}

func compareResponses(t *testing.T, got response, gotReuse bool, want response, wantReuse bool) {
	t.Helper()
	errText := func(e error) string {
		if e == nil {
			return ""
		}
		return classify(e) + ": " + e.Error()
	}
	if got.status != want.status || got.gotResp != want.gotResp || got.tooBig != want.tooBig ||
		string(got.body) != string(want.body) || errText(got.err) != errText(want.err) || gotReuse != wantReuse {
		t.Fatalf("fast path: status %d resp %v tooBig %v body %q err %q reuse %v\nnet/http:  status %d resp %v tooBig %v body %q err %q reuse %v",
			got.status, got.gotResp, got.tooBig, got.body, errText(got.err), gotReuse,
			want.status, want.gotResp, want.tooBig, want.body, errText(want.err), wantReuse)
	}
	if !reflect.DeepEqual(got.header, want.header) && !(len(got.header) == 0 && len(want.header) == 0) {
		t.Fatalf("headers differ:\nfast path: %q\nnet/http:  %q", got.header, want.header)
	}
}

// An idle connection keeps its last attempt's deadline; the next attempt must
// still reuse it (its own deadline is set before the liveness probe, which a
// passed deadline would fail).
func TestIdleConnectionReusedAfterItsDeadlinePassed(t *testing.T) {
	srv, conns := countingServer(t)
	r := newTestRunner(t, srv.URL, testProfile{})
	for i := 0; i < 3; i++ {
		a, _ := r.Send(context.Background(), testEvent(), SendOptions{Shape: Shape{Timeout: Duration(30 * time.Millisecond)}})
		if a.Outcome != history.OutcomeAcknowledged {
			t.Fatalf("send %d: %+v", i, a)
		}
		time.Sleep(60 * time.Millisecond)
	}
	if conns.Load() != 1 {
		t.Fatalf("3 sends with idle gaps longer than their timeout opened %d connections, want 1", conns.Load())
	}
}

// The snapshot orders attempts by start like a stable sort: ties keep the
// order they were recorded in, across chunk boundaries.
func TestSnapshotOrdersLikeStableSort(t *testing.T) {
	rec := &recorder{}
	var all []history.Attempt
	for i := 0; i < 3*recorderChunk+17; i++ {
		a := history.Attempt{StartNS: int64((i * 7919) % 500), Copy: i} // many ties, out of order
		rec.attempt(a)
		all = append(all, a)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartNS < all[j].StartNS })
	got := rec.snapshot().Attempts
	if len(got) != len(all) {
		t.Fatalf("snapshot has %d attempts, want %d", len(got), len(all))
	}
	for i := range all {
		if got[i].StartNS != all[i].StartNS || got[i].Copy != all[i].Copy {
			t.Fatalf("attempt %d: start %d copy %d, stable sort gives start %d copy %d", i, got[i].StartNS, got[i].Copy, all[i].StartNS, all[i].Copy)
		}
	}
	if h := (&recorder{}).snapshot(); h.Attempts != nil {
		t.Fatalf("empty snapshot: %v", h.Attempts)
	}
}
