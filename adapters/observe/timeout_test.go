package observe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

// silentListener accepts TCP connections and never answers, like a port whose
// server hangs; it closes them when the test ends.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// returnsWithin runs f and fails the test if it has not returned after d (the
// observer used to wait 120 s on a silent port).
func returnsWithin[T any](t *testing.T, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("did not return within %s", d)
		panic("unreachable")
	}
}

func TestConnectTimeoutOnSilentPort(t *testing.T) {
	addr := silentListener(t)
	for _, mode := range []string{"disable", "prefer"} {
		t.Run("sslmode="+mode, func(t *testing.T) {
			url := fmt.Sprintf("postgres://app:hunter2@%s/rx?sslmode=%s", addr, mode)
			err := returnsWithin(t, 10*time.Second, func() error {
				_, err := Open(context.Background(), url, queries, WithTimeouts(Timeouts{Connect: 300 * time.Millisecond}))
				return err
			})
			if !errors.Is(err, ErrUnreachable) || !errors.Is(err, ErrTimeout) || errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("err = %v, want ErrUnreachable and ErrTimeout", err)
			}
			for _, want := range []string{addr, "no answer within 300ms", "target.observe.postgres.connect_timeout"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error quotes the password: %v", err)
			}
		})
	}
	// The caller's own deadline is the caller's, not the connect timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Open(ctx, "postgres://app@"+addr+"/rx?sslmode=disable", queries, WithTimeouts(Timeouts{Connect: time.Minute}))
	if !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "connect_timeout") {
		t.Errorf("caller's deadline: err = %v", err)
	}
}

// lockTable holds an ACCESS EXCLUSIVE lock on table from another session until
// the test ends, as an ALTER TABLE or a backup tool would.
func lockTable(t *testing.T, ctx context.Context, dbURL, table string) {
	t.Helper()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = tx.Rollback(context.Background())
		_ = c.Close(context.Background())
	})
}

