package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// Defaults for zero Timeouts fields (the target file's own defaults).
const (
	DefaultConnectTimeout   = 5 * time.Second
	DefaultStatementTimeout = 5 * time.Second
	DefaultLockTimeout      = 5 * time.Second
)

// DB is a pool of the harness's own sessions in a MySQL or MariaDB database.
// It implements sqlstore.DB.
type DB struct {
	db *sql.DB
	// canary opens a new session each time (no idle ones are kept): see
	// innodb.go.
	canary  *sql.DB
	cfg     *mysql.Config
	to      Timeouts
	where   string
	mariaDB bool
	server  string // @@hostname:@@port, the registry's name for the server
	version string
}

var _ sqlstore.DB = (*DB)(nil)

// Open connects to url (mysql://user[:password]@host[:port]/db[?params]) and
// checks that the server answers. Every session it opens is bounded by to (a
// zero field takes this package's default) and registered as the harness's.
func Open(ctx context.Context, url string, to sqlstore.Timeouts) (*DB, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg, to)
}

// OpenConfig is Open for a configuration already parsed.
func OpenConfig(ctx context.Context, cfg *mysql.Config, to sqlstore.Timeouts) (*DB, error) {
	t := Timeouts{Connect: to.Connect, Statement: to.Statement, Lock: to.Lock}
	if t.Connect <= 0 {
		t.Connect = DefaultConnectTimeout
	}
	if t.Statement <= 0 {
		t.Statement = DefaultStatementTimeout
	}
	if t.Lock <= 0 {
		t.Lock = DefaultLockTimeout
	}
	cfg = cfg.Clone()
	cfg.Timeout = t.Connect
	// The driver would print a killed session's broken pipe on stderr; the
	// error reaches the caller anyway.
	cfg.Logger = &mysql.NopLogger{}
	base, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %s: driver configuration: %v", where(cfg), err)
	}
	c := &connector{base: base, to: t}
	d := &DB{db: sql.OpenDB(c), cfg: cfg, to: t, where: where(cfg)}
	// Spare connections idle on the server are nobody's business, but a
	// pool of hundreds would be.
	d.db.SetMaxIdleConns(4)
	d.db.SetConnMaxIdleTime(time.Minute)
	d.canary = sql.OpenDB(c)
	d.canary.SetMaxIdleConns(0)
	pctx, cancel := context.WithTimeout(ctx, t.Connect)
	err = d.db.PingContext(pctx)
	cancel()
	if err != nil {
		d.Close()
		var me *mysql.MySQLError
		switch {
		case errors.As(err, &me):
			return nil, fmt.Errorf("mysqlstore: connect to %s: %s", d.where, Message(me))
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			return nil, classed(fmt.Sprintf("mysqlstore: connect to %s: no answer within %s (connect timeout)", d.where, t.Connect), sqlstore.ErrTimeout)
		}
		return nil, fmt.Errorf("mysqlstore: connect to %s: %v", d.where, err)
	}
	info, _ := c.serverInfo()
	d.mariaDB, d.server, d.version = info.mariaDB(), info.server, info.version
	return d, nil
}

// Kind is sqlstore.MySQL.
func (d *DB) Kind() string { return sqlstore.MySQL }

// Where is host:port/db.
func (d *DB) Where() string { return d.where }

// Database is the database the URL names.
func (d *DB) Database() string { return d.cfg.DBName }

// MariaDB reports whether the server is MariaDB (else MySQL).
func (d *DB) MariaDB() bool { return d.mariaDB }

// Version is the server's VERSION().
func (d *DB) Version() string { return d.version }

// Close closes the pool.
func (d *DB) Close() {
	_ = d.db.Close()
	_ = d.canary.Close()
}

// SQL is the pool, for callers that need database/sql itself. Its sessions
// are the harness's.
func (d *DB) SQL() *sql.DB { return d.db }

