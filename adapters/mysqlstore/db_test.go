package mysqlstore_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

const eventsDDL = `CREATE TABLE webhook_events (
	id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
	source varchar(32) NOT NULL,
	account varchar(64) NOT NULL,
	event_id varchar(64) NOT NULL,
	handled tinyint(1) NOT NULL DEFAULT 0,
	amount decimal(10,2),
	payload json,
	UNIQUE KEY event_key (source, account, event_id))`

func TestPrepare(t *testing.T) {
	ctx := t.Context()
	_, d := newDB(t)
	mustExec(t, d, eventsDDL)
	if d.Kind() != sqlstore.MySQL || !strings.HasSuffix(d.Where(), "/"+d.Database()) || !strings.HasPrefix(d.Database(), "hookcert_") {
		t.Errorf("kind %s, where %s", d.Kind(), d.Where())
	}
	col := func(name string, typ sqlstore.ColumnType, typeName string) sqlstore.Column {
		return sqlstore.Column{Name: name, Type: typ, TypeName: typeName}
	}
	for _, c := range []struct {
		stmt string
		want sqlstore.Statement
	}{
		{"SELECT COUNT(*) FROM webhook_events WHERE source = $1 AND event_id = $2",
			sqlstore.Statement{Params: 2, Columns: []sqlstore.Column{col("COUNT(*)", sqlstore.TypeInt, "BIGINT")}}},
		// $1 twice: two placeholders on the server, one parameter to hookcert.
		{"SELECT event_id, handled, payload IS NOT NULL AS present FROM webhook_events WHERE event_id = $1 OR account = $1",
			sqlstore.Statement{Params: 1, Columns: []sqlstore.Column{
				col("event_id", sqlstore.TypeText, "VARCHAR"), col("handled", sqlstore.TypeInt, "TINYINT"), col("present", sqlstore.TypeInt, "INT")}}},
		{"SELECT SUM(amount), SUM(id), MAX(source) FROM webhook_events",
			sqlstore.Statement{Params: 0, Columns: []sqlstore.Column{
				col("SUM(amount)", sqlstore.TypeOther, "DECIMAL"), col("SUM(id)", sqlstore.TypeInt, "DECIMAL"), col("MAX(source)", sqlstore.TypeText, "VARCHAR")}}},
		{"SELECT NULL AS nothing", sqlstore.Statement{Params: 0, Columns: []sqlstore.Column{col("nothing", sqlstore.TypeUnknown, "NULL")}}},
		// Not a read: prepared, never run.
		{"INSERT INTO webhook_events (source, account, event_id) VALUES ($1, $2, $3)", sqlstore.Statement{Params: 3}},
		{"DELETE FROM webhook_events WHERE event_id = $1", sqlstore.Statement{Params: 1}},
	} {
		got, err := d.Prepare(ctx, c.stmt)
		if err != nil {
			t.Errorf("Prepare(%s): %v", c.stmt, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Prepare(%s)\n = %+v\nwant %+v", c.stmt, got, c.want)
		}
	}
	rows, err := d.Query(ctx, "SELECT COUNT(*) FROM webhook_events")
	if err != nil || rows.Values[0][0] != int64(0) {
		t.Errorf("the prepared INSERT ran: %v, %v", rows, err)
	}

	db := d.Database()
	for stmt, want := range map[string]string{
		"SELECT COUNT(*) FROM nope WHERE event_id = $1":      "ERROR 1146 (42S02): Table '" + db + ".nope' doesn't exist",
		"SELECT nocolumn FROM webhook_events":                "ERROR 1054 (42S22): Unknown column 'nocolumn' in '",
		"SELEKT 1":                                           "ERROR 1064 (42000): You have an error in your SQL syntax",
		"SELECT COUNT(*) FROM webhook_events WHERE id = ?":   "a ? placeholder at offset 47",
		"SELECT COUNT(*) FROM webhook_events WHERE id = '$1": "unterminated ' quote",
		"SELECT count(*)::bigint FROM webhook_events":        "ERROR 1064 (42000)",
	} {
		_, err := d.Prepare(ctx, stmt)
		if !errors.Is(err, sqlstore.ErrStatement) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Prepare(%s) = %v, want ErrStatement %q", stmt, err, want)
		}
		if errors.Is(err, sqlstore.ErrTimeout) {
			t.Errorf("Prepare(%s): a refusal counted as a timeout: %v", stmt, err)
		}
	}
	var me *mysql.MySQLError
	if _, err := d.Prepare(ctx, "SELECT * FROM nope"); !errors.As(err, &me) || me.Number != 1146 {
		t.Errorf("the server's error is not kept: %v", err)
	}
}

