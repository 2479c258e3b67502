package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// ErrNotConfigured is returned (wrapped) for a query the target does not configure.
var ErrNotConfigured = errors.New("query not configured in the target file")

// ErrInvalidQuery is wrapped by Open's and New's error when a configured query is
// wrong (it does not prepare, takes other parameters, returns other columns): a
// mistake in the target file, reported with the field path
// (target.observe.postgres.queries.<name>) and the database's message.
var ErrInvalidQuery = errors.New("invalid query in the target file")

// ErrUnreachable is wrapped by Open's and New's error when the database cannot be
// used at all: refused, unknown host, failed authentication, no answer within the
// connect timeout, or a check that ran out of time.
var ErrUnreachable = errors.New("database unreachable")

// ErrTimeout is wrapped by a query's error when the database canceled it at the
// statement or lock timeout, or did not answer in time at all.
var ErrTimeout = errors.New("observer query timed out")

// kindError is an error that belongs to a class (ErrInvalidQuery, ErrUnreachable,
// ErrTimeout) without repeating the class's words in its message, and keeps its
// cause (a *pgconn.PgError, say) for errors.As.
type kindError struct {
	msg   string
	kinds []error
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return e.kinds }

// classed builds a kindError; kinds may include the cause, nil ones are dropped.
func classed(msg string, kinds ...error) error {
	e := &kindError{msg: msg}
	for _, k := range kinds {
		if k != nil {
			e.kinds = append(e.kinds, k)
		}
	}
	return e
}

// Key addresses the observed state: the event key plus the business object.
type Key struct {
	Source   string `json:"source"`
	Account  string `json:"account"`
	EventID  string `json:"event_id"`
	ObjectID string `json:"object_id,omitempty"`
}

func (k Key) param(n int) string {
	switch n {
	case 1:
		return k.Source
	case 2:
		return k.Account
	case 3:
		return k.EventID
	default:
		return k.ObjectID
	}
}

// Query names, as in the target file (targetfile.Query…).
const (
	QEventRows     = targetfile.QueryEventRows
	QEffects       = targetfile.QueryEffects
	QObjectEffects = targetfile.QueryObjectEffects
	QObject        = targetfile.QueryObject
	QPayment       = targetfile.QueryPayment
	// QPayloadPresent reads whether one event's key row still holds its payload.
	QPayloadPresent = targetfile.QueryPayloadPresent
	// QQuiescent reads whether the receiver has accepted work pending.
	QQuiescent = targetfile.QueryQuiescent
	// QInboxState and QOutboxState read (state, attempts) of one event's accepted
	// work and downstream message.
	QInboxState  = targetfile.QueryInboxState
	QOutboxState = targetfile.QueryOutboxState
)

// queryOrder is the order the observer checks and snapshots its queries in.
var queryOrder = []string{QEventRows, QEffects, QObjectEffects, QObject, QPayment, QPayloadPresent, QQuiescent, QInboxState, QOutboxState}

// columns is what each query must return; object may leave out its status
// (an ordered object's state is its ordering key alone).
var columns = map[string]string{
	QEventRows: "count", QEffects: "count", QObjectEffects: "count",
	QObject: "version, status", QPayment: "status", QPayloadPresent: "present", QQuiescent: "quiescent",
	QInboxState: "state, attempts", QOutboxState: "state, attempts",
}

// PostgreSQL type OIDs the column checks name.
const (
	oidBool = 16
	oidInt8 = 20
	oidInt2 = 21
	oidInt4 = 23
)

type query struct {
	name    string
	sql     string // as configured
	compact string // parameters renumbered from $1 (see targetfile.CompactParams)
	params  []int  // original parameter numbers, in compact order
}

// Observer runs a target's queries. It is safe for concurrent use.
type Observer struct {
	pool     *pgxpool.Pool
	ownPool  bool
	queries  map[string]*query
	order    []string
	timeouts Timeouts
}

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
func TargetTimeouts(p targetfile.Postgres) Timeouts {
	return Timeouts{Connect: p.ConnectTimeout, Statement: p.StatementTimeout, Lock: p.LockTimeout}.withDefaults()
}

