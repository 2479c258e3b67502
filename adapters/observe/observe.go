package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/target"
)

// ErrNotConfigured is returned (wrapped) for a query the target does not configure.
var ErrNotConfigured = errors.New("query not configured in the target file")

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

// Query names, as in the target file.
const (
	QEventRows     = "event_rows"
	QEffects       = "effects"
	QObjectEffects = "object_effects"
	QObject        = "object"
	QPayment       = "payment"
	// QPayloadPresent reads whether one event's key row still holds its payload.
	QPayloadPresent = "payload_present"
)

// columns is what each query must return.
var columns = map[string]string{
	QEventRows: "count", QEffects: "count", QObjectEffects: "count",
	QObject: "version, status", QPayment: "status", QPayloadPresent: "present",
}

type query struct {
	name    string
	sql     string // as configured
	compact string // parameters renumbered from $1 (see target.CompactParams)
	params  []int  // original parameter numbers, in compact order
}

// Observer runs a target's queries. It is safe for concurrent use.
type Observer struct {
	pool    *pgxpool.Pool
	ownPool bool
	queries map[string]*query
	order   []string
}

// Open connects to url (sessions marked as the harness's, so that connection-loss
// faults spare them) and checks every configured query.
func Open(ctx context.Context, url string, q target.Queries) (*Observer, error) {
	pool, err := pgfault.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	o, err := New(ctx, pool, q)
	if err != nil {
		pool.Close()
		return nil, err
	}
	o.ownPool = true
	return o, nil
}

// New checks the configured queries on an existing pool, which the caller closes.
func New(ctx context.Context, pool *pgxpool.Pool, q target.Queries) (*Observer, error) {
	o := &Observer{pool: pool, queries: map[string]*query{}}
	named := q.Named()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("observe: connect: %w", err)
	}
	defer conn.Release()
	var errs []error
	for _, name := range []string{QEventRows, QEffects, QObjectEffects, QObject, QPayment, QPayloadPresent} {
		sql, ok := named[name]
		if !ok {
			continue
		}
		compact, params, err := target.CompactParams(sql)
		if err != nil {
			errs = append(errs, fmt.Errorf("observe: query %s: %w", name, err))
			continue
		}
		// Prepare on the server: catches wrong SQL, unknown tables and columns, and
		// parameter types PostgreSQL cannot infer, and tells the result columns.
		sd, err := conn.Conn().Prepare(ctx, "hookcert_check_"+name, compact)
		if err != nil {
			errs = append(errs, fmt.Errorf("observe: query %s does not prepare: %w", name, err))
			continue
		}
		_ = conn.Conn().Deallocate(ctx, sd.Name)
		if len(sd.ParamOIDs) != len(params) {
			errs = append(errs, fmt.Errorf("observe: query %s: takes %d parameters, references %d", name, len(sd.ParamOIDs), len(params)))
			continue
		}
		want := len(strings.Split(columns[name], ","))
		if len(sd.Fields) != want {
			errs = append(errs, fmt.Errorf("observe: query %s: must return %d column(s) (%s), returns %d",
				name, want, columns[name], len(sd.Fields)))
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
	if err := o.pool.QueryRow(ctx, q.compact, o.args(q, k)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("observe: query %s: %w", name, err)
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
func (o *Observer) Object(ctx context.Context, source, account, objectID string) (version int64, status string, found bool, err error) {
	q, err := o.get(QObject)
	if err != nil {
		return 0, "", false, err
	}
	rows, err := o.pool.Query(ctx, q.compact, o.args(q, Key{Source: source, Account: account, ObjectID: objectID})...)
	if err != nil {
		return 0, "", false, fmt.Errorf("observe: query object: %w", err)
	}
	type row struct {
		v *int64
		s *string
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.v, &x.s)
	})
	if err != nil {
		return 0, "", false, fmt.Errorf("observe: query object: %w", err)
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
	rows, err := o.pool.Query(ctx, q.compact, o.args(q, Key{Source: source, Account: account, ObjectID: paymentID})...)
	if err != nil {
		return "", false, fmt.Errorf("observe: query payment: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*string, error) {
		var s *string
		return s, r.Scan(&s)
	})
	if err != nil {
		return "", false, fmt.Errorf("observe: query payment: %w", err)
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
	rows, err := o.pool.Query(ctx, q.compact, o.args(q, k)...)
	if err != nil {
		return false, false, fmt.Errorf("observe: query payload_present: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*bool, error) {
		var b *bool
		return b, r.Scan(&b)
	})
	if err != nil {
		return false, false, fmt.Errorf("observe: query payload_present: %w", err)
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
			r.Params[fmt.Sprintf("$%d %s", n, target.ParamNames[n-1])] = k.param(n)
		}
		rows, err := o.pool.Query(ctx, q.compact, o.args(q, k)...)
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
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	return out
}
