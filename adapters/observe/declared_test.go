package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

// shopSchema is a Stripe receiver's own tables, as a declared vocabulary reads
// them: charges counted by object, payments with a status, customers ordered by
// the applied event's created time, a work queue.
const shopSchema = `
CREATE TABLE stripe_events (id text PRIMARY KEY);
CREATE TABLE charges (id text, payment_intent text);
CREATE TABLE payments (id text PRIMARY KEY, status text);
CREATE TABLE ledger (payment_id text, amount bigint);
CREATE TABLE customers (id text PRIMARY KEY, last_event_at timestamptz);
CREATE TABLE queue (id serial, done_at timestamptz);
INSERT INTO stripe_events VALUES ('evt_1');
INSERT INTO charges VALUES ('ch_1', 'pi_1'), ('ch_1', 'pi_1'), ('ch_2', 'pi_2');
INSERT INTO payments VALUES ('pi_1', 'succeeded');
INSERT INTO ledger VALUES ('pi_1', 100), ('pi_1', -100);
INSERT INTO customers VALUES ('cus_1', to_timestamp(1700000123)), ('cus_2', NULL);
`

// shopQueries are the slots the loader fills from the declared vocabulary.
var shopQueries = targetfile.Queries{
	EventRows:     "SELECT count(*) FROM stripe_events WHERE id = $3",
	Effects:       "SELECT count(*) FROM charges WHERE id = $4",
	Payment:       "SELECT status FROM payments WHERE id = $4",
	ObjectEffects: "SELECT count(*) FROM ledger WHERE payment_id = $4",
	Object:        "SELECT extract(epoch FROM last_event_at)::bigint FROM customers WHERE id = $4",
	Quiescent:     "SELECT count(*) = 0 FROM queue WHERE done_at IS NULL",
	From: map[string]string{
		QEffects: "target.events.effect.effects", QPayment: "target.events.lifecycle.state",
		QObjectEffects: "target.events.lifecycle.effects", QObject: "target.events.ordered.state",
		QQuiescent: "target.acceptance.quiescent",
	},
}

func shopSetup(t *testing.T) (context.Context, string, *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	dbURL := newDB(t)
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	if _, err := c.Exec(ctx, shopSchema); err != nil {
		t.Fatal(err)
	}
	return ctx, dbURL, c
}