// OpenTarget opens the observer a target file describes: its URL, queries and
// timeouts.
func OpenTarget(ctx context.Context, p targetfile.Postgres) (*Observer, error) {
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

func newObserver(ctx context.Context, pool *pgxpool.Pool, q targetfile.Queries, to Timeouts) (*Observer, error) {
	o := &Observer{pool: pool, queries: map[string]*query{}, timeouts: to}
	named := q.Named()
	fieldPath := q.FieldPath
	actx, cancel := context.WithTimeout(ctx, to.Connect)
	conn, err := pool.Acquire(actx)
	cancel()
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: connect: %v", err), ErrUnreachable, err)
	}
	defer conn.Release()
	var errs []error
	for _, name := range queryOrder {
		sql, ok := named[name]
		if !ok {
			continue
		}
		compact, params, err := targetfile.CompactParams(sql)
		if err != nil {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: %v", fieldPath(name), err), ErrInvalidQuery))
			continue
		}
		// Prepare on the server: catches wrong SQL, unknown tables and columns, and
		// parameter types PostgreSQL cannot infer, and tells the result columns.
		qctx, cancel := o.queryContext(ctx)
		sd, err := conn.Conn().Prepare(qctx, "hookcert_check_"+name, compact)
		if err == nil {
			_ = conn.Conn().Deallocate(qctx, sd.Name)
		}
		cancel()
		if err != nil {
			errs = append(errs, o.prepareError(ctx, name, fieldPath(name), err))
			if conn.Conn().IsClosed() {
				break // the session is gone: the other checks cannot run
			}
			continue
		}
		if len(sd.ParamOIDs) != len(params) {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: takes %d parameters, references %d", fieldPath(name), len(sd.ParamOIDs), len(params)), ErrInvalidQuery))
			continue
		}
		if msg := checkColumns(name, q.Declared(name), sd.Fields, conn.Conn().TypeMap()); msg != "" {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: %s", fieldPath(name), msg), ErrInvalidQuery))
			continue
		}
		o.queries[name] = &query{name: name, sql: sql, compact: compact, params: params}
		o.order = append(o.order, name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// checkColumns says what is wrong with a query's result columns ("" when
// nothing is). declared is true for a query of the declared event vocabulary,
// whose column types are checked too (older files keep their looser rule).
func checkColumns(name string, declared bool, fields []pgconn.FieldDescription, tm *pgtype.Map) string {
	typeName := func(oid uint32) string {
		if t, ok := tm.TypeForOID(oid); ok {
			return t.Name
		}
		return fmt.Sprintf("type OID %d", oid)
	}
	isInt := func(oid uint32) bool { return oid == oidInt2 || oid == oidInt4 || oid == oidInt8 }
	switch name {
	case QObject:
		if len(fields) != 1 && len(fields) != 2 {
			return fmt.Sprintf("must return 1 or 2 columns (version[, status]), returns %d", len(fields))
		}
		if declared && !isInt(fields[0].DataTypeOID) {
			return fmt.Sprintf("must return an integer first column (smallint, integer, bigint; cast with ::bigint), returns %s", typeName(fields[0].DataTypeOID))
		}
	case QInboxState, QOutboxState:
		if len(fields) != 2 {
			return fmt.Sprintf("must return 2 columns (state text, attempts integer), returns %d", len(fields))
		}
		if !isInt(fields[1].DataTypeOID) {
			return fmt.Sprintf("must return an integer second column (attempts; cast with ::bigint), returns %s", typeName(fields[1].DataTypeOID))
		}
	case QQuiescent:
		if len(fields) != 1 {
			return fmt.Sprintf("must return 1 column (boolean), returns %d", len(fields))
		}
		if fields[0].DataTypeOID != oidBool {
			return fmt.Sprintf("must return a boolean column, returns %s", typeName(fields[0].DataTypeOID))
		}
	default:
		if want := len(strings.Split(columns[name], ",")); len(fields) != want {
			return fmt.Sprintf("must return %d column(s) (%s), returns %d", want, columns[name], len(fields))
		}
	}
	return ""
}

// prepareError classifies a failed check of query name, read from the file's
// field path: the database's
// verdict on the query is the file's mistake (ErrInvalidQuery); a lost session
// or a timeout is the database's state (ErrUnreachable, and ErrTimeout for a
// timeout).
func (o *Observer) prepareError(ctx context.Context, name, path string, err error) error {
	if terr := o.timeoutError(ctx, name, err); terr != nil {
		return classed(terr.Error(), terr, ErrUnreachable)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !pgsession.Unavailable(pe.Code) {
		return classed(fmt.Sprintf("observe: %s: does not prepare: %s", path, pgsession.Message(pe)), ErrInvalidQuery, pe)
	}
	return classed(fmt.Sprintf("observe: checking %s: %v", path, err), ErrUnreachable, err)
}

// queryContext bounds one query on the client side too: statement_timeout is
// enforced by the server, which a silent server (or a broken network) never does;
// the connect timeout on top leaves room to open a connection first.
func (o *Observer) queryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.timeouts.Statement+o.timeouts.Connect)
}

// timeoutError explains err if it is one of the observer's timeouts, naming the
// query and the timeout; nil otherwise. ctx is the caller's: its own deadline or
// cancellation is not the observer's timeout.
func (o *Observer) timeoutError(ctx context.Context, name string, err error) error {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "55P03" && strings.Contains(pe.Message, "lock timeout"):
		return classed(fmt.Sprintf("observe: query %s waited %s for a lock another session holds (lock_timeout, target.observe.postgres.lock_timeout): %s",
			name, o.timeouts.Lock, pgsession.Message(pe)), ErrTimeout, pe)
	case errors.As(err, &pe) && pe.Code == "57014" && strings.Contains(pe.Message, "statement timeout"):
		return classed(fmt.Sprintf("observe: query %s ran longer than %s (statement_timeout, target.observe.postgres.statement_timeout): %s",
			name, o.timeouts.Statement, pgsession.Message(pe)), ErrTimeout, pe)
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)):
		return classed(fmt.Sprintf("observe: query %s: no answer from the database within %s (statement_timeout %s + connect_timeout %s)",
			name, o.timeouts.Statement+o.timeouts.Connect, o.timeouts.Statement, o.timeouts.Connect), ErrTimeout, err)
	}
	return nil
}

