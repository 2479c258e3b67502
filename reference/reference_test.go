package reference

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

func TestConcurrentDuplicatesConverge(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")
	const rounds, copies = 50, 16
	for round := range rounds {
		id := newID("evt_dup")
		d := build(ep, id, store.TypeCashBalance, obj{ID: "ccsbtxn_" + id, Amount: 100, Currency: "usd"}, time.Now())
		replies := e.fire(d, copies)
		processed := 0
		for _, r := range replies {
			if r.Code/100 != 2 {
				t.Fatalf("round %d: a copy got %d %s/%s; every copy must be acknowledged", round, r.Code, r.Status, r.Reason)
			}
			if r.Status == StatusProcessed {
				processed++
			} else if r.Status != StatusDuplicate {
				t.Fatalf("round %d: unexpected status %q", round, r.Status)
			}
		}
		if processed != 1 {
			t.Fatalf("round %d: %d copies processed, want exactly 1", round, processed)
		}
		if k, l := e.keyRows(ep, id), e.ledger(ep, id); k != 1 || l != 1 {
			t.Fatalf("round %d: %d key rows and %d ledger entries, want 1 and 1", round, k, l)
		}
	}
	if got := e.count(`SELECT balance FROM account_balances WHERE source='stripe' AND account_id='acct_A'`); got != rounds*100 {
		t.Fatalf("balance %d, want %d", got, rounds*100)
	}
}

// Under forced concurrency (every copy waits on the same lock before any insert
// proceeds) the clean reference still keeps one row: the unique index arbitrates.
func TestLockGatedDuplicatesKeepOneRow(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_gate")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 7}, time.Now())
	release := e.gate("processed_webhook_events")
	wait := e.fireAsync(d, 16)
	e.waitLockWaiters("processed_webhook_events", 16)
	release()
	for _, r := range wait() {
		if r.Code != http.StatusOK {
			t.Fatalf("copy answered %d %s/%s", r.Code, r.Status, r.Reason)
		}
	}
	if k, l := e.keyRows(ep, id), e.ledger(ep, id); k != 1 || l != 1 {
		t.Fatalf("%d key rows, %d ledger entries; want 1 and 1", k, l)
	}
}

func TestRejectionsLeaveNoRow(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 4096})
	stripe := e.ep("stripe", "acct_A")
	gh := e.ep("github", "acct_A")
	sw := e.ep("standard-webhooks", "acct_A")
	good := func(ep Endpoint) delivery {
		return build(ep, newID("evt"), store.TypeCashBalance, obj{ID: "cb_1", Amount: 5}, time.Now())
	}
	cases := []struct {
		name   string
		path   string
		d      func() delivery
		code   int
		reason string
	}{
		{"unknown endpoint", "/webhooks/stripe/acct_Z", func() delivery { return good(stripe) }, 404, "unknown_endpoint"},
		{"body too large", "", func() delivery {
			d := build(stripe, newID("evt"), "x.y", obj{ID: strings.Repeat("a", 5000)}, time.Now())
			return d
		}, 413, "body_too_large"},
		{"bad signature", "", func() delivery {
			d := good(stripe)
			d.body = []byte(strings.Replace(string(d.body), `"amount":5`, `"amount":500`, 1)) // tampered after signing
			return d
		}, 401, "bad_signature"},
		{"missing signature", "", func() delivery {
			d := good(gh)
			d.header.Del("X-Hub-Signature-256")
			return d
		}, 401, "missing_signature"},
		{"stale timestamp", "", func() delivery {
			return build(sw, newID("msg"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now().Add(-10*time.Minute))
		}, 401, "stale_timestamp"},
		{"malformed json", "", func() delivery {
			d := good(gh)
			d.body = []byte(`{"object": {"id": "cb_1",`)
			d.sign(time.Now())
			return d
		}, 400, "malformed_json"},
		{"missing event id (body)", "", func() delivery {
			d := good(stripe)
			d.body = []byte(`{"object":"event","type":"customer_cash_balance_transaction.created","data":{"object":{"id":"cb","amount":1}}}`)
			d.sign(time.Now())
			return d
		}, 400, "missing_event_id"},
		{"missing event id (header)", "", func() delivery {
			d := good(gh)
			d.header.Del("X-GitHub-Delivery")
			return d
		}, 400, "missing_event_id"},
		{"missing object id", "", func() delivery {
			return build(stripe, newID("evt"), store.TypeCashBalance, obj{Amount: 3}, time.Now())
		}, 400, "missing_object_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.d()
			path := c.path
			if path == "" {
				path = d.ep.Path
			}
			e.expect(e.sendTo(e.http.Client(), path, d), c.code, StatusRejected, c.reason)
			if n := e.totalRows(); n != 0 {
				t.Fatalf("rejection left %d rows", n)
			}
		})
	}
	resp, err := http.Get(e.http.URL + stripe.Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET on an endpoint: %d, want 405", resp.StatusCode)
	}
}

