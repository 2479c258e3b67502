package pgfault

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/pgsession"
)

// newDB creates a database of its own for the test and returns its URL and name.
func newDB(t *testing.T) (string, string) {
	t.Helper()
	u := pgtest.Database(t)
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return u, strings.TrimPrefix(pu.Path, "/")
}

func receiverConn(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "receiver"
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func harness(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgsession.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// checkThenInsert is the classic unsafe receiver: look for the key, insert if
// absent, in one READ COMMITTED transaction.
func checkThenInsert(ctx context.Context, c *pgx.Conn) (string, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM processed_events WHERE event_id = 'evt_1'").Scan(&n); err != nil {
		return "", err
	}
	if n > 0 {
		return "duplicate", nil
	}
	if _, err := tx.Exec(ctx, "INSERT INTO processed_events (event_id) VALUES ('evt_1')"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return "unique_violation", nil
		}
		return "", err
	}
	return "inserted", tx.Commit(ctx)
}

func TestGateMakesTheRaceDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name        string
		uniqueIndex bool
		wantRows    int
		want        map[string]int
	}{
		{"check-then-insert without a unique key", false, 8, map[string]int{"inserted": 8}},
		{"check-then-insert with a unique key", true, 1, map[string]int{"inserted": 1, "unique_violation": 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dbURL, _ := newDB(t)
			pool := harness(t, dbURL)
			ddl := "CREATE TABLE processed_events (event_id text NOT NULL)"
			if _, err := pool.Exec(ctx, ddl); err != nil {
				t.Fatal(err)
			}
			if tc.uniqueIndex {
				if _, err := pool.Exec(ctx, "CREATE UNIQUE INDEX ON processed_events (event_id)"); err != nil {
					t.Fatal(err)
				}
			}
			conns := make([]*pgx.Conn, 8)
			for i := range conns {
				conns[i] = receiverConn(t, dbURL)
			}
			gate, err := Hold(ctx, pool, "processed_events", "")
			if err != nil {
				t.Fatal(err)
			}
			results := make(chan string, len(conns))
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := checkThenInsert(ctx, c)
					if err != nil {
						r = "error: " + err.Error()
					}
					results <- r
				}()
			}
			n, err := gate.WaitForWaiters(ctx, 8)
			if err != nil || n != 8 {
				t.Fatalf("WaitForWaiters = %d, %v", n, err)
			}
			ws, err := gate.Waiters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range ws {
				if w.ApplicationName != "receiver" || !strings.HasPrefix(w.Query, "INSERT") || w.Mode != "RowExclusiveLock" {
					t.Errorf("unexpected waiter %+v", w)
				}
			}
			if len(results) != 0 {
				t.Fatalf("%d deliveries finished while gated", len(results))
			}
			if err := gate.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := gate.Release(ctx); err == nil {
				t.Error("second Release: no error")
			}
			wg.Wait()
			close(results)
			got := map[string]int{}
			for r := range results {
				got[r]++
			}
			var rows int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM processed_events").Scan(&rows); err != nil {
				t.Fatal(err)
			}
			t.Logf("8 gated deliveries: outcomes %v, rows %d", got, rows)
			if rows != tc.wantRows || len(got) != len(tc.want) {
				t.Fatalf("rows = %d, outcomes %v; want %d, %v", rows, got, tc.wantRows, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("outcome %s = %d, want %d (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestHoldErrors(t *testing.T) {
	ctx := context.Background()
	dbURL, _ := newDB(t)
	pool := harness(t, dbURL)
	if _, err := pool.Exec(ctx, "CREATE TABLE events (id text)"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, mode, want string }{
		{"events; DROP TABLE x", "", "each part must be letters"},
		{"a.b.c", "", "must be table or schema.table"},
		{"events", "SHARED", `lock mode "SHARED": unknown`},
		{"missing_table", "", "table not found"},
	} {
		if _, err := Hold(ctx, pool, c.table, c.mode); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Hold(%q, %q) = %v, want %q", c.table, c.mode, err, c.want)
		}
	}

	// A receiver transaction with an uncommitted insert holds ROW EXCLUSIVE, which
	// conflicts with SHARE: Hold must give up after LockTimeout with a clear error.
	rc := receiverConn(t, dbURL)
	tx, err := rc.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "INSERT INTO events VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Hold(ctx, pool, "public.events", "share")
	if err == nil || !strings.Contains(err.Error(), "could not take the SHARE lock within 5s") {
		t.Fatalf("Hold under a conflicting lock = %v", err)
	}
	if d := time.Since(start); d < LockTimeout || d > LockTimeout+3*time.Second {
		t.Errorf("Hold gave up after %s, want about %s", d, LockTimeout)
	}
	// The failed gate returned its connection; the pool still works.
	if err := pool.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTerminateBackends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL, dbName := newDB(t)
	pool := harness(t, dbURL)
	if _, err := pool.Exec(ctx, "CREATE TABLE ledger (id text)"); err != nil {
		t.Fatal(err)
	}
	// Several harness sessions exist; none may be terminated.
	var held []*pgxpool.Conn
	for i := 0; i < 3; i++ {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}

	inTx := receiverConn(t, dbURL)
	idle := receiverConn(t, dbURL)
	tx, err := inTx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO ledger VALUES ('uncommitted')"); err != nil {
		t.Fatal(err)
	}
	pids, err := TerminateBackends(ctx, pool, dbName, Filter{InTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 || pids[0] != int(inTx.PgConn().PID()) {
		t.Fatalf("terminated %v, want only the in-transaction session %d", pids, inTx.PgConn().PID())
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit on a terminated session succeeded")
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM ledger").Scan(&n); err != nil || n != 0 {
		t.Fatalf("ledger rows = %d, %v; want 0 (the insert was rolled back)", n, err)
	}
	if err := idle.Ping(ctx); err != nil {
		t.Errorf("the idle receiver session was hit: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := pool.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
			t.Fatalf("harness pool broken after termination: %v", err)
		}
	}

	// Without the filter, every receiver session goes, the harness stays.
	pids, err = TerminateBackends(ctx, pool, dbName, Filter{})
	if err != nil || len(pids) != 1 || pids[0] != int(idle.PgConn().PID()) {
		t.Fatalf("TerminateBackends(all) = %v, %v; want [%d]", pids, err, idle.PgConn().PID())
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := TerminateBackends(ctx, pool, "", Filter{}); err == nil {
		t.Error("empty database name: no error")
	}
}

func TestTerminateWaitersOnGate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL, dbName := newDB(t)
	pool := harness(t, dbURL)
	if _, err := pool.Exec(ctx, "CREATE TABLE processed_events (event_id text); CREATE TABLE other (x int)"); err != nil {
		t.Fatal(err)
	}
	bystander := receiverConn(t, dbURL)
	btx, err := bystander.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = btx.Rollback(ctx) }()
	if _, err := btx.Exec(ctx, "INSERT INTO other VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	gate, err := Hold(ctx, pool, "processed_events", "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gate.Release(ctx) }()
	waiter := receiverConn(t, dbURL)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "INSERT INTO processed_events VALUES ('evt_1')")
		done <- err
	}()
	if _, err := gate.WaitForWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pids, err := TerminateBackends(ctx, pool, dbName, Filter{WaitingOn: gate, InTransaction: true})
	if err != nil || len(pids) != 1 || pids[0] != int(waiter.PgConn().PID()) {
		t.Fatalf("terminated %v, %v; want only the waiter %d", pids, err, waiter.PgConn().PID())
	}
	if err := <-done; err == nil {
		t.Error("the waiting insert succeeded after its session was terminated")
	}
	if _, err := btx.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("the bystander transaction was hit: %v", err)
	}
	// With nobody waiting, WaitForWaiters times out and says how many it saw.
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if n, err := gate.WaitForWaiters(short, 1); err == nil || n != 0 || !strings.Contains(err.Error(), "0 of 1 sessions waiting") {
		t.Errorf("WaitForWaiters with no waiter = %d, %v", n, err)
	}
}