// queryError wraps a failed query's error, explaining timeouts.
func (o *Observer) queryError(ctx context.Context, name string, err error) error {
	if terr := o.timeoutError(ctx, name, err); terr != nil {
		return terr
	}
	return fmt.Errorf("observe: query %s: %w", name, err)
}

// Close closes the pool if Open created it.
func (o *Observer) Close() {
	if o.ownPool {
		o.pool.Close()
	}
}

// Pool is the observer's pool (for fault tools that need the harness's sessions).
func (o *Observer) Pool() *pgxpool.Pool { return o.pool }

// Has reports whether the named query is configured.
func (o *Observer) Has(name string) bool { return o.queries[name] != nil }

func (o *Observer) args(q *query, k Key) []any {
	args := make([]any, len(q.params))
	for i, n := range q.params {
		args[i] = k.param(n)
	}
	return args
}

func (o *Observer) get(name string) (*query, error) {
	q := o.queries[name]
	if q == nil {
		return nil, fmt.Errorf("observe: %s: %w", name, ErrNotConfigured)
	}
	return q, nil
}

// count runs a one-column counting query; a NULL counts as 0 (e.g. a SUM over no rows).
func (o *Observer) count(ctx context.Context, name string, k Key) (int, error) {
	q, err := o.get(name)
	if err != nil {
		return 0, err
	}
	var n *int64
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	if err := o.pool.QueryRow(qctx, q.compact, o.args(q, k)...).Scan(&n); err != nil {
		return 0, o.queryError(ctx, name, err)
	}
	if n == nil {
		return 0, nil
	}
	return int(*n), nil
}

// EventRows counts the receiver's stored keys for one event.
func (o *Observer) EventRows(ctx context.Context, k Key) (int, error) {
	return o.count(ctx, QEventRows, k)
}

