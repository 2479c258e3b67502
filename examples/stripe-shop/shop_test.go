package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestChargeSucceededBooksOneRowPerEvent(t *testing.T) {
	sh := newShop(t, Config{})
	ch1, ch2 := uniq("ch"), uniq("ch")
	e1 := event(uniq("evt"), "charge.succeeded", now(), chargeObj(ch1, 1500, ""))
	if got := sh.deliver("live", "acct_a", e1); got != 200 {
		t.Fatalf("first delivery: %d", got)
	}
	if got := sh.deliver("live", "acct_a", e1); got != 200 {
		t.Fatalf("redelivery: %d, want 200", got)
	}
	if n := sh.ledger("charge", "charge_id", ch1); n != 1 {
		t.Errorf("one event delivered twice booked %d rows, want 1", n)
	}
	e2 := event(uniq("evt"), "charge.succeeded", now(), chargeObj(ch2, 700, "pi_other"))
	if got := sh.deliver("live", "acct_a", e2); got != 200 {
		t.Fatalf("second charge: %d", got)
	}
	if n := sh.count(`SELECT count(*) FROM ledger WHERE kind = 'charge'`); n != 2 {
		t.Errorf("two charge events booked %d rows, want 2", n)
	}
	var paymentID *string
	var amount int64
	if err := sh.pool.QueryRow(context.Background(), `SELECT payment_id, amount FROM ledger WHERE charge_id = $1`, ch2).Scan(&paymentID, &amount); err != nil {
		t.Fatal(err)
	}
	if paymentID == nil || *paymentID != "pi_other" || amount != 700 {
		t.Errorf("ledger row: payment %v amount %d", paymentID, amount)
	}
	// The event row keeps the payload.
	var typ, payloadID string
	if err := sh.pool.QueryRow(context.Background(), `SELECT type, payload->>'id' FROM stripe_events WHERE event_id = $1`,
		strings.Split(string(e1), `"`)[3]).Scan(&typ, &payloadID); err != nil {
		t.Fatal(err)
	}
	if typ != "charge.succeeded" || payloadID == "" {
		t.Errorf("stored event: type %q payload id %q", typ, payloadID)
	}
}

// An event ID is scoped by the endpoint: the same ID under another account or
// the other mode is another event.
func TestEventIDIsScopedByModeAndAccount(t *testing.T) {
	sh := newShop(t, Config{})
	id := uniq("evt")
	ch := uniq("ch")
	body := event(id, "charge.succeeded", now(), chargeObj(ch, 100, ""))
	for _, ep := range [][2]string{{"live", "acct_a"}, {"test", "acct_a"}, {"live", "acct_b"}} {
		if got := sh.deliver(ep[0], ep[1], body); got != 200 {
			t.Fatalf("%v: %d", ep, got)
		}
		if n := sh.events(ep[0], ep[1], id); n != 1 {
			t.Errorf("%v: %d event rows", ep, n)
		}
		if n := sh.count(`SELECT count(*) FROM ledger WHERE mode = $1 AND account = $2 AND event_id = $3`, ep[0], ep[1], id); n != 1 {
			t.Errorf("%v: %d ledger rows", ep, n)
		}
	}
}

