package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/vocab"
)

// NewSQL checks a target's queries on a SQL database other than PostgreSQL
// (observe.mysql) and returns the observer that runs them; the caller closes
// db. A query the server refuses gives an error wrapping ErrInvalidQuery, named
// by its field; a server that cannot be used one wrapping ErrUnreachable.
func NewSQL(ctx context.Context, db sqlstore.DB, q targetfile.Queries, opts ...Option) (*Observer, error) {
	var to Timeouts
	for _, f := range opts {
		f(&to)
	}
	o := &Observer{db: db, queries: map[string]*query{}, timeouts: to.withDefaults(), kind: db.Kind(), field: q.Base, paths: q}
	named := q.Named()
	var errs []error
	for _, name := range names(q) {
		stmt, ok := named[name]
		if !ok {
			continue
		}
		path := q.FieldPath(name)
		compact, params, err := targetfile.CompactParams(stmt)
		if err != nil {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: %v", path, err), ErrInvalidQuery))
			continue
		}
		qctx, cancel := o.queryContext(ctx)
		st, err := db.Prepare(qctx, compact)
		cancel()
		switch {
		case errors.Is(err, sqlstore.ErrStatement):
			errs = append(errs, classed(fmt.Sprintf("observe: %s: does not prepare: %v", path, err), ErrInvalidQuery, err))
			continue
		case err != nil:
			return nil, classed(fmt.Sprintf("observe: checking %s on %s: %v", path, db.Where(), err), ErrUnreachable, err)
		}
		if st.Params >= 0 && st.Params != len(params) {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: takes %d parameters, references %d", path, st.Params, len(params)), ErrInvalidQuery))
			continue
		}
		if msg := checkSQLColumns(name, q.Declared(name), st.Columns); msg != "" {
			errs = append(errs, classed(fmt.Sprintf("observe: %s: %s", path, msg), ErrInvalidQuery))
			continue
		}
		o.queries[name] = &query{name: name, sql: stmt, compact: compact, params: params}
		o.order = append(o.order, name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// checkSQLColumns is checkColumns for a server that describes its columns by
// sqlstore.Column; a type the server does not tell before running is not held
// against the query (the read then checks the values).
func checkSQLColumns(name string, declared bool, cols []sqlstore.Column) string {
	name = vocab.BaseQuery(name)
	isInt := func(c sqlstore.Column) bool { return c.Type == sqlstore.TypeInt || c.Type == sqlstore.TypeUnknown }
	isBool := func(c sqlstore.Column) bool {
		// MySQL's BOOLEAN is a TINYINT: 0 and 1 read as false and true.
		return c.Type == sqlstore.TypeBool || c.Type == sqlstore.TypeInt || c.Type == sqlstore.TypeUnknown
	}
	switch name {
	case QObject:
		if len(cols) != 1 && len(cols) != 2 {
			return fmt.Sprintf("must return 1 or 2 columns (version[, status]), returns %d", len(cols))
		}
		if declared && !isInt(cols[0]) {
			return fmt.Sprintf("must return an integer first column (cast with CAST(... AS SIGNED)), returns %s", cols[0].TypeName)
		}
	case QInboxState, QOutboxState:
		if len(cols) != 2 {
			return fmt.Sprintf("must return 2 columns (state text, attempts integer), returns %d", len(cols))
		}
		if !isInt(cols[1]) {
			return fmt.Sprintf("must return an integer second column (attempts), returns %s", cols[1].TypeName)
		}
	case QQuiescent:
		if len(cols) != 1 {
			return fmt.Sprintf("must return 1 column (boolean), returns %d", len(cols))
		}
		if !isBool(cols[0]) {
			return fmt.Sprintf("must return a boolean column (or 0 and 1), returns %s", cols[0].TypeName)
		}
	default:
		if want := len(strings.Split(columns[name], ",")); len(cols) != want {
			return fmt.Sprintf("must return %d column(s) (%s), returns %d", want, columns[name], len(cols))
		}
	}
	return ""
}

// NewReader returns the observer of a store-neutral or key-value store
// (observe.redis, observe.command, observe.http), which the caller opened; the
// observer closes it.
func NewReader(r Reader, q targetfile.Queries, opts ...Option) *Observer {
	var to Timeouts
	for _, f := range opts {
		f(&to)
	}
	o := &Observer{reader: r, timeouts: to.withDefaults(), kind: r.Kind(), field: q.Base, paths: q}
	for _, name := range names(q) {
		if r.Has(name) {
			o.order = append(o.order, name)
		}
	}
	return o
}

// Unanswered gives, for each configured query the store said it cannot
// answer (its capabilities leave it out), why; nil when there is none.
func (o *Observer) Unanswered() map[string]string {
	if u, ok := o.reader.(interface{ Unsupported() map[string]string }); ok {
		return u.Unsupported()
	}
	return nil
}

// Columns are the column names each query's answer is read by, for observers
// that answer with named values (observe.command and observe.http objects).
func Columns(name string) []string {
	c := columns[vocab.BaseQuery(name)]
	if c == "" {
		return nil
	}
	parts := strings.Split(c, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