func TestRefundPreconditionThenRedelivery(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")
	refund := build(ep, newID("evt_refund"), store.TypeChargeRefunded, obj{ID: "pi_1", Amount: 40}, time.Now())
	e.expect(e.send(refund), http.StatusServiceUnavailable, StatusRetry, "failed_precondition")
	if n := e.totalRows(); n != 0 {
		t.Fatalf("failed precondition left %d rows", n)
	}
	created := build(ep, newID("evt_created"), store.TypePaymentCreated, obj{ID: "pi_1", Amount: 40}, time.Now())
	e.expect(e.send(created), 200, StatusProcessed, "")
	refund.sign(time.Now())
	e.expect(e.send(refund), http.StatusServiceUnavailable, StatusRetry, "failed_precondition") // still pending
	succeeded := build(ep, newID("evt_succ"), store.TypePaymentSucceeded, obj{ID: "pi_1", Amount: 40}, time.Now())
	e.expect(e.send(succeeded), 200, StatusProcessed, "")
	refund.sign(time.Now())
	e.expect(e.send(refund), 200, StatusProcessed, "")
	e.expect(e.send(refund), 200, StatusDuplicate, "")
	if n := e.count(`SELECT count(*) FROM ledger_entries WHERE object_id='pi_1' AND kind='refund' AND amount=-40`); n != 1 {
		t.Fatalf("%d refund entries, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM payments WHERE payment_id='pi_1' AND status='refunded'`); n != 1 {
		t.Fatal("payment not refunded")
	}
	// A late succeeded event after the refund is a refused transition.
	late := build(ep, newID("evt_succ2"), store.TypePaymentSucceeded, obj{ID: "pi_1", Amount: 40}, time.Now())
	e.expect(e.send(late), 200, StatusIgnored, "refused_transition")
	if n := e.count(`SELECT count(*) FROM payments WHERE payment_id='pi_1' AND status='refunded'`); n != 1 {
		t.Fatal("late succeeded event regressed the payment")
	}
	if n := e.count(`SELECT balance FROM account_balances WHERE source='stripe' AND account_id='acct_A'`); n != 0 {
		t.Fatalf("balance %d after payment and refund, want 0", n)
	}
}

func TestPaymentDomainConstraint(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("github", "acct_A")
	a := build(ep, newID("g1"), store.TypePaymentSucceeded, obj{ID: "pay_9", Amount: 10}, time.Now())
	b := build(ep, newID("g2"), store.TypePaymentSucceeded, obj{ID: "pay_9", Amount: 10}, time.Now())
	e.expect(e.send(a), 200, StatusProcessed, "")
	e.expect(e.send(b), 200, StatusIgnored, "refused_transition")
	if n := e.count(`SELECT count(*) FROM ledger_entries WHERE object_id='pay_9' AND kind='payment'`); n != 1 {
		t.Fatalf("%d payment entries for two events of one payment, want 1", n)
	}
	if e.keyRows(ep, b.header.Get("X-GitHub-Delivery")) != 1 {
		t.Fatal("refused transition must still record its key")
	}
}

func TestSubscriptionVersionOrdering(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("standard-webhooks", "acct_A")
	send := func(v int64, status, want, reason string) {
		t.Helper()
		d := build(ep, newID("msg"), store.TypeSubscriptionUpdated, obj{ID: "sub_1", Version: v, Status: status}, time.Now())
		e.expect(e.send(d), 200, want, reason)
	}
	send(2, "active", StatusProcessed, "")
	send(1, "trialing", StatusIgnored, "stale_version")
	send(2, "past_due", StatusIgnored, "stale_version")
	send(3, "canceled", StatusProcessed, "")
	var v int64
	var status string
	if err := e.pool.QueryRow(context.Background(),
		`SELECT version, status FROM subscriptions WHERE account_id='acct_A' AND object_id='sub_1'`).Scan(&v, &status); err != nil {
		t.Fatal(err)
	}
	if v != 3 || status != "canceled" {
		t.Fatalf("subscription at v%d %s, want v3 canceled", v, status)
	}
}

func TestUnknownTypeAcknowledgedAndRecorded(t *testing.T) {
	e := newEnv(t, Options{})
	for _, p := range []string{"stripe", "standard-webhooks", "svix", "github", "shopify"} {
		ep := e.ep(p, "acct_A")
		id := newID("evt_unknown")
		d := build(ep, id, "invoice.finalized", obj{ID: "in_1"}, time.Now())
		e.expect(e.send(d), 200, StatusIgnored, "unhandled_type")
		if e.keyRows(ep, id) != 1 || e.ledger(ep, id) != 0 {
			t.Fatalf("%s: unknown type must record its key and nothing else", p)
		}
		e.expect(e.send(d), 200, StatusDuplicate, "")
	}
}

func TestAccountsAndSourcesAreSeparateKeys(t *testing.T) {
	e := newEnv(t, Options{})
	a, b := e.ep("stripe", "acct_A"), e.ep("stripe", "acct_B")
	id := newID("evt_shared")
	for _, ep := range []Endpoint{a, b} {
		e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())), 200, StatusProcessed, "")
		if e.ledger(ep, id) != 1 {
			t.Fatalf("%s: same event ID under another account must be a different event", ep.Account)
		}
	}
	// Account comes from the endpoint: a body naming another account changes nothing.
	sw := e.ep("standard-webhooks", "acct_A")
	d := build(sw, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	e.expect(e.send(d), 200, StatusProcessed, "")
}

