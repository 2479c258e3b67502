package reference

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// testDatabase creates a database of the test's own on HOOKCERT_TEST_DATABASE_URL
// and drops it afterwards, so parallel test packages never collide.
func testDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("HOOKCERT_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to test server: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "hookcert_ref_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("drop database: %v", err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse test url: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func testPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// recorder is a failpoint seam for tests: it records hits and can block or fail
// at a chosen point.
type recorder struct {
	mu    sync.Mutex
	hits  []string
	fail  map[fpPoint]error
	block map[fpPoint]chan struct{}
	// reached is closed-over by tests to learn a blocking point was reached.
	reached chan fpPoint
}

func (r *recorder) hit(p fpPoint, id string) error {
	r.mu.Lock()
	r.hits = append(r.hits, p.String()+":"+id)
	err := r.fail[p]
	ch := r.block[p]
	r.mu.Unlock()
	if ch != nil {
		if r.reached != nil {
			r.reached <- p
		}
		<-ch
	}
	return err
}

// switchHitter lets a test change the failpoint seam while the server runs
// (handlers read it concurrently, e.g. at after-response).
type switchHitter struct {
	mu sync.Mutex
	h  hitter
}

func (s *switchHitter) hit(p fpPoint, id string) error {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	return h.hit(p, id)
}

// idle is false: a recorder observes every point, so deliveries take the
// step-by-step path that reaches them all.
func (r *recorder) idle() bool { return false }

func (s *switchHitter) idle() bool {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	return h.idle()
}

func (s *switchHitter) set(h hitter) {
	s.mu.Lock()
	s.h = h
	s.mu.Unlock()
}

// waitHits waits until the recorder has seen n hits and returns them.
func (r *recorder) waitHits(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		hits := append([]string(nil), r.hits...)
		r.mu.Unlock()
		if len(hits) >= n || time.Now().After(deadline) {
			return hits
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type env struct {
	fps  *switchHitter
	t    *testing.T
	srv  *Server
	http *httptest.Server
	pool *pgxpool.Pool
	eps  map[string]Endpoint // by "profile/account"
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	dbURL := testDatabase(t)
	pool := testPool(t, dbURL)
	return newEnvOn(t, pool, opts)
}

func newEnvOn(t *testing.T, pool *pgxpool.Pool, opts Options) *env {
	t.Helper()
	srv, err := New(context.Background(), pool, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	fps := &switchHitter{h: srv.fp}
	srv.fp = fps // before any request: no race
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	e := &env{fps: fps, t: t, srv: srv, http: hs, pool: pool, eps: map[string]Endpoint{}}
	for _, ep := range srv.Endpoints() {
		e.eps[ep.Profile+"/"+ep.Account] = ep
	}
	return e
}

// obj is a conformance-domain business object.
type obj struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	Status   string `json:"status,omitempty"`
	Version  int64  `json:"version,omitempty"`
}

// delivery is one signed request, built by hand following each provider's
// documented algorithm (no simulator code).
type delivery struct {
	ep     Endpoint
	header http.Header
	body   []byte
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// build renders an event in ep's envelope and signs it at signedAt.
func build(ep Endpoint, id, typ string, o obj, signedAt time.Time) delivery {
	h := http.Header{"Content-Type": {"application/json"}}
	var body []byte
	switch ep.Profile {
	case "stripe":
		body = mustJSON(map[string]any{"id": id, "object": "event", "type": typ, "data": map[string]any{"object": o}})
	case "standard-webhooks", "svix":
		body = mustJSON(map[string]any{"type": typ, "timestamp": signedAt.UTC().Format(time.RFC3339), "data": o})
		prefix := "webhook-"
		if ep.Profile == "svix" {
			prefix = "svix-"
		}
		h.Set(prefix+"id", id)
	case "github":
		body = mustJSON(map[string]any{"object": o})
		h.Set("X-GitHub-Delivery", id)
		h.Set("X-GitHub-Event", typ)
	case "shopify":
		body = mustJSON(o)
		h.Set("X-Shopify-Event-Id", id)
		h.Set("X-Shopify-Topic", typ)
	case "slack":
		body = mustJSON(map[string]any{"team_id": ep.Account, "type": "event_callback", "event_id": id,
			"event": map[string]any{"type": typ, "object": o}})
	}
	d := delivery{ep: ep, header: h, body: body}
	d.sign(signedAt)
	return d
}

func hmacSHA256(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// sign (re)computes the signature headers over the current body.
func (d *delivery) sign(at time.Time) {
	ts := strconv.FormatInt(at.Unix(), 10)
	switch d.ep.Profile {
	case "stripe": // HMAC-SHA256("{t}.{body}"), whole whsec_ string as key (docs.stripe.com/webhooks)
		d.header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(hmacSHA256([]byte(d.ep.Secret), ts, ".", string(d.body))))
	case "standard-webhooks", "svix": // base64 HMAC over "{id}.{ts}.{body}", key = b64decode(secret sans whsec_)
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(d.ep.Secret, "whsec_"))
		if err != nil {
			panic(err)
		}
		prefix := "webhook-"
		if d.ep.Profile == "svix" {
			prefix = "svix-"
		}
		d.header.Set(prefix+"timestamp", ts)
		sig := base64.StdEncoding.EncodeToString(hmacSHA256(key, d.header.Get(prefix+"id"), ".", ts, ".", string(d.body)))
		d.header.Set(prefix+"signature", "v1,"+sig)
	case "github": // X-Hub-Signature-256: sha256=hex(HMAC(body))
		d.header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(hmacSHA256([]byte(d.ep.Secret), string(d.body))))
	case "shopify": // X-Shopify-Hmac-Sha256: base64(HMAC(body))
		d.header.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(hmacSHA256([]byte(d.ep.Secret), string(d.body))))
	case "slack": // X-Slack-Signature: v0=hex(HMAC("v0:{ts}:{body}")) (docs.slack.dev verifying-requests-from-slack)
		d.header.Set("X-Slack-Request-Timestamp", ts)
		d.header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(hmacSHA256([]byte(d.ep.Secret), "v0:", ts, ":", string(d.body))))
	}
}

type reply struct {
	Code   int
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func (e *env) send(d delivery) reply {
	e.t.Helper()
	return e.sendTo(e.http.Client(), d.ep.Path, d)
}

func (e *env) sendTo(c *http.Client, path string, d delivery) reply {
	e.t.Helper()
	r, err := e.try(c, context.Background(), path, d)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	return r
}

func (e *env) try(c *http.Client, ctx context.Context, path string, d delivery) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.http.URL+path, bytes.NewReader(d.body))
	if err != nil {
		return reply{}, err
	}
	req.Header = d.header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	r := reply{Code: resp.StatusCode}
	if err := json.Unmarshal(b, &r); err != nil {
		return reply{}, fmt.Errorf("response %d %q: %w", resp.StatusCode, b, err)
	}
	r.Code = resp.StatusCode
	return r, nil
}

