package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/reference/store"
)

func TestRetentionDefaultsCoverHorizons(t *testing.T) {
	for _, p := range []string{"stripe", "github", "shopify", "standard-webhooks", "svix"} {
		h, ok := ProfileHorizon(p)
		if !ok || h.Source == "" {
			t.Fatalf("%s: no documented horizon", p)
		}
		r := Endpoint{Profile: p}.Retention()
		if r.KeyTTL < h.Total() || r.PayloadTTL > r.KeyTTL || r.PayloadTTL <= 0 {
			t.Errorf("%s: default key TTL %s payload TTL %s, horizon %s", p, r.KeyTTL, r.PayloadTTL, h.Total())
		}
	}
	// providers.yaml: Stripe CLI resend up to 30 days; the key must outlive it.
	if got := DefaultKeyTTL("stripe"); got != 31*24*time.Hour {
		t.Errorf("stripe default key TTL %s, want 744h (30 days + 1 day margin)", got)
	}
}

func TestRetentionConfigValidation(t *testing.T) {
	base := "endpoints:\n  - {profile: stripe, account: acct_A, path: /w/s, secret: whsec_x"
	_, err := ParseConfig([]byte(base + ", key_ttl: 1h}\n"))
	if err == nil {
		t.Fatal("key_ttl 1h below Stripe's 30-day resend window was accepted")
	}
	for _, want := range []string{"endpoints[0].key_ttl", "/w/s", "1h0m0s", "720h0m0s", "docs.stripe.com", "allow_short_key_ttl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "whsec_x") {
		t.Errorf("error quotes the secret: %v", err)
	}
	cfg, err := ParseConfig([]byte(base + ", key_ttl: 1h, payload_ttl: 30m, allow_short_key_ttl: true}\n"))
	if err != nil {
		t.Fatalf("allow_short_key_ttl: %v", err)
	}
	if r := cfg.Endpoints[0].Retention(); r.KeyTTL != time.Hour || r.PayloadTTL != 30*time.Minute {
		t.Errorf("got %+v", r)
	}
	cfg, err = ParseConfig([]byte(base + ", key_ttl: 40d, payload_ttl: 2d}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Endpoints[0].Retention(); r.KeyTTL != 40*24*time.Hour || r.PayloadTTL != 48*time.Hour {
		t.Errorf("days: got %+v", r)
	}
	_, err = ParseConfig([]byte(base + ", key_ttl: 40d, payload_ttl: 41d}\n"))
	if err == nil || !strings.Contains(err.Error(), "endpoints[0].payload_ttl") {
		t.Errorf("payload TTL above key TTL: %v", err)
	}
	_, err = ParseConfig([]byte(base + ", key_ttl: soon}\n"))
	if err == nil || !strings.Contains(err.Error(), "key_ttl") && !strings.Contains(err.Error(), "soon") {
		t.Errorf("bad duration: %v", err)
	}
	// The refusal happens at start too, for endpoints given in code.
	_, err = New(context.Background(), testPool(t, testDatabase(t)), Options{Endpoints: []Endpoint{
		{Profile: "github", Account: "a", Path: "/gh", Secret: "s", KeyTTL: Duration(time.Hour)}}})
	if err == nil || !strings.Contains(err.Error(), "github redelivery horizon 72h0m0s") {
		t.Errorf("New with a short key TTL: %v", err)
	}
}

// retained sends one cash event and returns its endpoint and ID.
func (e *env) retained(profile string) (Endpoint, string, delivery) {
	e.t.Helper()
	ep := e.ep(profile, "acct_A")
	id := newID("evt_ret")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 7}, time.Now())
	e.expect(e.send(d), 200, StatusProcessed, "")
	return ep, id, d
}