func TestFailpointPlacement(t *testing.T) {
	injected := errors.New("injected")
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")

	rec := &recorder{fail: map[fpPoint]error{fpAfterInsertBeforeCommit: injected}}
	e.fps.set(rec)
	id := newID("evt_fp")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 3}, time.Now())
	e.expect(e.send(d), 500, StatusRetry, "injected_fault")
	if e.keyRows(ep, id) != 0 || e.ledger(ep, id) != 0 {
		t.Fatal("a failure before commit must leave neither key nor change")
	}
	e.fps.set(&recorder{})
	e.expect(e.send(d), 200, StatusProcessed, "")

	rec = &recorder{fail: map[fpPoint]error{fpAfterCommitBeforeResponse: injected}}
	e.fps.set(rec)
	id2 := newID("evt_fp2")
	d2 := build(ep, id2, store.TypeCashBalance, obj{ID: "cb", Amount: 3}, time.Now())
	e.expect(e.send(d2), 500, StatusRetry, "injected_fault")
	if e.keyRows(ep, id2) != 1 || e.ledger(ep, id2) != 1 {
		t.Fatal("a failure after commit must keep key and change")
	}
	rec = &recorder{}
	e.fps.set(rec)
	e.expect(e.send(d2), 200, StatusDuplicate, "")
	if e.ledger(ep, id2) != 1 {
		t.Fatal("redelivery after commit uncertainty applied twice")
	}
	// A duplicate inserted nothing and committed nothing: only the after-response
	// point applies to it.
	want := []string{"after-response:" + id2}
	if hits := rec.waitHits(t, 1); strings.Join(hits, ",") != strings.Join(want, ",") {
		t.Fatalf("duplicate path hits %v, want %v", hits, want)
	}
}

