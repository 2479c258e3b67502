package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Fault tools: a lock gate on one of the receiver's tables that holds its
// concurrent writers at the same point until the harness releases them
// together, and the killing of the sessions it holds (connection loss). They
// mirror adapters/pgfault; what MySQL and MariaDB offer decides how.
//
// What the server shows, and how fresh it is, decides where each fact is
// read (MariaDB 10.11, performance_schema off):
//
//   - A session waiting for the gate's table waits for its metadata lock:
//     PROCESSLIST (read live) says "Waiting for table metadata lock", with
//     COMMAND Query (text protocol) or Execute (a server-side prepared
//     statement: the prepare itself takes only a shared metadata lock, which
//     LOCK TABLES … READ allows, so the wait is in COM_STMT_EXECUTE). Nothing
//     else names the table a session waits for: METADATA_LOCK_INFO lists
//     granted locks only, and performance_schema is off.
//   - Transactions — which session has one, since when, whether it waits on
//     an InnoDB lock and how many locks it holds — are read from SHOW ENGINE
//     INNODB STATUS, which InnoDB prints live on every call.
//   - Who holds the InnoDB lock a session waits for is shown only by
//     information_schema.INNODB_LOCK_WAITS, and INNODB_TRX and INNODB_LOCKS
//     share its cache: InnoDB refills it only when nobody on the whole server
//     has read any of the three for 100 ms (trx_i_s_cache: every read moves
//     last_read forward). A client polling them faster — this package did,
//     every 10 ms — keeps all three frozen: a lock wait that began since
//     never shows. So they are read sparingly (lockView), and a read counts
//     only when it proves fresh; otherwise who blocks whom is inferred, never
//     guessed (Gate.read).

const (
	// DefaultWaitTimeout bounds WaitForWaiters when ctx has no deadline.
	DefaultWaitTimeout = 10 * time.Second
	pollInterval       = 10 * time.Millisecond
	// mdlWait is the state of a session waiting for a table's metadata lock,
	// as PROCESSLIST shows it on MySQL and MariaDB alike.
	mdlWait = "Waiting for table metadata lock"
	// lockViewIdle is how long InnoDB's information_schema transaction views
	// must go unread, server-wide, before a read refills them (100 ms), with
	// a margin.
	lockViewIdle = 110 * time.Millisecond
	// maxBehindDepth bounds a chain of lock waits behind the gate: a session
	// at the gate, and up to three more.
	maxBehindDepth = 4
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
	// open holds, by session, the InnoDB transactions open right after the
	// lock was granted: a session whose transaction is still one of these
	// began it before the lock.
	open map[int64]innodbTrx
	// mentions matches a statement that names the table.
	mentions, mentionsSchema *regexp.Regexp

	mu       sync.Mutex
	released bool
}

// Waiter is a receiver's session the gate holds: one waiting for the gate's
// table, or one waiting on an InnoDB lock that such a session holds.
type Waiter struct {
	ID int64 `json:"id"`
	// ClientPort is the session's client TCP port (0 over a Unix socket):
	// what ties it to the client process holding the connection.
	ClientPort int    `json:"client_port,omitempty"`
	User       string `json:"user"`
	Query      string `json:"query"`
	// State is the session's PROCESSLIST state: "Waiting for table metadata
	// lock" at the gate; behind it, the step that waits on the row lock
	// ("Statistics" for a lookup by a unique key the optimizer reads while
	// planning, "Updating", "Sending data").
	State string `json:"state,omitempty"`
	// Behind: it waits on an InnoDB lock held by a session at the gate (or
	// behind it), not for the table itself.
	Behind bool `json:"behind,omitempty"`
	// TrxStarted is when its InnoDB transaction began, to the second (zero:
	// none yet).
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
	g := &Gate{d: d, conn: c, table: table, schema: schema, name: name,
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
	// The clock is read on the gate's session, right after the grant.
	var since string
	if err := c.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP(NOW(6))").Scan(&since); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: read the clock: %w", table, d.classify(ctx, err)))
	}
	if g.since, err = unixTime(since); err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: read the clock: %w", table, err))
	}
	st, err := d.innodbStatus(ctx)
	if err != nil {
		return fail(fmt.Errorf("mysqlstore: gate on %s: open transactions: %w", table, err))
	}
	g.open = st.trx
	return g, nil
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

