package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// proposedMySQL reads observe.mysql of a proposed target file.
func proposedMySQL(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	obs, _ := doc["target"]["observe"].(map[string]any)
	my, ok := obs["mysql"].(map[string]any)
	if !ok {
		t.Fatalf("no observe.mysql in\n%s", b)
	}
	return my
}

// TestInitMySQLSchemas: against MariaDB (or MySQL) schemas laid out as real
// receivers lay them out, init proposes observe.mysql with queries in
// MySQL's dialect that the loader accepts, that prepare on the server and
// that count what the tables hold, each bound only to columns that exist.
func TestInitMySQLSchemas(t *testing.T) {
	cases := []struct {
		name       string
		ddl        string
		code       int
		eventTable string // "" : none proposed
		eventRows  string
		effects    string
		file       []string // also in the file
		rows       string
		counts     []keyCount
	}{
		{
			name: "webhook_events keyed by (source, account, event_id), a ledger by name",
			ddl: `CREATE TABLE webhook_events (id bigint AUTO_INCREMENT PRIMARY KEY, source varchar(32) NOT NULL,
			        account varchar(64) NOT NULL, event_id varchar(255) NOT NULL, payload json,
			        UNIQUE KEY event_key (source, account, event_id));
			      CREATE TABLE ledger_entries (id bigint AUTO_INCREMENT PRIMARY KEY, source varchar(32) NOT NULL,
			        account varchar(64) NOT NULL, event_id varchar(255) NOT NULL, payment_id varchar(64), amount bigint)`,
			eventTable: "webhook_events",
			eventRows:  "SELECT count(*) FROM webhook_events WHERE source = $1 AND account = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM ledger_entries WHERE source = $1 AND account = $2 AND event_id = $3",
			file: []string{"    mysql:\n", "unique index event_key over (source, account, event_id)",
				"# payload_present: SELECT payload IS NOT NULL FROM webhook_events WHERE source = $1 AND account = $2 AND event_id = $3",
				"# object_effects: SELECT count(*) FROM ledger_entries WHERE source = $1 AND account = $2 AND payment_id = $4",
				"capabilities: [lock-gating, connection-loss]", "Accounts in webhook_events.account today: acct_A, acct_B."},
			rows: `INSERT INTO webhook_events (source, account, event_id) VALUES ('stripe', 'acct_A', 'evt_1'), ('stripe', 'acct_B', 'evt_1');
			       INSERT INTO ledger_entries (source, account, event_id, amount) VALUES ('stripe', 'acct_A', 'evt_1', 5), ('stripe', 'acct_B', 'evt_1', 5)`,
			counts: []keyCount{{"stripe", "acct_A", "evt_1", 1}, {"stripe", "acct_C", "evt_1", 0}, {"github", "acct_A", "evt_1", 0}, {"stripe", "acct_A", "evt_2", 0}},
		},
		{
			name: "GitHub deliveries, effects by foreign key",
			ddl: `CREATE TABLE github_deliveries (delivery_id varchar(64) PRIMARY KEY, received_at datetime) ENGINE=InnoDB;
			      CREATE TABLE issue_activity (id bigint AUTO_INCREMENT PRIMARY KEY, delivery varchar(64) NOT NULL, issue int,
			        FOREIGN KEY (delivery) REFERENCES github_deliveries (delivery_id)) ENGINE=InnoDB;
			      CREATE TABLE audit_log (delivery_id varchar(64))`,
			eventTable: "github_deliveries",
			eventRows:  "SELECT count(*) FROM github_deliveries WHERE delivery_id = $3",
			effects:    "SELECT count(*) FROM issue_activity WHERE delivery = $3",
			file:       []string{"primary key over (delivery_id)", "a foreign key issue_activity(delivery) references github_deliveries(delivery_id)"},
			rows: `INSERT INTO github_deliveries VALUES ('d1', NOW()), ('d2', NOW());
			       INSERT INTO issue_activity (delivery, issue) VALUES ('d1', 7), ('d2', 8)`,
			counts: []keyCount{{"github", "", "d1", 1}, {"github", "", "d3", 0}},
		},
		{
			// Names MySQL must backquote: init writes them so, and cannot name
			// such a table in event_table (no lock-gating proposed).
			name: "names that need backquotes",
			ddl: "CREATE TABLE `webhook-events` (id varchar(64) PRIMARY KEY, `tenant_id` varchar(64));\n" +
				"CREATE TABLE `Credits` (id bigint AUTO_INCREMENT PRIMARY KEY, tenant_id varchar(64), `webhook-event_id` varchar(64), `order` int)",
			eventRows: "SELECT count(*) FROM `webhook-events` WHERE tenant_id = $2 AND id = $3",
			effects:   "SELECT count(*) FROM Credits WHERE tenant_id = $2 AND `webhook-event_id` = $3",
			file:      []string{"capabilities: [connection-loss]"},
			rows: "INSERT INTO `webhook-events` VALUES ('evt_1', 't1');\n" +
				"INSERT INTO Credits (tenant_id, `webhook-event_id`) VALUES ('t1', 'evt_1'), ('t1', 'evt_9')",
			counts: []keyCount{{"stripe", "t1", "evt_1", 1}, {"stripe", "t2", "evt_1", 0}},
		},
		{
			name: "no unique key: proposed with a warning",
			ddl: `CREATE TABLE webhook_events (source varchar(32), account_id varchar(64), event_id varchar(64));
			      CREATE TABLE ledger_entries (source varchar(32), account_id varchar(64), event_id varchar(64))`,
			eventTable: "webhook_events",
			eventRows:  "SELECT count(*) FROM webhook_events WHERE source = $1 AND account_id = $2 AND event_id = $3",
			effects:    "SELECT count(*) FROM ledger_entries WHERE source = $1 AND account_id = $2 AND event_id = $3",
			file:       []string{"WARNING: webhook_events has no unique key over event_id"},
		},
		{
			name: "no event table",
			ddl:  `CREATE TABLE users (id bigint AUTO_INCREMENT PRIMARY KEY, email varchar(255) UNIQUE)`,
			code: ExitFailed,
			file: []string{"    mysql:\n", "TODO: no table of event keys was found"},
		},
	}
	t.Setenv("STRIPE_WEBHOOK_SECRET", "whsec_stand_in")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			dbURL := mysqltest.Database(t)
			db, err := mysqlstore.Open(ctx, dbURL, sqlstore.Timeouts{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if line, err := db.Script(ctx, c.ddl); err != nil {
				t.Fatalf("schema, line %d: %v", line, err)
			}
			if c.rows != "" {
				if line, err := db.Script(ctx, c.rows); err != nil {
					t.Fatalf("rows, line %d: %v", line, err)
				}
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
				if !strings.Contains(msg, "fill in observe.mysql by hand") {
					t.Errorf("exit message: %s", msg)
				}
				return
			}
			if !strings.Contains(msg, "checked: event_rows and effects prepare against the database") {
				t.Errorf("init output:\n%s", msg)
			}
			if err := targetfile.Validate(b, profiles.IDs()); err != nil {
				t.Errorf("the proposed file does not load: %v\n%s", err, b)
			}
			my := proposedMySQL(t, out)
			qs := my["queries"].(map[string]any)
			gotTable, _ := my["event_table"].(string)
			if gotTable != c.eventTable || qs["event_rows"] != c.eventRows || qs["effects"] != c.effects {
				t.Errorf("proposed event_table %q\n event_rows %v\n effects %v\nwant %q\n %v\n %v", gotTable, qs["event_rows"], qs["effects"],
					c.eventTable, c.eventRows, c.effects)
			}
			if my["url"] != dbURL {
				t.Errorf("url %v, want %s", my["url"], dbURL)
			}
			// Each query prepares on the server as certify will prepare it,
			// and counts the rows of its own key only.
			for _, name := range []string{"event_rows", "effects"} {
				sql, _ := qs[name].(string)
				compact, params, err := targetfile.CompactParams(sql)
				if err != nil {
					t.Fatal(err)
				}
				st, err := db.Prepare(ctx, compact)
				if err != nil {
					t.Errorf("%s (%s) does not prepare: %v", name, sql, err)
					continue
				}
				if st.Params != len(params) || len(st.Columns) != 1 || st.Columns[0].Type != sqlstore.TypeInt {
					t.Errorf("%s (%s): %+v, want %d parameters and one integer column", name, sql, st, len(params))
				}
				for _, k := range c.counts {
					all := []any{k.src, k.acct, k.id}
					var args []any
					for _, p := range params {
						args = append(args, all[p-1])
					}
					rows, err := db.Query(ctx, compact, args...)
					if err != nil {
						t.Fatalf("%s: %v", sql, err)
					}
					if got := rows.Values[0][0]; got != int64(k.want) {
						t.Errorf("%s (%s) for (%s, %s, %s) = %v, want %d", name, sql, k.src, k.acct, k.id, got, k.want)
					}
				}
			}
		})
	}
}

// TestInitMySQLUsage: a URL without a database is a usage error; a server
// that does not answer is exit 3, its password never printed.
func TestInitMySQLUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "target.yaml")
	if code, msg := runMain("init", "--database-url", "mysql://u:s3cret-pw@127.0.0.1:1/", "--out", out); code != ExitUsage ||
		!strings.Contains(msg, "names no database") || strings.Contains(msg, "s3cret-pw") {
		t.Errorf("no database: exit %d\n%s", code, msg)
	}
	if code, msg := runMain("init", "--database-url", "mysql://u:s3cret-pw@127.0.0.1:1/x?timeout=zz", "--out", out); code != ExitUsage ||
		!strings.Contains(msg, `driver parameter "timeout"`) || strings.Contains(msg, "s3cret-pw") {
		t.Errorf("bad parameter: exit %d\n%s", code, msg)
	}
	code, msg := runMain("init", "--database-url", "mariadb://u:s3cret-pw@127.0.0.1:1/x", "--out", out)
	if code != ExitUnreachable || strings.Contains(msg, "s3cret-pw") || !strings.Contains(msg, "127.0.0.1:1/x") {
		t.Errorf("unreachable server: exit %d\n%s", code, msg)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a file was written for a database that was not read")
	}
}
