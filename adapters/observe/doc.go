// Package observe reads a receiver's state from its PostgreSQL database through the
// queries of its target file (target.Queries), with bound parameters: $1 source,
// $2 account, $3 event ID, $4 object ID. Every query is checked when the observer
// opens (it must prepare, reference only $1..$4 and return the expected columns),
// so a wrong target file fails before any scenario runs: such errors wrap
// ErrInvalidQuery and name the field (target.observe.postgres.queries.<name>, or
// the declared vocabulary's field the query came from, target.Queries.FieldPath), while
// a database that cannot be used wraps ErrUnreachable. A query the target does not
// configure gives ErrNotConfigured, which scenarios report as not applicable.
// Quiescent runs the parameterless acceptance.quiescent query.
//
// Every connection attempt is bounded by a connect timeout and every query by the
// session's statement_timeout and lock_timeout, with a client-side deadline behind
// them for a server that stops answering; a query that runs out of time gives an
// error wrapping ErrTimeout that names the query and the timeout (Timeouts, set
// from the target file's observe.postgres section by OpenTarget).
package observe