// foreign reports whether a session's transaction (cur; none when ok is
// false) began before the lock: it was open then, and it is still the same
// one.
func (g *Gate) foreign(id int64, cur innodbTrx, ok bool) bool {
	old, was := g.open[id]
	return ok && was && sameTrx(old, cur)
}

// sameTrx reports whether cur, a session's transaction now, is old, the one
// it had earlier. A transaction number is never reused, but InnoDB gives one
// only to a transaction that writes or takes an exclusive lock; for one that
// had none, the start times (whole seconds) decide, and a transaction begun
// within a second of the earlier one counts as it: a doubt counts as earlier
// work, never as the caller's.
func sameTrx(old, cur innodbTrx) bool {
	if old.numbered {
		return cur.numbered && cur.id == old.id
	}
	return !cur.started.After(old.started.Add(time.Second))
}

// Waiters lists the receiver's sessions the gate holds now — those waiting
// for its table's metadata lock, then those waiting on an InnoDB lock one of
// them holds (Behind) — other than this process's own. A session at the gate
// is tied to the table by its statement (it names the table, in the gate's
// database or naming it): MariaDB shows no per-table view of metadata lock
// waits without performance_schema. Only the caller's own sessions (not
// Foreign) are followed to the sessions behind them, and only those whose
// transaction began after the lock are listed there, as pgfault does.
func (g *Gate) Waiters(ctx context.Context) ([]Waiter, error) {
	ws, _, err := g.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: sessions held by the gate on %s: %w", g.table, err)
	}
	return ws, nil
}

// Held reads who the gate holds now (Waiters, counted).
func (g *Gate) Held(ctx context.Context) (Held, error) {
	ws, err := g.Waiters(ctx)
	if err != nil {
		return Held{}, err
	}
	var h Held
	for _, w := range ws {
		switch {
		case w.Behind:
			h.Behind++
		case w.Foreign:
			h.Foreign++
		default:
			h.AtGate++
		}
	}
	return h, nil
}

// process is one row of PROCESSLIST.
type process struct {
	id                               int64
	user, host, db, state, info, cmd string
}

// read lists who the gate holds: PROCESSLIST and the InnoDB status, both
// live, for the sessions at the gate and the lock waits; the lock views or an
// inference for who waits behind whom. undecided counts the caller's lock
// waits it could not tie to the gate or clear of it: neither a fresh enough
// read of the lock views nor the status could tell (another client keeps the
// views stale, and another transaction holds locks).
func (g *Gate) read(ctx context.Context) (ws []Waiter, undecided int, err error) {
	st, err := g.d.innodbStatus(ctx)
	if err != nil {
		return nil, 0, err
	}
	procs, err := g.d.processes(ctx)
	if err != nil {
		return nil, 0, err
	}
	atGate := map[int64]bool{}
	own := map[int64]bool{} // at the gate, and the caller's
	for _, p := range procs {
		if p.id == g.id || p.state != mdlWait || ours(g.d.server, p.id) || !g.mentions.MatchString(p.info) ||
			(p.db != g.schema && !g.mentionsSchema.MatchString(p.info)) {
			continue
		}
		w := g.waiter(p, st)
		atGate[p.id] = true
		if !w.Foreign {
			own[p.id] = true
		}
		ws = append(ws, w)
	}
	if len(own) == 0 {
		return ws, 0, nil
	}
	// Candidates behind the gate: the caller's sessions (not the harness's,
	// not earlier work) that wait on an InnoDB lock.
	waiting := map[int64]innodbTrx{}
	for id, t := range st.trx {
		if t.lockWait && !atGate[id] && id != g.id && !ours(g.d.server, id) && !g.foreign(id, t, true) {
			waiting[id] = t
		}
	}
	if len(waiting) == 0 {
		return ws, 0, nil
	}
	behind, undecided, err := g.d.behind(ctx, st, own, waiting)
	if err != nil {
		return nil, 0, err
	}
	byID := map[int64]process{}
	for _, p := range procs {
		byID[p.id] = p
	}
	ids := make([]int64, 0, len(behind))
	for id := range behind {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p, ok := byID[id]
		if !ok {
			continue // gone between the two reads
		}
		w := g.waiter(p, st)
		w.Behind = true
		ws = append(ws, w)
	}
	return ws, undecided, nil
}