func TestPaymentIntentSucceeded(t *testing.T) {
	sh := newShop(t, Config{})
	pi := uniq("pi")
	ev := event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 2500))

	// Before checkout's row exists: refused, nothing kept, so Stripe retries.
	if got := sh.deliver("live", "acct_a", ev); got != http.StatusConflict {
		t.Fatalf("event for a missing payment: %d, want 409", got)
	}
	if n := sh.count(`SELECT count(*) FROM stripe_events`); n != 0 {
		t.Fatalf("a refused event left %d event rows", n)
	}
	sh.createPayment(pi, "acct_a", 2500)
	if got := sh.deliver("live", "acct_a", ev); got != 200 {
		t.Fatalf("retry once the payment exists: %d", got)
	}
	if s := sh.paymentStatus(pi); s != "succeeded" {
		t.Errorf("status %q, want succeeded", s)
	}
	var amount int64
	var charge string
	if err := sh.pool.QueryRow(context.Background(), `SELECT amount, charge_id FROM ledger WHERE kind = 'payment' AND payment_id = $1`, pi).Scan(&amount, &charge); err != nil {
		t.Fatal(err)
	}
	if amount != 2500 || charge != "ch_"+strings.TrimPrefix(pi, "pi_") {
		t.Errorf("credit: amount %d charge %q", amount, charge)
	}
	// Stripe may send a second event for the same change: one credit.
	other := event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 2500))
	if got := sh.deliver("live", "acct_a", other); got != 200 {
		t.Fatalf("second event for the payment: %d", got)
	}
	if n := sh.ledger("payment", "payment_id", pi); n != 1 {
		t.Errorf("two events for one payment: %d credits, want 1", n)
	}
	// Another account's endpoint does not see this account's payment.
	if got := sh.deliver("live", "acct_b", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 2500))); got != http.StatusConflict {
		t.Errorf("event on another account's endpoint: %d, want 409", got)
	}
}

func TestPaymentIntentPaymentFailed(t *testing.T) {
	sh := newShop(t, Config{})
	pi := uniq("pi")
	failed := event(uniq("evt"), "payment_intent.payment_failed", now(), paymentIntentObj(pi, "requires_payment_method", 900))
	if got := sh.deliver("test", "acct_a", failed); got != http.StatusConflict {
		t.Fatalf("missing payment: %d, want 409", got)
	}
	sh.createPayment(pi, "acct_a", 900)
	if got := sh.deliver("test", "acct_a", failed); got != 200 {
		t.Fatal(got)
	}
	if s := sh.paymentStatus(pi); s != "failed" {
		t.Errorf("status %q, want failed", s)
	}
	if n := sh.count(`SELECT count(*) FROM ledger WHERE payment_id = $1`, pi); n != 0 {
		t.Errorf("a failure booked %d ledger rows", n)
	}
	// A late succeeded after the failure is ignored.
	if got := sh.deliver("test", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 900))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.paymentStatus(pi); s != "failed" {
		t.Errorf("a late succeeded moved a failed payment to %q", s)
	}

	// A late failed after success does not regress the payment.
	pi2 := uniq("pi")
	sh.createPayment(pi2, "acct_a", 900)
	sh.deliver("test", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi2, "succeeded", 900)))
	if got := sh.deliver("test", "acct_a", event(uniq("evt"), "payment_intent.payment_failed", now(), paymentIntentObj(pi2, "requires_payment_method", 900))); got != 200 {
		t.Fatalf("late failed: %d, want 200", got)
	}
	if s := sh.paymentStatus(pi2); s != "succeeded" {
		t.Errorf("a late failed moved a succeeded payment to %q", s)
	}
}

