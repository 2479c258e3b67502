package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// The gate's tests race real clients on a real server: plain go-sql-driver
// pools (not the harness's sessions), with arguments, so that the driver uses
// server-side prepared statements (COM_STMT_PREPARE, COM_STMT_EXECUTE) as
// mysql2's execute, JDBC's useServerPrepStmts or PDO without emulation do —
// or, with interpolateParams=true, the text protocol.

// protocols are the two ways a client sends a statement with arguments.
var protocols = []struct {
	name        string
	interpolate bool
}{
	{"binary protocol (server-side prepared statements)", false},
	{"text protocol (interpolateParams=true)", true},
}

// gateFixture is a receiver's database: orders o (one row per PaymentIntent)
// and a ledger l, the gated table.
type gateFixture struct {
	t   *testing.T
	ctx context.Context
	d   *mysqlstore.DB
	cfg *mysql.Config
}

func newGateFixture(t *testing.T) *gateFixture {
	t.Helper()
	u := mysqltest.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := mysqlstore.Open(ctx, u, sqlstore.Timeouts{Statement: 20 * time.Second, Lock: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	for _, q := range []string{
		"CREATE TABLE o (id INT AUTO_INCREMENT PRIMARY KEY, pi VARCHAR(64) NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'new', UNIQUE KEY (pi)) ENGINE=InnoDB",
		"CREATE TABLE l (id INT AUTO_INCREMENT PRIMARY KEY, pi VARCHAR(64) NOT NULL) ENGINE=InnoDB",
		"INSERT INTO o (pi) VALUES ('pi_1'), ('pi_2')",
	} {
		if err := d.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg, err := mysqlstore.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return &gateFixture{t: t, ctx: ctx, d: d, cfg: cfg}
}

// client opens a pool of the receiver's own (not the harness's).
func (f *gateFixture) client(interpolate bool) *sql.DB {
	f.t.Helper()
	cfg := f.cfg.Clone()
	cfg.InterpolateParams = interpolate
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	db := sql.OpenDB(c)
	f.t.Cleanup(func() { _ = db.Close() })
	return db
}

// racer is one delivery's transaction on a connection of its own.
type racer struct {
	id   int64
	done chan error
}

// race starts a transaction on db that runs stmts in order (each with the
// arguments after it, ? placeholders) and commits; it returns once the
// session's ID is known.
func (f *gateFixture) race(db *sql.DB, stmts ...[]any) *racer {
	f.t.Helper()
	c, err := db.Conn(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	r := &racer{done: make(chan error, 1)}
	if err := c.QueryRowContext(f.ctx, "SELECT CONNECTION_ID()").Scan(&r.id); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		defer c.Close()
		r.done <- func() error {
			tx, err := c.BeginTx(f.ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			for _, s := range stmts {
				q := s[0].(string)
				if strings.HasPrefix(q, "SELECT") {
					var id int
					err = tx.QueryRowContext(f.ctx, q, s[1:]...).Scan(&id)
				} else {
					_, err = tx.ExecContext(f.ctx, q, s[1:]...)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return tx.Commit()
		}()
	}()
	return r
}

// wait fails the test unless r finishes within 20 s; it returns r's error.
func (r *racer) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("session %d still running 20 s after the gate opened", r.id)
		return nil
	}
}

// heldUntil polls the gate until ok accepts a reading (within 10 s) and
// returns it; the last reading is in the failure.
func heldUntil(t *testing.T, ctx context.Context, g *mysqlstore.Gate, ok func(mysqlstore.Held) bool) mysqlstore.Held {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var h mysqlstore.Held
	for {
		var err error
		if h, err = g.Held(ctx); err != nil {
			t.Fatal(err)
		}
		if ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			ws, _ := g.Waiters(ctx)
			t.Fatalf("the gate holds %+v after 10 s; waiters %+v", h, ws)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const (
	lockOrder  = "SELECT id FROM o WHERE pi = ? FOR UPDATE"
	updateOrd  = "UPDATE o SET status = 'paid' WHERE pi = ?"
	insertLine = "INSERT INTO l (pi) VALUES (?)"
)

// TestGateHoldsRacersAtAndBehind: the first delivery locks its order row and
// waits at the gated insert; the second waits on that row lock — in the
// optimizer's const-row read of a lookup by unique key (PROCESSLIST state
// "Statistics"), or in an UPDATE — and is counted behind the gate. Both
// protocols.
func TestGateHoldsRacersAtAndBehind(t *testing.T) {
	for _, p := range protocols {
		for _, second := range []struct{ stmt, state string }{{lockOrder, "Statistics"}, {updateOrd, "Updating"}} {
			t.Run(p.name+"/"+second.state, func(t *testing.T) {
				f := newGateFixture(t)
				db := f.client(p.interpolate)
				g, err := f.d.Hold(f.ctx, "l")
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = g.Release(context.Background()) }()
				first := f.race(db, []any{lockOrder, "pi_1"}, []any{insertLine, "pi_1"})
				heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.AtGate == 1 })
				next := f.race(db, []any{second.stmt, "pi_1"}, []any{insertLine, "pi_1"})
				h := heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.Behind == 1 })
				if h != (mysqlstore.Held{AtGate: 1, Behind: 1}) {
					t.Errorf("held %+v, want 1 at the gate and 1 behind it", h)
				}
				ws, err := g.Waiters(f.ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(ws) != 2 || ws[0].ID != first.id || ws[0].Behind || ws[1].ID != next.id || !ws[1].Behind {
					t.Fatalf("waiters %+v, want %d at the gate then %d behind it", ws, first.id, next.id)
				}
				if ws[0].State != "Waiting for table metadata lock" || !strings.Contains(ws[0].Query, "INSERT INTO l") || ws[0].ClientPort == 0 {
					t.Errorf("at the gate: %+v", ws[0])
				}
				if ws[1].State != second.state || ws[1].Foreign || ws[1].TrxStarted.IsZero() {
					t.Errorf("behind: %+v, want state %q, own, in a transaction", ws[1], second.state)
				}
				if err := g.Release(f.ctx); err != nil {
					t.Fatal(err)
				}
				if err := first.wait(t); err != nil {
					t.Errorf("first: %v", err)
				}
				if err := next.wait(t); err != nil {
					t.Errorf("second: %v", err)
				}
				if n := count(t, f, "SELECT COUNT(*) FROM l"); n != 2 {
					t.Errorf("l has %d rows after the release, want 2", n)
				}
			})
		}
	}
}

// TestGateHeldWhileLockViewsStale: another client reads the InnoDB lock
// views every 10 ms, which keeps MariaDB from ever refilling them; the
// sessions behind the gate are still counted (from the live status).
func TestGateHeldWhileLockViewsStale(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			f := newGateFixture(t)
			if !f.d.MariaDB() {
				t.Skip("the lock views' cache is MariaDB's concern here; MySQL 8 shows lock waits live")
			}
			db := f.client(p.interpolate)
			g, err := f.d.Hold(f.ctx, "l")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = g.Release(context.Background()) }()
			poller := f.client(false)
			poller.SetMaxOpenConns(1)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var seen sync.Map // sessions the lock views ever showed waiting
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					rows, err := poller.QueryContext(f.ctx, `SELECT r.trx_mysql_thread_id FROM information_schema.INNODB_LOCK_WAITS w
						JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id`)
					if err != nil {
						continue
					}
					for rows.Next() {
						var id int64
						if rows.Scan(&id) == nil {
							seen.Store(id, true)
						}
					}
					rows.Close()
				}
			}()
			defer func() { close(stop); wg.Wait() }()
			time.Sleep(50 * time.Millisecond)
			first := f.race(db, []any{lockOrder, "pi_1"}, []any{insertLine, "pi_1"})
			heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.AtGate == 1 })
			next := f.race(db, []any{lockOrder, "pi_1"}, []any{insertLine, "pi_1"})
			h := heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.Behind == 1 })
			if h != (mysqlstore.Held{AtGate: 1, Behind: 1}) {
				t.Errorf("held %+v, want 1 at the gate and 1 behind it", h)
			}
			if _, ok := seen.Load(next.id); ok {
				t.Fatalf("the lock views showed session %d waiting: they were refilled, so this test did not keep them stale", next.id)
			}
			if err := g.Release(f.ctx); err != nil {
				t.Fatal(err)
			}
			if err := first.wait(t); err != nil {
				t.Errorf("first: %v", err)
			}
			if err := next.wait(t); err != nil {
				t.Errorf("second: %v", err)
			}
		})
	}
}

