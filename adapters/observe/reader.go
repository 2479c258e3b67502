package observe

import (
	"context"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// Reader answers a target's named queries from one kind of store that is not
// SQL (observe.redis, observe.command, observe.http); the SQL kinds are read
// through sqlstore.DB. The Observer turns a Reader's rows into counts, states
// and booleans exactly as it does a SQL query's, so every kind is judged alike.
//
// What each query returns, as rows (values int64, float64, string, bool or nil):
//
//	event_rows, effects, object_effects  one row, one integer (no row or NULL: 0)
//	object                               no row: not found; one row (version integer[, status text])
//	payment                              no row: not found; one row (status text)
//	payload_present                      no row: the key is gone; one row (present boolean)
//	key_ttl                              no row: the key is gone; one row (milliseconds left, integer; -1: it never expires)
//	quiescent                            one row (boolean)
//	inbox_state, outbox_state            no row: not found; one row (state text, attempts integer)
type Reader interface {
	// Kind names the observer kind: "redis", "command", "http".
	Kind() string
	// Has reports whether the reader answers the named query: it is configured
	// and, where the store states its capabilities, the store says it can.
	Has(name string) bool
	// Read runs the named query for k. Errors wrap ErrNotConfigured (a query it
	// does not answer), ErrTimeout (no answer in time), ErrInvalidQuery (an
	// answer of the wrong shape: the target's mistake, named by its field) or
	// ErrUnreachable (the store cannot be used).
	Read(ctx context.Context, name string, k Key) (sqlstore.Rows, error)
	// Describe is the query as configured (a command template, a URL), for
	// evidence; never a secret.
	Describe(name string) string
	// Params are the parameters ($n) the named query uses, in order.
	Params(name string) []int
	Close()
}