func TestShutdownLetsInFlightDeliveryFinish(t *testing.T) {
	e := newEnv(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()
	e.http.URL = "http://" + ln.Addr().String()

	ep := e.ep("stripe", "acct_A")
	id := newID("evt_inflight")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 2}, time.Now())
	release := e.gate("processed_webhook_events")
	wait := e.fireAsync(d, 1)
	e.waitLockWaiters("processed_webhook_events", 1)
	cancel() // SIGTERM in the CLI: start graceful shutdown while the delivery waits
	select {
	case err := <-served:
		t.Fatalf("Serve returned while a delivery was in flight: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	r := wait()[0]
	e.expect(r, 200, StatusProcessed, "")
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if e.keyRows(ep, id) != 1 {
		t.Fatal("in-flight delivery not committed")
	}
	if _, err := http.Get(e.http.URL + "/healthz"); err == nil {
		t.Fatal("server still accepts connections after shutdown")
	}
}

func TestClientDisconnectDoesNotAbortCommit(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_gone")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 2}, time.Now())
	release := e.gate("processed_webhook_events")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := e.try(e.http.Client(), ctx, ep.Path, d); errc <- err }()
	e.waitLockWaiters("processed_webhook_events", 1)
	cancel() // the provider gives up and drops the connection
	if err := <-errc; err == nil {
		t.Fatal("client should have seen its own cancellation")
	}
	release()
	deadline := time.Now().Add(5 * time.Second)
	for e.ledger(ep, id) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the delivery was abandoned when the client disconnected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e.keyRows(ep, id) != 1 {
		t.Fatal("key row missing")
	}
}

