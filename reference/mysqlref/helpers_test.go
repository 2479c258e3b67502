package mysqlref

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// envTestURL names the variable holding the test server's URL.
const envTestURL = "HOOKCERT_TEST_MYSQL_URL"

// defaultTestURL is MariaDB on this machine, root without a password.
const defaultTestURL = "mysql://root@127.0.0.1:3306/test"

func testServerURL() string {
	if u := strings.TrimSpace(os.Getenv(envTestURL)); u != "" {
		return u
	}
	return defaultTestURL
}

// testDatabase creates a fresh database on the test server and returns its URL
// and a pool on it; both go when the test ends. The test is skipped, with the
// reason, when the default server does not answer (failed when the variable
// names one that does not).
func testDatabase(t *testing.T) (string, *sql.DB) {
	t.Helper()
	server := testServerURL()
	cfg, err := ParseURL(server)
	if err != nil {
		t.Fatalf("%s: %v", envTestURL, err)
	}
	cfg.DBName = ""
	cfg.Timeout = 3 * time.Second
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		if os.Getenv(envTestURL) != "" {
			t.Fatalf("the server %s names (%s) does not answer: %v", envTestURL, cfg.Addr, err)
		}
		t.Skipf("no MySQL or MariaDB at %s (start one, or set %s): %v", cfg.Addr, envTestURL, err)
	}
	name := "hookcert_mysqlref_" + randomHex(t)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("creating the test database: %v", err)
	}
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := sql.Open("mysql", func() string { c := cfg.Clone(); c.DBName = ""; return c.FormatDSN() }())
		if err != nil {
			t.Errorf("dropping %s: %v", name, err)
			return
		}
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	u := strings.SplitN(server, "?", 2)[0]
	u = u[:strings.LastIndex(u, "/")+1] + name
	return u, db
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// env is a receiver on a fresh database, served over real HTTP.
type env struct {
	t     *testing.T
	db    *sql.DB // the test's own sessions
	srv   *Server
	dbURL string
	url   string
	log   *syncBuffer
	eps   []Endpoint
}

func newEnv(t *testing.T, defects ...string) *env {
	t.Helper()
	dbURL, db := testDatabase(t)
	logs := &syncBuffer{}
	eps := []Endpoint{
		{Account: "acct_A", Path: "/webhooks/stripe/acct_A", Secret: "whsec_" + randomHex(t)},
		{Account: "acct_B", Path: "/webhooks/stripe/acct_B", Secret: "whsec_" + randomHex(t)},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, dbURL, Options{Endpoints: eps, Defects: defects, Logger: slog.New(slog.NewTextHandler(logs, nil)), DBTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); _ = s.Close() })
	return &env{t: t, db: db, srv: s, dbURL: dbURL, url: hs.URL, log: logs, eps: eps}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// delivery is one signed Stripe request.
type delivery struct {
	path   string
	body   []byte
	header http.Header
}

// stripeEvent builds a delivery of an event signed with ep's secret at signedAt.
func stripeEvent(ep Endpoint, id, typ string, object map[string]any, signedAt time.Time) delivery {
	body, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "api_version": "2024-06-20",
		"created": signedAt.Unix(), "livemode": false, "data": map[string]any{"object": object}})
	return signed(ep, body, signedAt)
}

func signed(ep Endpoint, body []byte, at time.Time) delivery {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(ep.Secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(mac.Sum(nil)))
	return delivery{path: ep.Path, body: body, header: h}
}

func charge(ep Endpoint, id, objectID string) delivery {
	return stripeEvent(ep, id, TypeChargeSucceeded, map[string]any{"id": objectID, "object": "charge", "amount": 1250, "currency": "usd"}, time.Now())
}

func subscription(ep Endpoint, id, typ, objectID string, version int64) delivery {
	return stripeEvent(ep, id, typ, map[string]any{"id": objectID, "object": "subscription", "status": "active", "version": version}, time.Now())
}

type reply struct {
	code   int
	status string
	reason string
	err    error
}

func (e *env) send(d delivery) reply {
	req, err := http.NewRequest(http.MethodPost, e.url+d.path, bytes.NewReader(d.body))
	if err != nil {
		return reply{err: err}
	}
	req.Header = d.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	var body response
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &body)
	return reply{code: resp.StatusCode, status: body.Status, reason: body.Reason}
}

// sendAsync sends n copies of d at once; the channel gets each reply.
func (e *env) sendAsync(d delivery, n int) <-chan reply {
	out := make(chan reply, n)
	for range n {
		go func() { out <- e.send(d) }()
	}
	return out
}

func (e *env) expect(r reply, code int, status string) {
	e.t.Helper()
	if r.err != nil || r.code != code || r.status != status {
		e.t.Fatalf("got %d %s (%s, err %v), want %d %s", r.code, r.status, r.reason, r.err, code, status)
	}
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (e *env) keyRows(ep Endpoint, id string) int {
	return e.count("SELECT COUNT(*) FROM webhook_events WHERE source = ? AND account_id = ? AND event_id = ?", ep.KeySource(), ep.Account, id)
}

func (e *env) ledger(ep Endpoint, id string) int {
	return e.count("SELECT COUNT(*) FROM ledger_entries WHERE source = ? AND account_id = ? AND event_id = ?", ep.KeySource(), ep.Account, id)
}

func (e *env) subscription(ep Endpoint, objectID string) (version int64, status string, found bool) {
	e.t.Helper()
	err := e.db.QueryRow("SELECT version, status FROM subscriptions WHERE source = ? AND account_id = ? AND object_id = ?",
		ep.KeySource(), ep.Account, objectID).Scan(&version, &status)
	if err == sql.ErrNoRows {
		return 0, "", false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return version, status, true
}

// lock holds LOCK TABLES table READ on a session of its own, as hookcert's
// lock gate does: the receiver's writes to table wait, its reads go on. The
// returned function releases it (and is safe to call twice).
func (e *env) lock(table string) func() {
	e.t.Helper()
	ctx := context.Background()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "LOCK TABLES "+table+" READ"); err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			_, _ = conn.ExecContext(ctx, "UNLOCK TABLES")
			_ = conn.Close()
		})
	}
	e.t.Cleanup(release)
	return release
}

// waitingAtLock waits until n of the receiver's sessions wait for the table
// lock and returns their connection IDs.
func (e *env) waitingAtLock(n int) []int64 {
	e.t.Helper()
	return e.waitSessions(n, "Waiting for table metadata lock", "%", "at the table lock")
}

// waitSessions waits until n of the receiver's sessions are in state running a
// statement like info.
func (e *env) waitSessions(n int, state, info, what string) []int64 {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rows, err := e.db.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE = ? AND INFO LIKE ? AND ID <> CONNECTION_ID()", state, info)
		if err != nil {
			e.t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				e.t.Fatal(err)
			}
			ids = append(ids, id)
		}
		_ = rows.Close()
		if len(ids) >= n {
			return ids
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("only %d of %d sessions waiting %s after 15s", len(ids), n, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
