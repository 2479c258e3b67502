package pgfault

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults for the gate.
const (
	// DefaultMode blocks INSERT/UPDATE/DELETE and allows SELECT, so a
	// check-then-insert receiver runs its check, then waits at its insert.
	DefaultMode = "SHARE"
	// LockTimeout bounds how long Hold waits for the lock itself.
	LockTimeout = 5 * time.Second
	// DefaultWaitTimeout bounds WaitForWaiters when ctx has no deadline.
	DefaultWaitTimeout = 10 * time.Second
	pollInterval       = 10 * time.Millisecond
)

// modes are PostgreSQL's table lock modes (LOCK TABLE ... IN <mode> MODE).
var modes = []string{"ACCESS SHARE", "ROW SHARE", "ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE",
	"SHARE", "SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)

// TableIdent validates a table name ("table" or "schema.table", taken verbatim:
// case-sensitive) and returns it as a pgx.Identifier.
func TableIdent(table string) (pgx.Identifier, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("pgfault: table %q: must be table or schema.table", table)
	}
	for _, p := range parts {
		if !identRE.MatchString(p) {
			return nil, fmt.Errorf("pgfault: table %q: each part must be letters, digits and _ (at most 63)", table)
		}
	}
	return pgx.Identifier(parts), nil
}

// Gate holds a table lock in an open transaction until Release.
type Gate struct {
	pool  *pgxpool.Pool
	tx    pgx.Tx
	table string
	mode  string
	oid   uint32
	pid   uint32
	// since is when the lock was granted, on the server's clock: a session
	// whose transaction began earlier cannot be one the gate's caller sent.
	since time.Time

	mu       sync.Mutex
	released bool
}

// Waiter is a backend waiting for the gate's table.
type Waiter struct {
	PID             int    `json:"pid"`
	ApplicationName string `json:"application_name"`
	Mode            string `json:"mode"`  // the lock mode it waits for
	Query           string `json:"query"` // its current statement
	// ClientPort is the session's client TCP port (0 over a Unix socket):
	// what ties it to the client process holding the connection.
	ClientPort int `json:"client_port,omitempty"`
	// XactStart is when its transaction began.
	XactStart time.Time `json:"xact_start"`
}

// Hold opens a transaction on one of pool's connections and locks table in mode
// (DefaultMode when ""). It fails within LockTimeout if the lock is not granted.
func Hold(ctx context.Context, pool *pgxpool.Pool, table, mode string) (*Gate, error) {
	ident, err := TableIdent(table)
	if err != nil {
		return nil, err
	}
	if mode == "" {
		mode = DefaultMode
	}
	mode = strings.ToUpper(strings.TrimSpace(mode))
	valid := false
	for _, m := range modes {
		valid = valid || m == mode
	}
	if !valid {
		return nil, fmt.Errorf("pgfault: lock mode %q: unknown (valid: %s)", mode, strings.Join(modes, ", "))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgfault: gate on %s: begin: %w", table, err)
	}
	g := &Gate{pool: pool, tx: tx, table: table, mode: mode}
	fail := func(err error) (*Gate, error) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	// The gate is meant to sit idle in its transaction; a server-side idle timeout
	// must not end it behind the harness's back.
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", LockTimeout.Milliseconds())); err != nil {
		return fail(fmt.Errorf("pgfault: gate on %s: set lock_timeout: %w", table, err))
	}
	if _, err := tx.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = 0"); err != nil {
		return fail(fmt.Errorf("pgfault: gate on %s: set idle timeout: %w", table, err))
	}
	if err := tx.QueryRow(ctx, "SELECT $1::regclass::oid, pg_backend_pid()", ident.Sanitize()).Scan(&g.oid, &g.pid); err != nil {
		return fail(fmt.Errorf("pgfault: gate on %s: table not found: %w", table, err))
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+ident.Sanitize()+" IN "+mode+" MODE"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return fail(fmt.Errorf("pgfault: gate on %s: could not take the %s lock within %s: another session holds a conflicting lock: %w",
				table, mode, LockTimeout, err))
		}
		return fail(fmt.Errorf("pgfault: gate on %s: lock in %s mode: %w", table, mode, err))
	}
	// Later statements of the gate's transaction need no lock timeout.
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = 0"); err != nil {
		return fail(fmt.Errorf("pgfault: gate on %s: reset lock_timeout: %w", table, err))
	}
	if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&g.since); err != nil {
		return fail(fmt.Errorf("pgfault: gate on %s: read the clock: %w", table, err))
	}
	return g, nil
}

