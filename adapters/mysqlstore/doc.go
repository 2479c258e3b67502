// Package mysqlstore is the harness's reach into a receiver's MySQL 8 or
// MariaDB 10.6+ database, with what the PostgreSQL adapters (pgsession,
// pgfault, pgprovision) give for PostgreSQL:
//
//   - DB, an sqlstore.DB: statements written with hookcert's $1..$n bound as
//     ? placeholders (Rewrite), checked by a server-side prepare, values
//     normalized, every session bounded by the statement and lock timeouts;
//   - the fault tools: a lock gate (LOCK TABLES ... READ) that holds the
//     receiver's concurrent writers of a table at its metadata lock, who it
//     holds (Held), the killing of those sessions (TerminateWaiters) and the
//     receiver's busy sessions (Busy);
//   - Provision, a fresh database of the run's own on a server;
//   - Schema, what hookcert init reads of the tables.
//
// The harness's own sessions are told apart from the receiver's by their
// connection IDs, which every DB of this process registers as it opens them.
//
// It imports nothing of the harness but sqlstore.
package mysqlstore
