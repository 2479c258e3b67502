package mysqlstore_test

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// harness opens the harness's own pool on url.
func harness(t *testing.T, url string, to sqlstore.Timeouts) *mysqlstore.DB {
	t.Helper()
	d, err := mysqlstore.Open(context.Background(), url, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// newDB is a fresh database of the test's own and the harness's pool on it.
func newDB(t *testing.T) (string, *mysqlstore.DB) {
	t.Helper()
	u := mysqltest.Database(t)
	return u, harness(t, u, sqlstore.Timeouts{})
}

// receiverPool is a pool as a receiver would open it: the driver alone,
// nothing of this package.
func receiverPool(t *testing.T, url string) *sql.DB {
	t.Helper()
	cfg, err := mysqlstore.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = &mysql.NopLogger{} // killed sessions are the point of some tests
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// receiverSession is one session of the receiver's and its connection ID.
func receiverSession(t *testing.T, db *sql.DB) (*sql.Conn, int64) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var id int64
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

func mustExec(t *testing.T, d *mysqlstore.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := d.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// eventually polls f until it returns true or 10s pass.
func eventually(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var ok bool
		if ok, last = f(); ok {
			return
		}
	}
	t.Fatalf("%s: still %s after 10s", what, last)
}

// proxy forwards TCP connections to a server, and can stop answering
// (freeze) or drop every connection and refuse new ones (cut): a server
// lost, as the harness sees it, without touching the real one.
type proxy struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(c, s)
			go p.pipe(s, c)
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for n > 0 && p.frozen.Load() {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// via is url with its host and port replaced by the proxy's.
func (p *proxy) via(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}