// waiter describes p, with its transaction from st.
func (g *Gate) waiter(p process, st innodbState) Waiter {
	w := Waiter{ID: p.id, ClientPort: clientPort(p.host), User: p.user, Query: p.info, State: p.state}
	t, ok := st.trx[p.id]
	if ok {
		w.TrxStarted = t.started
	}
	w.Foreign = g.foreign(p.id, t, ok)
	return w
}

// behind returns the sessions of waiting held, directly or through others,
// by a session of own (at most maxBehindDepth steps). Who waits on whom is
// read from the lock views when a fresh enough read covers the wait; a wait
// it does not cover counts only when the live status leaves no doubt: every
// transaction holding a lock and not itself waiting is a session of own, so
// that every chain of waits ends at the gate. A doubt is not counted: it
// is counted in undecided.
func (d *DB) behind(ctx context.Context, st innodbState, own map[int64]bool, waiting map[int64]innodbTrx) (map[int64]bool, int, error) {
	edges, covered, err := d.lockEdges(ctx, st, waiting)
	if err != nil {
		return nil, 0, err
	}
	out := map[int64]bool{}
	if len(covered) < len(waiting) && st.rootsWithin(own) {
		for id := range waiting {
			out[id] = true
		}
		return out, 0, nil
	}
	frontier := own
	for depth := 0; depth < maxBehindDepth && len(frontier) > 0; depth++ {
		next := map[int64]bool{}
		for waiter, blockers := range edges {
			if out[waiter] || !covered[waiter] {
				continue
			}
			for _, b := range blockers {
				if frontier[b] {
					out[waiter], next[waiter] = true, true
					break
				}
			}
		}
		frontier = next
	}
	return out, len(waiting) - len(covered), nil
}

