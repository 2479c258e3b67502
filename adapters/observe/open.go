package observe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// Timeouts bound the observer's work; a zero field takes the target package's
// default (targetfile.DefaultConnectTimeout and so on).
type Timeouts struct {
	// Connect bounds one connection attempt (TCP, TLS, authentication).
	Connect time.Duration
	// Statement is the sessions' statement_timeout: the longest one query runs.
	Statement time.Duration
	// Lock is the sessions' lock_timeout: the longest a query waits for a lock.
	Lock time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = targetfile.DefaultConnectTimeout
	}
	if t.Statement <= 0 {
		t.Statement = targetfile.DefaultStatementTimeout
	}
	if t.Lock <= 0 {
		t.Lock = targetfile.DefaultLockTimeout
	}
	return t
}

// Option tunes Open and New.
type Option func(*Timeouts)

// WithTimeouts sets the observer's bounds (zero fields keep their defaults).
func WithTimeouts(t Timeouts) Option {
	return func(o *Timeouts) {
		if t.Connect > 0 {
			o.Connect = t.Connect
		}
		if t.Statement > 0 {
			o.Statement = t.Statement
		}
		if t.Lock > 0 {
			o.Lock = t.Lock
		}
	}
}

// TargetTimeouts are the bounds a target file sets (or their defaults).
func TargetTimeouts(p targetfile.Store) Timeouts {
	return Timeouts{Connect: p.ConnectTimeout, Statement: p.StatementTimeout, Lock: p.LockTimeout}.withDefaults()
}

// OpenTarget opens the observer a target file describes: its URL, queries and
// timeouts.
func OpenTarget(ctx context.Context, p targetfile.Store) (*Observer, error) {
	return Open(ctx, p.URL.Reveal(), p.Queries, WithTimeouts(TargetTimeouts(p)))
}

// Open connects to url (sessions marked as the harness's, so that connection-loss
// faults spare them, with statement_timeout and lock_timeout set) and checks every
// configured query. A database that cannot be used gives an error wrapping
// ErrUnreachable; a wrong query one wrapping ErrInvalidQuery.
func Open(ctx context.Context, url string, q targetfile.Queries, opts ...Option) (*Observer, error) {
	var to Timeouts
	for _, f := range opts {
		f(&to)
	}
	to = to.withDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL (and its password): don't wrap them.
		return nil, classed("observe: invalid database URL (not shown: it may hold a password)", ErrUnreachable)
	}
	cc := cfg.ConnConfig
	cc.RuntimeParams["application_name"] = pgsession.ApplicationName
	cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(to.Statement.Milliseconds(), 10)
	cc.RuntimeParams["lock_timeout"] = strconv.FormatInt(to.Lock.Milliseconds(), 10)
	cc.ConnectTimeout = to.Connect
	where := fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: connect to %s: %v", where, err), ErrUnreachable, err)
	}
	// The whole first connection, fallbacks (sslmode=prefer) included, gets one
	// connect timeout.
	pctx, cancel := context.WithTimeout(ctx, to.Connect)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		if ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)) {
			return nil, classed(fmt.Sprintf("observe: connect to %s: no answer within %s (target.observe.postgres.connect_timeout)",
				where, to.Connect), ErrUnreachable, ErrTimeout)
		}
		return nil, classed(fmt.Sprintf("observe: connect to %s: %v", where, err), ErrUnreachable, err)
	}
	o, err := newObserver(ctx, pool, q, to)
	if err != nil {
		pool.Close()
		return nil, err
	}
	o.ownPool = true
	return o, nil
}

// New checks the configured queries on an existing pool, which the caller closes.
// The pool's own statement and lock timeouts apply on the server; opts bound the
// wait on the client side.
func New(ctx context.Context, pool *pgxpool.Pool, q targetfile.Queries, opts ...Option) (*Observer, error) {
	var to Timeouts
	for _, f := range opts {
		f(&to)
	}
	return newObserver(ctx, pool, q, to.withDefaults())
}

// queryContext bounds one query on the client side too: statement_timeout is
// enforced by the server, which a silent server (or a broken network) never does;
// the connect timeout on top leaves room to open a connection first.
func (o *Observer) queryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.timeouts.Statement+o.timeouts.Connect)
}

// Close closes the pool if Open created it, and a Reader.
func (o *Observer) Close() {
	if o.ownPool {
		o.pool.Close()
	}
	if o.reader != nil {
		o.reader.Close()
	}
}

// Pool is the observer's PostgreSQL pool (for fault tools that need the
// harness's sessions); nil for the other kinds.
func (o *Observer) Pool() *pgxpool.Pool { return o.pool }

// DB is the observer's SQL database other than PostgreSQL; nil for the other kinds.
func (o *Observer) DB() sqlstore.DB { return o.db }
