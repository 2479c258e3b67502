package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// newDB creates a database of its own for the test and returns its URL.
func newDB(t *testing.T) string { return pgtest.Database(t) }

// schema is a receiver's tables in the conformance domain, with some fixture rows.
const schema = `
CREATE TABLE processed_webhook_events (source text, account_id text, event_id text, PRIMARY KEY (source, account_id, event_id));
CREATE TABLE ledger_entries (source text, account_id text, event_id text, object_id text, kind text, amount bigint);
CREATE TABLE subscriptions (source text, account_id text, object_id text, version int, status text);
CREATE TABLE payments (source text, account_id text, payment_id text, status text);
INSERT INTO processed_webhook_events VALUES ('stripe','acct_A','evt_1'), ('stripe','acct_B','evt_1');
INSERT INTO ledger_entries VALUES ('stripe','acct_A','evt_1','pi_1','payment',100), ('stripe','acct_A','evt_1','pi_1','payment',100),
  ('stripe','acct_A','evt_2','pi_1','refund',-100), ('stripe','acct_B','evt_1','pi_9','cash',5);
INSERT INTO subscriptions VALUES ('stripe','acct_A','sub_1',3,'active'), ('stripe','acct_A','sub_2',NULL,NULL),
  ('stripe','acct_A','sub_dup',1,'a'), ('stripe','acct_A','sub_dup',2,'b');
INSERT INTO payments VALUES ('stripe','acct_A','pi_1','succeeded');
`

var queries = targetfile.Queries{
	EventRows:     "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
	Effects:       "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
	ObjectEffects: "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4",
	// Only $2 and $4: the observer must bind just those.
	Object:  "SELECT version, status FROM subscriptions WHERE account_id=$2 AND object_id=$4",
	Payment: "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4",
}

func setup(t *testing.T) (context.Context, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	dbURL := newDB(t)
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	if _, err := c.Exec(ctx, schema); err != nil {
		t.Fatal(err)
	}
	return ctx, dbURL
}

func TestObserver(t *testing.T) {
	ctx, dbURL := setup(t)
	o, err := Open(ctx, dbURL, queries)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	a1 := Key{Source: "stripe", Account: "acct_A", EventID: "evt_1", ObjectID: "pi_1"}
	check := func(what string, got, want int, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", what, got, err, want)
		}
	}
	n, err := o.EventRows(ctx, a1)
	check("EventRows(acct_A evt_1)", n, 1, err)
	n, err = o.EventRows(ctx, Key{Source: "stripe", Account: "acct_C", EventID: "evt_1"})
	check("EventRows(acct_C evt_1)", n, 0, err)
	n, err = o.EventRows(ctx, Key{Source: "github", Account: "acct_A", EventID: "evt_1"})
	check("EventRows(github)", n, 0, err)
	n, err = o.Effects(ctx, a1)
	check("Effects(acct_A evt_1)", n, 2, err)
	n, err = o.Effects(ctx, Key{Source: "stripe", Account: "acct_B", EventID: "evt_1"})
	check("Effects(acct_B evt_1)", n, 1, err)
	n, err = o.ObjectEffects(ctx, "stripe", "acct_A", "pi_1")
	check("ObjectEffects(pi_1)", n, 3, err)

	v, s, found, err := o.Object(ctx, "stripe", "acct_A", "sub_1")
	if err != nil || !found || v != 3 || s != "active" {
		t.Errorf("Object(sub_1) = %d %q %v %v", v, s, found, err)
	}
	v, s, found, err = o.Object(ctx, "stripe", "acct_A", "sub_2")
	if err != nil || !found || v != 0 || s != "" {
		t.Errorf("Object(sub_2 with NULLs) = %d %q %v %v", v, s, found, err)
	}
	if _, _, found, err = o.Object(ctx, "stripe", "acct_B", "sub_1"); err != nil || found {
		t.Errorf("Object(other account) found=%v err=%v", found, err)
	}
	if _, _, _, err = o.Object(ctx, "stripe", "acct_A", "sub_dup"); err == nil || !strings.Contains(err.Error(), "2 rows") {
		t.Errorf("Object(sub_dup) err = %v", err)
	}
	ps, found, err := o.Payment(ctx, "stripe", "acct_A", "pi_1")
	if err != nil || !found || ps != "succeeded" {
		t.Errorf("Payment(pi_1) = %q %v %v", ps, found, err)
	}
	if _, found, err = o.Payment(ctx, "stripe", "acct_A", "pi_404"); err != nil || found {
		t.Errorf("Payment(absent) found=%v err=%v", found, err)
	}

	snap := o.Snapshot(ctx, Key{Source: "stripe", Account: "acct_A", EventID: "evt_1", ObjectID: "sub_1"})
	if len(snap) != 5 {
		t.Fatalf("Snapshot has %d results, want 5", len(snap))
	}
	obj := snap[3]
	if obj.Query != "object" || obj.Error != "" || len(obj.Rows) != 1 || obj.Rows[0][0] != "3" || obj.Rows[0][1] != "active" ||
		obj.Columns[0] != "version" || obj.Params["$4 object ID"] != "sub_1" || len(obj.Params) != 2 {
		t.Errorf("Snapshot object = %+v", obj)
	}
	if snap[1].Query != "effects" || snap[1].Rows[0][0] != "2" {
		t.Errorf("Snapshot effects = %+v", snap[1])
	}
}

