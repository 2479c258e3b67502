package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// checkThenInsert is the classic unsafe receiver: look for the key, insert
// if absent, in one transaction (REPEATABLE READ, InnoDB's default).
func checkThenInsert(ctx context.Context, c *sql.Conn) (string, error) {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM processed_events WHERE event_id = 'evt_1'").Scan(&n); err != nil {
		return "", err
	}
	if n > 0 {
		return "duplicate", nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO processed_events (event_id) VALUES ('evt_1')"); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 {
			return "unique_violation", nil
		}
		return "", err
	}
	return "inserted", tx.Commit()
}

func TestGateMakesTheRaceDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ddl      string
		wantRows int
		want     map[string]int
	}{
		{"check-then-insert without a unique key", "CREATE TABLE processed_events (event_id varchar(64) NOT NULL)",
			4, map[string]int{"inserted": 4}},
		{"check-then-insert with a unique key", "CREATE TABLE processed_events (event_id varchar(64) NOT NULL UNIQUE)",
			1, map[string]int{"inserted": 1, "unique_violation": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			u, d := newDB(t)
			mustExec(t, d, tc.ddl)
			rp := receiverPool(t, u)
			conns := make([]*sql.Conn, 4)
			ids := make([]int64, 4)
			for i := range conns {
				conns[i], ids[i] = receiverSession(t, rp)
			}
			gate, err := d.Hold(ctx, "processed_events")
			if err != nil {
				t.Fatal(err)
			}
			if gate.Table() != "processed_events" || gate.Since().IsZero() || time.Since(gate.Since()).Abs() > time.Minute {
				t.Errorf("gate %s since %s", gate.Table(), gate.Since())
			}
			results := make(chan string, len(conns))
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Go(func() {
					r, err := checkThenInsert(ctx, c)
					if err != nil {
						r = "error: " + err.Error()
					}
					results <- r
				})
			}
			n, err := gate.WaitForWaiters(ctx, 4)
			if err != nil || n != 4 {
				t.Fatalf("WaitForWaiters = %d, %v", n, err)
			}
			// Past 100 ms, Waiters reads InnoDB's transactions anew.
			time.Sleep(150 * time.Millisecond)
			ws, err := gate.Waiters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, w := range ws {
				got = append(got, w.ID)
				// Its check ran (the gate lets reads through): its transaction
				// began after the lock.
				if !strings.HasPrefix(w.Query, "INSERT") || w.Foreign || w.TrxStarted.IsZero() || w.TrxStarted.Before(gate.Since().Truncate(time.Second)) {
					t.Errorf("unexpected waiter %+v (gate since %s)", w, gate.Since())
				}
				if !localClientPort(t, w.ClientPort) {
					t.Errorf("waiter %d: client port %d is not one of this process's connections to the server", w.ID, w.ClientPort)
				}
			}
			if slices.Sort(got); !slices.Equal(got, ids) {
				t.Errorf("waiters %v, want the receiver's sessions %v", got, ids)
			}
			if h, err := gate.Held(ctx); err != nil || h != (mysqlstore.Held{AtGate: 4}) {
				t.Errorf("Held = %+v, %v", h, err)
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
			outcomes := map[string]int{}
			for r := range results {
				outcomes[r]++
			}
			rows, err := d.Query(ctx, "SELECT COUNT(*) FROM processed_events")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("4 gated deliveries: outcomes %v, rows %v", outcomes, rows.Values[0][0])
			if rows.Values[0][0] != int64(tc.wantRows) || len(outcomes) != len(tc.want) {
				t.Fatalf("rows = %v, outcomes %v; want %d, %v", rows.Values[0][0], outcomes, tc.wantRows, tc.want)
			}
			for k, v := range tc.want {
				if outcomes[k] != v {
					t.Errorf("outcome %s = %d, want %d (all: %v)", k, outcomes[k], v, outcomes)
				}
			}
		})
	}
}

