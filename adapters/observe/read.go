package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

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