// TestGateBehindWithAnotherLockHolder: another transaction holds a row lock
// of its own, so the live status cannot tie the waits to the gate; the lock
// views must. The session behind the gate is counted, the one waiting on the
// other transaction is not.
func TestGateBehindWithAnotherLockHolder(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			f := newGateFixture(t)
			db := f.client(p.interpolate)
			other, err := db.BeginTx(f.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = other.Rollback() }()
			if _, err := other.ExecContext(f.ctx, updateOrd, "pi_2"); err != nil {
				t.Fatal(err)
			}
			g, err := f.d.Hold(f.ctx, "l")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = g.Release(context.Background()) }()
			first := f.race(db, []any{lockOrder, "pi_1"}, []any{insertLine, "pi_1"})
			heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.AtGate == 1 })
			next := f.race(db, []any{lockOrder, "pi_1"}, []any{insertLine, "pi_1"})
			elsewhere := f.race(db, []any{lockOrder, "pi_2"})
			var h mysqlstore.Held
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if h, err = g.Held(f.ctx); err != nil {
					t.Fatal(err)
				}
				if h.Behind > 0 || time.Now().After(deadline) {
					break
				}
			}
			if h.Behind == 0 && lockViewsStarved(t, f) {
				t.Skip("another client on the server reads information_schema.INNODB_TRX (or INNODB_LOCKS, INNODB_LOCK_WAITS) more often than every 100 ms, so MariaDB never refreshes them: the waits cannot be tied to the gate while another transaction holds locks")
			}
			time.Sleep(300 * time.Millisecond) // the session waiting elsewhere waits by now
			ws, err := g.Waiters(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) != 2 || ws[0].ID != first.id || ws[1].ID != next.id || !ws[1].Behind {
				t.Fatalf("waiters %+v, want %d at the gate and %d behind it; %d waits on another transaction's lock", ws, first.id, next.id, elsewhere.id)
			}
			if err := g.Release(f.ctx); err != nil {
				t.Fatal(err)
			}
			if err := other.Rollback(); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*racer{first, next, elsewhere} {
				if err := r.wait(t); err != nil {
					t.Errorf("session %d: %v", r.id, err)
				}
			}
		})
	}
}

