package observe

import (
	"strings"
	"testing"
)

// TestRoleQueries: the queries of roles after the first (payment:refund …)
// are prepared like the slot their name starts with, answer through the
// named reads, and a wrong one is refused naming its field.
func TestRoleQueries(t *testing.T) {
	ctx, dbURL, c := shopSetup(t)
	if _, err := c.Exec(ctx, `CREATE TABLE refunds (id text PRIMARY KEY, status text, payment_id text);
		INSERT INTO refunds VALUES ('re_1', 'pending', 'pi_1');
		CREATE TABLE prices (id text PRIMARY KEY, last_event_at timestamptz);
		INSERT INTO prices VALUES ('price_1', to_timestamp(1700000456))`); err != nil {
		t.Fatal(err)
	}
	q := shopQueries
	q.Roles = map[string]string{
		"payment:refund":        "SELECT status FROM refunds WHERE id = $4",
		"object_effects:refund": "SELECT count(*) FROM ledger WHERE payment_id = (SELECT payment_id FROM refunds WHERE id = $4)",
		"object:price":          "SELECT extract(epoch FROM last_event_at)::bigint FROM prices WHERE id = $4",
		"effects:payout":        "SELECT count(*) FROM charges WHERE payment_intent = $4",
	}
	q.From = map[string]string{}
	for k, v := range shopQueries.From {
		q.From[k] = v
	}
	q.From["payment:refund"] = "target.events.lifecycle[1].state"
	q.From["object:price"] = "target.events.ordered[1].state"
	o, err := Open(ctx, dbURL, q)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if !o.Has("payment:refund") || !o.Has("object:price") {
		t.Error("role queries not configured")
	}
	if s, found, err := o.PaymentOf(ctx, "payment:refund", "stripe", "acct", "re_1"); err != nil || !found || s != "pending" {
		t.Errorf("PaymentOf(re_1) = %q %v %v", s, found, err)
	}
	if _, found, err := o.PaymentOf(ctx, "payment:refund", "stripe", "acct", "re_404"); err != nil || found {
		t.Errorf("PaymentOf(absent) found=%v err=%v", found, err)
	}
	if n, err := o.ObjectEffectsOf(ctx, "object_effects:refund", "stripe", "acct", "re_1"); err != nil || n != 2 {
		t.Errorf("ObjectEffectsOf(re_1) = %d, %v; want 2", n, err)
	}
	if v, _, found, err := o.ObjectOf(ctx, "object:price", "stripe", "acct", "price_1"); err != nil || !found || v != 1700000456 {
		t.Errorf("ObjectOf(price_1) = %d %v %v", v, found, err)
	}
	if n, err := o.EffectsOf(ctx, "effects:payout", Key{EventID: "evt_x", ObjectID: "pi_1"}); err != nil || n != 2 {
		t.Errorf("EffectsOf(pi_1) = %d, %v; want 2", n, err)
	}
	// The first role's slot is untouched.
	if s, found, err := o.Payment(ctx, "stripe", "acct", "pi_1"); err != nil || !found || s != "succeeded" {
		t.Errorf("Payment(pi_1) = %q %v %v", s, found, err)
	}

	// A role's query is held to its slot's columns, named by its field.
	bad := q
	bad.Roles = map[string]string{"payment:refund": "SELECT status, id FROM refunds WHERE id = $4"}
	if _, err := Open(ctx, dbURL, bad); err == nil || !strings.Contains(err.Error(), "target.events.lifecycle[1].state") ||
		!strings.Contains(err.Error(), "must return 1 column(s) (status)") {
		t.Errorf("a two-column state query: %v", err)
	}
}
