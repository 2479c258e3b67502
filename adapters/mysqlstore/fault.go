package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Fault tools: a lock gate on one of the receiver's tables that holds its
// concurrent writers at the same point until the harness releases them
// together, and the killing of the sessions it holds (connection loss). They
// mirror adapters/pgfault; what MySQL and MariaDB offer decides how.

const (
	// DefaultWaitTimeout bounds WaitForWaiters when ctx has no deadline.
	DefaultWaitTimeout = 10 * time.Second
	pollInterval       = 10 * time.Millisecond
	// mdlWait is the state of a session waiting for a table's metadata lock,
	// as PROCESSLIST shows it on MySQL and MariaDB alike.
	mdlWait = "Waiting for table metadata lock"
)

var identRE = regexp.MustCompile(`^[A-Za-z0-9_$]{1,64}$`)

// TableName validates a table name ("table" or "database.table", taken
// verbatim) and returns its database (db's own when it names none) and name.
func (d *DB) TableName(table string) (schema, name string, err error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return "", "", fmt.Errorf("mysqlstore: table %q: must be table or database.table", table)
	}
	for _, p := range parts {
		if !identRE.MatchString(p) {
			return "", "", fmt.Errorf("mysqlstore: table %q: each part must be letters, digits, _ and $ (at most 64)", table)
		}
	}
	if len(parts) == 2 {
		return parts[0], parts[1], nil
	}
	if d.cfg.DBName == "" {
		return "", "", fmt.Errorf("mysqlstore: table %q: the database URL names no database: write database.table", table)
	}
	return d.cfg.DBName, parts[0], nil
}

// quoteIdent backquotes a name for MySQL.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// Gate holds LOCK TABLES <table> READ on a session of its own until Release.
// A READ lock lets every session read the table and makes every writer wait
// for the table's metadata lock: a receiver that checks for the event's key,
// then inserts it, runs its check and waits at its insert — MySQL's
// equivalent of PostgreSQL's SHARE mode.
type Gate struct {
	d            *DB
	conn         *sql.Conn
	table        string
	schema, name string
	id           int64 // the gate's own session
	// since is when the lock was granted, on the server's clock.
	since time.Time
	// open holds, by session, when the InnoDB transactions open at the moment
	// the lock was granted began. INNODB_TRX.trx_started has a resolution of
	// one second, too coarse to tell a transaction that began just before the
	// lock from one that began just after: a session whose transaction is
	// still the one listed here began before the lock.
	open map[int64]time.Time
	// mentions matches a statement that names the table.
	mentions, mentionsSchema *regexp.Regexp

	mu       sync.Mutex
	released bool
}

// Waiter is a session waiting for the gate's table.
type Waiter struct {
	ID int64 `json:"id"`
	// ClientPort is the session's client TCP port (0 over a Unix socket):
	// what ties it to the client process holding the connection.
	ClientPort int    `json:"client_port,omitempty"`
	User       string `json:"user"`
	Query      string `json:"query"`
	// TrxStarted is when its InnoDB transaction began (zero: none yet).
	TrxStarted time.Time `json:"trx_started,omitzero"`
	// Foreign: its transaction began before the gate's lock was taken.
	Foreign bool `json:"foreign,omitempty"`
}

// Held is who a gate holds at one moment, as pgfault.Held.
type Held struct {
	// AtGate and Behind count the sessions whose transaction began after the
	// lock was granted (or that have none yet): the ones the caller's
	// deliveries can have started.
	AtGate, Behind int
	// Foreign counts sessions waiting on the lock whose transaction began
	// before it was granted: somebody else's work.
	Foreign int
}

// Hold takes LOCK TABLES table READ on a session of its own. It fails within
// the lock timeout when another session holds a conflicting lock (a
// transaction that wrote to the table and is still open).
func (d *DB) Hold(ctx context.Context, table string) (*Gate, error) {
	schema, name, err := d.TableName(table)
	if err != nil {
		return nil, err
	}
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: gate on %s: %w", table, d.classify(ctx, err))
	}
	g := &Gate{d: d, conn: c, table: table, schema: schema, name: name, open: map[int64]time.Time{},
		mentions:       nameRE(name),
		mentionsSchema: nameRE(schema)}
	fail := func(err error) (*Gate, error) {
		discard(c)
		return nil, err
	}
	var n int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, name).Scan(&n); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: %w", table, d.classify(ctx, err)))
	}
	if n == 0 {
		return fail(fmt.Errorf("mysqlstore: gate on %s: table not found in %s", table, d.cfg.Addr+"/"+schema))
	}
	if err := c.Raw(func(dc any) error { g.id = dc.(*conn).ConnID(); return nil }); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: %w", table, err))
	}
	if _, err := c.ExecContext(ctx, "LOCK TABLES "+quoteIdent(schema)+"."+quoteIdent(name)+" READ"); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == erLockWaitTimeout {
			return fail(fmt.Errorf("mysqlstore: gate on %s: could not take the READ lock within %s: another session holds a conflicting lock (an open transaction that wrote to it): %s",
				table, lockSeconds(d.to.Lock), Message(me)))
		}
		return fail(fmt.Errorf("mysqlstore: gate on %s: LOCK TABLES: %w", table, d.classify(ctx, err)))
	}
	// information_schema stays readable under LOCK TABLES: the clock and the
	// open transactions are read on the gate's session, right after the grant.
	var since string
	if err := c.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP(NOW(6))").Scan(&since); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: read the clock: %w", table, d.classify(ctx, err)))
	}
	if g.since, err = unixTime(since); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: read the clock: %w", table, err))
	}
	if err := g.readOpen(ctx); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: open transactions: %w", table, err))
	}
	return g, nil
}

