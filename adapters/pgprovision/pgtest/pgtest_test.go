package pgtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}

func exists(t *testing.T, name string) bool {
	t.Helper()
	conn := connect(t, ServerURL())
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func currentDB(t *testing.T, url string) string {
	t.Helper()
	conn := connect(t, url)
	defer conn.Close(context.Background())
	var name string
	if err := conn.QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestDatabaseIsFreshAndDropped(t *testing.T) {
	var names []string
	t.Run("use", func(t *testing.T) {
		a, b := Database(t), Database(t)
		na, nb := currentDB(t, a), currentDB(t, b)
		if na == nb || !strings.HasPrefix(na, "hookcert_test_") {
			t.Fatalf("databases %q and %q: want two distinct hookcert_test_* databases", na, nb)
		}
		// A session left open by the test must not block the drop.
		conn := connect(t, a)
		if _, err := conn.Exec(context.Background(), "CREATE TABLE t (id int)"); err != nil {
			t.Fatal(err)
		}
		names = []string{na, nb}
	})
	for _, n := range names {
		if exists(t, n) {
			t.Errorf("database %s still exists after the subtest ended", n)
		}
	}
}

// TestDatabaseConcurrent: parallel callers (as parallel test packages are) each
// get their own database without colliding on the template.
func TestDatabaseConcurrent(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	seen := map[string]bool{}
	t.Run("group", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				name := currentDB(t, Database(t))
				mu.Lock()
				seen[name] = true
				mu.Unlock()
			})
		}
	})
	if len(seen) != n {
		t.Fatalf("%d distinct databases for %d callers", len(seen), n)
	}
	for name := range seen {
		if exists(t, name) {
			t.Errorf("database %s left behind", name)
		}
	}
}

// fatalRecorder records Fatalf instead of stopping the goroutine, to observe
// the message Database gives when the server does not answer.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestDatabaseUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	t.Setenv(EnvURL, fmt.Sprintf("postgres://postgres:Hunter2@127.0.0.1:%d/postgres", port))
	rec := &fatalRecorder{TB: t}
	if got := Database(rec); got != "" {
		t.Fatalf("Database returned %q for an unreachable server", got)
	}
	t.Logf("message: %s", rec.msg)
	if !strings.Contains(rec.msg, EnvURL) || !strings.Contains(rec.msg, "connection refused") || strings.Contains(rec.msg, "Hunter2") {
		t.Fatalf("unhelpful or leaking message: %s", rec.msg)
	}
}