// PID is the gate's own backend.
func (g *Gate) PID() int { return int(g.pid) }

// Table is the locked table as given to Hold.
func (g *Gate) Table() string { return g.table }

// Waiters lists the backends waiting (not granted) for a lock on the gate's table,
// other than the gate itself.
func (g *Gate) Waiters(ctx context.Context) ([]Waiter, error) {
	rows, err := g.pool.Query(ctx, `
		SELECT l.pid, coalesce(a.application_name, ''), l.mode, coalesce(a.query, ''), greatest(coalesce(a.client_port, 0), 0),
		       coalesce(a.xact_start, 'epoch'::timestamptz)
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'relation' AND l.relation = $1 AND NOT l.granted AND l.pid <> $2
		ORDER BY l.pid`, g.oid, int(g.pid))
	if err != nil {
		return nil, fmt.Errorf("pgfault: waiters on %s: %w", g.table, err)
	}
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Waiter, error) {
		var w Waiter
		err := r.Scan(&w.PID, &w.ApplicationName, &w.Mode, &w.Query, &w.ClientPort, &w.XactStart)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgfault: waiters on %s: %w", g.table, err)
	}
	return ws, nil
}

// Held is who a gate holds at one moment: the sessions waiting on its lock
// and those waiting, in turn, on a lock one of them holds (a row lock the
// receiver took before it reached the gated table, say), each split by
// whether their transaction began after the gate was taken.
type Held struct {
	// AtGate and Behind count the sessions whose transaction began after the
	// lock was granted: the ones the caller's deliveries can have started.
	AtGate, Behind int
	// Foreign counts sessions waiting on the lock whose transaction began
	// before it was granted: somebody else's work.
	Foreign int
}

// Held reads who the gate holds now. A session behind the gate waits on a
// lock held by a session at the gate, directly or through up to three more.
// The harness's own sessions are not counted.
func (g *Gate) Held(ctx context.Context) (Held, error) {
	var h Held
	err := g.pool.QueryRow(ctx, `
		WITH RECURSIVE at_gate AS (
			SELECT l.pid, a.xact_start >= $3 AS own
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'relation' AND l.relation = $1 AND NOT l.granted AND l.pid <> $2
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND coalesce(a.application_name, '') <> $4),
		behind(pid, depth) AS (
			SELECT pid, 0 FROM at_gate WHERE own
			UNION
			SELECT a.pid, b.depth + 1
			FROM pg_stat_activity a JOIN behind b ON b.pid = ANY(pg_blocking_pids(a.pid))
			WHERE a.wait_event_type = 'Lock' AND a.datname = current_database() AND a.pid <> $2
			  AND a.xact_start >= $3 AND coalesce(a.application_name, '') <> $4 AND b.depth < 4)
		SELECT (SELECT count(*) FROM at_gate WHERE own),
		       (SELECT count(DISTINCT pid) FROM behind WHERE pid NOT IN (SELECT pid FROM at_gate)),
		       (SELECT count(*) FROM at_gate WHERE NOT own)`,
		g.oid, int(g.pid), g.since, pgsession.ApplicationName).Scan(&h.AtGate, &h.Behind, &h.Foreign)
	if err != nil {
		return Held{}, fmt.Errorf("pgfault: sessions held by the gate on %s: %w", g.table, err)
	}
	return h, nil
}

// Since is when the gate's lock was granted, on the server's clock.
func (g *Gate) Since() time.Time { return g.since }

// WaitForWaiters polls until at least n backends wait on the gate, and returns how
// many do. Without a ctx deadline it gives up after DefaultWaitTimeout; on timeout
// the error says how many were waiting.
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
			return got, fmt.Errorf("pgfault: %d of %d sessions waiting on %s when giving up: %w", got, n, g.table, ctx.Err())
		case <-t.C:
		}
	}
}

// Release commits the gate's transaction: every waiter proceeds at once.
func (g *Gate) Release(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return fmt.Errorf("pgfault: gate on %s: already released", g.table)
	}
	g.released = true
	if err := g.tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgfault: release gate on %s: %w", g.table, err)
	}
	return nil
}