func TestMetricsAndHealth(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("shopify", "acct_A")
	d := build(ep, newID("shop"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	e.send(d)
	e.send(d)
	d.header.Set("X-Shopify-Hmac-Sha256", "AAAA")
	e.send(d)
	resp, err := http.Get(e.http.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`hookcert_reference_deliveries_total{outcome="processed"} 1`,
		`hookcert_reference_deliveries_total{outcome="duplicate"} 1`,
		`hookcert_reference_deliveries_total{outcome="rejected"} 1`,
		`hookcert_reference_rejections_total{reason="bad_signature"} 1`,
		`hookcert_reference_delivery_duration_seconds_count{outcome="processed"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	resp, err = http.Get(e.http.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	e.pool.Close()
	resp, err = http.Get(e.http.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("healthz with a closed pool: %d, want 503", resp.StatusCode)
	}
}

func TestMigrateIdempotentAndConcurrent(t *testing.T) {
	pool := testPool(t, testDatabase(t))
	ctx := context.Background()
	errc := make(chan error, 2)
	applied := make(chan []string, 2)
	for range 2 {
		go func() { a, err := store.Migrate(ctx, pool); applied <- a; errc <- err }()
	}
	total := 0
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
		total += len(<-applied)
	}
	files, err := filepath.Glob("store/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	// Each migration is applied once in all, whichever of the two ran it.
	if total != len(files) {
		t.Fatalf("two concurrent migrations applied %d migrations in total, want %d", total, len(files))
	}
	again, err := store.Migrate(ctx, pool)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Migrate: applied %v, err %v", again, err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = $1`, store.EventKeyIndex).Scan(&n); err != nil || n != 1 {
		t.Fatalf("unique key index present %d times (err %v)", n, err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	pool := testPool(t, testDatabase(t))
	_, err := New(context.Background(), pool, Options{Defects: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), "check-then-insert") || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown defect: %v", err)
	}
	_, err = New(context.Background(), pool, Options{Defects: []string{DefectBusinessFirst, DefectMarkerSeparateTx}})
	if err == nil {
		t.Fatal("conflicting defects accepted")
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"endpoints: []", "endpoints: at least one endpoint required"},
		{`endpoints:
  - {profile: stripe, account: a, path: /x, secret: s}
  - {profile: stripe, account: b, path: /x, secret: s}
  - {profile: stripe, account: c, path: /y}`, "endpoints[1].path: duplicate of endpoints[0].path"},
		{`endpoints:
  - {profile: stripe, account: a, path: /x, secret: s}
  - {profile: stripe, account: b, path: /y, secret: s}
  - {profile: stripe, account: c, path: /z}`, "endpoints[2].secret: required"},
		{`endpoints: [{profile: paypal, account: a, path: /x, secret: s}]`, `endpoints[0].profile: unknown profile "paypal" (valid: github, shopify, slack, standard-webhooks, stripe, svix)`},
		{`endpoints: [{profile: stripe, account: a, path: x, secret: s}]`, "endpoints[0].path: must start with /"},
		{`endpoints: [{profile: stripe, account: a, path: /metrics, secret: s}]`, "endpoints[0].path: /metrics is reserved"},
		{`endpoints: [{profile: stripe, path: /a, secret: s}]`, "endpoints[0].account: required"},
		{`endpoints: [{profile: stripe, account: a, path: /a, secret: s, colour: red}]`, "field colour not found"},
		{`endpoints: [{profile: standard-webhooks, account: a, path: /a, secret: "whsec_!!notbase64"}]`, "endpoints[0].secret:"},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  got error %v\n  want it to contain %q", c.yaml, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "notbase64") {
			t.Errorf("error leaks the secret: %v", err)
		}
	}
	t.Setenv("HOOKCERT_TEST_SECRET", "whsec_from_env")
	cfg, err := ParseConfig([]byte(`endpoints: [{profile: stripe, source: stripe-test, account: a, path: /a, secret_env: HOOKCERT_TEST_SECRET}]`))
	if err != nil || cfg.Endpoints[0].Secret != "whsec_from_env" || cfg.Endpoints[0].KeySource() != "stripe-test" {
		t.Fatalf("secret_env: %+v %v", cfg, err)
	}
	if err := ValidateEndpoints(DefaultEndpoints()); err != nil {
		t.Fatalf("default endpoints invalid: %v", err)
	}
}

func TestFailpointSurface(t *testing.T) {
	e := newEnv(t, Options{})
	resp, err := http.Get(e.http.URL + "/_hookcert/failpoints")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("failpoints mounted without EnableFailpoints: %d", resp.StatusCode)
	}

	crashed := make(chan string, 1)
	e = newEnv(t, Options{EnableFailpoints: true, Crash: func() { crashed <- "crash" }})
	ep := e.ep("stripe", "acct_A")
	arm := func(point, id, action string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, e.http.URL+"/_hookcert/failpoints/"+point,
			strings.NewReader(`{"event_id":"`+id+`","action":"`+action+`"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("arm %s: %d", point, resp.StatusCode)
		}
	}
	id := newID("evt_surface")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	arm("after-insert-before-commit", id, "error")
	e.expect(e.send(d), 500, StatusRetry, "injected_fault")
	if e.keyRows(ep, id) != 0 || e.ledger(ep, id) != 0 {
		t.Fatal("error before commit left rows")
	}
	arm("after-insert-before-commit", id, "crash")
	e.expect(e.send(d), 500, StatusRetry, "injected_fault")
	if <-crashed != "crash" || e.keyRows(ep, id) != 0 {
		t.Fatal("crash point not reached or rows left")
	}
	e.expect(e.send(d), 200, StatusProcessed, "")
}

// Different events on one object, released together: the row locks taken by the
// conditional upserts serialise them, so the domain constraint and the version
// order hold under concurrency too.
func TestConcurrentDistinctEventsOnOneObject(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")
	const n = 16
	var ds []delivery
	for i := range n {
		ds = append(ds, build(ep, newID("evt_pay"), store.TypePaymentSucceeded, obj{ID: "pi_c", Amount: 10}, time.Now()))
		// versions 1..16 in a scrambled order
		v := int64((i*7)%n + 1)
		ds = append(ds, build(ep, newID("evt_sub"), store.TypeSubscriptionUpdated, obj{ID: "sub_c", Version: v, Status: "v" + strconv.FormatInt(v, 10)}, time.Now()))
	}
	barrier := make(chan struct{})
	replies := make(chan reply, len(ds))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(ds)}}
	defer client.CloseIdleConnections()
	for _, d := range ds {
		go func() {
			<-barrier
			r, err := e.try(client, context.Background(), ep.Path, d)
			if err != nil {
				r.Code = -1
			}
			replies <- r
		}()
	}
	close(barrier)
	for range ds {
		r := <-replies
		if r.Code != 200 {
			t.Fatalf("delivery answered %d %s/%s", r.Code, r.Status, r.Reason)
		}
	}
	if n := e.count(`SELECT count(*) FROM ledger_entries WHERE object_id='pi_c' AND kind='payment'`); n != 1 {
		t.Fatalf("%d payment entries from 16 events of one payment, want 1", n)
	}
	var v int64
	var status string
	if err := e.pool.QueryRow(context.Background(), `SELECT version, status FROM subscriptions WHERE object_id='sub_c'`).Scan(&v, &status); err != nil {
		t.Fatal(err)
	}
	if v != n || status != "v16" {
		t.Fatalf("subscription ended at v%d %s, want v16", v, status)
	}
}