// localClientPort reports whether port is the local port of one of this
// process's TCP connections to the server (Linux's /proc/net/tcp): the
// waiter's client port is what ties it to the process holding it.
func localClientPort(t *testing.T, port int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Logf("no /proc/net/tcp (%v): client port %d not checked", err, port)
		return port > 0
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		_, lp, _ := strings.Cut(f[1], ":")
		_, rp, _ := strings.Cut(f[2], ":")
		l, _ := strconv.ParseInt(lp, 16, 32)
		r, _ := strconv.ParseInt(rp, 16, 32)
		if int(l) == port && r == 3306 {
			return true
		}
	}
	return false
}

func TestHoldErrors(t *testing.T) {
	ctx := t.Context()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE events (id varchar(64))")
	for _, c := range []struct{ table, want string }{
		{"events; DROP TABLE x", "each part must be letters"},
		{"a.b.c", "must be table or database.table"},
		{"missing_table", "table not found"},
		{"mysql.missing_table", "table not found"},
	} {
		if _, err := d.Hold(ctx, c.table); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Hold(%q) = %v, want %q", c.table, err, c.want)
		}
	}
	// A receiver transaction that wrote to the table holds its metadata lock
	// until it ends: Hold gives up at the lock timeout with a clear error.
	quick := harness(t, u, sqlstore.Timeouts{Lock: time.Second})
	rc, _ := receiverSession(t, receiverPool(t, u))
	tx, err := rc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "INSERT INTO events VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = quick.Hold(ctx, d.Database()+".events")
	if err == nil || !strings.Contains(err.Error(), "could not take the READ lock within 1s: another session holds a conflicting lock") {
		t.Fatalf("Hold under a conflicting lock = %v", err)
	}
	if e := time.Since(start); e < time.Second || e > 4*time.Second {
		t.Errorf("Hold gave up after %s, want about 1s", e)
	}
	_ = tx.Rollback()
	// The failed gate's session is gone; the pool still works, and a gate
	// can be taken now.
	g, err := quick.Hold(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A gate holds the receiver's sessions waiting on its lock and those waiting
// behind one of them on a row lock the receiver took first; a session whose
// transaction began before the lock was taken is somebody else's work:
// counted apart, and left alone by an own-only cut. The harness's own
// sessions are never counted nor cut.
func TestGateHeldCountsBehindAndForeign(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE ledger (object_id varchar(64))",
		"CREATE TABLE payments (id varchar(64) PRIMARY KEY, status varchar(16))",
		"INSERT INTO payments VALUES ('pi_1', 'succeeded')")
	rp := receiverPool(t, u)

	// The foreign session begins its transaction before the gate exists.
	foreign, foreignID := receiverSession(t, rp)
	ftx, err := foreign.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ftx.Rollback() }()
	if _, err := ftx.ExecContext(ctx, "SELECT COUNT(*) FROM payments"); err != nil {
		t.Fatal(err)
	}
	// Within one second, so that the second-resolution trx_started cannot
	// tell the foreign transaction from the gate's receivers by itself.
	gate, err := d.Hold(ctx, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gate.Release(context.WithoutCancel(ctx)) }()

	type outcome struct {
		who string
		err error
	}
	errs := make(chan outcome, 5)
	// refund locks the payment row, then writes the ledger: first waits at
	// the gate holding the row, second waits on first's row lock.
	refund := func(who string, c *sql.Conn) {
		tx, err := c.BeginTx(ctx, nil)
		if err == nil {
			_, err = tx.ExecContext(ctx, "SELECT status FROM payments WHERE id = 'pi_1' FOR UPDATE")
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, "INSERT INTO ledger VALUES ('pi_1')")
		}
		if err == nil {
			err = tx.Rollback()
		}
		errs <- outcome{who, err}
	}
	first, firstID := receiverSession(t, rp)
	second, _ := receiverSession(t, rp)
	plain, plainID := receiverSession(t, rp)
	go refund("first", first)
	if _, err := gate.WaitForWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	go refund("second", second)
	go func() {
		_, err := plain.ExecContext(ctx, "INSERT INTO ledger VALUES ('pi_2')")
		errs <- outcome{"plain", err}
	}()
	go func() {
		_, err := ftx.ExecContext(ctx, "INSERT INTO ledger VALUES ('x')")
		errs <- outcome{"foreign", err}
	}()
	// The harness's own session waiting at the gate is neither held nor cut.
	own := harness(t, u, sqlstore.Timeouts{Lock: 3 * time.Second})
	go func() { errs <- outcome{"harness", own.Exec(ctx, "INSERT INTO ledger VALUES ('harness')")} }()

	want := mysqlstore.Held{AtGate: 2, Behind: 1, Foreign: 1}
	eventually(t, "the gate's count", func() (bool, string) {
		got, err := gate.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got == want, fmt.Sprintf("%+v, want %+v", got, want)
	})
	ws, err := gate.Waiters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var foreignSeen bool
	for _, w := range ws {
		if w.ID == foreignID {
			foreignSeen = w.Foreign
		} else if w.Foreign {
			t.Errorf("waiter %+v counted foreign", w)
		}
	}
	if len(ws) != 3 || !foreignSeen {
		t.Errorf("waiters %+v: want first, plain and the foreign one", ws)
	}

	ids, err := d.TerminateWaiters(ctx, gate, true)
	if wantIDs := []int{int(min(firstID, plainID)), int(max(firstID, plainID))}; err != nil || !slices.Equal(ids, wantIDs) {
		t.Fatalf("own-only cut killed %v, %v; want first and plain %v", ids, err, wantIDs)
	}
	for range 2 {
		o := <-errs
		if (o.who != "first" && o.who != "plain") || o.err == nil {
			t.Errorf("after the cut: %s ended with %v; want first and plain to fail", o.who, o.err)
		}
	}
	// first's rollback freed the row: second takes it and reaches the gate.
	want = mysqlstore.Held{AtGate: 1, Foreign: 1}
	eventually(t, "the gate's count after the cut", func() (bool, string) {
		got, err := gate.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got == want, fmt.Sprintf("%+v, want %+v", got, want)
	})
	if err := gate.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if o := <-errs; o.err != nil {
			t.Errorf("%s, which the cut left alone, failed: %v", o.who, o.err)
		}
	}
	if err := ftx.Commit(); err != nil {
		t.Errorf("the foreign transaction: %v", err)
	}
	rows, err := d.Query(ctx, "SELECT object_id FROM ledger ORDER BY object_id")
	if err != nil || fmt.Sprint(rows.Values) != "[[harness] [x]]" {
		t.Errorf("ledger: %v, %v (second rolled back, first and plain were killed)", rows.Values, err)
	}
}

func TestTerminateWaitersAndSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE processed_events (event_id varchar(64))", "CREATE TABLE other (x int)")
	rp := receiverPool(t, u)
	bystander, bystanderID := receiverSession(t, rp)
	btx, err := bystander.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = btx.Rollback() }()
	if _, err := btx.ExecContext(ctx, "INSERT INTO other VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	gate, err := d.Hold(ctx, "processed_events")
	if err != nil {
		t.Fatal(err)
	}
	waiter, waiterID := receiverSession(t, rp)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(ctx, "INSERT INTO processed_events VALUES ('evt_1')")
		done <- err
	}()
	if _, err := gate.WaitForWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ids, err := d.TerminateWaiters(ctx, gate, false)
	if err != nil || !slices.Equal(ids, []int{int(waiterID)}) {
		t.Fatalf("terminated %v, %v; want only the waiter %d", ids, err, waiterID)
	}
	if err := <-done; err == nil {
		t.Error("the waiting insert succeeded after its session was killed")
	}
	if _, err := btx.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Errorf("the bystander transaction was hit: %v", err)
	}
	// With nobody waiting, WaitForWaiters times out and says how many it saw.
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if n, err := gate.WaitForWaiters(short, 1); err == nil || n != 0 || !strings.Contains(err.Error(), "0 of 1 sessions waiting") {
		t.Errorf("WaitForWaiters with no waiter = %d, %v", n, err)
	}
	if err := gate.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Every receiver session goes; the harness's stay.
	idle, idleID := receiverSession(t, rp)
	ids, err = d.TerminateSessions(ctx)
	want := []int{int(min(bystanderID, idleID)), int(max(bystanderID, idleID))}
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("TerminateSessions = %v, %v; want %v", ids, err, want)
	}
	if err := idle.PingContext(ctx); err == nil {
		t.Error("the idle receiver session survived")
	}
	for range 3 {
		if _, err := d.Query(ctx, "SELECT 1"); err != nil {
			t.Fatalf("the harness's pool was hit: %v", err)
		}
	}
}