func TestDeclaredQueries(t *testing.T) {
	ctx, dbURL, c := shopSetup(t)
	o, err := Open(ctx, dbURL, shopQueries)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	// Effects binds $4 to the event's object: the charge, not the event, is counted.
	n, err := o.Effects(ctx, Key{Source: "stripe", Account: "acct", EventID: "evt_unrelated", ObjectID: "ch_1"})
	if err != nil || n != 2 {
		t.Errorf("Effects(ch_1) = %d, %v; want 2", n, err)
	}
	if n, err = o.Effects(ctx, Key{EventID: "evt_1", ObjectID: "ch_9"}); err != nil || n != 0 {
		t.Errorf("Effects(ch_9) = %d, %v; want 0", n, err)
	}
	if n, err = o.ObjectEffects(ctx, "stripe", "acct", "pi_1"); err != nil || n != 2 {
		t.Errorf("ObjectEffects(pi_1) = %d, %v; want 2", n, err)
	}
	if s, found, err := o.Payment(ctx, "stripe", "acct", "pi_1"); err != nil || !found || s != "succeeded" {
		t.Errorf("Payment(pi_1) = %q %v %v", s, found, err)
	}

	// A one-column object query: the applied key, no status.
	v, s, found, err := o.Object(ctx, "stripe", "acct", "cus_1")
	if err != nil || !found || v != 1700000123 || s != "" {
		t.Errorf("Object(cus_1) = %d %q %v %v", v, s, found, err)
	}
	if v, _, found, err = o.Object(ctx, "stripe", "acct", "cus_2"); err != nil || !found || v != 0 {
		t.Errorf("Object(cus_2, NULL) = %d %v %v", v, found, err)
	}
	if _, _, found, err = o.Object(ctx, "stripe", "acct", "cus_404"); err != nil || found {
		t.Errorf("Object(absent) found=%v err=%v", found, err)
	}

	// Quiescent follows the queue.
	if q, err := o.Quiescent(ctx); err != nil || !q {
		t.Errorf("Quiescent(empty queue) = %v, %v; want true", q, err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO queue (done_at) VALUES (NULL)"); err != nil {
		t.Fatal(err)
	}
	if q, err := o.Quiescent(ctx); err != nil || q {
		t.Errorf("Quiescent(pending work) = %v, %v; want false", q, err)
	}
	if _, err := c.Exec(ctx, "UPDATE queue SET done_at = now()"); err != nil {
		t.Fatal(err)
	}
	if q, err := o.Quiescent(ctx); err != nil || !q {
		t.Errorf("Quiescent(work done) = %v, %v; want true", q, err)
	}

	snap := o.Snapshot(ctx, Key{EventID: "evt_1", ObjectID: "cus_1"})
	if len(snap) != 6 || snap[5].Query != QQuiescent || snap[5].Error != "" || len(snap[5].Params) != 0 || snap[5].Rows[0][0] != "true" {
		t.Errorf("Snapshot = %+v", snap)
	}
}

// TestQuiescentUnclear: no row, several rows or NULL is an error, not a guess.
func TestQuiescentUnclear(t *testing.T) {
	ctx, dbURL, _ := shopSetup(t)
	for sql, want := range map[string]string{
		"SELECT true FROM queue":                      "0 rows (want exactly 1)",
		"SELECT true FROM customers":                  "2 rows (want exactly 1)",
		"SELECT NULL::boolean":                        "NULL (want true or false)",
		"SELECT bool_and(done_at IS NULL) FROM queue": "NULL (want true or false)",
	} {
		o, err := Open(ctx, dbURL, targetfile.Queries{EventRows: shopQueries.EventRows, Effects: shopQueries.Effects, Quiescent: sql})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if _, err := o.Quiescent(ctx); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Quiescent with %q: err = %v, want %q", sql, err, want)
		}
		o.Close()
	}
	o, err := Open(ctx, dbURL, targetfile.Queries{EventRows: shopQueries.EventRows, Effects: shopQueries.Effects})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Quiescent(ctx); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("Quiescent not configured: err = %v", err)
	}
}

// TestDeclaredQueryErrors: a declared query's mistakes name its own field.
func TestDeclaredQueryErrors(t *testing.T) {
	ctx, dbURL, _ := shopSetup(t)
	bad := shopQueries
	bad.Payment = "SELECT status FROM no_payments WHERE id = $4"
	bad.Object = "SELECT extract(epoch FROM last_event_at) FROM customers WHERE id = $4"
	bad.Quiescent = "SELECT count(*) FROM queue WHERE done_at IS NULL"
	bad.ObjectEffects = "SELECT count(*), 2 FROM ledger WHERE payment_id = $4"
	_, err := Open(ctx, dbURL, bad)
	for _, want := range []string{
		`target.events.lifecycle.state: does not prepare: ERROR: relation "no_payments" does not exist`,
		"target.events.ordered.state: must return an integer first column (smallint, integer, bigint; cast with ::bigint), returns numeric",
		"target.acceptance.quiescent: must return a boolean column, returns int8",
		"target.events.lifecycle.effects: must return 1 column(s) (count), returns 2",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if !errors.Is(err, ErrInvalidQuery) {
		t.Errorf("err does not wrap ErrInvalidQuery: %v", err)
	}
	// The looser rule of observe.postgres.queries.object stays: any first column.
	old := targetfile.Queries{EventRows: shopQueries.EventRows, Effects: shopQueries.Effects, Object: bad.Object}
	if o, err := Open(ctx, dbURL, old); err != nil {
		t.Errorf("queries.object with a numeric column: %v", err)
	} else {
		o.Close()
	}
}