// processes reads PROCESSLIST.
func (d *DB) processes(ctx context.Context) ([]process, error) {
	rows, err := d.db.QueryContext(ctx, `
		SELECT ID, USER, COALESCE(HOST, ''), COALESCE(DB, ''), COALESCE(COMMAND, ''), COALESCE(STATE, ''), COALESCE(INFO, '')
		FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() ORDER BY ID`)
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	defer rows.Close()
	var out []process
	for rows.Next() {
		var p process
		if err := rows.Scan(&p.id, &p.user, &p.host, &p.db, &p.cmd, &p.state, &p.info); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, d.classify(ctx, rows.Err())
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

// innodbTrx is one InnoDB transaction as SHOW ENGINE INNODB STATUS prints it.
type innodbTrx struct {
	// id is as printed: a transaction number, or "(0x…)" (MariaDB) or a
	// number past 2^48 (MySQL) for one that has none yet.
	id       string
	numbered bool
	// started is when it began, to the second (the status says "ACTIVE n
	// sec"), on this process's clock.
	started  time.Time
	lockWait bool
	// waitSince is the latest its current lock wait can have begun, on this
	// process's clock (zero unless lockWait).
	waitSince time.Time
	// locks is how many lock structures it holds (table and record locks,
	// and the one it waits for).
	locks int
}

// innodbState is the list of transactions of one SHOW ENGINE INNODB STATUS.
type innodbState struct {
	trx map[int64]innodbTrx // by session; a session has at most one
	// anonymous counts the transactions holding locks that no session owns
	// (recovered, or XA prepared and detached).
	anonymous int
}

// rootsWithin reports whether every transaction that holds a lock and does
// not itself wait for one belongs to a session of own — then every lock wait
// ends, through however many others, at a session of own — and there is at
// least one.
func (s innodbState) rootsWithin(own map[int64]bool) bool {
	if s.anonymous > 0 {
		return false
	}
	n := 0
	for id, t := range s.trx {
		if t.lockWait || t.locks == 0 {
			continue
		}
		if !own[id] {
			return false
		}
		n++
	}
	return n > 0
}

var (
	trxHeadRE   = regexp.MustCompile(`^---TRANSACTION (\d+|\(0x[0-9a-fA-F]+\)), (.*)$`)
	trxActiveRE = regexp.MustCompile(`^ACTIVE (?:\(PREPARED\) )?(\d+) sec`)
	trxLocksRE  = regexp.MustCompile(`^(LOCK WAIT |ROLLING BACK |COMMITTING |que state \d+ )?(\d+) lock struct\(s\)`)
	trxThreadRE = regexp.MustCompile(`^(?:MariaDB|MySQL) thread id (\d+),`)
	trxWaitedRE = regexp.MustCompile(`^------- TRX HAS BEEN WAITING (\d+) (us|SEC|sec) FOR THIS LOCK`)
)

// innodbStatus reads the live list of InnoDB transactions.
func (d *DB) innodbStatus(ctx context.Context) (innodbState, error) {
	var typ, name, status string
	if err := d.db.QueryRowContext(ctx, "SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status); err != nil {
		return innodbState{}, fmt.Errorf("SHOW ENGINE INNODB STATUS: %w", d.classify(ctx, err))
	}
	st, err := parseInnoDBStatus(status, time.Now())
	if err != nil {
		return innodbState{}, fmt.Errorf("SHOW ENGINE INNODB STATUS: %w", err)
	}
	return st, nil
}

// parseInnoDBStatus reads the section "LIST OF TRANSACTIONS FOR EACH
// SESSION" of SHOW ENGINE INNODB STATUS, printed at now. A transaction's
// lines: its header, "mysql tables in use …", "[LOCK WAIT ]n lock struct(s)
// …", "MariaDB thread id …" (MySQL: "MySQL thread id"), its statement (any
// number of lines), then, when it waits, "------- TRX HAS BEEN WAITING n us
// FOR THIS LOCK TO BE GRANTED:" (MySQL: "n SEC") and the lock.
func parseInnoDBStatus(status string, now time.Time) (innodbState, error) {
	const list = "LIST OF TRANSACTIONS FOR EACH SESSION:\n"
	i := strings.Index(status, list)
	if i < 0 {
		return innodbState{}, errors.New("no list of transactions in the status")
	}
	body := status[i+len(list):]
	if j := strings.Index(body, "\n--------\nFILE I/O\n"); j >= 0 {
		body = body[:j]
	}
	if strings.Contains(body, "... truncated...") {
		return innodbState{}, errors.New("the server truncated its list of transactions (too many sessions)")
	}
	st := innodbState{trx: map[int64]innodbTrx{}}
	var cur *innodbTrx
	var thread int64
	started := false // cur is a started transaction
	statement := false
	flush := func() {
		if cur == nil || !started {
			return
		}
		if thread > 0 {
			st.trx[thread] = *cur
		} else if cur.locks > 0 {
			st.anonymous++
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if m := trxHeadRE.FindStringSubmatch(line); m != nil {
			flush()
			cur, thread, statement = &innodbTrx{id: m[1]}, 0, false
			if n, err := strconv.ParseUint(m[1], 10, 64); err == nil && n < 1<<48 {
				cur.numbered = true
			}
			state := m[2]
			started = !strings.HasPrefix(state, "not started")
			if a := trxActiveRE.FindStringSubmatch(state); a != nil {
				secs, _ := strconv.ParseInt(a[1], 10, 64)
				cur.started = now.Add(-time.Duration(secs) * time.Second)
			}
			continue
		}
		if cur == nil {
			continue
		}
		if !statement {
			// Before the thread line: the transaction's own lines. After it
			// comes its statement, whose text could look like anything.
			if m := trxLocksRE.FindStringSubmatch(line); m != nil {
				cur.lockWait = m[1] == "LOCK WAIT "
				cur.locks, _ = strconv.Atoi(m[2])
			} else if m := trxThreadRE.FindStringSubmatch(line); m != nil {
				thread, _ = strconv.ParseInt(m[1], 10, 64)
				statement = true
			}
			continue
		}
		if m := trxWaitedRE.FindStringSubmatch(line); m != nil && cur.lockWait {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			waited := time.Duration(n) * time.Microsecond
			if m[2] != "us" {
				waited = time.Duration(n) * time.Second
			}
			// The status was printed before now: now - waited is at or after
			// the wait's start, the safe side for lockEdges.
			cur.waitSince = now.Add(-waited)
		}
	}
	flush()
	for id, t := range st.trx {
		if t.lockWait && t.waitSince.IsZero() {
			// A wait whose duration the status did not print: as late as can be.
			t.waitSince = now
			st.trx[id] = t
		}
	}
	return st, nil
}

// lockEdges says who waits on whose InnoDB lock, for the waits in waiting:
// for each it covers, the sessions holding the lock. MySQL 8 shows it live
// (performance_schema.data_lock_waits). MariaDB shows it only in the lock
// views, whose cache a read refills only after 100 ms without any; a read
// counts when it was filled after the wait began (lockView).
func (d *DB) lockEdges(ctx context.Context, st innodbState, waiting map[int64]innodbTrx) (map[int64][]int64, map[int64]bool, error) {
	if !d.mariaDB {
		return d.dataLockWaits(ctx, waiting)
	}
	// A read sent after the latest of the waits began covers them all.
	var latest time.Time
	for _, t := range waiting {
		if t.waitSince.After(latest) {
			latest = t.waitSince
		}
	}
	snap, err := viewOf(d.server).get(ctx, d, latest)
	if err != nil {
		return nil, nil, err
	}
	edges := map[int64][]int64{}
	covered := map[int64]bool{}
	if snap == nil {
		return edges, covered, nil
	}
	for id, t := range waiting {
		w, ok := snap.waits[id]
		// The same transaction, waiting since before the read was sent: the
		// read saw this very wait. A transaction without a number cannot be
		// told apart in the views (they show 0 for all of them).
		if !ok || !t.numbered || w.trxID != t.id || !t.waitSince.Before(snap.sent) || len(w.blockers) == 0 {
			continue
		}
		edges[id], covered[id] = w.blockers, true
	}
	return edges, covered, nil
}

// dataLockWaits reads MySQL 8's live lock waits by session.
func (d *DB) dataLockWaits(ctx context.Context, waiting map[int64]innodbTrx) (map[int64][]int64, map[int64]bool, error) {
	edges := map[int64][]int64{}
	covered := map[int64]bool{}
	rows, err := d.db.QueryContext(ctx, `
		SELECT r.PROCESSLIST_ID, b.PROCESSLIST_ID
		FROM performance_schema.data_lock_waits w
		JOIN performance_schema.threads r ON r.THREAD_ID = w.REQUESTING_THREAD_ID
		JOIN performance_schema.threads b ON b.THREAD_ID = w.BLOCKING_THREAD_ID`)
	if err != nil {
		// performance_schema off: every wait is left to the inference.
		return edges, covered, nil //nolint:nilerr // not an error of the gate's
	}
	defer rows.Close()
	for rows.Next() {
		var r, b sql.NullInt64
		if err := rows.Scan(&r, &b); err != nil {
			return nil, nil, err
		}
		if !r.Valid || !b.Valid {
			continue
		}
		if _, ok := waiting[r.Int64]; ok {
			edges[r.Int64] = append(edges[r.Int64], b.Int64)
			covered[r.Int64] = true
		}
	}
	return edges, covered, d.classify(ctx, rows.Err())
}

// lockSnap is one fresh read of MariaDB's lock views.
type lockSnap struct {
	// sent is when the read's statement was sent: the views were filled
	// after it.
	sent  time.Time
	waits map[int64]snapWait // by waiting session
}

type snapWait struct {
	trxID    string
	blockers []int64
}

// lockView paces this process's reads of one server's lock views and keeps
// the latest fresh one. A read sooner than lockViewIdle after the previous
// one (anyone's) is not refilled, and postpones the next refill for everyone:
// so this process reads at most once per lockViewIdle, and after a read that
// was not fresh — another client read them within 100 ms — waits a random
// while longer, so that two pollers do not keep each other stale forever.
type lockView struct {
	reading atomic.Bool
	mu      sync.Mutex
	next    time.Time // earliest next read
	snap    *lockSnap // latest fresh read
	stale   int       // reads not fresh in a row
}

var lockViews sync.Map // server → *lockView

func viewOf(server string) *lockView {
	v, _ := lockViews.LoadOrStore(server, &lockView{})
	return v.(*lockView)
}

// lockViewNonce makes each read's statement text unique.
var lockViewNonce atomic.Int64

// get returns the latest fresh read, reading again first when it is older
// than after and the pace allows; nil when there is none. It never waits:
// a caller that polls comes back.
func (v *lockView) get(ctx context.Context, d *DB, after time.Time) (*lockSnap, error) {
	v.mu.Lock()
	snap, due := v.snap, !time.Now().Before(v.next)
	v.mu.Unlock()
	if (snap != nil && snap.sent.After(after)) || !due || !v.reading.CompareAndSwap(false, true) {
		return snap, nil
	}
	defer v.reading.Store(false)
	got, fresh, err := d.readLockViews(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.next = time.Now().Add(lockViewIdle)
	if err != nil {
		return v.snap, err
	}
	if fresh {
		v.snap, v.stale = got, 0
	} else {
		v.stale++
		v.next = v.next.Add(time.Duration(rand.Int64N(int64(lockViewIdle) * int64(min(v.stale, 4)))))
	}
	return v.snap, nil
}

// readLockViews reads the lock waits of MariaDB's lock views, and whether the
// read is fresh: filled while its statement ran. The proof is the reading
// session itself: inside a transaction of its own (a consistent snapshot,
// which takes no lock), it appears in INNODB_TRX with the statement it runs,
// unique to this read, only if the views were filled during it.
func (d *DB) readLockViews(ctx context.Context) (*lockSnap, bool, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, false, d.classify(ctx, err)
	}
	var self int64
	if err := c.Raw(func(dc any) error { self = dc.(*conn).ConnID(); return nil }); err != nil {
		_ = c.Close()
		return nil, false, err
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		_ = c.Close()
		return nil, false, d.classify(ctx, err)
	}
	defer func() {
		if _, err := c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
			discard(c)
			return
		}
		_ = c.Close()
	}()
	nonce := fmt.Sprintf("hookcert lock views %d.%d", self, lockViewNonce.Add(1))
	snap := &lockSnap{sent: time.Now(), waits: map[int64]snapWait{}}
	// trx_id is 0 for every transaction without a number: such a row joins
	// nothing here.
	rows, err := c.QueryContext(ctx, `SELECT /* `+nonce+` */ t.trx_mysql_thread_id, t.trx_id, COALESCE(t.trx_query, ''), COALESCE(b.trx_mysql_thread_id, 0)
		FROM information_schema.INNODB_TRX t
		LEFT JOIN information_schema.INNODB_LOCK_WAITS w ON w.requesting_trx_id = t.trx_id AND t.trx_id <> '0'
		LEFT JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id AND b.trx_id <> '0'`)
	if err != nil {
		return nil, false, d.classify(ctx, err)
	}
	defer rows.Close()
	fresh := false
	for rows.Next() {
		var thread, blocker int64
		var trxID, query string
		if err := rows.Scan(&thread, &trxID, &query, &blocker); err != nil {
			return nil, false, err
		}
		if thread == self && strings.Contains(query, nonce) {
			fresh = true
		}
		if blocker == 0 || trxID == "0" {
			continue
		}
		w := snap.waits[thread]
		w.trxID = trxID
		w.blockers = append(w.blockers, blocker)
		snap.waits[thread] = w
	}
	if err := rows.Err(); err != nil {
		return nil, false, d.classify(ctx, err)
	}
	return snap, fresh, nil
}

// WaitForWaiters polls until at least n sessions wait on the gate (Waiters),
// and returns how many do. Without a ctx deadline it gives up after
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

// TerminateWaiters kills (KILL CONNECTION) exactly the sessions g holds, as
// Waiters lists them — with ownOnly, not those whose transaction began
// before g's lock was taken (another scenario's work) — waits until they are
// gone and returns their IDs. The killed sessions' transactions roll back.
// Those behind the gate go first: killed after, a session at the gate would
// release their row lock and let them run on for a moment.
//
// A lock wait a reading could not decide is read again, for up to a second:
// a transaction elsewhere holding locks for a moment leaves it undecided, and
// a session left out would go on once its blocker is gone.
func (d *DB) TerminateWaiters(ctx context.Context, g *Gate, ownOnly bool) ([]int, error) {
	var ws []Waiter
	for deadline := time.Now().Add(time.Second); ; {
		var undecided int
		var err error
		if ws, undecided, err = g.read(ctx); err != nil {
			return nil, fmt.Errorf("mysqlstore: sessions held by the gate on %s: %w", g.table, err)
		}
		if undecided == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * pollInterval):
		}
	}
	var ids []int64
	for _, behind := range []bool{true, false} {
		for _, w := range ws {
			if w.Behind == behind && !(ownOnly && w.Foreign) {
				ids = append(ids, w.ID)
			}
		}
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
	ss, err := d.sessions(ctx, database, false)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, s := range ss {
		ids = append(ids, s.id)
	}
	return d.kill(ctx, ids)
}

// kill kills the sessions of ids, in that order, and waits until they are
// gone; it returns their IDs in ascending order.
func (d *DB) kill(ctx context.Context, ids []int64) ([]int, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]int, 0, len(ids))
	seen := map[int64]bool{}
	for _, id := range ids {
		if ours(d.server, id) || seen[id] {
			continue // never the harness's own
		}
		seen[id] = true
		_, err := d.db.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
		var me *mysql.MySQLError
		if err != nil && !(errors.As(err, &me) && me.Number == erNoSuchThread) {
			sort.Ints(out)
			return out, fmt.Errorf("mysqlstore: KILL CONNECTION %d: %w", id, d.classify(ctx, err))
		}
		out = append(out, int(id))
	}
	sort.Ints(out)
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
// connected to it but this process's own and the server's threads. With
// trx, it also reads which of them hold an InnoDB transaction open, from the
// live status (the lock views' cache may be far older).
func (d *DB) sessions(ctx context.Context, database string, trx bool) ([]receiverSession, error) {
	var st innodbState
	if trx {
		var err error
		if st, err = d.innodbStatus(ctx); err != nil {
			return nil, fmt.Errorf("mysqlstore: sessions in %s: %w", d.where, err)
		}
	}
	procs, err := d.processes(ctx)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: sessions in %s: %w", d.where, err)
	}
	var out []receiverSession
	for _, p := range procs {
		if p.db != database || ours(d.server, p.id) || systemThread(p.user, p.cmd) {
			continue
		}
		_, inTrx := st.trx[p.id]
		out = append(out, receiverSession{id: p.id, command: p.cmd, state: p.state, info: p.info, inTrx: inTrx})
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
// hold a transaction open or wait on a lock, and names a few of them. A
// session that is merely connected and idle (a pool's spare connection) is
// not busy; neither is any of this process's own.
func (d *DB) Busy(ctx context.Context) (int, string, error) {
	if d.cfg.DBName == "" {
		return 0, "", errors.New("mysqlstore: busy: the database URL names no database")
	}
	ss, err := d.sessions(ctx, d.cfg.DBName, true)
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