// A server that is gone is the database's state, never the statement's fault.
func TestLostServerIsNotTheStatement(t *testing.T) {
	ctx := t.Context()
	u, d := newDB(t)
	mustExec(t, d, eventsDDL)
	cfg, err := mysqlstore.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, cfg.Addr)
	lost := harness(t, p.via(t, u), sqlstore.Timeouts{Connect: time.Second, Statement: time.Second})
	if _, err := lost.Prepare(ctx, "SELECT COUNT(*) FROM webhook_events"); err != nil {
		t.Fatal(err)
	}
	// Frozen: no answer at all; the client-side bound ends the wait.
	p.frozen.Store(true)
	start := time.Now()
	_, err = lost.Query(ctx, "SELECT COUNT(*) FROM webhook_events")
	if !errors.Is(err, sqlstore.ErrTimeout) || errors.Is(err, sqlstore.ErrStatement) || !strings.Contains(err.Error(), "no answer from") {
		t.Errorf("a silent server: %v", err)
	}
	if e := time.Since(start); e < 2*time.Second || e > 5*time.Second {
		t.Errorf("gave up after %s, want statement + connect timeout (2s)", e)
	}
	p.cut()
	for _, f := range []func() error{
		func() error { _, err := lost.Prepare(ctx, "SELECT COUNT(*) FROM webhook_events"); return err },
		func() error { _, err := lost.Query(ctx, "SELECT COUNT(*) FROM webhook_events"); return err },
		func() error { return lost.Exec(ctx, "DELETE FROM webhook_events") },
	} {
		if err := f(); err == nil || errors.Is(err, sqlstore.ErrStatement) {
			t.Errorf("a lost server: %v", err)
		}
	}

	// A session killed in the middle of a statement.
	errs := make(chan error, 1)
	go func() { _, err := d.Query(ctx, "SELECT SLEEP(3)"); errs <- err }()
	var id int64
	eventually(t, "the harness's SLEEP shows", func() (bool, string) {
		rows, err := d.Query(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(3)'")
		if err != nil || len(rows.Values) != 1 {
			return false, "absent"
		}
		id = rows.Values[0][0].(int64)
		return true, ""
	})
	if err := d.Exec(ctx, "KILL CONNECTION $1", id); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err == nil || errors.Is(err, sqlstore.ErrStatement) || errors.Is(err, sqlstore.ErrTimeout) {
		t.Errorf("a killed session: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	server := mysqltest.Server(t)
	cfg, err := mysqlstore.ParseURL(server)
	if err != nil {
		t.Fatal(err)
	}
	const pw = "s3cret-pw"
	for raw, want := range map[string]string{
		"mysql://nobody_here:" + pw + "@" + cfg.Addr + "/test": "ERROR 1045 (28000): Access denied for user 'nobody_here'",
		"mysql://root:" + pw + "@127.0.0.1:1/test":             "connect to 127.0.0.1:1/test: ",
		"mysql://root@" + cfg.Addr + "/no_such_db":             "ERROR 1049 (42000): Unknown database 'no_such_db'",
		"postgres://root:" + pw + "@" + cfg.Addr + "/test":     "must be mysql:// or mariadb://",
	} {
		_, err := mysqlstore.Open(t.Context(), raw, sqlstore.Timeouts{Connect: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), pw) {
			t.Errorf("Open(%s) = %v, want %q", strings.ReplaceAll(raw, pw, "***"), err, want)
		}
	}
}

func TestQueryNormalizesValues(t *testing.T) {
	ctx := t.Context()
	_, d := newDB(t)
	mustExec(t, d, `CREATE TABLE v (
		id bigint PRIMARY KEY, big bigint unsigned, flag boolean, small tinyint, price decimal(10,2), ratio double,
		name varchar(20), kind enum('a','b'), bits bit(3), at datetime, body blob, nothing int)`,
		`INSERT INTO v VALUES (1, 18446744073709551615, true, -3, 12.50, 1.5, 'café', 'b', b'101', '2026-01-02 03:04:05', 'raw', NULL)`,
		`INSERT INTO v VALUES (2, 7, false, 4, 0.25, -2, 'x', 'a', b'0', '2026-01-02 03:04:05', '', NULL)`)
	want := []any{int64(1), "18446744073709551615", int64(1), int64(-3), "12.50", 1.5, "café", "b", int64(5), "2026-01-02 03:04:05", "raw", nil,
		int64(2), int64(1), int64(1), "12.75", int64(3)}
	const q = `SELECT id, big, flag, small, price, ratio, name, kind, bits, at, body, nothing,
		COUNT(*) OVER (), flag IS NOT NULL, id = 1, SUM(price) OVER (), SUM(id) OVER ()
		FROM v WHERE id = %s`
	// Without arguments the driver reads the text protocol, with them the
	// binary one: the values come out the same.
	for _, c := range []struct {
		stmt string
		args []any
	}{{strings.Replace(q, "%s", "1", 1), nil}, {strings.Replace(q, "%s", "$1 OR id = $1 + 0", 1), []any{1}}} {
		rows, err := d.Query(ctx, c.stmt, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows.Values) != 1 || len(rows.Columns) != len(want) || rows.Columns[0] != "id" || rows.Columns[2] != "flag" {
			t.Fatalf("rows %+v", rows)
		}
		// COUNT and SUM over the window see one row: the WHERE keeps one.
		want[12], want[15], want[16] = int64(1), "12.50", int64(1)
		for i, v := range rows.Values[0] {
			if !reflect.DeepEqual(v, want[i]) {
				t.Errorf("args %v: column %s = %#v (%T), want %#v (%T)", c.args, rows.Columns[i], v, v, want[i], want[i])
			}
		}
	}
	rows, err := d.Query(ctx, "SELECT id FROM v WHERE id > $1 ORDER BY id", 5)
	if err != nil || len(rows.Values) != 0 || rows.Values == nil || len(rows.Columns) != 1 {
		t.Errorf("no rows: %+v, %v", rows, err)
	}
	if _, err := d.Query(ctx, "SELECT id FROM v WHERE id = $2", 1); err == nil || !strings.Contains(err.Error(), "uses $2, but 1 argument(s)") {
		t.Errorf("missing argument: %v", err)
	}
	if err := d.Exec(ctx, "UPDATE v SET name = $2 WHERE id = $1 AND name <> $2", 2, "y"); err != nil {
		t.Fatal(err)
	}
	if rows, err := d.Query(ctx, "SELECT name FROM v WHERE id = 2"); err != nil || rows.Values[0][0] != "y" {
		t.Errorf("Exec's update: %v, %v", rows, err)
	}
}

func TestTimeoutsClassified(t *testing.T) {
	ctx := t.Context()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE t (id int PRIMARY KEY, v text)", "INSERT INTO t VALUES (1, 'a')")
	short := harness(t, u, sqlstore.Timeouts{Statement: 300 * time.Millisecond})

	start := time.Now()
	_, err := short.Query(ctx, "SELECT SLEEP(3)")
	if !errors.Is(err, sqlstore.ErrTimeout) || errors.Is(err, sqlstore.ErrStatement) || !strings.Contains(err.Error(), "ran longer than 300ms (max_statement_time): ERROR 1969") {
		t.Errorf("statement timeout: %v", err)
	}
	if e := time.Since(start); e > 2*time.Second {
		t.Errorf("the statement timeout took %s", e)
	}

	// A receiver's transaction holds the row: the harness's update waits
	// for the InnoDB lock, one second at most.
	rc, _ := receiverSession(t, receiverPool(t, u))
	tx, err := rc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT * FROM t WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	locks := harness(t, u, sqlstore.Timeouts{Lock: time.Second})
	start = time.Now()
	err = locks.Exec(ctx, "UPDATE t SET v = $1 WHERE id = 1", "b")
	if !errors.Is(err, sqlstore.ErrTimeout) || !strings.Contains(err.Error(), "waited 1s for a lock another session holds") || !strings.Contains(err.Error(), "ERROR 1205") {
		t.Errorf("row lock timeout: %v", err)
	}
	if e := time.Since(start); e < time.Second || e > 3*time.Second {
		t.Errorf("the row lock timeout took %s, want about 1s", e)
	}
	_ = tx.Rollback()

	// A receiver's LOCK TABLES ... WRITE: the harness's read waits for the
	// table's metadata lock.
	if _, err := rc.ExecContext(ctx, "LOCK TABLES t WRITE"); err != nil {
		t.Fatal(err)
	}
	_, err = locks.Query(ctx, "SELECT COUNT(*) FROM t")
	if !errors.Is(err, sqlstore.ErrTimeout) || !strings.Contains(err.Error(), "ERROR 1205") {
		t.Errorf("metadata lock timeout: %v", err)
	}
	if _, err := rc.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	// Lock timeouts are whole seconds, at least one.
	tiny := harness(t, u, sqlstore.Timeouts{Lock: 10 * time.Millisecond, Statement: 1500 * time.Millisecond})
	rows, err := tiny.Query(ctx, "SELECT @@lock_wait_timeout, @@innodb_lock_wait_timeout, @@max_statement_time")
	if err != nil || !reflect.DeepEqual(rows.Values[0], []any{int64(1), int64(1), 1.5}) {
		t.Errorf("session settings: %v, %v", rows.Values, err)
	}
	// The caller's own deadline is not the store's timeout.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := d.Query(cctx, "SELECT SLEEP(2)"); err == nil || errors.Is(err, sqlstore.ErrTimeout) {
		t.Errorf("the caller's deadline: %v", err)
	}
}

func TestScript(t *testing.T) {
	ctx := t.Context()
	u, d := newDB(t)
	// Statements bounded by 300ms elsewhere run to their end in a script.
	short := harness(t, u, sqlstore.Timeouts{Statement: 300 * time.Millisecond})
	line, err := short.Script(ctx, `-- the receiver's schema
CREATE TABLE ledger (id int AUTO_INCREMENT PRIMARY KEY, event_id varchar(64), amount int);
CREATE TABLE totals (n int);
INSERT INTO totals VALUES (0);

DELIMITER //
CREATE TRIGGER count_entries AFTER INSERT ON ledger FOR EACH ROW
BEGIN
  UPDATE totals SET n = n + 1;
END//
DELIMITER ;
INSERT INTO ledger (event_id, amount) VALUES ('evt_1', 5), ('evt;2', 7);
DO SLEEP(0.5)`)
	if err != nil || line != 0 {
		t.Fatalf("Script = %d, %v", line, err)
	}
	rows, err := d.Query(ctx, "SELECT (SELECT n FROM totals), (SELECT COUNT(*) FROM ledger)")
	if err != nil || !reflect.DeepEqual(rows.Values[0], []any{int64(2), int64(2)}) {
		t.Errorf("after the script: %v, %v", rows.Values, err)
	}

	// Without DDL the script is one unit: the failing statement leaves nothing.
	line, err = d.Script(ctx, `INSERT INTO ledger (event_id, amount) VALUES ('evt_3', 1);
UPDATE totals SET n = 100;
INSERT INTO nowhere VALUES (1);
INSERT INTO ledger (event_id, amount) VALUES ('evt_4', 1);`)
	if !errors.Is(err, sqlstore.ErrStatement) || line != 3 || !strings.HasPrefix(err.Error(), "ERROR 1146 (42S02): Table '") {
		t.Errorf("failing script = line %d, %v", line, err)
	}
	rows, err = d.Query(ctx, "SELECT (SELECT n FROM totals), (SELECT COUNT(*) FROM ledger)")
	if err != nil || !reflect.DeepEqual(rows.Values[0], []any{int64(2), int64(2)}) {
		t.Errorf("a failed DML script left changes: %v, %v", rows.Values, err)
	}

	// The line the server blames inside a statement of several lines.
	line, err = d.Script(ctx, "CREATE TABLE a (x int);\n\n-- next\nCREATE TABLE b (\n  x int,\n  y int,,\n  z int\n);\n")
	if !errors.Is(err, sqlstore.ErrStatement) || line != 6 || !strings.Contains(err.Error(), "ERROR 1064 (42000)") {
		t.Errorf("syntax error = line %d, %v", line, err)
	}
	line, err = d.Script(ctx, "CREATE TABLE c (x int);\n\n  CREATE TABLE d (\n  x int,\n  y int,,\n  z int\n);\n")
	if !errors.Is(err, sqlstore.ErrStatement) || line != 5 || !strings.Contains(err.Error(), "ERROR 1064 (42000)") {
		t.Errorf("syntax error = line %d, %v", line, err)
	}
	// DDL commits implicitly: the table created before the failure stays.
	if rows, err := d.Query(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'a'"); err != nil || rows.Values[0][0] != int64(1) {
		t.Errorf("table a: %v, %v", rows, err)
	}
	if line, err := d.Script(ctx, "SELECT 1;\nSELECT 'oops;\n"); !errors.Is(err, sqlstore.ErrStatement) || line != 2 || !strings.Contains(err.Error(), "unterminated ' quote starting on line 2") {
		t.Errorf("unterminated quote = line %d, %v", line, err)
	}
}