func TestChargeRefunded(t *testing.T) {
	sh := newShop(t, Config{})
	pi := uniq("pi")
	ch := "ch_" + strings.TrimPrefix(pi, "pi_")
	refund := event(uniq("evt"), "charge.refunded", now(), refundedChargeObj(ch, 4200, pi))
	if got := sh.deliver("live", "acct_a", refund); got != http.StatusConflict {
		t.Fatalf("refund of a missing payment: %d, want 409", got)
	}
	sh.createPayment(pi, "acct_a", 4200)
	if got := sh.deliver("live", "acct_a", refund); got != http.StatusConflict {
		t.Fatalf("refund before the payment succeeded: %d, want 409", got)
	}
	if n := sh.events("live", "acct_a", strings.Split(string(refund), `"`)[3]); n != 0 {
		t.Fatalf("a premature refund left its event row")
	}
	sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 4200)))
	if got := sh.deliver("live", "acct_a", refund); got != 200 {
		t.Fatalf("refund after success: %d", got)
	}
	if s := sh.paymentStatus(pi); s != "refunded" {
		t.Errorf("status %q, want refunded", s)
	}
	var amount int64
	if err := sh.pool.QueryRow(context.Background(), `SELECT amount FROM ledger WHERE kind = 'refund' AND payment_id = $1`, pi).Scan(&amount); err != nil {
		t.Fatal(err)
	}
	if amount != -4200 {
		t.Errorf("refund amount %d, want -4200", amount)
	}
	// A second refund event, and a late succeeded: both ignored.
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "charge.refunded", now(), refundedChargeObj(ch, 4200, pi))); got != 200 {
		t.Fatal(got)
	}
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 4200))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.paymentStatus(pi); s != "refunded" {
		t.Errorf("status %q after late events, want refunded", s)
	}
	if n := sh.count(`SELECT count(*) FROM ledger WHERE payment_id = $1`, pi); n != 2 {
		t.Errorf("%d ledger rows for the payment, want 2 (credit, refund)", n)
	}
	// A refund of a failed payment is ignored (acknowledged).
	pi2 := uniq("pi")
	sh.createPayment(pi2, "acct_a", 10)
	sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.payment_failed", now(), paymentIntentObj(pi2, "requires_payment_method", 10)))
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "charge.refunded", now(), refundedChargeObj(uniq("ch"), 10, pi2))); got != 200 {
		t.Errorf("refund of a failed payment: %d, want 200", got)
	}
	if s := sh.paymentStatus(pi2); s != "failed" {
		t.Errorf("status %q, want failed", s)
	}
}

func TestCustomerUpdatedAppliesOnlyNewer(t *testing.T) {
	sh := newShop(t, Config{})
	cus := uniq("cus")
	t0 := now() - 100
	state := func() (int64, string) {
		var at int64
		var email string
		if err := sh.pool.QueryRow(context.Background(), `SELECT extract(epoch FROM last_event_at)::bigint, email FROM customers WHERE id = $1`, cus).Scan(&at, &email); err != nil {
			t.Fatal(err)
		}
		return at, email
	}
	for _, u := range []struct {
		created int64
		email   string
		wantAt  int64
		wantEm  string
	}{
		{t0 + 10, "b@example.com", t0 + 10, "b@example.com"},
		{t0, "a@example.com", t0 + 10, "b@example.com"},         // older: ignored
		{t0 + 10, "same@example.com", t0 + 10, "b@example.com"}, // same second: ignored
		{t0 + 20, "c@example.com", t0 + 20, "c@example.com"},
	} {
		if got := sh.deliver("live", "acct_a", event(uniq("evt"), "customer.updated", u.created, customerObj(cus, u.email))); got != 200 {
			t.Fatalf("update created %d: %d", u.created, got)
		}
		if at, em := state(); at != u.wantAt || em != u.wantEm {
			t.Errorf("after update created %d: (%d, %s), want (%d, %s)", u.created, at, em, u.wantAt, u.wantEm)
		}
	}
}

func TestUnhandledTypeIsAcknowledgedAndNotStored(t *testing.T) {
	sh := newShop(t, Config{})
	pi := uniq("pi")
	sh.createPayment(pi, "acct_a", 100)
	for _, typ := range []string{"invoice.upcoming", "payment_intent.created", "customer.created"} {
		obj := fmt.Sprintf(`{"id":%q,"object":"invoice","amount_due":100,"currency":"eur"}`, pi)
		if got := sh.deliver("live", "acct_a", event(uniq("evt"), typ, now(), obj)); got != 200 {
			t.Errorf("%s: %d, want 200", typ, got)
		}
	}
	for _, table := range []string{"stripe_events", "ledger", "customers"} {
		if n := sh.count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("unhandled events left %d rows in %s", n, table)
		}
	}
	if s := sh.paymentStatus(pi); s != "processing" {
		t.Errorf("payment %q", s)
	}
}

