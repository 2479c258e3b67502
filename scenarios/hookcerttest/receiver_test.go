package hookcerttest_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/scenarios/hookcerttest"
)

// shop is a tiny receiver: POST /pay?id=X writes a payment and its ledger row
// in one transaction, then answers 200. As many receivers do, it finishes its
// database work whether or not the client is still there: only the end of
// its sessions stops it.
type shop struct {
	pool *pgxpool.Pool
	inc  *hookcerttest.Incarnation
}

func (s *shop) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pay", func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithoutCancel(r.Context())
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO payments VALUES ($1)`, r.URL.Query().Get("id")); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ($1)`, r.URL.Query().Get("id"))
			return err
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST /crash", func(w http.ResponseWriter, r *http.Request) {
		if err := s.inc.Kill(); err != nil {
			panic(err)
		}
	})
	return mux
}

// shopDB is a database with the shop's tables, and a session of the test's.
func shopDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dbURL := hookcerttest.Database(t, "")
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), `CREATE TABLE payments (id text PRIMARY KEY); CREATE TABLE ledger (id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return dbURL, conn
}

func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds (bounded: the machine may be slow).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func post(url string) (int, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post(url, "text/plain", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// TestKillActsAsSIGKILL: killed while its transaction waits on a lock, an
// in-process receiver commits nothing, its connections and listener close,
// its sessions are gone from the server and no new one opens; Restart
// serves a new incarnation at the same URL that works.
func TestKillActsAsSIGKILL(t *testing.T) {
	dbURL, conn := shopDB(t)
	var first *shop
	recv, err := hookcerttest.StartReceiver(t.Context(), func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		pool, err := inc.Pool(ctx, dbURL)
		if err != nil {
			return nil, err
		}
		s := &shop{pool: pool, inc: inc}
		if inc.N() == 1 {
			first = s
		}
		return s.routes(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	url := recv.URL()
	inc1 := recv.Current()
	app1 := inc1.ApplicationName()

	// The ledger locked: the delivery waits inside its transaction, its
	// payment row written and not committed.
	// A session of its own: pg_stat_activity reads stay one snapshot for a
	// whole transaction.
	locker, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	lock, err := locker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(t.Context(), `LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		code, err := post(url + "/pay?id=p1")
		got <- answer{code, err}
	}()
	waitFor(t, "the delivery to wait on the lock", func() bool {
		return count(t, conn, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app1) == 1
	})
	if err := recv.Kill(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, conn, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app1); n != 0 {
		t.Errorf("%d sessions of the killed incarnation remain", n)
	}
	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.err == nil {
		t.Errorf("the delivery in flight got %d from a killed receiver, want a broken connection", a.code)
	}
	if n := count(t, conn, `SELECT count(*) FROM payments`); n != 0 {
		t.Errorf("%d payments committed by the killed incarnation", n)
	}
	if c, err := net.DialTimeout("tcp", recv.Addr(), time.Second); err == nil {
		c.Close()
		t.Error("the killed receiver still accepts connections")
	}
	if ok, why := recv.Alive(); ok || !strings.Contains(why, "incarnation 1 of the receiver was killed") {
		t.Errorf("Alive() = %v, %q", ok, why)
	}
	if inc1.Context().Err() == nil || !inc1.Killed() {
		t.Error("the killed incarnation's context has not ended")
	}
	// A handler of the killed incarnation still running opens no session.
	if _, err := first.pool.Exec(t.Context(), `SELECT 1`); err == nil {
		t.Error("the killed incarnation's pool still runs statements")
	}
	if n := count(t, conn, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app1); n != 0 {
		t.Errorf("%d sessions of the killed incarnation after it tried to open one", n)
	}

	if err := recv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	inc2 := recv.Current()
	if recv.URL() != url || inc2.N() != 2 || inc2.ApplicationName() == app1 {
		t.Errorf("restarted at %s as incarnation %d (%s); want %s, 2, not %s", recv.URL(), inc2.N(), inc2.ApplicationName(), url, app1)
	}
	if code, err := post(url + "/pay?id=p2"); err != nil || code != 200 {
		t.Fatalf("after the restart: %d %v", code, err)
	}
	if n := count(t, conn, `SELECT count(*) FROM payments p JOIN ledger l USING (id) WHERE id = 'p2'`); n != 1 {
		t.Errorf("the new incarnation's payment: %d rows, want 1", n)
	}
}

