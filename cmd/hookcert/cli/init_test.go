package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// runMain runs the command line in process.
func runMain(args ...string) (int, string) {
	var out bytes.Buffer
	code := Main(args, &out, &out)
	return code, out.String()
}

// proposedQueries reads observe.postgres of a proposed target file.
func proposedPostgres(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return doc["target"]["observe"].(map[string]any)["postgres"].(map[string]any)
}

func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestInitCertifiesReference is the done-criterion of hookcert init: against
// the reference receiver's database it proposes a target whose queries count
// what the receiver stored, and that target, with what init leaves to fill in
// (the endpoints' paths and secrets, a lifecycle), certifies the reference.
func TestInitCertifiesReference(t *testing.T) {
	dbURL := pgtest.Database(t)
	ctx := t.Context()
	secretA, _ := profiles.GenerateSecret("stripe", rand.Reader)
	secretB, _ := profiles.GenerateSecret("stripe", rand.Reader)
	eps := []reference.Endpoint{
		{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe/acct_A", SecretEnv: "STRIPE_WEBHOOK_SECRET"},
		{Profile: "stripe", Account: "acct_B", Path: "/webhooks/stripe/acct_B", SecretEnv: "STRIPE_WEBHOOK_SECRET_B"},
	}
	t.Setenv("STRIPE_WEBHOOK_SECRET", secretA)
	t.Setenv("STRIPE_WEBHOOK_SECRET_B", secretB)
	running := append([]reference.Endpoint(nil), eps...)
	running[0].Secret, running[1].Secret = secretA, secretB

	// The reference migrates its schema and serves; one event lands.
	app, err := reference.Open(ctx, dbURL, reference.Options{Endpoints: running})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	out := filepath.Join(t.TempDir(), "target.yaml")
	code, msg := runMain("init", "--database-url", dbURL, "--receiver-url", srv.URL, "--out", out)
	if code != ExitOK {
		t.Fatalf("init: exit %d\n%s", code, msg)
	}
	for _, want := range []string{"event table:  processed_webhook_events (event ID event_id, account account_id, source source)",
		"effect table: ledger_entries", "checked: event_rows and effects prepare", "left to fill in:", "export STRIPE_WEBHOOK_SECRET"} {
		if !strings.Contains(msg, want) {
			t.Errorf("init output does not say %q:\n%s", want, msg)
		}
	}
	const eventID = "evt_init_check_1"
	if code, msg := runMain("fire", "--profile", "stripe", "--url", srv.URL+"/webhooks/stripe/acct_A", "--secret", secretA,
		"--account", "acct_A", "--event-type", "customer_cash_balance_transaction.created", "--event-id", eventID); code != ExitOK {
		t.Fatalf("fire: exit %d\n%s", code, msg)
	}
	srv.Close()
	app.Close()

	pg := proposedPostgres(t, out)
	if pg["event_table"] != "processed_webhook_events" || pg["effect_table"] != "ledger_entries" {
		t.Errorf("tables: event %v, effect %v", pg["event_table"], pg["effect_table"])
	}
	qs := pg["queries"].(map[string]any)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Each query counts the delivered event once, and nothing for another
	// account, source or ID: its parameters are bound to the right columns.
	for _, name := range []string{"event_rows", "effects"} {
		sql := qs[name].(string)
		for _, c := range []struct {
			src, acct, id string
			want          int
		}{
			{"stripe", "acct_A", eventID, 1}, {"stripe", "acct_B", eventID, 0}, {"github", "acct_A", eventID, 0}, {"stripe", "acct_A", "evt_other", 0},
		} {
			if got := count(t, conn, sql, c.src, c.acct, c.id); got != c.want {
				t.Errorf("%s (%s) for (%s, %s, %s) = %d, want %d", name, sql, c.src, c.acct, c.id, got, c.want)
			}
		}
	}

	// What init left: the endpoints (path, account; the secrets are in the
	// variables it named), a lifecycle and crash. observe.postgres stays as
	// proposed.
	b, _ := os.ReadFile(out)
	var doc map[string]map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "endpoints.yaml")
	cfg, _ := yaml.Marshal(reference.Config{Endpoints: eps})
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := doc["target"]
	tg["base_url"] = "http://{{.ListenAddr}}"
	tg["endpoints"] = []map[string]any{
		{"profile": "stripe", "account": "acct_A", "path": "/webhooks/stripe/acct_A", "secret_env": "STRIPE_WEBHOOK_SECRET"},
		{"profile": "stripe", "account": "acct_B", "path": "/webhooks/stripe/acct_B", "secret_env": "STRIPE_WEBHOOK_SECRET_B"},
	}
	tg["lifecycle"] = map[string]any{
		"command": []string{hookcertBinary(t), "reference", "serve", "--listen", "{{.ListenAddr}}", "--config", cfgPath},
		"env":     map[string]string{"HOOKCERT_DATABASE_URL": dbURL},
		"ready":   map[string]any{"http": "/healthz", "timeout": "30s"},
	}
	tg["capabilities"] = append(tg["capabilities"].([]any), "crash")
	filled, _ := yaml.Marshal(doc)
	if err := os.WriteFile(out, filled, 0o600); err != nil {
		t.Fatal(err)
	}
	reportDir := t.TempDir()
	code, msg = runMain("certify", "--config", out, "--report-dir", reportDir, "--seed", "5")
	if code != ExitOK {
		t.Fatalf("certify with the proposed target: exit %d\n%s", code, msg)
	}
	res, err := reports.ReadResults(filepath.Join(reportDir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	// Lock gating (DEDUP-1), the cut connection (ATOMIC-3) and the crash
	// (ATOMIC-1, ACK-1) were all judged through the proposed tables.
	got := map[string]reports.Status{}
	for _, g := range res.Guarantees {
		got[g.ID] = g.Status
	}
	for _, id := range []string{"DEDUP-1", "DEDUP-2", "DEDUP-3", "ATOMIC-1", "ATOMIC-3", "ACK-1", "ACK-3"} {
		if got[id] != reports.StatusPassed {
			t.Errorf("%s: %s, want passed", id, got[id])
		}
	}
	if res.Summary.Failed != 0 || res.Summary.Error != 0 || res.Summary.Passed < 10 {
		t.Errorf("summary %+v", res.Summary)
	}
}

// TestInitSchemas: the tables and columns init recognises in receivers laid
// out otherwise than the reference, each query bound only to columns that
// exist; and a schema without an event table gets a skeleton and exit 1.
func TestInitSchemas(t *testing.T) {
	cases := []struct {
		name       string
		ddl        string
		code       int
		eventTable string
		eventRows  string
		effects    string
		file       []string // also in the file
		// rows are inserted before the proposed queries run; counts are what
		// event_rows and effects must count for each key.
		rows   string
		counts []keyCount
	}{
		{
			name: "stripe-shop: account and mode, no source",
			ddl: `CREATE TABLE stripe_events (mode text, account text, event_id text, payload jsonb, PRIMARY KEY (mode, account, event_id));
			      CREATE TABLE ledger (id bigserial PRIMARY KEY, mode text, account text, payment_id text, event_id text NOT NULL);
			      CREATE TABLE payments (id text PRIMARY KEY, account text, status text)`,
			eventTable: "stripe_events",
			eventRows:  "SELECT count(*) FROM stripe_events WHERE account = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM ledger WHERE account = $2 AND event_id = $3",
			file:       []string{"primary key over (mode, account, event_id)", "# object_effects: SELECT count(*) FROM ledger WHERE account = $2 AND payment_id = $4"},
		},
		{
			name: "GitHub deliveries, effects by foreign key",
			ddl: `CREATE TABLE github_deliveries (delivery_id text PRIMARY KEY, received_at timestamptz);
			      CREATE TABLE issue_activity (id bigserial PRIMARY KEY, delivery text NOT NULL REFERENCES github_deliveries (delivery_id), issue int);
			      CREATE TABLE audit_log (delivery_id text)`,
			eventTable: "github_deliveries",
			eventRows:  "SELECT count(*) FROM github_deliveries WHERE delivery_id = $3",
			effects:    "SELECT count(*) FROM issue_activity WHERE delivery = $3",
			file:       []string{"a foreign key issue_activity(delivery) references github_deliveries(delivery_id)"},
		},
		{
			name: "another schema, a mixed-case table keyed by id",
			ddl: `CREATE SCHEMA hooks;
			      CREATE TABLE hooks."WebhookEvents" (id text PRIMARY KEY, tenant_id text);
			      CREATE TABLE hooks.credits (id bigserial PRIMARY KEY, tenant_id text, webhookevent_id text)`,
			eventTable: "hooks.WebhookEvents",
			eventRows:  `SELECT count(*) FROM hooks."WebhookEvents" WHERE tenant_id = $2 AND id = $3`,
			effects:    `SELECT count(*) FROM hooks.credits WHERE tenant_id = $2 AND webhookevent_id = $3`,
		},
		{
			name: "no unique key: proposed with a warning",
			ddl: `CREATE TABLE webhook_events (source text, account_id text, event_id text);
			      CREATE TABLE ledger_entries (source text, account_id text, event_id text)`,
			eventTable: "webhook_events",
			eventRows:  "SELECT count(*) FROM webhook_events WHERE source = $1 AND account_id = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM ledger_entries WHERE source = $1 AND account_id = $2 AND event_id = $3",
			file:       []string{"WARNING: webhook_events has no unique key over event_id"},
		},
		{
			// The account column is named like neither list: the unique key
			// says it is part of the event key, so every query binds it.
			name: "key over (source, provider_account, event_id)",
			ddl: `CREATE TABLE webhook_events (id bigserial PRIMARY KEY, source text NOT NULL, provider_account text NOT NULL,
			        event_id text NOT NULL, payload jsonb, UNIQUE (source, provider_account, event_id));
			      CREATE TABLE ledger_entries (id bigserial PRIMARY KEY, source text NOT NULL, provider_account text NOT NULL,
			        event_id text NOT NULL, invoice_id text, amount bigint)`,
			eventTable: "webhook_events",
			eventRows:  "SELECT count(*) FROM webhook_events WHERE source = $1 AND provider_account = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM ledger_entries WHERE source = $1 AND provider_account = $2 AND event_id = $3",
			file: []string{"unique index webhook_events_source_provider_account_event_id_key over (source, provider_account, event_id)",
				"payload_present: SELECT payload IS NOT NULL FROM webhook_events WHERE source = $1 AND provider_account = $2 AND event_id = $3",
				"object_effects: SELECT count(*) FROM ledger_entries WHERE source = $1 AND provider_account = $2 AND invoice_id = $4"},
			// One event ID under two accounts: each account counts its own.
			rows: `INSERT INTO webhook_events (source, provider_account, event_id) VALUES ('stripe', 'acct_A', 'evt_1'), ('stripe', 'acct_B', 'evt_1');
			       INSERT INTO ledger_entries (source, provider_account, event_id, amount) VALUES ('stripe', 'acct_A', 'evt_1', 5), ('stripe', 'acct_B', 'evt_1', 5)`,
			counts: []keyCount{{"stripe", "acct_A", "evt_1", 1}, {"stripe", "acct_B", "evt_1", 1}, {"stripe", "acct_C", "evt_1", 0}, {"github", "acct_A", "evt_1", 0}},
		},
		{
			// account_id is the shop's own foreign key, not the provider's
			// account: the key's stripe_account wins, in the effect table too.
			name: "the key's account column over one found by name",
			ddl: `CREATE TABLE stripe_webhook_events (event_id text NOT NULL, stripe_account text NOT NULL, account_id bigint,
			        PRIMARY KEY (stripe_account, event_id));
			      CREATE TABLE credit_entries (id bigserial PRIMARY KEY, account_id bigint, stripe_account text, event_id text)`,
			eventTable: "stripe_webhook_events",
			eventRows:  "SELECT count(*) FROM stripe_webhook_events WHERE stripe_account = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM credit_entries WHERE stripe_account = $2 AND event_id = $3",
			rows: `INSERT INTO stripe_webhook_events VALUES ('evt_1', 'acct_A', 7), ('evt_1', 'acct_B', 7);
			       INSERT INTO credit_entries (account_id, stripe_account, event_id) VALUES (7, 'acct_A', 'evt_1')`,
			counts: []keyCount{{"stripe", "acct_A", "evt_1", 1}, {"stripe", "acct_C", "evt_1", 0}},
		},
		{
			// The Django example's tables (manage.py sqlmigrate): a unique
			// constraint over (source, account, event_id), effects in a ledger.
			name: "Django inbox and ledger",
			ddl: `CREATE TABLE "webhooks_inboxevent" ("id" bigserial NOT NULL PRIMARY KEY, "source" varchar(64) NOT NULL,
			        "account" varchar(64) NOT NULL, "event_id" varchar(255) NOT NULL, "event_type" varchar(255) NOT NULL,
			        "payload" jsonb NULL, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL CHECK ("attempts" >= 0));
			      ALTER TABLE "webhooks_inboxevent" ADD CONSTRAINT "inbox_event_key" UNIQUE ("source", "account", "event_id");
			      CREATE TABLE "billing_ledgerentry" ("id" bigserial NOT NULL PRIMARY KEY, "source" varchar(64) NOT NULL,
			        "account" varchar(64) NOT NULL, "event_id" varchar(255) NOT NULL, "kind" varchar(32) NOT NULL,
			        "invoice_id" varchar(255) NOT NULL, "amount" bigint NOT NULL)`,
			eventTable: "webhooks_inboxevent",
			eventRows:  "SELECT count(*) FROM webhooks_inboxevent WHERE source = $1 AND account = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM billing_ledgerentry WHERE source = $1 AND account = $2 AND event_id = $3",
		},
		{
			// A key part with no parameter is named, never silently dropped.
			name: "a key column that is neither source nor account",
			ddl: `CREATE TABLE webhook_events (livemode boolean NOT NULL, account_id text NOT NULL, event_id text NOT NULL,
			        PRIMARY KEY (livemode, account_id, event_id));
			      CREATE TABLE ledger (id bigserial PRIMARY KEY, event_id text)`,
			eventTable: "webhook_events",
			eventRows:  "SELECT count(*) FROM webhook_events WHERE account_id = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM ledger WHERE event_id = $3",
			file: []string{"WARNING: livemode is part of the event key but is neither its source ($1) nor its account",
				"WARNING: ledger has no account column, so effects cannot be counted per account"},
		},
		{
			name: "no event table",
			ddl:  `CREATE TABLE users (id bigserial PRIMARY KEY, email text UNIQUE)`,
			code: ExitFailed,
			file: []string{"TODO: no table of event keys was found"},
		},
	}
	t.Setenv("STRIPE_WEBHOOK_SECRET", "whsec_stand_in")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbURL := pgtest.Database(t)
			conn, err := pgx.Connect(t.Context(), dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(t.Context(), c.ddl); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "target.yaml")
			code, msg := runMain("init", "--database-url", dbURL, "--out", out)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, msg)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.file {
				if !strings.Contains(string(b), w) {
					t.Errorf("the file does not say %q:\n%s", w, b)
				}
			}
			if c.code != ExitOK {
				return
			}
			if err := targetfile.Validate(b, profiles.IDs()); err != nil {
				t.Errorf("the proposed file does not load: %v\n%s", err, b)
			}
			pg := proposedPostgres(t, out)
			qs := pg["queries"].(map[string]any)
			if pg["event_table"] != c.eventTable || qs["event_rows"] != c.eventRows || qs["effects"] != c.effects {
				t.Errorf("proposed event_table %v\n event_rows %v\n effects %v\nwant %v\n %v\n %v", pg["event_table"], qs["event_rows"], qs["effects"],
					c.eventTable, c.eventRows, c.effects)
			}
			if c.rows == "" {
				return
			}
			if _, err := conn.Exec(t.Context(), c.rows); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"event_rows", "effects"} {
				sql, _ := qs[name].(string)
				for _, k := range c.counts {
					if got := countBound(t, conn, sql, k.src, k.acct, k.id); got != k.want {
						t.Errorf("%s (%s) for (%s, %s, %s) = %d, want %d", name, sql, k.src, k.acct, k.id, got, k.want)
					}
				}
			}
		})
	}
}

