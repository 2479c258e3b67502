// Package redisobserve reads a receiver's state from Redis (target.observe.redis),
// as an observe.Reader: each named query is one read-only Redis command line whose
// words may hold hookcert's parameters, $1 source, $2 account, $3 event ID and
// $4 object ID, substituted inside the words (EXISTS seen:$1:$3). Words are split
// on spaces and sent as they are, never through a shell or a Lua script, so a
// parameter value can neither add a word nor change the command.
//
// The commands are the ones that read one key: EXISTS GET HGET HMGET HLEN HEXISTS
// LLEN SCARD SISMEMBER ZCARD ZSCORE STRLEN PTTL TTL, and hookcert's own COUNT
// pattern, which counts the keys matching a glob pattern through SCAN (MATCH,
// COUNT 1000) and gives up past 10,000 keys rather than walk a whole key space.
// In a COUNT pattern the parameters' glob characters are escaped, so an ID that
// holds a * matches itself only.
//
// Open checks every query before any is run (a command allowed for that query,
// the command's number of words, only $1..$4, a parameter in a key or field
// word where the query needs one) and that the server answers PING. A wrong
// query is an error wrapping observe.ErrInvalidQuery that names its field
// (target.observe.redis.queries.<name>) and the rule; a server that cannot be
// used one wrapping observe.ErrUnreachable. Read converts each reply into the
// rows the observe.Reader contract gives each query (see Reader.Read).
//
// Redis has no table lock, but it can pause every client's writes while reads
// go on (CLIENT PAUSE … WRITE, Redis 6.2+): Gate is that pause. A receiver
// that checks for a key and then writes has made its check and waits at its
// write, so concurrent copies meet there (lock-gating); and a waiting client's
// connection can be closed before its write runs (CLIENT KILL ID), which a Lua
// script or MULTI/EXEC then never applies (connection-loss). The pause is
// server-wide: the gate counts and cuts only the clients of the observed
// database that are not the harness's.
package redisobserve
