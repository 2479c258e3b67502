// Package mysqltest gives tests a MySQL or MariaDB database of their own:
// Database creates a fresh database on the server named by
// HOOKCERT_TEST_MYSQL_URL (default mysql://root@127.0.0.1:3306/test) and drops
// it when the test ends. When the default server does not answer, the test
// is skipped with the reason; when the variable names one that does not, it
// fails.
package mysqltest

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
)

// EnvURL names the variable holding the test server URL.
const EnvURL = "HOOKCERT_TEST_MYSQL_URL"

// EnvKeep, when set to a non-empty value, keeps the databases created by
// Database for inspection after the test (their names are logged).
const EnvKeep = "HOOKCERT_TEST_KEEP_DATABASE"

// DefaultURL is used when EnvURL is unset.
const DefaultURL = "mysql://root@127.0.0.1:3306/test"

// ServerURL returns the test server URL from EnvURL, or DefaultURL.
func ServerURL() string {
	if u := strings.TrimSpace(os.Getenv(EnvURL)); u != "" {
		return u
	}
	return DefaultURL
}

// Server returns the test server URL, skipping t when the default server
// does not accept connections (failing it when EnvURL names one that does not).
func Server(t testing.TB) string {
	t.Helper()
	u := ServerURL()
	cfg, err := mysqlstore.ParseURL(u)
	if err != nil {
		t.Fatalf("mysqltest: %s: %v", EnvURL, err)
	}
	c, err := net.DialTimeout("tcp", cfg.Addr, 2*time.Second)
	if err != nil {
		if os.Getenv(EnvURL) != "" {
			t.Fatalf("mysqltest: the server %s names (%s) does not answer: %v", EnvURL, cfg.Addr, err)
		}
		t.Skipf("no MySQL or MariaDB at %s (start one, or set %s): %v", cfg.Addr, EnvURL, err)
	}
	_ = c.Close()
	return u
}

// Database creates a fresh database on the test server and returns its URL;
// it is dropped (its sessions killed first) when t and its subtests finish.
func Database(t testing.TB) string {
	t.Helper()
	server := Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, drop, err := mysqlstore.Provision(ctx, server)
	if err != nil {
		t.Fatalf("mysqltest: no test database: %v", err)
	}
	t.Cleanup(func() {
		if os.Getenv(EnvKeep) != "" {
			cfg, _ := mysqlstore.ParseURL(u)
			t.Logf("mysqltest: kept database %s", cfg.DBName)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("mysqltest: %v", err)
		}
	})
	return u
}
