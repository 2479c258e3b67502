// Package pgprovision obtains a PostgreSQL database for one hookcert run.
//
// Provision tries, in order: an explicit server URL (the --database-url flag or
// HOOKCERT_DATABASE_URL); a container started with testcontainers-go when a
// Docker engine answers; a throwaway cluster started from local PostgreSQL
// binaries (initdb and postgres on PATH or under /usr/lib/postgresql/*/bin),
// run as an unprivileged user when the caller is root. On whichever server it
// obtains, it creates a database of the run's own (<prefix>_<random>) and
// returns its URL together with a cleanup function that drops it (unless asked
// to keep it) and stops whatever was started.
//
// A local cluster is started so that the kernel stops it when hookcert dies
// (Linux: a parent-death signal asks for immediate shutdown). Its temp dir is
// marked with the owning process; every Provision removes marked dirs whose
// owner is gone, stopping a postmaster that is still running, and reports
// them in Database.Notices and as a warning.
//
// Passwords never appear in errors or log records: URLs are passed through
// Redact first.
//
// Tests of other packages use the pgtest subpackage, which provisions a fresh
// database on HOOKCERT_TEST_DATABASE_URL per call.
package pgprovision
