package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
)

// A worker process SIGKILLed while it holds a claim (blocked inside its apply
// transaction on a lock the test holds on the ledger) leaves the event claimed and
// unapplied; after the lease another worker process re-offers it and applies it
// once. serve --mode inbox --workers 0 only stores and answers 202.
func TestReferenceWorkerKilledMidClaim(t *testing.T) {
	db := pgtest.Database(t)
	addr := freeAddr(t)
	_, out := startServe(t, "reference", "serve", "--listen", addr, "--database-url", db, "--mode", "inbox", "--workers", "0")
	base := "http://" + addr
	waitHealthy(t, base, out)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	query := func(sql string, args ...any) (state string, n int) {
		t.Helper()
		if err := conn.QueryRow(ctx, sql, args...).Scan(&state, &n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return state, n
	}
	eventState := func() (string, int) {
		return query(`SELECT coalesce(inbox_state, ''), attempts FROM processed_webhook_events WHERE event_id = 'evt_kill_1'`)
	}
	ledger := func() int {
		_, n := query(`SELECT '', count(*)::int FROM ledger_entries WHERE event_id = 'evt_kill_1'`)
		return n
	}

	// The gate: every insert into the ledger waits until it is released.
	gate, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close(ctx)
	gateTx, err := gate.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateTx.Exec(ctx, `LOCK TABLE ledger_entries IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}

	body := []byte(`{"id":"evt_kill_1","object":"event","type":"customer_cash_balance_transaction.created","data":{"object":{"id":"cb_k","amount":5}}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte("whsec_test_secret"))
	fmt.Fprintf(m, "%s.%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/stripe/acct_A", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), "accepted") {
		t.Fatalf("delivery in inbox mode: %d %s", resp.StatusCode, b)
	}
	if st, n := eventState(); st != "pending" || n != 0 {
		t.Fatalf("after 202: %s after %d attempts, want pending (no worker runs in serve)", st, n)
	}

	workerArgs := []string{"reference", "worker", "--database-url", db, "--workers", "1", "--lease", "1s", "--poll-interval", "20ms", "--backoff", "50ms"}
	victim, _ := startServe(t, workerArgs...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, _ := eventState()
		_, waiting := query(`SELECT '', count(*)::int FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'ledger_entries' AND NOT l.granted`)
		if st == "claimed" && waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker never blocked inside its transaction (state %s, %d waiters)", st, waiting)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	if err := gateTx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The killed worker's transaction never commits: still claimed, nothing applied.
	time.Sleep(200 * time.Millisecond)
	if st, n := eventState(); st != "claimed" || n != 1 || ledger() != 0 {
		t.Fatalf("after SIGKILL: %s after %d attempts, %d ledger entries; want claimed, 1, 0", st, n, ledger())
	}

	startServe(t, workerArgs...)
	deadline = time.Now().Add(15 * time.Second)
	for {
		st, n := eventState()
		if st == "done" {
			if n != 2 || ledger() != 1 {
				t.Fatalf("done after %d attempts with %d ledger entries; want 2 and 1", n, ledger())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event never reclaimed and applied: %s after %d attempts", st, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lastErr string
	if err := conn.QueryRow(ctx, `SELECT coalesce(last_error, '') FROM processed_webhook_events WHERE event_id = 'evt_kill_1'`).Scan(&lastErr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lastErr, "lease") {
		t.Fatalf("last error %q, want the expired lease", lastErr)
	}
}

func TestReferenceWorkerUsageErrors(t *testing.T) {
	t.Setenv(pgprovision.EnvDatabaseURL, "") // "no database" must mean none
	for _, args := range [][]string{
		{"reference", "worker"}, // no database
		{"reference", "worker", "--database-url", "postgres://x/y", "--workers", "0"},
		{"reference", "worker", "--database-url", "postgres://x/y", "--max-attempts", "0"},
		{"reference", "serve", "--mode", "outbox"},
		{"reference", "serve", "--mode", "inbox", "--defect", "slow-ack"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}
