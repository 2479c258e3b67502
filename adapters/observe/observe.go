package observe

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
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

// Observer runs a target's queries. It is safe for concurrent use.
type Observer struct {
	pool     *pgxpool.Pool
	ownPool  bool
	queries  map[string]*query
	order    []string
	timeouts Timeouts
}

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
