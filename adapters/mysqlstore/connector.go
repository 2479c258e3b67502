package mysqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The harness's own sessions must be told apart from the receiver's, so that a
// cut or a busy check never counts or kills them. PostgreSQL marks them with
// application_name; MySQL's connection attributes are only visible through
// performance_schema, which MariaDB ships off. So this process remembers the
// connection IDs of the sessions it opened through this package, by server:
// a session is ours if it is in the registry.
var registry = struct {
	sync.Mutex
	ids map[session]struct{}
}{ids: map[session]struct{}{}}

// session is one connection on one server: the server's host name and port
// as it reports them (two spellings of one address are one server), and the
// connection ID it gave.
type session struct {
	server string
	id     int64
}

func register(s session) {
	registry.Lock()
	registry.ids[s] = struct{}{}
	registry.Unlock()
}

func unregister(s session) {
	registry.Lock()
	delete(registry.ids, s)
	registry.Unlock()
}

// ours reports whether connection id on server is one of this process's.
func ours(server string, id int64) bool {
	registry.Lock()
	defer registry.Unlock()
	_, ok := registry.ids[session{server, id}]
	return ok
}

// serverInfo is what the first statement of every connection learns.
type serverInfo struct {
	id      int64
	version string
	server  string // @@hostname:@@port
}

func (s serverInfo) mariaDB() bool { return strings.Contains(strings.ToLower(s.version), "mariadb") }

// connector opens the driver's connections, sets each session's timeouts for
// the server's flavour and registers it as the harness's.
type connector struct {
	base driver.Connector
	to   Timeouts
	// info is the first connection's: the flavour and server every later one
	// shares.
	mu   sync.Mutex
	info *serverInfo
}

// Timeouts are sqlstore.Timeouts with this package's defaults applied.
type Timeouts struct {
	Connect, Statement, Lock time.Duration
}

func (c *connector) Driver() driver.Driver { return c.base.Driver() }

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	// The whole opening — TCP, TLS, authentication, the first statements —
	// is one connect.
	ctx, cancel := context.WithTimeout(ctx, c.to.Connect)
	defer cancel()
	dc, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	info, err := readServerInfo(ctx, dc)
	if err == nil {
		err = execRaw(ctx, dc, sessionSettings(info.mariaDB(), c.to))
	}
	if err != nil {
		_ = dc.Close()
		return nil, err
	}
	c.mu.Lock()
	if c.info == nil {
		c.info = &info
	}
	c.mu.Unlock()
	s := session{server: info.server, id: info.id}
	register(s)
	return &conn{Conn: dc, s: s}, nil
}

// serverInfo is the first connection's, once one was made.
func (c *connector) serverInfo() (serverInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info == nil {
		return serverInfo{}, false
	}
	return *c.info, true
}

// sessionSettings bounds a session: the statement timeout (MariaDB's
// max_statement_time in seconds; MySQL's max_execution_time in milliseconds,
// which MySQL applies to SELECT only) and the lock timeouts (metadata locks:
// lock_wait_timeout; InnoDB row locks: innodb_lock_wait_timeout; both whole
// seconds, at least 1). A zero statement timeout means none.
func sessionSettings(mariaDB bool, to Timeouts) string {
	lock := max(int64(math.Ceil(to.Lock.Seconds())), 1)
	stmt := fmt.Sprintf("max_execution_time = %d", to.Statement.Milliseconds())
	if mariaDB {
		stmt = "max_statement_time = " + strconv.FormatFloat(to.Statement.Seconds(), 'f', 3, 64)
	}
	return fmt.Sprintf("SET SESSION %s, lock_wait_timeout = %d, innodb_lock_wait_timeout = %d", stmt, lock, lock)
}

func readServerInfo(ctx context.Context, dc driver.Conn) (serverInfo, error) {
	q, ok := dc.(driver.QueryerContext)
	if !ok {
		return serverInfo{}, errors.New("mysqlstore: the driver's connection cannot query")
	}
	rows, err := q.QueryContext(ctx, "SELECT CONNECTION_ID(), VERSION(), @@hostname, @@port", nil)
	if err != nil {
		return serverInfo{}, err
	}
	defer rows.Close()
	vals := make([]driver.Value, 4)
	if err := rows.Next(vals); err != nil {
		if err == io.EOF {
			err = errors.New("mysqlstore: the server answered no row to SELECT CONNECTION_ID()")
		}
		return serverInfo{}, err
	}
	str := func(v driver.Value) string {
		switch v := v.(type) {
		case []byte:
			return string(v)
		case nil:
			return ""
		default:
			return fmt.Sprint(v)
		}
	}
	id, err := strconv.ParseInt(str(vals[0]), 10, 64)
	if err != nil {
		return serverInfo{}, fmt.Errorf("mysqlstore: CONNECTION_ID() = %q: %w", str(vals[0]), err)
	}
	return serverInfo{id: id, version: str(vals[1]), server: str(vals[2]) + ":" + str(vals[3])}, nil
}

func execRaw(ctx context.Context, dc driver.Conn, stmt string) error {
	e, ok := dc.(driver.ExecerContext)
	if !ok {
		return errors.New("mysqlstore: the driver's connection cannot execute")
	}
	_, err := e.ExecContext(ctx, stmt, nil)
	return err
}

// conn is the driver's connection, forgotten by the registry when it closes.
// It passes every optional interface database/sql looks for through to the
// driver's connection (go-sql-driver's implements them all).
type conn struct {
	driver.Conn
	s session
}

var (
	_ driver.ConnBeginTx          = (*conn)(nil)
	_ driver.ConnPrepareContext   = (*conn)(nil)
	_ driver.ExecerContext        = (*conn)(nil)
	_ driver.QueryerContext       = (*conn)(nil)
	_ driver.Pinger               = (*conn)(nil)
	_ driver.SessionResetter      = (*conn)(nil)
	_ driver.Validator            = (*conn)(nil)
	_ driver.NamedValueChecker    = (*conn)(nil)
	_ driver.Connector            = (*connector)(nil)
	_ interface{ ConnID() int64 } = (*conn)(nil)
)

// ConnID is the session's connection ID on the server.
func (c *conn) ConnID() int64 { return c.s.id }

func (c *conn) Close() error {
	unregister(c.s)
	return c.Conn.Close()
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return c.Conn.Begin() //nolint:staticcheck // only for a driver without BeginTx
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := c.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