// payload reports whether the key row exists and still holds its payload.
func (e *env) payload(ep Endpoint, id string) (found, present bool) {
	e.t.Helper()
	n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3`, ep.KeySource(), ep.Account, id)
	if n == 0 {
		return false, false
	}
	return true, e.count(`SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3 AND payload IS NOT NULL`, ep.KeySource(), ep.Account, id) == 1
}

func (e *env) purge(asOf time.Time) store.PurgeResult {
	e.t.Helper()
	res, err := e.srv.Purge(context.Background(), asOf)
	if err != nil {
		e.t.Fatalf("purge as of %s: %v", asOf, err)
	}
	return res
}

func TestPurgeTwoTiers(t *testing.T) {
	e := newEnv(t, Options{})
	ep, id, d := e.retained("stripe")
	r := ep.Retention()
	now := time.Now()

	e.purge(now.Add(r.PayloadTTL - time.Hour))
	if found, present := e.payload(ep, id); !found || !present {
		t.Fatalf("inside the payload TTL: found=%v payload=%v, want both", found, present)
	}
	e.purge(now.Add(r.PayloadTTL + time.Hour))
	if found, present := e.payload(ep, id); !found || present {
		t.Fatalf("past the payload TTL: found=%v payload=%v, want the key without its payload", found, present)
	}
	if e.count(`SELECT count(*) FROM processed_webhook_events WHERE event_id=$1 AND payload_purged_at IS NOT NULL`, id) != 1 {
		t.Error("payload_purged_at not set")
	}
	e.purge(now.Add(r.KeyTTL - time.Hour))
	if found, _ := e.payload(ep, id); !found {
		t.Fatal("key removed inside the key TTL")
	}
	// A replay inside the key TTL is still a duplicate.
	d.sign(time.Now())
	e.expect(e.send(d), 200, StatusDuplicate, "")
	if l := e.ledger(ep, id); l != 1 {
		t.Fatalf("replay inside the key TTL: %d ledger entries, want 1", l)
	}
	res := e.purge(time.Now().Add(r.KeyTTL + time.Hour))
	if found, _ := e.payload(ep, id); found || res.KeysDeleted < 1 {
		t.Fatalf("past the key TTL: key still there (deleted %d)", res.KeysDeleted)
	}
}

func TestPurgePerEndpointTTLs(t *testing.T) {
	e := newEnv(t, Options{})
	stripe, sid, _ := e.retained("stripe")
	shop, hid, _ := e.retained("shopify")
	// Past Shopify's key TTL (28h), far inside Stripe's (744h).
	asOf := time.Now().Add(shop.Retention().KeyTTL + time.Hour)
	e.purge(asOf)
	if found, _ := e.payload(shop, hid); found {
		t.Error("shopify key survived its key TTL")
	}
	if found, _ := e.payload(stripe, sid); !found {
		t.Error("stripe key removed by shopify's TTL")
	}
}

func TestPurgeSparesUnfinishedAndYoungRows(t *testing.T) {
	e := newEnv(t, Options{})
	ep, young, _ := e.retained("stripe")
	ctx := context.Background()
	// An inbox receiver's pending row: received long ago, not processed yet.
	if _, err := e.pool.Exec(ctx, `INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload, received_at, processed_at)
		VALUES ($1, $2, 'evt_pending', 't', 'x', now() - interval '400 days', NULL)`, ep.KeySource(), ep.Account); err != nil {
		t.Fatal(err)
	}
	e.purge(time.Now())
	if found, present := e.payload(ep, "evt_pending"); !found || !present {
		t.Errorf("pending row: found=%v payload=%v, want it untouched", found, present)
	}
	if found, present := e.payload(ep, young); !found || !present {
		t.Errorf("row younger than both TTLs: found=%v payload=%v", found, present)
	}
}

func TestPurgeBatches(t *testing.T) {
	e := newEnv(t, Options{Purge: store.PurgeOptions{BatchSize: 100}})
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload, received_at)
		SELECT 'stripe', 'acct_A', 'evt_old_' || g, 't', 'x', now() - interval '40 days' FROM generate_series(1, 250) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload, received_at)
		SELECT 'stripe', 'acct_A', 'evt_mid_' || g, 't', 'x', now() - interval '3 days' FROM generate_series(1, 120) g`); err != nil {
		t.Fatal(err)
	}
	res := e.purge(time.Now())
	if res.KeysDeleted != 250 || res.PayloadsPurged != 120 || res.Batches < 5 {
		t.Fatalf("got %+v, want 250 keys and 120 payloads in at least 5 batches of 100", res)
	}
	if n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE event_id LIKE 'evt_mid_%' AND payload IS NULL`); n != 120 {
		t.Fatalf("%d payload-purged keys left, want 120", n)
	}
}

// Deliveries keep being acknowledged and stored while a purge deletes rows.
func TestPurgeConcurrentWithDeliveries(t *testing.T) {
	e := newEnv(t, Options{Purge: store.PurgeOptions{BatchSize: 200}})
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload, received_at)
		SELECT 'stripe', 'acct_A', 'evt_old_' || g, 't', 'x', now() - interval '40 days' FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	ep := e.ep("stripe", "acct_A")
	var wg sync.WaitGroup
	ids := make([]string, 40)
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := e.srv.Purge(ctx, time.Now()); err != nil {
			errs <- err
		}
	}()
	for i := range ids {
		ids[i] = newID("evt_live")
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.try(e.http.Client(), ctx, ep.Path, build(ep, ids[i], store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now()))
			if err == nil && r.Status != StatusProcessed {
				err = fmt.Errorf("%s answered %d %s", ids[i], r.Code, r.Status)
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		if e.keyRows(ep, id) != 1 || e.ledger(ep, id) != 1 {
			t.Fatalf("%s lost during the purge", id)
		}
	}
	if n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE event_id LIKE 'evt_old_%'`); n != 0 {
		t.Fatalf("%d expired rows left", n)
	}
}

