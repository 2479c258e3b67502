package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision"
)

// EnvURL names the variable holding the test server URL.
const EnvURL = "HOOKCERT_TEST_DATABASE_URL"

// EnvKeep, when set to a non-empty value, keeps the databases created by
// Database for inspection after the test (their URLs are logged).
const EnvKeep = "HOOKCERT_TEST_KEEP_DATABASE"

// DefaultURL is used when EnvURL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the test server URL from EnvURL, or DefaultURL.
func ServerURL() string {
	if u := strings.TrimSpace(os.Getenv(EnvURL)); u != "" {
		return u
	}
	return DefaultURL
}

// Database creates a fresh database on the test server and returns its URL. The
// database is dropped (WITH (FORCE), so open pools do not block it) when t and
// its subtests finish. When the server does not answer, t fails at once with
// the redacted URL and a hint.
func Database(t testing.TB) string {
	t.Helper()
	server := ServerURL()
	keep := os.Getenv(EnvKeep) != ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, cleanup, err := pgprovision.Provision(ctx, pgprovision.Options{
		URL:          server,
		KeepDatabase: keep,
		NamePrefix:   "hookcert_test",
	})
	if err != nil {
		t.Fatalf("pgtest: no test database on %s (set %s, or start the server: pg_ctlcluster --skip-systemctl-redirect 15 main start): %v",
			pgprovision.Redact(server), EnvURL, err)
		return "" // reached only with a TB whose Fatalf does not stop the test
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cleanup(ctx); err != nil {
			t.Errorf("pgtest: %v", err)
		}
		if keep {
			t.Logf("pgtest: kept database %s at %s", db.Name, pgprovision.Redact(db.URL))
		}
	})
	return db.URL
}