// bound bounds one statement on the client side too: the server's statement
// timeout is never enforced by a silent server (or a broken network), and
// MySQL applies max_execution_time to SELECT only; the connect timeout on top
// leaves room to open a connection first.
func (d *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.to.Statement+d.to.Connect)
}

// Prepare checks stmt on the server without running it (a server-side
// prepare: syntax, unknown tables and columns) and says how many parameters
// it takes. A SELECT's result columns are learned by running it once with
// NULL for every parameter, in a read-only transaction rolled back: the
// driver reads the column definitions the server sends with a prepare but
// does not keep them, and a result set is the one place it shows them. NULL
// keys match no row (x = NULL is never true), so this reads next to nothing.
// Columns stays nil for a statement that returns no rows, and for one whose
// columns this could not learn.
//
// MySQL has no boolean type: BOOLEAN is TINYINT(1) and a comparison is an
// integer, so a boolean column is TypeInt (0 or 1). A DECIMAL without a
// fraction (what SUM of integers returns) is TypeInt, as Query gives it.
func (d *DB) Prepare(ctx context.Context, stmt string) (sqlstore.Statement, error) {
	q, order, err := Rewrite(stmt)
	if err != nil {
		return sqlstore.Statement{}, statementError(err.Error())
	}
	bctx, cancel := d.bound(ctx)
	defer cancel()
	c, err := d.db.Conn(bctx)
	if err != nil {
		return sqlstore.Statement{}, d.classify(ctx, err)
	}
	defer c.Close()
	placeholders := -1
	err = c.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(bctx, q)
		if err != nil {
			return err
		}
		placeholders = st.NumInput()
		return st.Close()
	})
	if err != nil {
		return sqlstore.Statement{}, d.classify(ctx, err)
	}
	if placeholders != len(order) {
		return sqlstore.Statement{}, statementError(fmt.Sprintf("the server counts %d placeholder(s), hookcert binds %d", placeholders, len(order)))
	}
	st := sqlstore.Statement{Params: maxParam(order)}
	if !selectLike(q) {
		return st, nil
	}
	cols, err := describe(bctx, c, q, len(order))
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && !unavailable(me.Number) {
			return st, nil // the statement is sound; its run with NULLs is not
		}
		return sqlstore.Statement{}, d.classify(ctx, err)
	}
	st.Columns = cols
	return st, nil
}

// describe runs q with NULL parameters in a read-only transaction and reads
// its result columns.
func describe(ctx context.Context, c *sql.Conn, q string, params int) ([]sqlstore.Column, error) {
	tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, q, make([]any, params)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols := make([]sqlstore.Column, len(cts))
	for i, ct := range cts {
		cols[i] = sqlstore.Column{Name: ct.Name(), Type: columnType(ct), TypeName: ct.DatabaseTypeName()}
	}
	return cols, rows.Close()
}

// selectLike reports whether q reads: it starts with SELECT, WITH, VALUES or
// TABLE (after parentheses, blanks and comments).
func selectLike(q string) bool {
	s := strings.TrimLeft(q, " \t\r\n(")
	for strings.HasPrefix(s, "/*") || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "-- ") {
		end := "\n"
		if strings.HasPrefix(s, "/*") {
			end = "*/"
		}
		i := strings.Index(s, end)
		if i < 0 {
			return false
		}
		s = strings.TrimLeft(s[i+len(end):], " \t\r\n(")
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if len(words) == 0 {
		return false
	}
	switch strings.ToUpper(words[0]) {
	case "SELECT", "WITH", "VALUES", "TABLE":
		return true
	}
	return false
}