// Effects counts the business effects of one event.
func (o *Observer) Effects(ctx context.Context, k Key) (int, error) {
	return o.count(ctx, QEffects, k)
}

// ObjectEffects counts the business effects on one object (for example the ledger
// entries of one payment).
func (o *Observer) ObjectEffects(ctx context.Context, source, account, objectID string) (int, error) {
	return o.count(ctx, QObjectEffects, Key{Source: source, Account: account, ObjectID: objectID})
}

// Object returns the version and status of a versioned object; found is false when
// the query returns no row. More than one row is an error (the object is ambiguous).
// A query of one column (events.ordered.state: the applied ordering key) gives
// an empty status.
func (o *Observer) Object(ctx context.Context, source, account, objectID string) (version int64, status string, found bool, err error) {
	q, err := o.get(QObject)
	if err != nil {
		return 0, "", false, err
	}
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	rows, err := o.pool.Query(qctx, q.compact, o.args(q, Key{Source: source, Account: account, ObjectID: objectID})...)
	if err != nil {
		return 0, "", false, o.queryError(ctx, QObject, err)
	}
	type row struct {
		v *int64
		s *string
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		// A one-column query returns the ordering key alone.
		if len(r.FieldDescriptions()) == 1 {
			return x, r.Scan(&x.v)
		}
		return x, r.Scan(&x.v, &x.s)
	})
	if err != nil {
		return 0, "", false, o.queryError(ctx, QObject, err)
	}
	switch len(got) {
	case 0:
		return 0, "", false, nil
	case 1:
	default:
		return 0, "", false, fmt.Errorf("observe: query object: %d rows for object %q (want at most 1)", len(got), objectID)
	}
	if got[0].v != nil {
		version = *got[0].v
	}
	if got[0].s != nil {
		status = *got[0].s
	}
	return version, status, true, nil
}

// Payment returns the status of a payment; found is false when there is no row.
func (o *Observer) Payment(ctx context.Context, source, account, paymentID string) (status string, found bool, err error) {
	q, err := o.get(QPayment)
	if err != nil {
		return "", false, err
	}
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	rows, err := o.pool.Query(qctx, q.compact, o.args(q, Key{Source: source, Account: account, ObjectID: paymentID})...)
	if err != nil {
		return "", false, o.queryError(ctx, QPayment, err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*string, error) {
		var s *string
		return s, r.Scan(&s)
	})
	if err != nil {
		return "", false, o.queryError(ctx, QPayment, err)
	}
	switch len(got) {
	case 0:
		return "", false, nil
	case 1:
		if got[0] != nil {
			status = *got[0]
		}
		return status, true, nil
	default:
		return "", false, fmt.Errorf("observe: query payment: %d rows for payment %q (want at most 1)", len(got), paymentID)
	}
}

// PayloadPresent reports whether the event's key row still holds its payload;
// found is false when the query returns no row (the key is gone). A NULL reads as
// false; more than one row is an error.
func (o *Observer) PayloadPresent(ctx context.Context, k Key) (present, found bool, err error) {
	q, err := o.get(QPayloadPresent)
	if err != nil {
		return false, false, err
	}
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	rows, err := o.pool.Query(qctx, q.compact, o.args(q, k)...)
	if err != nil {
		return false, false, o.queryError(ctx, QPayloadPresent, err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*bool, error) {
		var b *bool
		return b, r.Scan(&b)
	})
	if err != nil {
		return false, false, o.queryError(ctx, QPayloadPresent, err)
	}
	switch len(got) {
	case 0:
		return false, false, nil
	case 1:
		return got[0] != nil && *got[0], true, nil
	default:
		return false, false, fmt.Errorf("observe: query payload_present: %d rows for event %q (want at most 1)", len(got), k.EventID)
	}
}