func TestBusy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE ledger (id int)")
	rp := receiverPool(t, u)
	busy := func() (int, string) {
		t.Helper()
		n, detail, err := d.Busy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n, detail
	}
	// Idle receiver sessions (a pool's spares) are not busy.
	receiverSession(t, rp)
	if n, detail := busy(); n != 0 {
		t.Errorf("idle: busy %d (%s)", n, detail)
	}
	// Nor are the harness's own, whatever they do.
	own := harness(t, u, sqlstore.Timeouts{})
	otx, err := own.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = otx.Rollback() }()
	if _, err := otx.ExecContext(ctx, "INSERT INTO ledger VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	sleeping := make(chan error, 1)
	go func() { _, err := own.Query(ctx, "SELECT SLEEP(1)"); sleeping <- err }()
	time.Sleep(200 * time.Millisecond)
	if n, detail := busy(); n != 0 {
		t.Errorf("with the harness's own work: busy %d (%s)", n, detail)
	}
	if err := <-sleeping; err != nil {
		t.Fatal(err)
	}
	_ = otx.Rollback()

	// A receiver's transaction left open is busy, and so is a statement.
	rc, rcID := receiverSession(t, rp)
	tx, err := rc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if n, detail := busy(); n != 1 || detail != fmt.Sprintf("id %d idle in transaction", rcID) {
		t.Errorf("open transaction: busy %d (%s)", n, detail)
	}
	running, runningID := receiverSession(t, rp)
	go func() { _, _ = running.ExecContext(ctx, "DO SLEEP(1)") }()
	eventually(t, "the running statement", func() (bool, string) {
		n, detail := busy()
		want := fmt.Sprintf("id %d idle in transaction, id %d query: User sleep", rcID, runningID)
		return n == 2 && detail == want, fmt.Sprintf("%d (%s), want %s", n, detail, want)
	})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the receiver's quiet", func() (bool, string) {
		n, detail := busy()
		return n == 0, detail
	})
	// Another database's sessions are none of its business.
	other, od := newDB(t)
	mustExec(t, od, "CREATE TABLE t (x int)")
	oc, _ := receiverSession(t, receiverPool(t, other))
	otx2, err := oc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = otx2.Rollback() }()
	if _, err := otx2.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if n, detail := busy(); n != 0 {
		t.Errorf("another database's transaction: busy %d (%s)", n, detail)
	}
	if n, _, err := od.Busy(ctx); err != nil || n != 1 {
		t.Errorf("the other database: busy %d, %v", n, err)
	}
}

// InnoDB refills its transaction tables only when nobody has read them for
// 100 ms. A client polling faster freezes them; the harness's reads notice
// (they read inside a transaction of their own, which a fresh picture lists)
// and say so rather than trust an old picture.
func TestStaleInnoDBPictureIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE ledger (id int)")
	rp := receiverPool(t, u)
	rc, rcID := receiverSession(t, rp)
	tx, err := rc.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if n, detail, err := d.Busy(ctx); err != nil || n != 1 {
		t.Fatalf("Busy = %d (%s), %v", n, detail, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	poller, _ := receiverSession(t, rp)
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := poller.ExecContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX"); err != nil {
				t.Errorf("poller: %v", err)
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	n, detail, err := d.Busy(ctx)
	close(stop)
	<-polled
	if err == nil || !strings.Contains(err.Error(), "stayed stale for 5s: another client reads information_schema.INNODB_TRX more often than every 100 ms") {
		t.Errorf("Busy under a fast poller = %d (%s), %v", n, detail, err)
	}
	// Left alone, the picture is fresh again: the committed transaction is gone.
	if n, detail, err := d.Busy(ctx); err != nil || n != 0 {
		t.Errorf("Busy after the poller stopped = %d (%s), %v (the receiver's session %d committed)", n, detail, err, rcID)
	}
}