func (e *env) ep(profile, account string) Endpoint {
	ep, ok := e.eps[profile+"/"+account]
	if !ok {
		e.t.Fatalf("no endpoint %s/%s", profile, account)
	}
	return ep
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// keyRows counts key rows the way a harness does (docs/reference.md).
func (e *env) keyRows(ep Endpoint, id string) int {
	return e.count(`SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3`, ep.KeySource(), ep.Account, id)
}

func (e *env) ledger(ep Endpoint, id string) int {
	return e.count(`SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3`, ep.KeySource(), ep.Account, id)
}

func (e *env) totalRows() int {
	return e.count(`SELECT (SELECT count(*) FROM processed_webhook_events) + (SELECT count(*) FROM ledger_entries)
		+ (SELECT count(*) FROM payments) + (SELECT count(*) FROM subscriptions) + (SELECT count(*) FROM account_balances)`)
}

func (e *env) expect(got reply, code int, status, reason string) {
	e.t.Helper()
	if got.Code != code || got.Status != status || (reason != "" && got.Reason != reason) {
		e.t.Fatalf("got %d %s/%s, want %d %s/%s", got.Code, got.Status, got.Reason, code, status, reason)
	}
}

// gate holds a SHARE lock on table in a transaction of its own: every INSERT into
// it waits, so concurrent deliveries all reach the same point before any proceeds.
func (e *env) gate(table string) (release func()) {
	e.t.Helper()
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN SHARE MODE"); err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	e.t.Cleanup(release)
	return release
}

// waitLockWaiters waits until n sessions wait for a lock on table.
func (e *env) waitLockWaiters(table string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := e.count(`SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = $1 AND NOT l.granted
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`, table)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("only %d of %d sessions wait on %s", got, n, table)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fire sends n copies of d concurrently, released together by a barrier, and
// returns every reply.
func (e *env) fire(d delivery, n int) []reply {
	e.t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	defer client.CloseIdleConnections()
	barrier := make(chan struct{})
	replies := make([]reply, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-barrier
			replies[i], errs[i] = e.try(client, context.Background(), d.ep.Path, d)
		}()
	}
	ready.Wait()
	close(barrier)
	done.Wait()
	for _, err := range errs {
		if err != nil {
			e.t.Fatalf("concurrent copy: %v", err)
		}
	}
	return replies
}

// fireAsync sends n copies without waiting for replies.
func (e *env) fireAsync(d delivery, n int) func() []reply {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	replies := make([]reply, n)
	errs := make([]error, n)
	var done sync.WaitGroup
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			replies[i], errs[i] = e.try(client, context.Background(), d.ep.Path, d)
		}()
	}
	return func() []reply {
		e.t.Helper()
		done.Wait()
		client.CloseIdleConnections()
		for _, err := range errs {
			if err != nil {
				e.t.Fatalf("copy: %v", err)
			}
		}
		return replies
	}
}

var idSeq struct {
	sync.Mutex
	n int
}

func newID(prefix string) string {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), idSeq.n)
}