// columnType maps the driver's name for a result column's type.
func columnType(ct *sql.ColumnType) sqlstore.ColumnType {
	name := strings.TrimPrefix(ct.DatabaseTypeName(), "UNSIGNED ")
	switch name {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR":
		return sqlstore.TypeInt
	case "DECIMAL":
		if _, scale, ok := ct.DecimalSize(); ok && scale == 0 {
			return sqlstore.TypeInt
		}
		return sqlstore.TypeOther
	case "CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "JSON":
		return sqlstore.TypeText
	case "NULL":
		return sqlstore.TypeUnknown
	}
	return sqlstore.TypeOther
}

// Query runs a read and returns its rows, values normalized: integers
// (COUNT(*), BIGINT, TINYINT(1) booleans, a DECIMAL without a fraction) as
// int64, FLOAT and DOUBLE as float64, a DECIMAL with a fraction as its exact
// text, strings as string, NULL as nil. An integer past int64 (a huge
// BIGINT UNSIGNED) is given as its text.
func (d *DB) Query(ctx context.Context, stmt string, args ...any) (sqlstore.Rows, error) {
	q, order, err := Rewrite(stmt)
	if err != nil {
		return sqlstore.Rows{}, statementError(err.Error())
	}
	bound, err := bindArgs(order, args)
	if err != nil {
		return sqlstore.Rows{}, fmt.Errorf("mysqlstore: %w", err)
	}
	bctx, cancel := d.bound(ctx)
	defer cancel()
	rows, err := d.db.QueryContext(bctx, q, bound...)
	if err != nil {
		return sqlstore.Rows{}, d.classify(ctx, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return sqlstore.Rows{}, d.classify(ctx, err)
	}
	out := sqlstore.Rows{Columns: make([]string, len(cts)), Values: [][]any{}}
	for i, ct := range cts {
		out.Columns[i] = ct.Name()
	}
	for rows.Next() {
		vals := make([]any, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return sqlstore.Rows{}, d.classify(ctx, err)
		}
		for i, ct := range cts {
			vals[i] = normalize(vals[i], ct)
		}
		out.Values = append(out.Values, vals)
	}
	if err := rows.Err(); err != nil {
		return sqlstore.Rows{}, d.classify(ctx, err)
	}
	return out, nil
}

// normalize gives one value the type sqlstore.Rows promises. The driver
// gives integers as int64 (or uint64), but text for what the text protocol
// sent as text (a DECIMAL, a BIT): the column's type decides.
func normalize(v any, ct *sql.ColumnType) any {
	typ := strings.TrimPrefix(ct.DatabaseTypeName(), "UNSIGNED ")
	switch v := v.(type) {
	case nil, int64, float64, bool, string, time.Time:
		return v
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v)
		}
		return strconv.FormatUint(v, 10)
	case float32:
		return float64(v)
	case []byte:
		s := string(v)
		switch typ {
		case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR":
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n
			}
		case "DECIMAL":
			if _, scale, ok := ct.DecimalSize(); ok && scale == 0 {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					return n
				}
			}
		case "FLOAT", "DOUBLE":
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
		case "BIT":
			if len(v) <= 8 {
				var b [8]byte
				copy(b[8-len(v):], v)
				if n := binary.BigEndian.Uint64(b[:]); n <= math.MaxInt64 {
					return int64(n)
				}
			}
		}
		return s
	}
	return fmt.Sprint(v)
}

// Exec runs a statement that returns no rows.
func (d *DB) Exec(ctx context.Context, stmt string, args ...any) error {
	q, order, err := Rewrite(stmt)
	if err != nil {
		return statementError(err.Error())
	}
	bound, err := bindArgs(order, args)
	if err != nil {
		return fmt.Errorf("mysqlstore: %w", err)
	}
	bctx, cancel := d.bound(ctx)
	defer cancel()
	if _, err := d.db.ExecContext(bctx, q, bound...); err != nil {
		return d.classify(ctx, err)
	}
	return nil
}

// lockSeconds is the lock timeout as the server takes it.
func lockSeconds(d time.Duration) time.Duration {
	return time.Duration(max(int64(math.Ceil(d.Seconds())), 1)) * time.Second
}
