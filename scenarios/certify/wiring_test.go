package certify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/scenarios/harness"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// shopTarget is a Stripe receiver with its own tables, declared vocabulary and
// fixtures, already running at BASE (no lifecycle).
const shopTarget = `target:
  name: stripe-shop
  base_url: BASE
  endpoints:
    - {profile: stripe, account: acct_a, path: /stripe/acct_a, secret: whsec_shop_a}
    - {profile: stripe, account: acct_b, path: /stripe/acct_b, secret: whsec_shop_b, ack_timeout: 7s}
    - {profile: github, account: org_1, path: /github, secret: gh_secret_1}
  observe:
    postgres:
      url: DBURL
      queries:
        event_rows: SELECT count(*) FROM stripe_events WHERE id = $3
  acceptance:
    mode: async
    quiescent: SELECT count(*) = 0 FROM queue WHERE done_at IS NULL
  events:
    effect: {type: charge.succeeded, id_prefix: ch, effects: SELECT count(*) FROM charges WHERE id = $4}
    lifecycle:
      object: payment_intent
      id_prefix: pi
      initial: processing
      create: {fixture: payment}
      transitions: [{type: payment_intent.succeeded, from: [processing], to: succeeded, effect: true}]
      state: SELECT status FROM payments WHERE id = $4
  fixtures:
    payment: {sql: "INSERT INTO payments (id, amount, status) VALUES ($4, $5, 'processing')"}
`

const shopSchema = `
CREATE TABLE stripe_events (id text PRIMARY KEY);
CREATE TABLE charges (id text);
CREATE TABLE payments (id text PRIMARY KEY, amount bigint, status text);
CREATE TABLE queue (id serial, done_at timestamptz);
`

func shopConfig(t *testing.T) (string, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	dbURL := pgtest.Database(t)
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), shopSchema); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("BASE", srv.URL, "DBURL", dbURL).Replace(shopTarget), dbURL
}

// TestDeclaredWiring: the declared vocabulary, acceptance, quiescent query,
// fixtures and acknowledgement timeouts reach the suite's Env.
func TestDeclaredWiring(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, dbURL := shopConfig(t)
	hs, err := Open(ctx, Options{ConfigPath: "shop.yaml", ConfigData: []byte(cfg), RunID: "wiring"})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	env := hs.Env
	if env.Vocab == nil || !env.Vocab.Declared || env.Vocab.Effect.Type != "charge.succeeded" || env.Vocab.Lifecycle.Fixture != "payment" {
		t.Errorf("Vocab = %+v", env.Vocab)
	}
	if env.Acceptance != (vocab.Acceptance{Async: true, Settle: 5 * time.Second}) {
		t.Errorf("Acceptance = %+v", env.Acceptance)
	}
	if env.Quiescent == nil {
		t.Fatal("no Quiescent")
	}
	if q, err := env.Quiescent(ctx); err != nil || !q {
		t.Errorf("Quiescent = %v, %v", q, err)
	}
	if env.Fixtures == nil {
		t.Fatal("no Fixtures")
	}
	if err := env.Fixtures.Create(ctx, "payment", vocab.ObjectData{ObjectID: "pi_w1", Amount: 100}); err != nil {
		t.Fatal(err)
	}
	if s, found, err := env.Observer.Payment(ctx, "stripe", "acct_a", "pi_w1"); err != nil || !found || s != "processing" {
		t.Errorf("state after the fixture = %q %v %v", s, found, err)
	}
	// Effects reads by the event's object ($4).
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "INSERT INTO charges VALUES ('ch_w1')"); err != nil {
		t.Fatal(err)
	}
	if n, err := env.Observer.Effects(ctx, profiles.Key{Source: "stripe", Account: "acct_a", EventID: "evt_x"}, "ch_w1"); err != nil || n != 1 {
		t.Errorf("Effects(ch_w1) = %d, %v; want 1", n, err)
	}
	want := []struct {
		d     time.Duration
		model bool
	}{{harness.ModelAckTimeout, true}, {7 * time.Second, false}, {10 * time.Second, false}}
	for i, w := range want {
		if ep := env.Endpoints[i]; ep.AckTimeout != w.d || ep.AckTimeoutModel != w.model {
			t.Errorf("endpoint %d (%s): AckTimeout %s model %v, want %s %v", i, ep.Account, ep.AckTimeout, ep.AckTimeoutModel, w.d, w.model)
		}
	}
}

// TestBuiltinWiring: a target without events keeps the built-in vocabulary
// and the synchronous default.
func TestBuiltinWiring(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, _ := shopConfig(t)
	cfg = cfg[:strings.Index(cfg, "  acceptance:")]
	cfg = strings.Replace(cfg, "event_rows: SELECT count(*) FROM stripe_events WHERE id = $3",
		"event_rows: SELECT count(*) FROM stripe_events WHERE id = $3\n        effects: SELECT count(*) FROM charges WHERE id = $3", 1)
	hs, err := Open(ctx, Options{ConfigData: []byte(cfg), RunID: "wiring"})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if env := hs.Env; env.Vocab != nil || env.Quiescent != nil || env.Fixtures != nil ||
		env.Acceptance != (vocab.Acceptance{Settle: time.Second}) {
		t.Errorf("Vocab %v, Quiescent set %v, Fixtures %v, Acceptance %+v", env.Vocab, env.Quiescent != nil, env.Fixtures, env.Acceptance)
	}
}

// TestBadFixtureIsConfigError: fixture SQL that does not prepare stops the run
// before anything starts, as a configuration error naming the field.
func TestBadFixtureIsConfigError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, _ := shopConfig(t)
	cfg = strings.Replace(cfg, "INSERT INTO payments", "INSERT INTO paymnts", 1)
	_, err := Open(ctx, Options{ConfigPath: "shop.yaml", ConfigData: []byte(cfg), RunID: "wiring"})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "target.fixtures.payment.sql: does not prepare") {
		t.Errorf("err = %v", err)
	}
	cfg, _ = shopConfig(t)
	cfg = strings.Replace(cfg, "FROM queue", "FROM queues", 1)
	_, err = Open(ctx, Options{ConfigPath: "shop.yaml", ConfigData: []byte(cfg), RunID: "wiring"})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "target.acceptance.quiescent: does not prepare") {
		t.Errorf("err = %v", err)
	}
}
