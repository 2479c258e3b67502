package mysqlstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
)

// InnoDB's transactions are read fresh however often they are asked for:
// a transaction begun shows, one that ended goes, and who waits on whose row
// lock is seen.
func TestInnoDBPictureIsFresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u, d := newDB(t)
	mustExec(t, d, "CREATE TABLE payments (id varchar(16) PRIMARY KEY, status text)", "INSERT INTO payments VALUES ('pi_1', 'new')")
	rp := receiverPool(t, u)
	a, aID := receiverSession(t, rp)
	b, bID := receiverSession(t, rp)
	fresh := func() *mysqlstore.InnoDBState {
		t.Helper()
		asked := time.Now()
		st, err := d.InnoDB(ctx, asked)
		if err != nil {
			t.Fatal(err)
		}
		if st.At.Before(asked) {
			t.Fatalf("picture from %s, asked as of %s", st.At, asked)
		}
		return st
	}
	if st := fresh(); st.Trx[aID] != (time.Time{}) || len(st.Waits) != 0 {
		t.Fatalf("before any transaction: %+v", st)
	}
	atx, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = atx.Rollback() }()
	if _, err := atx.ExecContext(ctx, "SELECT status FROM payments WHERE id = 'pi_1' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	st := fresh()
	if started, ok := st.Trx[aID]; !ok || started.Sub(began).Abs() > 2*time.Second {
		t.Fatalf("a's transaction: %v, %v (began about %s)", started, ok, began)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.ExecContext(ctx, "UPDATE payments SET status = 'paid' WHERE id = 'pi_1'")
		done <- err
	}()
	eventually(t, "b waits on a's row lock", func() (bool, string) {
		st := fresh()
		return slices.Contains(st.Waits, mysqlstore.LockWait{Waiter: bID, Blocker: aID}), "not seen"
	})
	if err := atx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Asked back to back, each picture is new: the ended transaction is gone
	// at once, not whenever the server's cache next refills.
	start := time.Now()
	for i := range 5 {
		st := fresh()
		if _, ok := st.Trx[aID]; ok || len(st.Waits) != 0 {
			t.Fatalf("read %d after the commit still shows it: %+v", i, st)
		}
	}
	// Other clients of the server reading the tables too make it longer.
	if e := time.Since(start); e < 4*100*time.Millisecond {
		t.Errorf("5 fresh pictures took %s, want at least 4 × 100 ms apart", e)
	}
	// A picture recent enough is shared, not read again.
	st = fresh()
	start = time.Now()
	again, err := d.InnoDB(ctx, st.At)
	if err != nil || again != st || time.Since(start) > 50*time.Millisecond {
		t.Errorf("the shared picture: %p vs %p, %v, after %s", again, st, err, time.Since(start))
	}
}

// A client polling InnoDB's transaction tables faster than every 100 ms
// freezes them; the harness notices (the picture lacks its own transaction)
// and says so rather than trust an old picture.
func TestInnoDBStalePictureIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u, d := newDB(t)
	poller, _ := receiverSession(t, receiverPool(t, u))
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
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	_, err := d.InnoDB(ctx, time.Now())
	close(stop)
	<-polled
	if err == nil || !strings.Contains(err.Error(), "stayed stale for 5s: another client reads information_schema.INNODB_TRX more often than every 100 ms") {
		t.Errorf("InnoDB under a fast poller = %v", err)
	}
	if e := time.Since(start); e < 5*time.Second || e > 8*time.Second {
		t.Errorf("gave up after %s, want about 5s", e)
	}
	// Left alone, the tables are fresh again.
	if _, err := d.InnoDB(ctx, time.Now()); err != nil {
		t.Errorf("after the poller stopped: %v", err)
	}
}