// readOpen notes the InnoDB transactions open now, on the gate's session.
func (g *Gate) readOpen(ctx context.Context) error {
	rows, err := g.conn.QueryContext(ctx, "SELECT trx_mysql_thread_id, UNIX_TIMESTAMP(trx_started) FROM information_schema.INNODB_TRX")
	if err != nil {
		return g.d.classify(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var started string
		if err := rows.Scan(&id, &started); err != nil {
			return err
		}
		t, err := unixTime(started)
		if err != nil {
			return err
		}
		g.open[id] = t
	}
	return g.d.classify(ctx, rows.Err())
}

// nameRE matches a statement naming s as a whole name, backquoted or not.
func nameRE(s string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_$])` + "`?" + regexp.QuoteMeta(s) + "`?" + `([^A-Za-z0-9_$]|$)`)
}

// unixTime reads UNIX_TIMESTAMP's decimal seconds.
func unixTime(s string) (time.Time, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", s, err)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e6+0.5)*1e3), nil
}

// ID is the gate's own session.
func (g *Gate) ID() int64 { return g.id }

// Table is the locked table as given to Hold.
func (g *Gate) Table() string { return g.table }

// Since is when the gate's lock was granted, on the server's clock.
func (g *Gate) Since() time.Time { return g.since }

// foreign reports whether a session's transaction began before the lock: it
// was open then, and it is still the same one (a transaction begun since
// cannot have begun earlier than the one listed).
func (g *Gate) foreign(id int64, started time.Time) bool {
	t, ok := g.open[id]
	return ok && !started.IsZero() && !started.After(t)
}

// Waiters lists the sessions waiting for the gate's table's metadata lock,
// other than this process's own: those whose state says so and whose
// statement names the table (in the gate's database, or naming it).
// MariaDB has no per-table view of metadata lock waits without its
// METADATA_LOCK_INFO plugin, nor MySQL without performance_schema, so the
// statement is what ties a waiter to the table.
func (g *Gate) Waiters(ctx context.Context) ([]Waiter, error) {
	rows, err := g.d.db.QueryContext(ctx, `
		SELECT p.ID, p.USER, p.HOST, COALESCE(p.DB, ''), COALESCE(p.INFO, ''), COALESCE(UNIX_TIMESTAMP(t.trx_started), '')
		FROM information_schema.PROCESSLIST p
		LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
		WHERE p.STATE = ? AND p.ID <> ?
		ORDER BY p.ID`, mdlWait, g.id)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: waiters on %s: %w", g.table, g.d.classify(ctx, err))
	}
	defer rows.Close()
	var ws []Waiter
	for rows.Next() {
		var w Waiter
		var host, db, started string
		if err := rows.Scan(&w.ID, &w.User, &host, &db, &w.Query, &started); err != nil {
			return nil, fmt.Errorf("mysqlstore: waiters on %s: %w", g.table, err)
		}
		if ours(g.d.server, w.ID) || !g.mentions.MatchString(w.Query) || (db != g.schema && !g.mentionsSchema.MatchString(w.Query)) {
			continue
		}
		w.ClientPort = clientPort(host)
		if started != "" {
			w.TrxStarted, _ = unixTime(started)
		}
		w.Foreign = g.foreign(w.ID, w.TrxStarted)
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mysqlstore: waiters on %s: %w", g.table, g.d.classify(ctx, err))
	}
	return ws, nil
}

// clientPort is the port of PROCESSLIST's HOST ("127.0.0.1:54321"; 0 for
// "localhost", a Unix socket).
func clientPort(host string) int {
	_, p, err := net.SplitHostPort(host)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// Held reads who the gate holds now. A session behind the gate waits on an
// InnoDB row lock held by a session at the gate, directly or through up to
// three more (information_schema.INNODB_LOCK_WAITS on MariaDB,
// performance_schema.data_lock_waits on MySQL 8). This process's own sessions
// are not counted.
func (g *Gate) Held(ctx context.Context) (Held, error) {
	ws, err := g.Waiters(ctx)
	if err != nil {
		return Held{}, err
	}
	var h Held
	atGate := map[int64]bool{}
	frontier := map[int64]bool{}
	for _, w := range ws {
		atGate[w.ID] = true
		if w.Foreign {
			h.Foreign++
			continue
		}
		h.AtGate++
		frontier[w.ID] = true
	}
	if len(frontier) == 0 {
		return h, nil
	}
	edges, err := g.d.lockWaits(ctx)
	if err != nil {
		return Held{}, fmt.Errorf("mysqlstore: sessions held by the gate on %s: %w", g.table, err)
	}
	behind := map[int64]bool{}
	for depth := 0; depth < 4 && len(frontier) > 0; depth++ {
		next := map[int64]bool{}
		for _, e := range edges {
			if !frontier[e.blocker] || atGate[e.waiter] || behind[e.waiter] || e.waiter == g.id ||
				ours(g.d.server, e.waiter) || g.foreign(e.waiter, e.started) {
				continue
			}
			behind[e.waiter] = true
			next[e.waiter] = true
		}
		frontier = next
	}
	h.Behind = len(behind)
	return h, nil
}

// lockWait is one session waiting on an InnoDB lock another holds.
type lockWait struct {
	waiter, blocker int64
	started         time.Time // the waiter's transaction
}

// lockWaits reads who waits on whose InnoDB locks now.
func (d *DB) lockWaits(ctx context.Context) ([]lockWait, error) {
	q := `
		SELECT r.trx_mysql_thread_id, b.trx_mysql_thread_id, UNIX_TIMESTAMP(r.trx_started)
		FROM information_schema.INNODB_LOCK_WAITS w
		JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
		JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id`
	if !d.mariaDB {
		// MySQL 8 dropped INNODB_LOCK_WAITS for performance_schema.
		q = `
		SELECT r.trx_mysql_thread_id, b.trx_mysql_thread_id, UNIX_TIMESTAMP(r.trx_started)
		FROM performance_schema.data_lock_waits w
		JOIN information_schema.INNODB_TRX r ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID
		JOIN information_schema.INNODB_TRX b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID`
	}
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	defer rows.Close()
	var out []lockWait
	for rows.Next() {
		var e lockWait
		var started string
		if err := rows.Scan(&e.waiter, &e.blocker, &started); err != nil {
			return nil, err
		}
		e.started, _ = unixTime(started)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, d.classify(ctx, err)
	}
	return out, nil
}

// WaitForWaiters polls until at least n sessions wait on the gate, and
// returns how many do. Without a ctx deadline it gives up after
// DefaultWaitTimeout; on timeout the error says how many were waiting.
func (g *Gate) WaitForWaiters(ctx context.Context, n int) (int, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWaitTimeout)
		defer cancel()
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	got := 0
	for {
		ws, err := g.Waiters(ctx)
		if err == nil {
			got = len(ws)
			if got >= n {
				return got, nil
			}
		}
		select {
		case <-ctx.Done():
			return got, fmt.Errorf("mysqlstore: %d of %d sessions waiting on %s when giving up: %w", got, n, g.table, ctx.Err())
		case <-t.C:
		}
	}
}

// Release unlocks the table: every waiter proceeds at once. The gate's
// session goes back to the pool.
func (g *Gate) Release(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return fmt.Errorf("mysqlstore: gate on %s: already released", g.table)
	}
	g.released = true
	if _, err := g.conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		// A session that may still hold the lock must not serve anyone else.
		discard(g.conn)
		return fmt.Errorf("mysqlstore: release gate on %s: %w", g.table, g.d.classify(ctx, err))
	}
	return g.conn.Close()
}

// TerminateWaiters kills (KILL CONNECTION) exactly the sessions waiting on
// g — with ownOnly, not those whose transaction began before g's lock was
// taken (another scenario's work) — waits until they are gone and returns
// their IDs. The killed sessions' transactions roll back.
func (d *DB) TerminateWaiters(ctx context.Context, g *Gate, ownOnly bool) ([]int, error) {
	ws, err := g.Waiters(ctx)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, w := range ws {
		if ownOnly && w.Foreign {
			continue
		}
		ids = append(ids, w.ID)
	}
	return d.kill(ctx, ids)
}

// TerminateSessions kills every session of the receiver in the database —
// every session connected to it but this process's own and the server's
// threads — waits until they are gone and returns their IDs.
func (d *DB) TerminateSessions(ctx context.Context) ([]int, error) {
	if d.cfg.DBName == "" {
		return nil, errors.New("mysqlstore: terminate sessions: the database URL names no database")
	}
	return d.terminateSessionsIn(ctx, d.cfg.DBName)
}

func (d *DB) terminateSessionsIn(ctx context.Context, database string) ([]int, error) {
	ss, err := d.sessions(ctx, database)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, s := range ss {
		ids = append(ids, s.id)
	}
	return d.kill(ctx, ids)
}

func (d *DB) kill(ctx context.Context, ids []int64) ([]int, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if ours(d.server, id) {
			continue // never the harness's own
		}
		_, err := d.db.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
		var me *mysql.MySQLError
		if err != nil && !(errors.As(err, &me) && me.Number == erNoSuchThread) {
			return out, fmt.Errorf("mysqlstore: KILL CONNECTION %d: %w", id, d.classify(ctx, err))
		}
		out = append(out, int(id))
	}
	// KILL only marks a session; wait until it is gone so that the caller
	// observes the rolled-back state.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left, err := d.present(ctx, out)
		if err != nil {
			return out, fmt.Errorf("mysqlstore: wait for killed sessions: %w", err)
		}
		if left == 0 {
			return out, nil
		}
		if time.Now().After(deadline) {
			return out, fmt.Errorf("mysqlstore: %d of %d killed sessions still present after 5s", left, len(out))
		}
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("mysqlstore: wait for killed sessions: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// present counts the sessions of ids still in PROCESSLIST.
func (d *DB) present(ctx context.Context, ids []int) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.Itoa(id)
	}
	var n int
	err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ("+strings.Join(list, ",")+")").Scan(&n)
	return n, d.classify(ctx, err)
}

// receiverSession is a session in the database that is not the harness's.
type receiverSession struct {
	id                   int64
	command, state, info string
	inTrx                bool
}

// sessions lists the receiver's sessions in the database: every session
// connected to it but this process's own and the server's threads.
func (d *DB) sessions(ctx context.Context, database string) ([]receiverSession, error) {
	rows, err := d.db.QueryContext(ctx, `
		SELECT p.ID, p.USER, p.COMMAND, COALESCE(p.STATE, ''), COALESCE(p.INFO, ''), COUNT(t.trx_mysql_thread_id)
		FROM information_schema.PROCESSLIST p
		LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
		WHERE p.DB = ? AND p.ID <> CONNECTION_ID()
		GROUP BY p.ID, p.USER, p.COMMAND, p.STATE, p.INFO
		ORDER BY p.ID`, database)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: sessions in %s: %w", d.where, d.classify(ctx, err))
	}
	defer rows.Close()
	var out []receiverSession
	for rows.Next() {
		var s receiverSession
		var user string
		var trx int
		if err := rows.Scan(&s.id, &user, &s.command, &s.state, &s.info, &trx); err != nil {
			return nil, fmt.Errorf("mysqlstore: sessions in %s: %w", d.where, err)
		}
		s.inTrx = trx > 0
		if ours(d.server, s.id) || systemThread(user, s.command) {
			continue
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mysqlstore: sessions in %s: %w", d.where, d.classify(ctx, err))
	}
	return out, nil
}

// systemThread reports the server's own threads (replication, the event
// scheduler, background workers), which are nobody's sessions.
func systemThread(user, command string) bool {
	switch user {
	case "system user", "event_scheduler", "unauthenticated user":
		return true
	}
	switch command {
	case "Daemon", "Binlog Dump", "Binlog Dump GTID", "Slave_IO", "Slave_SQL", "Slave_worker", "Connect":
		return true
	}
	return false
}

// Busy counts the receiver's sessions in the database that run a statement,
// hold a transaction open (INNODB_TRX) or wait on a lock, and names a few of
// them. A session that is merely connected and idle (a pool's spare
// connection) is not busy; neither is any of this process's own.
func (d *DB) Busy(ctx context.Context) (int, string, error) {
	if d.cfg.DBName == "" {
		return 0, "", errors.New("mysqlstore: busy: the database URL names no database")
	}
	ss, err := d.sessions(ctx, d.cfg.DBName)
	if err != nil {
		return 0, "", err
	}
	var parts []string
	n := 0
	for _, s := range ss {
		if s.command == "Sleep" && !s.inTrx {
			continue
		}
		n++
		if n > 3 {
			continue
		}
		desc := fmt.Sprintf("id %d", s.id)
		switch {
		case s.command != "Sleep" && s.state != "":
			desc += " " + strings.ToLower(s.command) + ": " + s.state
		case s.command != "Sleep":
			desc += " " + strings.ToLower(s.command)
		default:
			desc += " idle in transaction"
		}
		parts = append(parts, desc)
	}
	if n > 3 {
		parts = append(parts, fmt.Sprintf("and %d more", n-3))
	}
	return n, strings.Join(parts, ", "), nil
}
