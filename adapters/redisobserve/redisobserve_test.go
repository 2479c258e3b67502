package redisobserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookcert/hookcert/adapters/observe"
)

// EnvTestURL names the Redis server the tests use instead of the default.
const EnvTestURL = "HOOKCERT_TEST_REDIS_URL"

const defaultTestURL = "redis://127.0.0.1:6379/0"

func testURL() string {
	if u := strings.TrimSpace(os.Getenv(EnvTestURL)); u != "" {
		return u
	}
	return defaultTestURL
}

// testRedis connects to the test server, or skips when none answers, and
// returns a key prefix of the test's own: every key under it is deleted when
// the test ends.
func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(testURL())
	if err != nil {
		t.Fatalf("%s: not a Redis URL", EnvTestURL)
	}
	opt.DialerRetries = 1
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Skipf("no Redis answers at %s (start redis-server, or set %s): %v", opt.Addr, EnvTestURL, err)
	}
	prefix := fmt.Sprintf("hookcert-test:%d:%d:", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			if err := c.Del(ctx, keys[:n]...).Err(); err != nil {
				t.Errorf("cleaning up %s*: %v", prefix, err)
			}
			keys = keys[n:]
		}
		_ = c.Close()
	})
	return c, prefix
}

func openTest(t *testing.T, url string, qs map[string]string, to Timeouts) *Reader {
	t.Helper()
	r, err := Open(context.Background(), url, qs, nil, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func rowsOf(t *testing.T, r *Reader, name string, k observe.Key) [][]any {
	t.Helper()
	rows, err := r.Read(context.Background(), name, k)
	if err != nil {
		t.Fatalf("Read(%s, %+v): %v", name, k, err)
	}
	return rows.Values
}

// TestReadOnRedis: every query kind read from a real server, with the state a
// receiver leaves there.
func TestReadOnRedis(t *testing.T) {
	c, p := testRedis(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set(ctx, p+"seen:stripe:evt_1", "1", time.Minute).Err())
	must(c.Set(ctx, p+"seen:stripe:evt_forever", "1", 0).Err())
	must(c.Set(ctx, p+"seen:stripe:evt x y", "1", 0).Err())
	must(c.Set(ctx, p+"applied:evt_1", "2", 0).Err())
	must(c.RPush(ctx, p+"ledger:ch_1", "evt_1", "evt_2").Err())
	for _, k := range []string{"ledger:ch_1:a", "ledger:ch_1:b", "ledger:ch_10:a", "ledger:ch_*:a"} {
		must(c.Set(ctx, p+k, "1", 0).Err())
	}
	must(c.HSet(ctx, p+"sub:sub_1", "version", "3", "status", "active").Err())
	must(c.HSet(ctx, p+"sub:sub_bad", "version", "v3").Err())
	must(c.HSet(ctx, p+"payment:pi_1", "status", "succeeded").Err())
	must(c.HSet(ctx, p+"event:evt_1", "payload", "{}").Err())
	must(c.HSet(ctx, p+"inbox:evt_1", "state", "done", "attempts", "2").Err())
	must(c.Set(ctx, p+"ttl:evt_1", "1", 90*time.Second).Err())

	r := openTest(t, testURL(), map[string]string{
		"event_rows":      "EXISTS " + p + "seen:$1:$3",
		"effects":         "GET " + p + "applied:$3",
		"object_effects":  "COUNT " + p + "ledger:$4:*",
		"object":          "HMGET " + p + "sub:$4 version status",
		"payment":         "HGET " + p + "payment:$4 status",
		"payload_present": "HEXISTS " + p + "event:$3 payload",
		"key_ttl":         "PTTL " + p + "seen:$1:$3",
		"quiescent":       "LLEN " + p + "queue",
		"inbox_state":     "HMGET " + p + "inbox:$3 state attempts",
	}, Timeouts{})

	ev := func(id string) observe.Key { return observe.Key{Source: "stripe", Account: "acct_A", EventID: id} }
	obj := func(id string) observe.Key { return observe.Key{Source: "stripe", Account: "acct_A", ObjectID: id} }
	check := func(name string, k observe.Key, want [][]any) {
		t.Helper()
		if got := rowsOf(t, r, name, k); !equalRows(got, want) {
			t.Errorf("%s %+v = %#v, want %#v", name, k, got, want)
		}
	}
	check("event_rows", ev("evt_1"), [][]any{{int64(1)}})
	check("event_rows", ev("evt_2"), [][]any{{int64(0)}})
	// A value with spaces stays inside its word: the key "seen:stripe:evt x y".
	check("event_rows", ev("evt x y"), [][]any{{int64(1)}})
	check("effects", ev("evt_1"), [][]any{{int64(2)}})
	check("effects", ev("evt_2"), nil)
	// ch_1's own keys only: not ch_10's, and the * of ch_* is no wildcard.
	check("object_effects", obj("ch_1"), [][]any{{int64(2)}})
	check("object_effects", obj("ch_*"), [][]any{{int64(1)}})
	check("object_effects", obj("ch_2"), [][]any{{int64(0)}})
	check("object", obj("sub_1"), [][]any{{int64(3), "active"}})
	check("object", obj("sub_404"), nil)
	check("payment", obj("pi_1"), [][]any{{"succeeded"}})
	check("payment", obj("pi_404"), nil)
	check("payload_present", ev("evt_1"), [][]any{{true}})
	check("payload_present", ev("evt_2"), [][]any{{false}})
	check("key_ttl", ev("evt_forever"), [][]any{{int64(-1)}})
	check("key_ttl", ev("evt_404"), nil)
	check("quiescent", observe.Key{}, [][]any{{true}})
	check("inbox_state", ev("evt_1"), [][]any{{"done", int64(2)}})

	ttl := rowsOf(t, r, "key_ttl", ev("evt_1"))
	if len(ttl) != 1 || ttl[0][0].(int64) <= 50_000 || ttl[0][0].(int64) > 60_000 {
		t.Errorf("key_ttl of a key set for a minute = %v ms", ttl)
	}
	must(c.RPush(ctx, p+"queue", "job").Err())
	check("quiescent", observe.Key{}, [][]any{{false}})

	// TTL is read in milliseconds too.
	r2 := openTest(t, testURL(), map[string]string{"key_ttl": "TTL " + p + "ttl:$3"}, Timeouts{})
	if got := rowsOf(t, r2, "key_ttl", ev("evt_1")); len(got) != 1 || got[0][0].(int64) <= 80_000 || got[0][0].(int64) > 90_000 || got[0][0].(int64)%1000 != 0 {
		t.Errorf("TTL key_ttl = %v, want whole seconds in ms near 90000", got)
	}

	// The contract's metadata.
	if r.Kind() != "redis" || !r.Has("object") || r.Has("outbox_state") {
		t.Errorf("Kind %q, Has(object) %v, Has(outbox_state) %v", r.Kind(), r.Has("object"), r.Has("outbox_state"))
	}
	if d := r.Describe("key_ttl"); d != "PTTL "+p+"seen:$1:$3" {
		t.Errorf("Describe(key_ttl) = %q", d)
	}
	if ps := r.Params("key_ttl"); !slices.Equal(ps, []int{1, 3}) {
		t.Errorf("Params(key_ttl) = %v", ps)
	}
	if rows, err := r.Read(ctx, "object", obj("sub_1")); err != nil || !slices.Equal(rows.Columns, []string{"version", "status"}) {
		t.Errorf("object columns = %v, %v", rows.Columns, err)
	}

	// Answers of the wrong shape are the query's mistake, named by its field.
	_, err := r.Read(ctx, "object", obj("sub_bad"))
	if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), `target.observe.redis.queries.object: HMGET `+p+`sub:$4 version status answered "v3", not an integer for the version`) {
		t.Errorf("non-integer version: %v", err)
	}
	must(c.Set(ctx, p+"payment:pi_str", "x", 0).Err())
	_, err = r.Read(ctx, "payment", obj("pi_str"))
	if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), "target.observe.redis.queries.payment: HGET") || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("WRONGTYPE: %v", err)
	}
	if _, err := r.Read(ctx, "outbox_state", ev("evt_1")); !errors.Is(err, observe.ErrNotConfigured) {
		t.Errorf("not configured: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Read(cctx, "event_rows", ev("evt_1")); !errors.Is(err, context.Canceled) || errors.Is(err, observe.ErrTimeout) {
		t.Errorf("canceled by the caller: %v", err)
	}
}

