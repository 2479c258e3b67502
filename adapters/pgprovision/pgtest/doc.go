// Package pgtest gives tests of other packages a PostgreSQL database of their
// own: Database creates a fresh database on the server named by
// HOOKCERT_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
// and drops it when the test ends.
package pgtest