func TestNotConfigured(t *testing.T) {
	ctx, dbURL := setup(t)
	o, err := Open(ctx, dbURL, targetfile.Queries{EventRows: queries.EventRows, Effects: queries.Effects})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, _, _, err := o.Object(ctx, "s", "a", "o"); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("Object err = %v, want ErrNotConfigured", err)
	}
	if _, _, err := o.Payment(ctx, "s", "a", "o"); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("Payment err = %v, want ErrNotConfigured", err)
	}
	if _, err := o.ObjectEffects(ctx, "s", "a", "o"); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("ObjectEffects err = %v, want ErrNotConfigured", err)
	}
	if o.Has(QObject) || !o.Has(QEffects) || len(o.Snapshot(ctx, Key{})) != 2 {
		t.Error("Has/Snapshot disagree with the configured queries")
	}
}

// TestOpenChecksEveryQuery: each bad query is reported by name, all at once.
func TestOpenChecksEveryQuery(t *testing.T) {
	ctx, dbURL := setup(t)
	bad := targetfile.Queries{
		EventRows:     "SELECT count(*) FROM no_such_table WHERE event_id=$3",
		Effects:       "SELECT count(*), 1 FROM ledger_entries WHERE event_id=$3",
		ObjectEffects: "SELECT count(*) FROM ledger_entries WHERE object_id=$4 AND amount > $5",
		Object:        "SELECT version, status, 1 FROM subscriptions WHERE object_id=$4",
		Payment:       "SELEC status FROM payments WHERE payment_id=$4",
	}
	_, err := Open(ctx, dbURL, bad)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`target.observe.postgres.queries.event_rows: does not prepare: ERROR: relation "no_such_table" does not exist (SQLSTATE 42P01)`,
		"target.observe.postgres.queries.effects: must return 1 column(s) (count), returns 2",
		"target.observe.postgres.queries.object_effects: parameter $5 is out of range $1..$4",
		"target.observe.postgres.queries.object: must return 1 or 2 columns (version[, status]), returns 3",
		`target.observe.postgres.queries.payment: does not prepare: ERROR: syntax error at or near "SELEC" (SQLSTATE 42601)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	var pe *pgconn.PgError
	if !errors.Is(err, ErrInvalidQuery) || errors.Is(err, ErrUnreachable) || !errors.As(err, &pe) {
		t.Errorf("bad queries: err wraps ErrInvalidQuery %v, ErrUnreachable %v, a PgError %v; want true, false, true",
			errors.Is(err, ErrInvalidQuery), errors.Is(err, ErrUnreachable), errors.As(err, &pe))
	}
	if _, err := Open(ctx, "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=1", queries); !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrInvalidQuery) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unreachable database: err = %v (must wrap ErrUnreachable, without the password)", err)
	}
	if _, err := Open(ctx, "postgres://u:hunter2@[bad", queries); !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("invalid URL: err = %v (must fail without the password)", err)
	}
}