// TestCountBounded: COUNT gives up past MaxCountKeys keys instead of walking
// the key space, and says so.
func TestCountBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writes 10,001 keys")
	}
	c, p := testRedis(t)
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := range MaxCountKeys + 1 {
		pipe.Set(ctx, fmt.Sprintf("%sledger:ch_1:%d", p, i), "1", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, testURL(), map[string]string{"object_effects": "COUNT " + p + "ledger:$4:*"}, Timeouts{})
	_, err := r.Read(ctx, "object_effects", observe.Key{ObjectID: "ch_1"})
	if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), "matches more than 10000 keys; hookcert counts at most 10000 (bounded)") {
		t.Errorf("COUNT past the bound: %v", err)
	}
	if err := c.Del(ctx, p+"ledger:ch_1:0").Err(); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, r, "object_effects", observe.Key{ObjectID: "ch_1"}); !equalRows(got, [][]any{{int64(MaxCountKeys)}}) {
		t.Errorf("COUNT at the bound = %v", got)
	}
}

// TestUnreachable: a server that is not there, refuses the credentials or a
// URL that does not parse; no password appears in any error.
func TestUnreachable(t *testing.T) {
	_, p := testRedis(t)
	qs := map[string]string{"event_rows": "EXISTS " + p + "seen:$3"}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	opt, _ := redis.ParseURL(testURL())
	for _, c := range []struct{ url, want string }{
		{"redis://:s3cretpw@" + closed + "/0", "observe: Redis at " + closed + "/0 does not answer PING:"},
		// The test server takes no password, or another one.
		{"redis://nobody:s3cretpw@" + opt.Addr + "/0", "does not answer PING:"},
		{"redis://u:s3cretpw@[::1/0", "observe: invalid Redis URL (not shown: it may hold a password)"},
		{"http://u:s3cretpw@host/0", "observe: invalid Redis URL"},
	} {
		_, err := Open(context.Background(), c.url, qs, nil, Timeouts{Connect: time.Second})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, observe.ErrUnreachable) || errors.Is(err, observe.ErrInvalidQuery) {
			t.Errorf("%s: err = %v, want %q wrapping ErrUnreachable", strings.ReplaceAll(c.url, "s3cretpw", "xxx"), err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("the password is in the error: %v", err)
		}
	}
}

