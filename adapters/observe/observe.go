package observe

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

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

// Observer runs a target's queries on one kind of store: PostgreSQL through
// pgx (pool), another SQL database through sqlstore.DB (db), or a store-neutral
// Reader (reader); exactly one is set. It is safe for concurrent use.
type Observer struct {
	pool    *pgxpool.Pool
	ownPool bool
	db      sqlstore.DB
	reader  Reader
	// kind is the observer kind; field its section (target.observe.<kind>).
	kind, field string
	// paths name each query's field in the file, for errors.
	paths    targetfile.Queries
	queries  map[string]*query
	order    []string
	timeouts Timeouts
}

// Has reports whether the named query is configured (and, for a store that
// states its capabilities, answered).
func (o *Observer) Has(name string) bool {
	if o.reader != nil {
		return o.reader.Has(name)
	}
	return o.queries[name] != nil
}

// Kind is the observer kind (postgres, mysql, redis, command, http).
func (o *Observer) Kind() string { return o.kind }

// fieldPath is the file field a query was read from.
func (o *Observer) fieldPath(name string) string { return o.paths.FieldPath(name) }

// describe is a query as configured and the parameters it binds, for evidence.
func (o *Observer) describe(name string) (string, []int) {
	if o.reader != nil {
		return o.reader.Describe(name), o.reader.Params(name)
	}
	q := o.queries[name]
	return q.sql, q.params
}

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