// lockViewsStarved reports whether MariaDB's lock views stayed stale for a
// second and a half: a read after 150 ms of quiet from this side never showed
// the reading session's own statement, so another client kept reading them.
func lockViewsStarved(t *testing.T, f *gateFixture) bool {
	t.Helper()
	c, err := f.client(false).Conn(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(f.ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.ExecContext(f.ctx, "ROLLBACK") }()
	for i := 0; i < 10; i++ {
		time.Sleep(150 * time.Millisecond)
		marker := fmt.Sprintf("probe %d %d", time.Now().UnixNano(), i)
		var n int
		if err := c.QueryRowContext(f.ctx, "SELECT /* "+marker+" */ COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID() AND trx_query LIKE ?", "%"+marker+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return false
		}
	}
	return true
}

// TestGateForeignWork: a transaction that began before the lock and then
// reached the gated table is foreign: counted apart, not followed (a session
// waiting on its row lock is not counted) and, with ownOnly, not killed. A
// transaction begun after the lock is the caller's.
func TestGateForeignWork(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			f := newGateFixture(t)
			db := f.client(p.interpolate)
			// The earlier work: its order row locked before the gate.
			fc, err := db.Conn(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer fc.Close()
			var fid int64
			if err := fc.QueryRowContext(f.ctx, "SELECT CONNECTION_ID()").Scan(&fid); err != nil {
				t.Fatal(err)
			}
			ftx, err := fc.BeginTx(f.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var oid int
			if err := ftx.QueryRowContext(f.ctx, lockOrder, "pi_1").Scan(&oid); err != nil {
				t.Fatal(err)
			}
			g, err := f.d.Hold(f.ctx, "l")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = g.Release(context.Background()) }()
			foreignDone := make(chan error, 1)
			go func() {
				_, err := ftx.ExecContext(f.ctx, insertLine, "pi_1")
				foreignDone <- err
			}()
			heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.Foreign == 1 })
			// Behind the earlier work, not the gate's doing: not counted.
			stuck := f.race(db, []any{lockOrder, "pi_1"}, []any{insertLine, "pi_1"})
			// The caller's own delivery, at the gate.
			own := f.race(db, []any{lockOrder, "pi_2"}, []any{insertLine, "pi_2"})
			h := heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.AtGate == 1 })
			time.Sleep(300 * time.Millisecond) // the stuck session waits by now
			if h, err = g.Held(f.ctx); err != nil {
				t.Fatal(err)
			}
			if h != (mysqlstore.Held{AtGate: 1, Foreign: 1}) {
				ws, _ := g.Waiters(f.ctx)
				t.Fatalf("held %+v (waiters %+v), want 1 at the gate and 1 foreign; session %d behind the foreign one not counted", h, ws, stuck.id)
			}
			ids, err := f.d.TerminateWaiters(f.ctx, g, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 1 || int64(ids[0]) != own.id {
				t.Fatalf("ownOnly killed %v, want only %d", ids, own.id)
			}
			if err := own.wait(t); err == nil {
				t.Error("the killed session's transaction committed")
			}
			if h, err = g.Held(f.ctx); err != nil || h.Foreign != 1 {
				t.Errorf("after the ownOnly kill: held %+v, %v; want the foreign session left waiting", h, err)
			}
			ids, err = f.d.TerminateWaiters(f.ctx, g, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 1 || int64(ids[0]) != fid {
				t.Fatalf("without ownOnly killed %v, want the foreign session %d", ids, fid)
			}
			if err := <-foreignDone; err == nil {
				t.Error("the foreign session's insert succeeded after its kill")
			}
			_ = ftx.Rollback()
			if err := g.Release(f.ctx); err != nil {
				t.Fatal(err)
			}
			if err := stuck.wait(t); err != nil {
				t.Errorf("the session behind the foreign one: %v", err)
			}
			if n := count(t, f, "SELECT COUNT(*) FROM l"); n != 1 {
				t.Errorf("l has %d rows, want the one of the session never killed", n)
			}
		})
	}
}

