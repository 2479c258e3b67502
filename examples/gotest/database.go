package gotest

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

// EnvServerURL names the PostgreSQL server the tests create their databases on
// (default DefaultServerURL), as for the rest of hookcert's tests.
const EnvServerURL = "HOOKCERT_TEST_DATABASE_URL"

// DefaultServerURL is a local server with trust authentication.
const DefaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Database creates a throwaway database on the test server and returns its
// URL; it is dropped (WITH (FORCE): a pool left open does not block it) when
// t ends. Plain pgx: no container runtime comes with it.
func Database(t testing.TB) string {
	t.Helper()
	server := strings.TrimSpace(os.Getenv(EnvServerURL))
	if server == "" {
		server = DefaultServerURL
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		t.Fatalf("$%s: not a postgres:// URL", EnvServerURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("no PostgreSQL test server at %s (set $%s): %v", u.Redacted(), EnvServerURL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "hookcert_gotest_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("dropping database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	db := *u
	db.Path = "/" + name
	return db.String()
}
