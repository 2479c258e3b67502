// Package cmdobserve reads a receiver's state through a program or an HTTP
// endpoint the receiver's authors wrote (target.observe.command and
// target.observe.http), so that hookcert can judge a receiver whatever its
// store: the program or endpoint answers each named query with one JSON value,
// and both observers implement observe.Reader.
//
// The protocol (docs/target.md): a command query is a command line, words
// split on spaces with no shell, hookcert's parameters $1 (source), $2
// (account), $3 (event ID) and $4 (object ID) substituted inside words; the
// program also reads on stdin {"query", "source", "account", "event_id",
// "object_id"}. An HTTP query is a GET of a URL with the parameters
// substituted URL-escaped. The answer is read as rows: null is no row; a
// scalar is one row of one value; an array of scalars is one row; an array of
// arrays is several rows ([] none); an object is one row whose values are
// taken by the query's column names (count, version and status, ttl_ms, ...).
package cmdobserve