// TestIncarnationKillsItself: a handler that kills its own incarnation (an
// armed crash failpoint) ends it like Kill; an old incarnation's Kill, once
// another is up, changes nothing.
func TestIncarnationKillsItself(t *testing.T) {
	dbURL, _ := shopDB(t)
	recv, err := hookcerttest.StartReceiver(t.Context(), func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		db, err := inc.SQLDB(ctx, dbURL)
		if err != nil {
			return nil, err
		}
		if err := db.PingContext(ctx); err != nil {
			return nil, err
		}
		return (&shop{inc: inc}).routes(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	inc1 := recv.Current()
	if _, err := post(recv.URL() + "/crash"); err == nil {
		t.Error("a receiver that crashed itself answered")
	}
	if ok, why := recv.Alive(); ok || !strings.Contains(why, "killed itself") {
		t.Errorf("Alive() = %v, %q", ok, why)
	}
	if err := recv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := inc1.Kill(); err != nil {
		t.Fatal(err)
	}
	if ok, why := recv.Alive(); !ok || recv.Current().N() != 2 {
		t.Errorf("after the old incarnation's Kill: alive %v (%s)", ok, why)
	}
}

// TestSQLDBDiesWithItsIncarnation: a receiver written against database/sql
// loses its sessions at Kill and opens no new one.
func TestSQLDBDiesWithItsIncarnation(t *testing.T) {
	dbURL, conn := shopDB(t)
	var db *sql.DB
	recv, err := hookcerttest.StartReceiver(t.Context(), func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		var err error
		db, err = inc.SQLDB(ctx, dbURL)
		if err != nil {
			return nil, err
		}
		return http.NotFoundHandler(), db.PingContext(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	app := recv.Current().ApplicationName()
	// A session in use, as a handler holds one: only its termination ends it.
	held, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if n := count(t, conn, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app); n != 1 {
		t.Fatalf("%d sessions named %s, want the one database/sql opened", n, app)
	}
	if err := recv.Kill(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, conn, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app); n != 0 {
		t.Errorf("%d sessions of the killed incarnation remain", n)
	}
	if _, err := held.ExecContext(t.Context(), `SELECT 1`); err == nil {
		t.Error("the killed incarnation's session still runs statements")
	}
	if _, err := db.ExecContext(t.Context(), `SELECT 1`); err == nil {
		t.Error("the killed incarnation's *sql.DB still runs statements")
	}
}

// TestReceiverRefuses: an address a restart could not come back to, or off
// this machine, is refused; a Factory's failure is Restart's, and the
// receiver stays down, saying why, until a Restart succeeds.
func TestReceiverRefuses(t *testing.T) {
	h := func(context.Context, *hookcerttest.Incarnation) (http.Handler, error) {
		return http.NotFoundHandler(), nil
	}
	for addr, want := range map[string]string{
		"127.0.0.1:0":   "fixed port",
		"10.1.2.3:8080": "not on loopback",
		"localhost":     "host:port",
	} {
		if _, err := hookcerttest.NewReceiver(addr, h); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewReceiver(%q): %v, want %q", addr, err, want)
		}
	}
	fail := true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	recv, err := hookcerttest.NewReceiver(addr, func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		if fail {
			return nil, errors.New("no config")
		}
		return http.NotFoundHandler(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	if ok, why := recv.Alive(); ok || why != "the receiver was never started" {
		t.Errorf("Alive() = %v, %q before the first start", ok, why)
	}
	if err := recv.Restart(t.Context()); err == nil || !strings.Contains(err.Error(), "building incarnation 1 of the receiver: no config") {
		t.Errorf("Restart: %v", err)
	}
	if ok, why := recv.Alive(); ok || !strings.Contains(why, "failed to start") {
		t.Errorf("Alive() = %v, %q after a failed start", ok, why)
	}
	fail = false
	if err := recv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, err := post(recv.URL() + "/x"); err != nil || code != http.StatusNotFound {
		t.Errorf("after a good start: %d %v", code, err)
	}
}