func TestRejectsInvalidDeliveries(t *testing.T) {
	sh := newShop(t, Config{})
	secret := testSecrets["live/acct_a"][0]
	good := func() []byte { return event(uniq("evt"), "charge.succeeded", now(), chargeObj(uniq("ch"), 1, "")) }
	for _, c := range []struct {
		name    string
		account string
		body    []byte
		header  func(b []byte) string
		want    int
	}{
		{"no signature", "acct_a", good(), func([]byte) string { return "" }, 400},
		{"wrong secret", "acct_a", good(), func(b []byte) string { return sign(b, "whsec_not_the_secret", time.Now()) }, 400},
		{"tampered body", "acct_a", good(), func(b []byte) string { return sign(append([]byte(nil), b[:len(b)-1]...), secret, time.Now()) }, 400},
		{"other endpoint's secret", "acct_a", good(), func(b []byte) string { return sign(b, testSecrets["live/acct_b"][0], time.Now()) }, 400},
		{"signed 10 minutes ago", "acct_a", good(), func(b []byte) string { return sign(b, secret, time.Now().Add(-10*time.Minute)) }, 400},
		{"garbage header", "acct_a", good(), func([]byte) string { return "t=abc,v1=zz" }, 400},
		{"malformed JSON", "acct_a", []byte(`{"id":"evt_x","object":"event","type":"charge.succeeded",`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"no event id", "acct_a", []byte(`{"object":"event","api_version":"2026-03-25.dahlia","created":1,"type":"charge.succeeded","data":{"object":{"id":"ch_1","object":"charge","amount":1,"currency":"eur"}}}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"not an event", "acct_a", []byte(`{"id":"ch_1","object":"charge"}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"bad data.object", "acct_a", event(uniq("evt"), "charge.succeeded", now(), `{"id":"ch_1","object":"charge","amount":"a lot"}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"object without id", "acct_a", event(uniq("evt"), "charge.succeeded", now(), `{"object":"charge","amount":1}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"no data", "acct_a", []byte(`{"id":"evt_nodata","object":"event","api_version":"2026-03-25.dahlia","created":1,"type":"charge.succeeded"}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"account mismatch", "acct_a", []byte(`{"id":"evt_acct","object":"event","account":"acct_b","api_version":"2026-03-25.dahlia","created":1,"type":"charge.succeeded","data":{"object":{"id":"ch_2","object":"charge","amount":1,"currency":"eur"}}}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"older API version", "acct_a", []byte(`{"id":"evt_old","object":"event","api_version":"2024-06-20","created":1,"type":"charge.succeeded","data":{"object":{"id":"ch_3","object":"charge","amount":1,"currency":"eur"}}}`), func(b []byte) string { return sign(b, secret, time.Now()) }, 400},
		{"oversized body", "acct_a", event(uniq("evt"), "charge.succeeded", now(), fmt.Sprintf(`{"id":"ch_big","object":"charge","amount":1,"currency":"eur","description":%q}`, strings.Repeat("x", 1<<20))), func(b []byte) string { return sign(b, secret, time.Now()) }, 413},
		{"unknown account", "acct_zz", good(), func(b []byte) string { return sign(b, secret, time.Now()) }, 404},
	} {
		if got := sh.post("live", c.account, c.body, c.header(c.body)); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := sh.post("sandbox", "acct_a", good(), ""); got != 404 {
		t.Errorf("unknown mode: %d, want 404", got)
	}
	resp, err := http.Get(sh.hs.URL + "/stripe/webhook/live/acct_a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
	for _, table := range []string{"stripe_events", "ledger"} {
		if n := sh.count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("invalid deliveries left %d rows in %s", n, table)
		}
	}
	// The positive control: the same endpoint accepts a valid delivery.
	if got := sh.deliver("live", "acct_a", good()); got != 200 {
		t.Errorf("valid delivery: %d", got)
	}
}

func TestLargeEventsUpToOneMiB(t *testing.T) {
	sh := newShop(t, Config{})
	ch := uniq("ch")
	obj := fmt.Sprintf(`{"id":%q,"object":"charge","amount":5,"currency":"eur","description":%q,"metadata":{}}`, ch, strings.Repeat("d", 70<<10))
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "charge.succeeded", now(), obj)); got != 200 {
		t.Fatalf("70 KB event: %d, want 200", got)
	}
	if n := sh.ledger("charge", "charge_id", ch); n != 1 {
		t.Errorf("70 KB event booked %d rows", n)
	}
}

// During a secret roll the endpoint has two secrets; either verifies.
func TestSecretRoll(t *testing.T) {
	sh := newShop(t, Config{Secrets: mapSecrets{"live/acct_a": {"whsec_new_0000000000", "whsec_old_1111111111"}}})
	for _, secret := range []string{"whsec_new_0000000000", "whsec_old_1111111111"} {
		b := event(uniq("evt"), "charge.succeeded", now(), chargeObj(uniq("ch"), 1, ""))
		if got := sh.post("live", "acct_a", b, sign(b, secret, time.Now())); got != 200 {
			t.Errorf("signed with %s…: %d", secret[:9], got)
		}
	}
}

// lockTable holds table in SHARE mode on a connection of its own, the way a
// conformance harness forces concurrent deliveries to race, and waits until
// n sessions queue behind it.
func lockTable(t *testing.T, sh *shop, table string, n int, during func()) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, sh.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	during()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions wait on %s, want %d", waiting, table, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() {
		_ = tx.Rollback(ctx)
		conn.Close(ctx)
	}
}

// copies delivers body n times at once through the event-table gate and
// returns the statuses.
func copies(t *testing.T, sh *shop, n int, body []byte) []int {
	statuses := make([]int, n)
	var wg sync.WaitGroup
	release := lockTable(t, sh, "stripe_events", n, func() {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = sh.deliver("live", "acct_a", body)
			}()
		}
	})
	release()
	wg.Wait()
	return statuses
}