func TestAdminPurge(t *testing.T) {
	e := newEnv(t, Options{EnableAdmin: true})
	ep, id, _ := e.retained("stripe")
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(e.http.URL+AdminPurgePath, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := post(`{"as_of": "yesterday"}`); code != 400 || !strings.Contains(m["error"].(string), "as_of") {
		t.Errorf("bad as_of: %d %v", code, m)
	}
	asOf := time.Now().Add(ep.Retention().KeyTTL + time.Hour).UTC().Format(time.RFC3339Nano)
	code, m := post(`{"as_of": "` + asOf + `"}`)
	if code != 200 || m["keys_deleted"].(float64) < 1 {
		t.Fatalf("admin purge: %d %v", code, m)
	}
	if found, _ := e.payload(ep, id); found {
		t.Fatal("admin purge past the key TTL left the key")
	}
	// Without admin or failpoints the route does not exist.
	plain := newEnv(t, Options{})
	resp, err := http.Post(plain.http.URL+AdminPurgePath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("admin purge without EnableAdmin: %d, want 404", resp.StatusCode)
	}
}

func TestPeriodicPurger(t *testing.T) {
	dbURL := testDatabase(t)
	pool := testPool(t, dbURL)
	future := time.Now().Add(400 * 24 * time.Hour)
	srv, err := New(context.Background(), pool, Options{PurgeInterval: 20 * time.Millisecond, Now: func() time.Time { return future }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload)
		VALUES ('stripe', 'acct_A', 'evt_p', 't', 'x')`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, "127.0.0.1:0") }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_webhook_events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the periodic purger did not remove a row 400 days past its TTL")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The retention defects, each against the clean behaviour above.

func TestDefectShortRetention(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectShortRetention}})
	ep, id, d := e.retained("stripe")
	e.purge(time.Now().Add(2 * time.Hour)) // far inside the configured 744h
	if found, _ := e.payload(ep, id); found {
		t.Fatal("short-retention kept the key past one hour")
	}
	d.sign(time.Now())
	e.expect(e.send(d), 200, StatusProcessed, "")
	if l := e.ledger(ep, id); l != 2 {
		t.Fatalf("short-retention: replay gave %d ledger entries, want 2 (applied twice)", l)
	}
}

func TestDefectKeepPayloads(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectKeepPayloads}})
	ep, id, _ := e.retained("stripe")
	e.purge(time.Now().Add(ep.Retention().PayloadTTL + time.Hour))
	if found, present := e.payload(ep, id); !found || !present {
		t.Fatalf("keep-payloads: found=%v payload=%v, want the payload kept past its TTL", found, present)
	}
}

func TestDefectPurgeAll(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectPurgeAll}})
	ep, id, _ := e.retained("stripe")
	e.purge(time.Now().Add(ep.Retention().PayloadTTL + time.Hour))
	if found, _ := e.payload(ep, id); found {
		t.Fatal("purge-all kept a key past the payload TTL")
	}
}

func TestDefectKeepKeysForever(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectKeepKeysForever}})
	ep, id, _ := e.retained("stripe")
	e.purge(time.Now().Add(10 * ep.Retention().KeyTTL))
	if found, present := e.payload(ep, id); !found || present {
		t.Fatalf("keep-keys-forever: found=%v payload=%v, want the key kept without its payload", found, present)
	}
}

// payloadQuery runs PayloadPresentQuery, the harness's view of whether any payload
// of the event is stored: found is whether it returned a row.
func (e *env) payloadQuery(ep Endpoint, id string) (found, present bool) {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), PayloadPresentQuery, ep.KeySource(), ep.Account, id)
	if err != nil {
		e.t.Fatalf("payload_present: %v", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		e.t.Fatalf("payload_present: %v", err)
	}
	switch len(got) {
	case 0:
		return false, false
	case 1:
		return true, got[0]
	}
	e.t.Fatalf("payload_present: %d rows, want at most 1", len(got))
	return false, false
}

func TestDefectOrphanPayloads(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectOrphanPayloads}} {
		e := newEnv(t, Options{Defects: defects})
		ep, id, _ := e.retained("stripe")
		r := ep.Retention()
		archived := func() int {
			return e.count(`SELECT count(*) FROM webhook_payload_archive WHERE source=$1 AND account_id=$2 AND event_id=$3`, ep.KeySource(), ep.Account, id)
		}
		wantArchived := 0
		if defects != nil {
			wantArchived = 1
		}
		if found, present := e.payloadQuery(ep, id); !found || !present {
			t.Fatalf("defects %v, after delivery: payload_present found=%v present=%v, want a stored payload", defects, found, present)
		}

		e.purge(time.Now().Add(r.PayloadTTL + time.Hour))
		if found, present := e.payload(ep, id); !found || present {
			t.Fatalf("defects %v, past the payload TTL: key found=%v payload=%v, want the key without its payload", defects, found, present)
		}
		_, present := e.payloadQuery(ep, id)
		if n := archived(); n != wantArchived || present != (defects != nil) {
			t.Fatalf("defects %v, past the payload TTL: %d archived payloads, payload_present %v", defects, n, present)
		}

		e.purge(time.Now().Add(r.KeyTTL + time.Hour))
		if found, _ := e.payload(ep, id); found {
			t.Fatalf("defects %v: key kept past its TTL", defects)
		}
		found, present := e.payloadQuery(ep, id)
		if n := archived(); n != wantArchived {
			t.Fatalf("defects %v, past the key TTL: %d archived payloads, want %d", defects, n, wantArchived)
		}
		if defects == nil && found {
			t.Fatalf("clean, past the key TTL: payload_present returned a row (present=%v), want none", present)
		}
		if defects != nil && (!found || !present) {
			t.Fatalf("orphan-payloads, past the key TTL: payload_present found=%v present=%v, want the orphaned payload seen", found, present)
		}
	}
}

func TestDefectNoTTLFloor(t *testing.T) {
	doc := []byte("endpoints:\n  - {profile: stripe, account: acct_A, path: /w/s, secret: whsec_x, key_ttl: 1h, payload_ttl: 30m}\n")
	if _, err := ParseConfig(doc); err == nil || !strings.Contains(err.Error(), "endpoints[0].key_ttl") {
		t.Fatalf("clean: a 1h key TTL for stripe: %v, want refused", err)
	}
	cfg, err := ParseConfigWithDefects(doc, []string{DefectNoTTLFloor})
	if err != nil {
		t.Fatalf("no-ttl-floor: config refused: %v", err)
	}
	// Other rules still hold under the defect.
	if _, err := ParseConfigWithDefects([]byte("endpoints:\n  - {profile: stripe, account: acct_A, path: /w/s, secret: whsec_x, key_ttl: 1h, payload_ttl: 2h}\n"),
		[]string{DefectNoTTLFloor}); err == nil || !strings.Contains(err.Error(), "endpoints[0].payload_ttl") {
		t.Fatalf("no-ttl-floor: payload TTL above the key TTL: %v, want refused", err)
	}

	pool := testPool(t, testDatabase(t))
	if _, err := New(context.Background(), pool, Options{Endpoints: cfg.Endpoints}); err == nil || !strings.Contains(err.Error(), "stripe redelivery horizon") {
		t.Fatalf("clean start with a 1h key TTL: %v, want refused", err)
	}
	e := newEnvOn(t, pool, Options{Endpoints: cfg.Endpoints, Defects: []string{DefectNoTTLFloor}})
	ep, id, d := e.retained("stripe")
	// Two hours on, well inside Stripe's three days of retries, the key is gone
	// and the provider's retry is applied again.
	e.purge(time.Now().Add(2 * time.Hour))
	if found, _ := e.payload(ep, id); found {
		t.Fatal("no-ttl-floor: the 1h key outlived a purge two hours on")
	}
	d.sign(time.Now())
	e.expect(e.send(d), 200, StatusProcessed, "")
	if l := e.ledger(ep, id); l != 2 {
		t.Fatalf("no-ttl-floor: a retry after two hours gave %d ledger entries, want 2 (applied twice)", l)
	}
}