// A gate holds the sessions waiting on its lock and those waiting behind one
// of them on a row lock the receiver took first; a session whose transaction
// began before the lock was taken is somebody else's work: counted apart,
// and left alone by an own-only cut.
func TestGateHeldCountsBehindAndForeign(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL, dbName := newDB(t)
	pool := harness(t, dbURL)
	if _, err := pool.Exec(ctx, `CREATE TABLE ledger (object_id text); CREATE TABLE payments (id text PRIMARY KEY, status text);
		INSERT INTO payments VALUES ('pi_1', 'succeeded')`); err != nil {
		t.Fatal(err)
	}
	// The foreign session begins its transaction before the gate exists.
	foreign := receiverConn(t, dbURL)
	ftx, err := foreign.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ftx.Rollback(ctx) }()
	if _, err := ftx.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	gate, err := Hold(ctx, pool, "ledger", "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gate.Release(ctx) }()
	errs := make(chan error, 3)
	// first locks the payment row, then waits at the gate; second waits on
	// first's row lock; foreign waits at the gate in its older transaction.
	refund := func(c *pgx.Conn) {
		tx, err := c.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, "SELECT status FROM payments WHERE id = 'pi_1' FOR UPDATE")
		}
		if err == nil {
			_, err = tx.Exec(ctx, "INSERT INTO ledger VALUES ('pi_1')")
		}
		if err == nil {
			err = tx.Rollback(ctx)
		}
		errs <- err
	}
	first, second := receiverConn(t, dbURL), receiverConn(t, dbURL)
	go refund(first)
	if _, err := gate.WaitForWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	go refund(second)
	go func() { _, err := ftx.Exec(ctx, "INSERT INTO ledger VALUES ('x')"); errs <- err }()
	want := Held{AtGate: 1, Behind: 1, Foreign: 1}
	var got Held
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = gate.Held(ctx); err != nil {
			t.Fatal(err)
		}
		if got == want {
			break
		}
	}
	if got != want {
		t.Fatalf("held = %+v, want %+v", got, want)
	}
	pids, err := TerminateBackends(ctx, pool, dbName, Filter{WaitingOn: gate, OwnOnly: true})
	if err != nil || len(pids) != 1 || pids[0] != int(first.PgConn().PID()) {
		t.Fatalf("own-only cut terminated %v, %v; want only the first session %d", pids, err, first.PgConn().PID())
	}
	if err := <-errs; err == nil {
		t.Error("the terminated session's transaction went on")
	}
	if err := gate.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a session the cut left alone failed: %v", err)
		}
	}
}
