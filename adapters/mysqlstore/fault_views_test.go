package mysqlstore

import (
	"context"
	"database/sql"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// openTestServer opens the test server as mysqltest does (this package's own
// tests cannot import it): HOOKCERT_TEST_MYSQL_URL, else the local default,
// skipped when the default does not answer.
func openTestServer(t *testing.T) *DB {
	t.Helper()
	u := strings.TrimSpace(os.Getenv("HOOKCERT_TEST_MYSQL_URL"))
	if u == "" {
		u = "mysql://root@127.0.0.1:3306/test"
	}
	cfg, err := ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", cfg.Addr, 2*time.Second); err != nil {
		if os.Getenv("HOOKCERT_TEST_MYSQL_URL") != "" {
			t.Fatalf("the server HOOKCERT_TEST_MYSQL_URL names (%s) does not answer: %v", cfg.Addr, err)
		}
		t.Skipf("no MySQL or MariaDB at %s (start one, or set HOOKCERT_TEST_MYSQL_URL): %v", cfg.Addr, err)
	} else {
		_ = c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := OpenConfig(ctx, cfg, sqlstore.Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestReadLockViewsTellsStaleFromFresh: while another client reads the views
// every 10 ms, no read of them is fresh — MariaDB serves its old cache — and
// readLockViews says so; once it stops, a read after 100 ms of quiet is.
func TestReadLockViewsTellsStaleFromFresh(t *testing.T) {
	d := openTestServer(t)
	if !d.MariaDB() {
		t.Skip("the lock views' cache is MariaDB's; MySQL 8's lock waits are read live")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mysql.NewConnector(d.cfg)
	if err != nil {
		t.Fatal(err)
	}
	poller := sql.OpenDB(c)
	defer poller.Close()
	poller.SetMaxOpenConns(1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				var n int
				_ = poller.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX").Scan(&n)
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	for i := 0; i < 5; i++ {
		if _, fresh, err := d.readLockViews(ctx); err != nil {
			t.Fatal(err)
		} else if fresh {
			t.Fatal("a read while another client polls every 10 ms was taken as fresh")
		}
		time.Sleep(30 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for i := 0; i < 10; i++ {
		time.Sleep(lockViewIdle + 40*time.Millisecond)
		_, fresh, err := d.readLockViews(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fresh {
			return
		}
	}
	t.Skip("no read of the lock views was fresh in 10 tries after the poller stopped: another client on the server reads them more often than every 100 ms")
}
