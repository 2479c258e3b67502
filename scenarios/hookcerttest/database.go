package hookcerttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvServerURL names the PostgreSQL server Database creates its databases on
// when given none.
const EnvServerURL = "HOOKCERT_TEST_DATABASE_URL"

// DefaultServerURL is the server Database uses when given none and
// $HOOKCERT_TEST_DATABASE_URL is unset: a local one with trust
// authentication.
const DefaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Database creates a throwaway database on the PostgreSQL server at
// serverURL ("" for $HOOKCERT_TEST_DATABASE_URL, else DefaultServerURL) and
// returns its URL; it is dropped when t ends (WITH (FORCE): a pool left open
// does not hold it). It starts no server and pulls in no container runtime:
// the server is the test's.
func Database(t testing.TB, serverURL string) string {
	t.Helper()
	if serverURL == "" {
		serverURL = strings.TrimSpace(os.Getenv(EnvServerURL))
	}
	if serverURL == "" {
		serverURL = DefaultServerURL
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// Not printed: it may hold a password.
		t.Fatalf("hookcerttest: Database: the server URL is not a postgres:// URL (set $%s or pass one)", EnvServerURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatalf("hookcerttest: Database: no PostgreSQL server at %s (set $%s): %v", u.Redacted(), EnvServerURL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "hookcerttest_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("hookcerttest: Database: creating %s on %s: %v", name, u.Redacted(), err)
	}
	t.Cleanup(func() { dropDatabase(t, serverURL, name) })
	db := *u
	db.Path = "/" + name
	return db.String()
}

func dropDatabase(t testing.TB, serverURL, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Errorf("hookcerttest: dropping database %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("hookcerttest: dropping database %s: %v", name, err)
	}
}
