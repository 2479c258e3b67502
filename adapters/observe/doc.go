// Package observe reads a receiver's state from its PostgreSQL database through the
// queries of its target file (target.Queries), with bound parameters: $1 source,
// $2 account, $3 event ID, $4 object ID. Every query is checked when the observer
// opens (it must prepare, reference only $1..$4 and return the expected columns),
// so a wrong target file fails before any scenario runs. A query the target does
// not configure gives ErrNotConfigured, which scenarios report as not applicable.
package observe