// Filter narrows TerminateBackends.
type Filter struct {
	// InTransaction keeps only sessions inside a transaction (xact_start set).
	InTransaction bool
	// WaitingOn keeps only sessions waiting on this gate's table.
	WaitingOn *Gate
	// pgsession.ApplicationName keeps only sessions with this application_name.
	ApplicationName string
	// OwnOnly, with WaitingOn, keeps only the waiters whose transaction began
	// after the gate's lock was taken: another scenario's work is left alone.
	OwnOnly bool
}

// TerminateBackends terminates the client sessions connected to database, except
// the harness's own (application_name "hookcert-harness", the calling session and
// a gate given in the filter), waits until they are gone, and returns their pids.
func TerminateBackends(ctx context.Context, pool *pgxpool.Pool, database string, f Filter) ([]int, error) {
	if database == "" {
		return nil, errors.New("pgfault: terminate backends: database name required")
	}
	var waiting []int
	gatePID := -1
	if f.WaitingOn != nil {
		gatePID = f.WaitingOn.PID()
		ws, err := f.WaitingOn.Waiters(ctx)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if f.OwnOnly && w.XactStart.Before(f.WaitingOn.since) {
				continue
			}
			waiting = append(waiting, w.PID)
		}
		if len(waiting) == 0 {
			return nil, nil
		}
	}
	// MATERIALIZED: every filter is applied before pg_terminate_backend runs, which
	// a plain WHERE clause would not guarantee.
	rows, err := pool.Query(ctx, `
		WITH victims AS MATERIALIZED (
			SELECT pid FROM pg_stat_activity
			WHERE datname = $1 AND backend_type = 'client backend'
			  AND pid <> pg_backend_pid() AND pid <> $2
			  AND coalesce(application_name, '') <> $3
			  AND (NOT $4 OR xact_start IS NOT NULL)
			  AND ($5 = '' OR application_name = $5)
			  AND ($6::int[] IS NULL OR pid = ANY($6::int[])))
		SELECT pid FROM victims WHERE pg_terminate_backend(pid) ORDER BY pid`, database, gatePID, pgsession.ApplicationName, f.InTransaction, f.ApplicationName, waiting)
	if err != nil {
		return nil, fmt.Errorf("pgfault: terminate backends of %s: %w", database, err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("pgfault: terminate backends of %s: %w", database, err)
	}
	if len(pids) == 0 {
		return nil, nil
	}
	// pg_terminate_backend only signals; wait until the sessions are really gone
	// so the caller observes the rolled-back state.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&left); err != nil {
			return pids, fmt.Errorf("pgfault: wait for terminated backends: %w", err)
		}
		if left == 0 {
			return pids, nil
		}
		if time.Now().After(deadline) {
			return pids, fmt.Errorf("pgfault: %d of %d terminated backends still present after 5s", left, len(pids))
		}
		select {
		case <-ctx.Done():
			return pids, fmt.Errorf("pgfault: wait for terminated backends: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Busy counts the client sessions connected to database, other than the
// harness's own, that run a statement, hold a transaction open or wait on a
// lock, and names a few of them. A session that is merely connected and idle
// (a pool's spare connection) is not busy.
func Busy(ctx context.Context, pool *pgxpool.Pool, database string) (int, string, error) {
	if database == "" {
		return 0, "", errors.New("pgfault: busy: database name required")
	}
	rows, err := pool.Query(ctx, `
		SELECT pid, state, coalesce(wait_event_type, ''), left(coalesce(query, ''), 60)
		FROM pg_stat_activity
		WHERE datname = $1 AND backend_type = 'client backend'
		  AND pid <> pg_backend_pid()
		  AND coalesce(application_name, '') <> $2
		  AND ((state IS NOT NULL AND state <> 'idle') OR wait_event_type = 'Lock')
		ORDER BY pid`, database, pgsession.ApplicationName)
	if err != nil {
		return 0, "", fmt.Errorf("pgfault: busy sessions of %s: %w", database, err)
	}
	type sess struct {
		pid               int
		state, wait, text string
	}
	ss, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sess, error) {
		var s sess
		return s, r.Scan(&s.pid, &s.state, &s.wait, &s.text)
	})
	if err != nil {
		return 0, "", fmt.Errorf("pgfault: busy sessions of %s: %w", database, err)
	}
	var parts []string
	for i, s := range ss {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ss)-3))
			break
		}
		d := fmt.Sprintf("pid %d %s", s.pid, s.state)
		if s.wait != "" {
			d += " waiting on " + s.wait
		}
		parts = append(parts, d)
	}
	return len(ss), strings.Join(parts, ", "), nil
}
