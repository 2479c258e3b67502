package observe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// read runs the named query for k on whichever store the observer reads,
// returning its rows; errors are explained and classed as the kind allows.
func (o *Observer) read(ctx context.Context, name string, k Key) (sqlstore.Rows, error) {
	if o.reader != nil {
		if !o.reader.Has(name) {
			return sqlstore.Rows{}, fmt.Errorf("observe: %s: %w", name, ErrNotConfigured)
		}
		qctx, cancel := context.WithTimeout(ctx, o.timeouts.Statement+o.timeouts.Connect)
		defer cancel()
		return o.reader.Read(qctx, name, k)
	}
	q, err := o.get(name)
	if err != nil {
		return sqlstore.Rows{}, err
	}
	qctx, cancel := o.queryContext(ctx)
	defer cancel()
	if o.db != nil {
		r, err := o.db.Query(qctx, q.compact, o.args(q, k)...)
		if err != nil {
			return sqlstore.Rows{}, o.sqlError(ctx, name, err)
		}
		return r, nil
	}
	rows, err := o.pool.Query(qctx, q.compact, o.args(q, k)...)
	if err != nil {
		return sqlstore.Rows{}, o.queryError(ctx, name, err)
	}
	defer rows.Close()
	var out sqlstore.Rows
	for _, f := range rows.FieldDescriptions() {
		out.Columns = append(out.Columns, f.Name)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return sqlstore.Rows{}, o.queryError(ctx, name, err)
		}
		out.Values = append(out.Values, vals)
	}
	if err := rows.Err(); err != nil {
		return sqlstore.Rows{}, o.queryError(ctx, name, err)
	}
	return out, nil
}

// sqlError explains a failed query of a sqlstore.DB (MySQL, MariaDB).
func (o *Observer) sqlError(ctx context.Context, name string, err error) error {
	switch {
	case errors.Is(err, sqlstore.ErrTimeout):
		return classed(fmt.Sprintf("observe: query %s ran past the statement or lock timeout (%s.statement_timeout %s, lock_timeout %s): %v",
			name, o.field, o.timeouts.Statement, o.timeouts.Lock, err), ErrTimeout, err)
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return classed(fmt.Sprintf("observe: query %s: no answer from the database within %s (statement_timeout %s + connect_timeout %s)",
			name, o.timeouts.Statement+o.timeouts.Connect, o.timeouts.Statement, o.timeouts.Connect), ErrTimeout, err)
	}
	return fmt.Errorf("observe: query %s: %w", name, err)
}

// asInt reads an integer value of any store: the server's integer types, an
// integral float, a numeric, or text holding an integer (a Redis string, a
// MySQL value sent as text). ok is false for anything else.
func asInt(v any) (n int64, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case int:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case uint32:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	case pgtype.Numeric:
		if i, err := x.Int64Value(); err == nil && i.Valid {
			return i.Int64, true
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return i, true
		}
	case []byte:
		return asInt(string(x))
	}
	return 0, false
}

// asBool reads a boolean: true or false, or 1 and 0 (MySQL's BOOLEAN is a
// TINYINT; a Redis EXISTS answers an integer).
func asBool(v any) (b bool, ok bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "t", "1":
			return true, true
		case "false", "f", "0":
			return false, true
		}
		return false, false
	}
	if n, ok := asInt(v); ok && (n == 0 || n == 1) {
		return n == 1, true
	}
	return false, false
}

// asString reads a text value; other scalars are printed as the store would.
func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// typeOf names a value's type for a message about the wrong shape.
func typeOf(v any) string {
	switch v.(type) {
	case string, []byte:
		return "text"
	case bool:
		return "boolean"
	case nil:
		return "NULL"
	}
	if _, ok := asInt(v); ok {
		return "integer"
	}
	return fmt.Sprintf("%T", v)
}
