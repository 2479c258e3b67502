package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/vocab"
)

// Query names, as in the target file (targetfile.Query…).
const (
	QEventRows     = targetfile.QueryEventRows
	QEffects       = targetfile.QueryEffects
	QObjectEffects = targetfile.QueryObjectEffects
	QObject        = targetfile.QueryObject
	QPayment       = targetfile.QueryPayment
	// QObjectChildren reads the key an ordered object's child rows were last
	// written from.
	QObjectChildren = targetfile.QueryObjectChildren
	// QPayloadPresent reads whether one event's key row still holds its payload.
	QPayloadPresent = targetfile.QueryPayloadPresent
	// QKeyTTL reads how long one event's key has left before the store expires it.
	QKeyTTL = targetfile.QueryKeyTTL
	// QQuiescent reads whether the receiver has accepted work pending.
	QQuiescent = targetfile.QueryQuiescent
	// QInboxState and QOutboxState read (state, attempts) of one event's accepted
	// work and downstream message.
	QInboxState  = targetfile.QueryInboxState
	QOutboxState = targetfile.QueryOutboxState
)

// queryOrder is the order the observer checks and snapshots its queries in.
var queryOrder = []string{QEventRows, QEffects, QObjectEffects, QObject, QPayment, QObjectChildren, QPayloadPresent, QKeyTTL, QQuiescent, QInboxState, QOutboxState}

// names is the order the observer checks the target's queries in: the
// observer's own, then the queries of the roles after the first of each kind
// (payment:refund), each answering as the query its name starts with.
func names(q targetfile.Queries) []string {
	return append(append([]string(nil), queryOrder...), q.RoleNames()...)
}

// columns is what each query must return; object may leave out its status
// (an ordered object's state is its ordering key alone).
var columns = map[string]string{
	QEventRows: "count", QEffects: "count", QObjectEffects: "count",
	QObject: "version, status", QPayment: "status", QObjectChildren: "key", QPayloadPresent: "present", QKeyTTL: "ttl_ms", QQuiescent: "quiescent",
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

func newObserver(ctx context.Context, pool *pgxpool.Pool, q targetfile.Queries, to Timeouts) (*Observer, error) {
	o := &Observer{pool: pool, queries: map[string]*query{}, timeouts: to, kind: targetfile.KindPostgres, field: q.Base, paths: q}
	if o.field == "" {
		o.field = "target.observe.postgres"
	}
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
	for _, name := range names(q) {
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
	name = vocab.BaseQuery(name)
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