// keyCount is how many rows a query must count for one event key.
type keyCount struct {
	src, acct, id string
	want          int
}

// countBound runs a proposed query for one key. PostgreSQL refuses a
// parameter a statement does not use, so the key's parts (plain test
// constants) are written in as literals, where the harness renumbers them.
func countBound(t *testing.T, conn *pgx.Conn, sql, src, acct, id string) int {
	t.Helper()
	lit := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	return count(t, conn, strings.NewReplacer("$1", lit(src), "$2", lit(acct), "$3", lit(id)).Replace(sql))
}

// TestInitUsage: an existing file is kept without --force, and a database that
// does not answer is exit 3, its password never printed.
func TestInitUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(out, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, msg := runMain("init", "--database-url", "postgres://u:s3cret-pw@127.0.0.1:1/x", "--out", out); code != ExitUsage || !strings.Contains(msg, "--force") {
		t.Errorf("existing --out: exit %d\n%s", code, msg)
	}
	code, msg := runMain("init", "--database-url", "postgres://u:s3cret-pw@127.0.0.1:1/x?connect_timeout=2", "--out", out, "--force")
	if code != ExitUnreachable || strings.Contains(msg, "s3cret-pw") {
		t.Errorf("unreachable database: exit %d\n%s", code, msg)
	}
	if code, msg := runMain("init", "--database-url", "postgres://127.0.0.1/x", "--profile", "strpe"); code != ExitUsage || !strings.Contains(msg, "unknown profile") {
		t.Errorf("bad profile: exit %d\n%s", code, msg)
	}
	if b, _ := os.ReadFile(out); string(b) != "mine" {
		t.Errorf("the existing file was changed: %q", b)
	}
}

