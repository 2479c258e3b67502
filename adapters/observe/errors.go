package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookcert/hookcert/adapters/pgsession"
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