func TestConcurrentCopiesApplyOnce(t *testing.T) {
	sh := newShop(t, Config{})
	ch := uniq("ch")
	id := uniq("evt")
	for i, st := range copies(t, sh, 4, event(id, "charge.succeeded", now(), chargeObj(ch, 3, ""))) {
		if st != 200 {
			t.Errorf("copy %d: %d", i, st)
		}
	}
	if n := sh.events("live", "acct_a", id); n != 1 {
		t.Errorf("%d event rows", n)
	}
	if n := sh.ledger("charge", "charge_id", ch); n != 1 {
		t.Errorf("4 concurrent copies booked %d rows, want 1", n)
	}
}

// A connection lost between the event row and the ledger row leaves neither;
// the redelivery applies the event once.
func TestConnectionLostMidTransaction(t *testing.T) {
	sh := newShop(t, Config{})
	ch := uniq("ch")
	id := uniq("evt")
	body := event(id, "charge.succeeded", now(), chargeObj(ch, 3, ""))
	var status int
	done := make(chan struct{})
	release := lockTable(t, sh, "ledger", 1, func() {
		go func() { defer close(done); status = sh.deliver("live", "acct_a", body) }()
	})
	sh.exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'stripe-shop' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`)
	<-done
	release()
	if status < 500 {
		t.Errorf("delivery whose connection was lost: %d, want 5xx", status)
	}
	if n, m := sh.events("live", "acct_a", id), sh.ledger("charge", "charge_id", ch); n != 0 || m != 0 {
		t.Fatalf("after the lost connection: %d event rows, %d ledger rows", n, m)
	}
	if got := sh.deliver("live", "acct_a", body); got != 200 {
		t.Fatalf("redelivery: %d", got)
	}
	if n, m := sh.events("live", "acct_a", id), sh.ledger("charge", "charge_id", ch); n != 1 || m != 1 {
		t.Errorf("after the redelivery: %d event rows, %d ledger rows", n, m)
	}
}

func TestPurge(t *testing.T) {
	sh := newShop(t, Config{})
	asOf := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	ages := map[string]time.Duration{
		"evt_fresh":        time.Hour,
		"evt_payload_keep": 7*24*time.Hour - time.Hour,
		"evt_payload_gone": 7*24*time.Hour + time.Hour,
		"evt_key_keep":     30*24*time.Hour - time.Hour,
		"evt_key_gone":     30*24*time.Hour + time.Hour,
	}
	for id, age := range ages {
		sh.exec(`INSERT INTO stripe_events (mode, account, event_id, type, payload, received_at) VALUES ('live', 'acct_a', $1, 'charge.succeeded', '{}', $2)`, id, asOf.Add(-age))
	}
	res, err := purge(context.Background(), sh.pool, asOf, DefaultKeyTTL, DefaultPayloadTTL)
	if err != nil {
		t.Fatal(err)
	}
	if res.KeysDeleted != 1 || res.PayloadsCleared != 2 {
		t.Errorf("purge: %+v, want 1 key deleted and 2 payloads cleared", res)
	}
	for id, want := range map[string]string{"evt_fresh": "payload", "evt_payload_keep": "payload", "evt_payload_gone": "key",
		"evt_key_keep": "key", "evt_key_gone": "none"} {
		var present bool
		err := sh.pool.QueryRow(context.Background(), `SELECT payload IS NOT NULL FROM stripe_events WHERE event_id = $1`, id).Scan(&present)
		got := "payload"
		switch {
		case err == pgx.ErrNoRows:
			got = "none"
		case err != nil:
			t.Fatal(err)
		case !present:
			got = "key"
		}
		if got != want {
			t.Errorf("%s: %s left, want %s", id, got, want)
		}
	}
}

// A body PostgreSQL's jsonb cannot hold is still processed: its key is stored
// without the payload.
func TestNulEscapeInPayload(t *testing.T) {
	sh := newShop(t, Config{})
	id := uniq("evt")
	obj := fmt.Sprintf(`{"id":%q,"object":"charge","amount":1,"currency":"eur","description":"a\u0000b"}`, uniq("ch"))
	if got := sh.deliver("live", "acct_a", event(id, "charge.succeeded", now(), obj)); got != 200 {
		t.Fatalf("%d", got)
	}
	if n := sh.count(`SELECT count(*) FROM stripe_events WHERE event_id = $1 AND payload IS NULL`, id); n != 1 {
		t.Errorf("event row without payload: %d", n)
	}
}

// customer.deleted leaves a tombstone: a late update older than the deletion
// does not bring the customer back; with the hard-delete defect it does.
func TestCustomerDeletedIsNotResurrected(t *testing.T) {
	for _, d := range []Defect{DefectNone, DefectHardDelete} {
		sh := newShop(t, Config{Defect: d})
		cus := uniq("cus")
		t0 := now() - 100
		live := func() int {
			return sh.count(`SELECT count(*) FROM customers WHERE id = $1 AND deleted_at IS NULL`, cus)
		}
		for _, e := range []struct {
			typ     string
			created int64
		}{{"customer.updated", t0 + 1}, {"customer.deleted", t0 + 3}, {"customer.updated", t0 + 2}} {
			if got := sh.deliver("live", "acct_a", event(uniq("evt"), e.typ, e.created, customerObj(cus, "a@example.com"))); got != 200 {
				t.Fatalf("%s %s: %d", d, e.typ, got)
			}
		}
		switch n := live(); {
		case d == DefectNone && n != 0:
			t.Errorf("a late update older than the deletion brought the customer back")
		case d == DefectHardDelete && n != 1:
			t.Errorf("hard-delete: the late update did not recreate the customer (%d rows): the defect does not show", n)
		}
	}
}