// TestInitSkipsUnwrittenTables: on a database the receiver has handled
// events on, a table it creates but never writes (ledger_entries, which its
// name would otherwise put first) is not proposed for effects, and the file
// says it looked unwritten.
func TestInitSkipsUnwrittenTables(t *testing.T) {
	t.Setenv("STRIPE_WEBHOOK_SECRET", "whsec_stand_in")
	dbURL := pgtest.Database(t)
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `CREATE TABLE webhook_events (event_id text PRIMARY KEY);
		CREATE TABLE ledger_entries (id bigserial PRIMARY KEY, event_id text);
		CREATE TABLE order_changes (id bigserial PRIMARY KEY, event_id text);
		INSERT INTO webhook_events VALUES ('evt_1');
		INSERT INTO order_changes (event_id) VALUES ('evt_1')`); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	out := filepath.Join(t.TempDir(), "target.yaml")
	if code, msg := runMain("init", "--database-url", dbURL, "--out", out); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	qs := proposedPostgres(t, out)["queries"].(map[string]any)
	if eff, _ := qs["effects"].(string); !strings.Contains(eff, "order_changes") {
		t.Errorf("effects = %q, want the table the receiver wrote (order_changes)\n%s", eff, b)
	}
	if !strings.Contains(string(b), "Tables that looked unwritten (no rows, none ever inserted or updated): ledger_entries.") {
		t.Errorf("the file does not name ledger_entries as unwritten:\n%s", b)
	}
}
