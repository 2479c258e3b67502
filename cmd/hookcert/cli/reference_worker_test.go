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
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/reference"
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
		{"reference", "serve", "--defect", "poll-without-claim"},
		{"reference", "serve", "--mode", "inbox", "--defect", "fresh-idempotency-key"},
		{"reference", "serve", "--mode", "inbox", "--defect", "poll-without-claim", "--defect", "no-lease-expiry"},
		{"reference", "worker", "--database-url", "postgres://x/y", "--defect", "slow-ack"},
		{"reference", "worker", "--database-url", "postgres://x/y", "--defect", "drop-failed-sends"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}

// lockedBuffer is a child's output, safe to read while the child writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startChild runs the command line in a child process; its output can be read
// while it runs.
func startChild(t *testing.T, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReferenceServe$")
	cmd.Env = append(os.Environ(), "HOOKCERT_HELPER_ARGS="+strings.Join(args, "\x1f"))
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

func waitOutput(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output never showed %q:\n%s", want, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func signedStripe(t *testing.T, base, id string) *http.Response {
	t.Helper()
	body := []byte(`{"id":"` + id + `","object":"event","type":"customer_cash_balance_transaction.created","data":{"object":{"id":"cb_` + id + `","amount":5,"currency":"usd"}}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte("whsec_test_secret"))
	fmt.Fprintf(m, "%s.%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/stripe/acct_A", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// The inbox and outbox command line of the harness: a credit's outbox message to
// a sink that always fails is dead-lettered after --max-attempts; then serve
// starts and announces each inbox and outbox defect with the same flags, and a
// worker process starts with one.
func TestReferenceServeInboxOutboxDefects(t *testing.T) {
	besideOthers(t)
	db := pgtest.Database(t)
	s, err := sink.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.FailNext(1000, http.StatusServiceUnavailable)
	flags := func(addr string, defects ...string) []string {
		args := []string{"reference", "serve", "--listen", addr, "--database-url", db, "--mode", "inbox", "--workers", "4",
			"--lease", "2s", "--max-attempts", "3", "--backoff", "200ms", "--backoff-max", "1s", "--sink-url", s.URL(), "--enable-failpoints"}
		for _, d := range defects {
			args = append(args, "--defect", d)
		}
		return args
	}
	stop := func(cmd *exec.Cmd, out *lockedBuffer) {
		t.Helper()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, out)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("still running 20 s after SIGTERM:\n%s", out)
		}
	}

	addr := freeAddr(t)
	cmd, out := startChild(t, flags(addr)...)
	base := "http://" + addr
	waitOutput(t, out, "listening")
	if resp := signedStripe(t, base, "evt_cli_dead"); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("credit: %d", resp.StatusCode)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var state, kind string
		var attempts int
		err := conn.QueryRow(ctx, `SELECT state, kind, attempts FROM outbox_messages WHERE event_id = 'evt_cli_dead'`).Scan(&state, &kind, &attempts)
		if err == nil && state == "dead" {
			if kind != "credit" || attempts != 3 || len(s.Calls()) != 3 {
				t.Fatalf("dead letter: kind %s after %d attempts and %d calls, want credit after 3", kind, attempts, len(s.Calls()))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox message never dead-lettered (state %q, %d attempts, err %v):\n%s", state, attempts, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop(cmd, out)

	for _, d := range []string{reference.DefectInboxAckBeforeCommit, reference.DefectPollWithoutClaim, reference.DefectNoLeaseExpiry,
		reference.DefectMarkDoneSeparateTx, reference.DefectRetryWithoutAttempts, reference.DefectDropDeadLetters,
		reference.DefectFreshIdempotencyKey, reference.DefectSendBeforeCommit, reference.DefectDropFailedSends} {
		addr := freeAddr(t)
		cmd, out := startChild(t, flags(addr, d)...)
		waitOutput(t, out, "listening")
		if resp := signedStripe(t, "http://"+addr, "evt_cli_"+d); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: credit answered %d", d, resp.StatusCode)
		}
		stop(cmd, out)
		if !strings.Contains(out.String(), "DEFECT ACTIVE: "+d) {
			t.Errorf("%s not announced:\n%s", d, out)
		}
	}

	worker, wout := startChild(t, "reference", "worker", "--database-url", db, "--workers", "2", "--lease", "2s",
		"--max-attempts", "3", "--sink-url", s.URL(), "--defect", reference.DefectPollWithoutClaim, "--defect", reference.DefectDropFailedSends)
	waitOutput(t, wout, "inbox workers started")
	stop(worker, wout)
	for _, d := range []string{reference.DefectPollWithoutClaim, reference.DefectDropFailedSends} {
		if !strings.Contains(wout.String(), "DEFECT ACTIVE: "+d) {
			t.Errorf("worker: %s not announced:\n%s", d, wout)
		}
	}
}