// stallProxy forwards TCP to the real server until stall is set; from then
// on it holds the server's answers back, as a stuck server or network would.
type stallProxy struct {
	l     net.Listener
	stall atomic.Bool
	wg    sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{l: l}
	var conns []net.Conn
	var mu sync.Mutex
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go func() { _, _ = io.Copy(s, c) }()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := s.Read(buf)
					for p.stall.Load() {
						time.Sleep(10 * time.Millisecond)
					}
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		p.stall.Store(false)
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// TestTimeouts: a server that stops answering gives ErrTimeout naming the
// query and the bounds, within them; at Open, ErrUnreachable too.
func TestTimeouts(t *testing.T) {
	_, p := testRedis(t)
	opt, _ := redis.ParseURL(testURL())
	proxy := newStallProxy(t, opt.Addr)
	url := fmt.Sprintf("redis://%s/%d", proxy.l.Addr(), opt.DB)
	to := Timeouts{Connect: 200 * time.Millisecond, Read: 300 * time.Millisecond}
	qs := map[string]string{"event_rows": "EXISTS " + p + "seen:$3", "object_effects": "COUNT " + p + "l:$4:*"}
	r := openTest(t, url, qs, to)
	if got := rowsOf(t, r, "event_rows", observe.Key{EventID: "evt_1"}); !equalRows(got, [][]any{{int64(0)}}) {
		t.Fatalf("through the proxy: %v", got)
	}

	proxy.stall.Store(true)
	for _, name := range []string{"event_rows", "object_effects"} {
		start := time.Now()
		_, err := r.Read(context.Background(), name, observe.Key{EventID: "evt_1", ObjectID: "ch_1"})
		took := time.Since(start)
		if !errors.Is(err, observe.ErrTimeout) || !strings.Contains(err.Error(), "observe: query "+name+": no answer from Redis at "+proxy.l.Addr().String()+"/") ||
			!strings.Contains(err.Error(), "within 500ms (read timeout 300ms + connect timeout 200ms)") {
			t.Errorf("%s on a stalled server: %v", name, err)
		}
		if took > 2*time.Second {
			t.Errorf("%s took %s to time out (bounds 500ms)", name, took)
		}
	}

	start := time.Now()
	_, err := Open(context.Background(), url, qs, nil, to)
	if !errors.Is(err, observe.ErrUnreachable) || !errors.Is(err, observe.ErrTimeout) ||
		!strings.Contains(err.Error(), "does not answer PING within 500ms (connect timeout 200ms + read timeout 300ms)") {
		t.Errorf("Open on a stalled server: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Open took %s to time out", took)
	}
}
