package mysqlstore_test

import (
	"context"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

func databaseExists(t *testing.T, d *mysqlstore.DB, name string) bool {
	t.Helper()
	rows, err := d.Query(context.Background(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = $1", name)
	if err != nil {
		t.Fatal(err)
	}
	return rows.Values[0][0] == int64(1)
}

func TestProvisionAndDrop(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	server := mysqltest.Server(t)
	// The server URL's own database and parameters: the new URL keeps the
	// parameters and names the new database.
	su, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	q := su.Query()
	q.Set("parseTime", "true")
	su.RawQuery = q.Encode()
	dbURL, drop, err := mysqlstore.Provision(ctx, su.String())
	if err != nil {
		t.Fatal(err)
	}
	du, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(du.Path, "/")
	if !regexp.MustCompile(`^hookcert_[0-9a-f]{16}$`).MatchString(name) || du.Query().Get("parseTime") != "true" || du.User.String() != su.User.String() || du.Host != su.Host {
		t.Fatalf("database URL %s from server %s", dbURL, su)
	}
	admin := harness(t, server, sqlstore.Timeouts{})
	if !databaseExists(t, admin, name) {
		t.Fatalf("%s was not created", name)
	}
	// Two provisions never share a database.
	other, dropOther, err := mysqlstore.Provision(ctx, server)
	if err != nil || other == dbURL {
		t.Fatalf("second database %s, %v", other, err)
	}
	if err := dropOther(ctx); err != nil {
		t.Fatal(err)
	}

	d, err := mysqlstore.Open(ctx, dbURL, sqlstore.Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, d, "CREATE TABLE ledger (id int)")
	d.Close()
	// A receiver's transaction left open would make DROP DATABASE wait for
	// its metadata lock: drop kills the sessions first.
	rc, _ := receiverSession(t, receiverPool(t, dbURL))
	tx, err := rc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	if e := time.Since(start); e > 5*time.Second {
		t.Errorf("drop took %s", e)
	}
	if databaseExists(t, admin, name) {
		t.Errorf("%s is still there", name)
	}
	if err := rc.PingContext(ctx); err == nil {
		t.Error("the receiver's session survived the drop")
	}
	// Safe to call again: the first call's result.
	if err := drop(ctx); err != nil {
		t.Errorf("second drop: %v", err)
	}
}

func TestProvisionErrors(t *testing.T) {
	ctx := t.Context()
	const pw = "s3cret-pw"
	for raw, want := range map[string]string{
		"postgres://u:" + pw + "@127.0.0.1/x": "must be mysql:// or mariadb://",
		"mysql://u:" + pw + "@127.0.0.1:1/":   "mysqlstore: provision: mysqlstore: connect to 127.0.0.1:1/",
	} {
		_, _, err := mysqlstore.Provision(ctx, raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), pw) {
			t.Errorf("Provision(%s) = %v, want %q", strings.ReplaceAll(raw, pw, "***"), err, want)
		}
	}
}

func TestSchema(t *testing.T) {
	ctx := t.Context()
	_, d := newDB(t)
	if line, err := d.Script(ctx, `
CREATE TABLE webhook_events (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  source varchar(32) NOT NULL,
  event_id varchar(255) NOT NULL,
  payload json,
  UNIQUE KEY event_key (source, event_id),
  KEY by_payload_time (id, source)
) ENGINE=InnoDB;
CREATE TABLE ledger_entries (
  id bigint NOT NULL AUTO_INCREMENT,
  src varchar(32) NOT NULL,
  evt varchar(255) NOT NULL,
  amount decimal(10,2),
  PRIMARY KEY (id),
  CONSTRAINT ledger_event FOREIGN KEY (src, evt) REFERENCES webhook_events (source, event_id)
) ENGINE=InnoDB;
CREATE VIEW recent AS SELECT id FROM webhook_events;
CREATE DATABASE IF NOT EXISTS hookcert_schema_other;
CREATE TABLE IF NOT EXISTS hookcert_schema_other.elsewhere (id int PRIMARY KEY);
`); err != nil {
		t.Fatalf("line %d: %v", line, err)
	}
	t.Cleanup(func() { _ = d.Exec(context.Background(), "DROP DATABASE IF EXISTS hookcert_schema_other") })
	tables, err := mysqlstore.Schema(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	// Types are as the server writes them: MySQL 8 drops integer widths.
	norm := regexp.MustCompile(`(int)\(\d+\)`)
	for i := range tables {
		for j := range tables[i].Columns {
			tables[i].Columns[j].Type = norm.ReplaceAllString(tables[i].Columns[j].Type, "$1")
		}
	}
	want := []mysqlstore.Table{
		{
			Name: "ledger_entries",
			Columns: []mysqlstore.Column{{Name: "id", Type: "bigint"}, {Name: "src", Type: "varchar(32)"},
				{Name: "evt", Type: "varchar(255)"}, {Name: "amount", Type: "decimal(10,2)"}},
			Keys: []mysqlstore.Key{{Name: "PRIMARY", Columns: []string{"id"}, Primary: true}},
			ForeignKeys: []mysqlstore.ForeignKey{{Name: "ledger_event", Columns: []string{"src", "evt"}, RefSchema: d.Database(),
				RefTable: "webhook_events", RefColumns: []string{"source", "event_id"}}},
		},
		{
			Name: "webhook_events",
			Columns: []mysqlstore.Column{{Name: "id", Type: "bigint"}, {Name: "source", Type: "varchar(32)"},
				{Name: "event_id", Type: "varchar(255)"}, {Name: "payload", Type: "longtext"}},
			Keys: []mysqlstore.Key{{Name: "event_key", Columns: []string{"source", "event_id"}},
				{Name: "PRIMARY", Columns: []string{"id"}, Primary: true}},
		},
	}
	// MariaDB stores JSON as LONGTEXT (with a check); MySQL 8 has a json type.
	if len(tables) == 2 && tables[1].Columns[3].Type == "json" {
		want[1].Columns[3].Type = "json"
	}
	if !reflect.DeepEqual(tables, want) {
		t.Errorf("Schema =\n%+v\nwant\n%+v", tables, want)
	}
	su, err := url.Parse(mysqltest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	su.Path = "/"
	noDB := harness(t, su.String(), sqlstore.Timeouts{})
	if _, err := mysqlstore.Schema(ctx, noDB); err == nil || !strings.Contains(err.Error(), "names no database") {
		t.Errorf("Schema without a database: %v", err)
	}
}