// Quiescent reports whether the receiver has no accepted work pending (the
// acceptance.quiescent query). Its one row must hold true or false: no row,
// several, or NULL is an error, since the harness cannot tell.
func (o *Observer) Quiescent(ctx context.Context) (bool, error) {
	q, err := o.get(QQuiescent)
	if err != nil {
		return false, err
	}
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	rows, err := o.pool.Query(qctx, q.compact)
	if err != nil {
		return false, o.queryError(ctx, QQuiescent, err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*bool, error) {
		var b *bool
		return b, r.Scan(&b)
	})
	if err != nil {
		return false, o.queryError(ctx, QQuiescent, err)
	}
	switch {
	case len(got) != 1:
		return false, fmt.Errorf("observe: query quiescent: %d rows (want exactly 1)", len(got))
	case got[0] == nil:
		return false, errors.New("observe: query quiescent: NULL (want true or false)")
	}
	return *got[0], nil
}

// Result is what one query returned, as evidence for a report.
type Result struct {
	Query   string            `json:"query"`
	SQL     string            `json:"sql"`
	Params  map[string]string `json:"params"`
	Columns []string          `json:"columns,omitempty"`
	Rows    [][]string        `json:"rows"`
	Error   string            `json:"error,omitempty"`
}

// Snapshot runs every configured query for k and returns the rows, stringified
// ("NULL" for null). A failing query is recorded in its Result, not returned.
func (o *Observer) Snapshot(ctx context.Context, k Key) []Result {
	var out []Result
	for _, name := range o.order {
		q := o.queries[name]
		r := Result{Query: name, SQL: q.sql, Params: map[string]string{}, Rows: [][]string{}}
		for _, n := range q.params {
			r.Params[fmt.Sprintf("$%d %s", n, targetfile.ParamNames[n-1])] = k.param(n)
		}
		qctx, cancel := o.queryContext(ctx)
		rows, err := o.pool.Query(qctx, q.compact, o.args(q, k)...)
		if err == nil {
			for _, f := range rows.FieldDescriptions() {
				r.Columns = append(r.Columns, f.Name)
			}
			for rows.Next() {
				vals, verr := rows.Values()
				if verr != nil {
					err = verr
					break
				}
				row := make([]string, len(vals))
				for i, v := range vals {
					if v == nil {
						row[i] = "NULL"
					} else {
						row[i] = fmt.Sprint(v)
					}
				}
				r.Rows = append(r.Rows, row)
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		cancel()
		if err != nil {
			r.Error = o.queryError(ctx, name, err).Error()
		}
		out = append(out, r)
	}
	return out
}

// QueueState is one event's row in the receiver's inbox or outbox, its state
// mapped by the target's query onto targetfile.InboxStates or targetfile.OutboxStates.
type QueueState struct {
	State    string
	Attempts int
	Found    bool
}

// InboxState reads the accepted work of one event (target.inbox.state).
func (o *Observer) InboxState(ctx context.Context, k Key) (QueueState, error) {
	return o.queueState(ctx, QInboxState, k, targetfile.InboxStates)
}

// OutboxState reads the downstream message of one event (target.outbox.state).
func (o *Observer) OutboxState(ctx context.Context, k Key) (QueueState, error) {
	return o.queueState(ctx, QOutboxState, k, targetfile.OutboxStates)
}

func (o *Observer) queueState(ctx context.Context, name string, k Key, valid []string) (QueueState, error) {
	q, err := o.get(name)
	if err != nil {
		return QueueState{}, err
	}
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	rows, err := o.pool.Query(qctx, q.compact, o.args(q, k)...)
	if err != nil {
		return QueueState{}, o.queryError(ctx, name, err)
	}
	type row struct {
		s *string
		n *int64
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.s, &x.n)
	})
	if err != nil {
		return QueueState{}, o.queryError(ctx, name, err)
	}
	switch len(got) {
	case 0:
		return QueueState{}, nil
	case 1:
	default:
		return QueueState{}, fmt.Errorf("observe: query %s: %d rows for event %q (want at most 1)", name, len(got), k.EventID)
	}
	st := QueueState{Found: true}
	if got[0].s != nil {
		st.State = *got[0].s
	}
	if got[0].n != nil {
		st.Attempts = int(*got[0].n)
	}
	if !slices.Contains(valid, st.State) {
		return QueueState{}, fmt.Errorf("observe: query %s: state %q for event %q is not one of %s (map the receiver's states onto them in the query)",
			name, st.State, k.EventID, strings.Join(valid, ", "))
	}
	return st, nil
}
