package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// Tests run against a real PostgreSQL server: SHOP_TEST_DATABASE_URL, by
// default the local one. Each test gets a database of its own, dropped after.
func serverURL() string {
	if u := os.Getenv("SHOP_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// testDatabase creates a fresh database and returns its URL.
func testDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL())
	if err != nil {
		t.Fatalf("no PostgreSQL for tests (set SHOP_TEST_DATABASE_URL): %v", err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "stripe_shop_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, serverURL())
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(serverURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Test secrets, made up for these tests.
var testSecrets = mapSecrets{
	"live/acct_a": {"whsec_shoptest_live_a_0123456789abcdef"},
	"test/acct_a": {"whsec_shoptest_test_a_0123456789abcdef"},
	"live/acct_b": {"whsec_shoptest_live_b_0123456789abcdef"},
}

type mapSecrets map[string][]string

func (m mapSecrets) Secrets(mode, account string) []string { return m[mode+"/"+account] }

// shop is a receiver under test: a migrated database and the handler on a
// loopback HTTP server.
type shop struct {
	t     *testing.T
	pool  *pgxpool.Pool
	dbURL string
	srv   *Server
	hs    *httptest.Server
	logs  *bytes.Buffer
}

func newShop(t *testing.T, cfg Config) *shop {
	t.Helper()
	dbURL := testDatabase(t)
	pool, err := openPool(context.Background(), dbURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	sh := &shop{t: t, pool: pool, dbURL: dbURL}
	sh.start(cfg)
	return sh
}

// start (re)starts the HTTP side on the same database: a new process, as far
// as anything kept in memory is concerned.
func (sh *shop) start(cfg Config) {
	if sh.hs != nil {
		sh.hs.Close()
	}
	if cfg.Secrets == nil {
		cfg.Secrets = testSecrets
	}
	if cfg.Defect == DefectSmallBodyCap {
		cfg.MaxBodyBytes = 64 << 10
	}
	sh.logs = &bytes.Buffer{}
	sh.srv = NewServer(sh.pool, cfg, slog.New(slog.NewTextHandler(&lockedWriter{w: sh.logs}, nil)))
	sh.hs = httptest.NewServer(sh.srv.Routes())
	sh.t.Cleanup(sh.hs.Close)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// deliver signs body with the endpoint's first secret and posts it.
func (sh *shop) deliver(mode, account string, body []byte) int {
	sh.t.Helper()
	secrets := testSecrets[mode+"/"+account]
	if len(secrets) == 0 {
		sh.t.Fatalf("no test secret for %s/%s", mode, account)
	}
	return sh.post(mode, account, body, sign(body, secrets[0], time.Now()))
}

func sign(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

func (sh *shop) post(mode, account string, body []byte, sigHeader string) int {
	sh.t.Helper()
	req, err := http.NewRequest(http.MethodPost, sh.hs.URL+"/stripe/webhook/"+mode+"/"+account, bytes.NewReader(body))
	if err != nil {
		sh.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if sigHeader != "" {
		req.Header.Set("Stripe-Signature", sigHeader)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sh.t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// count runs a count(*) query.
func (sh *shop) count(q string, args ...any) int {
	sh.t.Helper()
	var n int
	if err := sh.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		sh.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (sh *shop) exec(q string, args ...any) {
	sh.t.Helper()
	if _, err := sh.pool.Exec(context.Background(), q, args...); err != nil {
		sh.t.Fatalf("%s: %v", q, err)
	}
}

// paymentStatus is the payment's status, "" when there is no row.
func (sh *shop) paymentStatus(id string) string {
	sh.t.Helper()
	var s string
	err := sh.pool.QueryRow(context.Background(), `SELECT status FROM payments WHERE id = $1`, id).Scan(&s)
	if err == pgx.ErrNoRows {
		return ""
	}
	if err != nil {
		sh.t.Fatal(err)
	}
	return s
}

// createPayment is what checkout does.
func (sh *shop) createPayment(id, account string, amount int64) {
	sh.exec(`INSERT INTO payments (id, account, amount, currency, status) VALUES ($1, $2, $3, 'eur', 'processing')`, id, account, amount)
}

func (sh *shop) events(mode, account, id string) int {
	return sh.count(`SELECT count(*) FROM stripe_events WHERE mode = $1 AND account = $2 AND event_id = $3`, mode, account, id)
}

func (sh *shop) ledger(kind, col, id string) int {
	return sh.count(`SELECT count(*) FROM ledger WHERE kind = $1 AND `+col+` = $2`, kind, id)
}

// Event bodies in Stripe's own shape (docs.stripe.com/api/events/object).

func uniq(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func event(id, typ string, created int64, object string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":%q,"created":%d,"data":{"object":%s},`+
		`"livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":%q}`,
		id, stripe.APIVersion, created, object, typ)
}

func chargeObj(id string, amount int64, paymentIntent string) string {
	pi := "null"
	if paymentIntent != "" {
		pi = fmt.Sprintf("%q", paymentIntent)
	}
	return fmt.Sprintf(`{"id":%q,"object":"charge","amount":%d,"amount_refunded":0,"currency":"eur","paid":true,"captured":true,"refunded":false,"payment_intent":%s,"status":"succeeded","metadata":{}}`,
		id, amount, pi)
}

func refundedChargeObj(id string, amount int64, paymentIntent string) string {
	return fmt.Sprintf(`{"id":%q,"object":"charge","amount":%d,"amount_refunded":%d,"currency":"eur","paid":true,"captured":true,"refunded":true,"payment_intent":%q,"status":"succeeded","metadata":{}}`,
		id, amount, amount, paymentIntent)
}

func paymentIntentObj(id, status string, amount int64) string {
	return fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":%d,"currency":"eur","status":%q,"latest_charge":%q,"metadata":{}}`,
		id, amount, status, "ch_"+strings.TrimPrefix(id, "pi_"))
}

func customerObj(id, email string) string {
	return fmt.Sprintf(`{"id":%q,"object":"customer","email":%q,"metadata":{}}`, id, email)
}

func now() int64 { return time.Now().Unix() }