// TestTerminateWaitersAtAndBehind kills the session at the gate and the one
// behind it; neither commits anything.
func TestTerminateWaitersAtAndBehind(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			f := newGateFixture(t)
			db := f.client(p.interpolate)
			g, err := f.d.Hold(f.ctx, "l")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = g.Release(context.Background()) }()
			first := f.race(db, []any{lockOrder, "pi_1"}, []any{updateOrd, "pi_1"}, []any{insertLine, "pi_1"})
			heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.AtGate == 1 })
			next := f.race(db, []any{updateOrd, "pi_1"}, []any{insertLine, "pi_1"})
			heldUntil(t, f.ctx, g, func(h mysqlstore.Held) bool { return h.Behind == 1 })
			ids, err := f.d.TerminateWaiters(f.ctx, g, true)
			if err != nil {
				t.Fatal(err)
			}
			want := []int{int(min(first.id, next.id)), int(max(first.id, next.id))}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Fatalf("killed %v, want %v", ids, want)
			}
			if err := first.wait(t); err == nil {
				t.Error("the session at the gate committed after its kill")
			}
			if err := next.wait(t); err == nil {
				t.Error("the session behind the gate committed after its kill")
			}
			if h, err := g.Held(f.ctx); err != nil || h != (mysqlstore.Held{}) {
				t.Errorf("after the kill: held %+v, %v; want nobody", h, err)
			}
			if err := g.Release(f.ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, f, "SELECT COUNT(*) FROM l"); n != 0 {
				t.Errorf("l has %d rows, want none", n)
			}
			if n := count(t, f, "SELECT COUNT(*) FROM o WHERE status = 'paid'"); n != 0 {
				t.Errorf("%d orders paid, want none: both updates rolled back", n)
			}
		})
	}
}

// TestBusySeesOpenTransactionWhileLockViewsStale: a session idle in a
// transaction is busy, and the check reads it live: another client keeping
// the lock views stale does not hide it.
func TestBusySeesOpenTransactionWhileLockViewsStale(t *testing.T) {
	f := newGateFixture(t)
	poller := f.client(false)
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
				_ = poller.QueryRowContext(f.ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX").Scan(&n)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(50 * time.Millisecond)
	if n, d, err := f.d.Busy(f.ctx); err != nil || n != 0 {
		t.Fatalf("busy before: %d (%s), %v; want 0", n, d, err)
	}
	db := f.client(false)
	tx, err := db.BeginTx(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(f.ctx, updateOrd, "pi_2"); err != nil {
		t.Fatal(err)
	}
	n, d, err := f.d.Busy(f.ctx)
	if err != nil || n != 1 || !strings.Contains(d, "idle in transaction") {
		t.Errorf("busy with a transaction open: %d (%s), %v; want 1 idle in transaction", n, d, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, d, err := f.d.Busy(f.ctx); err != nil || n != 0 {
		t.Errorf("busy after the commit: %d (%s), %v; want 0", n, d, err)
	}
}

func count(t *testing.T, f *gateFixture, q string) int64 {
	t.Helper()
	rows, err := f.d.Query(f.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return rows.Values[0][0].(int64)
}