func TestSessionSettings(t *testing.T) {
	ctx, dbURL := setup(t)
	o, err := Open(ctx, dbURL, queries, WithTimeouts(Timeouts{Statement: 1500 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var st, lt, app string
	if err := o.Pool().QueryRow(ctx, "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'), current_setting('application_name')").Scan(&st, &lt, &app); err != nil {
		t.Fatal(err)
	}
	if st != "1500ms" || lt != "5s" || app != "hookcert-harness" {
		t.Errorf("statement_timeout %s, lock_timeout %s, application_name %s; want 1500ms, 5s (default), hookcert-harness", st, lt, app)
	}
}

func TestLockAndStatementTimeouts(t *testing.T) {
	ctx, dbURL := setup(t)
	k := Key{Source: "stripe", Account: "acct_A", EventID: "evt_1", ObjectID: "pi_1"}
	lockTO, err := Open(ctx, dbURL, queries, WithTimeouts(Timeouts{Lock: 200 * time.Millisecond, Statement: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer lockTO.Close()
	stmtTO, err := Open(ctx, dbURL, queries, WithTimeouts(Timeouts{Lock: 30 * time.Second, Statement: 200 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer stmtTO.Close()
	lockTable(t, ctx, dbURL, "ledger_entries")

	// Without the lock timeout this would wait as long as the lock is held.
	err = returnsWithin(t, 10*time.Second, func() error { _, err := lockTO.Effects(ctx, k); return err })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Effects under a held lock: err = %v, want ErrTimeout", err)
	}
	for _, want := range []string{"query effects", "200ms", "lock_timeout", "target.observe.postgres.lock_timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lock timeout error %q lacks %q", err, want)
		}
	}
	// Tables the lock does not cover still answer.
	if n, err := lockTO.EventRows(ctx, k); err != nil || n != 1 {
		t.Errorf("EventRows beside the lock = %d, %v", n, err)
	}
	err = returnsWithin(t, 10*time.Second, func() error { _, err := stmtTO.ObjectEffects(ctx, "stripe", "acct_A", "pi_1"); return err })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("ObjectEffects under a held lock: err = %v, want ErrTimeout", err)
	}
	for _, want := range []string{"query object_effects", "ran longer than 200ms", "target.observe.postgres.statement_timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("statement timeout error %q lacks %q", err, want)
		}
	}
	snap := returnsWithin(t, 10*time.Second, func() []Result { return lockTO.Snapshot(ctx, k) })
	if snap[1].Query != QEffects || !strings.Contains(snap[1].Error, "lock_timeout") || snap[0].Error != "" {
		t.Errorf("Snapshot under the lock: %+v", snap[:2])
	}

	// Open itself prepares every query, which waits for the same lock: a timeout
	// there is the database's state, not a wrong query.
	err = returnsWithin(t, 10*time.Second, func() error {
		_, err := Open(ctx, dbURL, queries, WithTimeouts(Timeouts{Lock: 200 * time.Millisecond}))
		return err
	})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("Open under a held lock: err = %v, want ErrTimeout and ErrUnreachable, not ErrInvalidQuery", err)
	}
	if !strings.Contains(err.Error(), "query effects waited 200ms for a lock") {
		t.Errorf("Open error %q does not name the query and the timeout", err)
	}
}

func TestOpenTarget(t *testing.T) {
	ctx, dbURL := setup(t)
	p := targetfile.Store{URL: targetfile.NewSecret(dbURL), Queries: queries, StatementTimeout: 2 * time.Second}
	o, err := OpenTarget(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if got := TargetTimeouts(p); got != (Timeouts{Connect: targetfile.DefaultConnectTimeout, Statement: 2 * time.Second, Lock: targetfile.DefaultLockTimeout}) {
		t.Errorf("TargetTimeouts = %+v", got)
	}
	var st string
	if err := o.Pool().QueryRow(ctx, "SHOW statement_timeout").Scan(&st); err != nil || st != "2s" {
		t.Errorf("statement_timeout = %q, %v", st, err)
	}
}

// freezingProxy forwards TCP to the database until frozen, then stops
// forwarding without closing anything: a server (or a network) gone silent
// mid-run, which the server-side statement_timeout cannot catch.
type freezingProxy struct {
	mu     sync.Mutex
	frozen bool
	cond   *sync.Cond
}

func newFreezingProxy(t *testing.T, backend string) (*freezingProxy, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{}
	p.cond = sync.NewCond(&p.mu)
	var conns []net.Conn
	var cmu sync.Mutex
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				for p.frozen {
					p.cond.Wait()
				}
				p.mu.Unlock()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				// Pass the end on: a cancel request waits for the server to hang up.
				dst.Close()
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, c, b)
			cmu.Unlock()
			go pipe(b, c)
			go pipe(c, b)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.frozen = false
		p.cond.Broadcast()
		p.mu.Unlock()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
	})
	return p, ln.Addr().String()
}

func (p *freezingProxy) set(frozen bool) {
	p.mu.Lock()
	p.frozen = frozen
	p.cond.Broadcast()
	p.mu.Unlock()
}

func TestSilentServerMidRun(t *testing.T) {
	ctx, dbURL := setup(t)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, addr := newFreezingProxy(t, fmt.Sprintf("%s:%d", cfg.Host, cfg.Port))
	proxied := strings.Replace(dbURL, fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), addr, 1)
	o, err := Open(ctx, proxied, queries, WithTimeouts(Timeouts{Connect: 300 * time.Millisecond, Statement: 300 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	k := Key{Source: "stripe", Account: "acct_A", EventID: "evt_1"}
	if n, err := o.EventRows(ctx, k); err != nil || n != 1 {
		t.Fatalf("EventRows through the proxy = %d, %v", n, err)
	}
	proxy.set(true)
	defer proxy.set(false) // before Close, which says goodbye to the server
	err = returnsWithin(t, 10*time.Second, func() error { _, err := o.EventRows(ctx, k); return err })
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "query event_rows: no answer from the database within 600ms") {
		t.Errorf("EventRows on a silent server: err = %v", err)
	}
}
