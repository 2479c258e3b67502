package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const testSecret = "It's a Secret to Everybody" // GitHub's documented example secret

// envExec makes the test binary run the gateway command itself, so process
// tests (kill, restart, SIGTERM) need no separate build.
const envExec = "GITHUB_GATEWAY_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(envExec) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// serverURL is the PostgreSQL server tests create their databases on.
func serverURL() string {
	if u := os.Getenv("GATEWAY_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// newDatabase creates a throwaway database, dropped when the test ends, and
// returns its URL.
func newDatabase(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL())
	if err != nil {
		t.Fatalf("no PostgreSQL server (set GATEWAY_TEST_DATABASE_URL): %v", err)
	}
	defer admin.Close(context.Background())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "github_gateway_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, serverURL())
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(serverURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// observer is a small pool for reading and locking the gateway's tables.
func observer(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pc, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 3
	p, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func count(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// testGateway is a gateway served over real HTTP on loopback.
type testGateway struct {
	*Gateway
	url string
	db  *pgxpool.Pool // observer
}

// startGateway runs a gateway in-process on a fresh database with workers
// workers (0: accept only). tweak, if set, adjusts it before it starts.
func startGateway(t *testing.T, defect Defect, workers int, tweak func(*Gateway)) *testGateway {
	t.Helper()
	dbURL := newDatabase(t)
	return startGatewayOn(t, dbURL, defect, workers, tweak)
}

func startGatewayOn(t *testing.T, dbURL string, defect Defect, workers int, tweak func(*Gateway)) *testGateway {
	t.Helper()
	cfg := Config{DatabaseURL: dbURL, Workers: max(workers, 1), Secret: []byte(testSecret), Defect: defect}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := newGateway(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(g)
	}
	g.start(workers)
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.close() })
	return &testGateway{Gateway: g, url: srv.URL, db: observer(t, dbURL)}
}

// testWriter sends the gateway's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// issuesBody is an issues event as GitHub sends it (the fields the gateway reads).
func issuesBody(issueID int64) []byte {
	return fmt.Appendf(nil, `{"action":"opened","issue":{"id":%d,"number":7,"title":"It broke","state":"open"},`+
		`"repository":{"id":1296269,"full_name":"octocat/Hello-World"},"sender":{"login":"octocat","id":1}}`, issueID)
}

// post sends one signed delivery and returns the status.
func post(t *testing.T, base, event, deliveryID string, body []byte) int {
	t.Helper()
	return postWith(t, base, body, map[string]string{
		"X-GitHub-Event": event, "X-GitHub-Delivery": deliveryID, "X-Hub-Signature-256": sign(testSecret, body),
	})
}

var client = &http.Client{Timeout: 20 * time.Second}

func postWith(t *testing.T, base string, body []byte, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/github/webhook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/test")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// postCopies sends n copies of one delivery at once and checks each got 202.
func postCopies(t *testing.T, base, event, deliveryID string, body []byte, n int) {
	t.Helper()
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = post(t, base, event, deliveryID, body) }()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusAccepted {
			t.Fatalf("copy %d of %s: status %d, want 202", i, deliveryID, c)
		}
	}
}

// waitQuiescent waits until no task is pending (dead letters aside).
func waitQuiescent(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	waitFor(t, 15*time.Second, "the inbox to drain", func() bool {
		return count(t, db, `SELECT count(*) FROM inbox WHERE done_at IS NULL AND attempts < 5`) == 0
	})
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gate holds a lock on table in mode from an observer transaction, as a
// conformance harness does to line concurrent writers up; release commits it.
func gate(t *testing.T, db *pgxpool.Pool, table, mode string) (release func()) {
	t.Helper()
	tx, err := db.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "LOCK TABLE "+table+" IN "+mode+" MODE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Commit(context.Background()) }) }
	t.Cleanup(release)
	return release
}

// waiters counts the gateway sessions waiting for a lock on table.
func waiters(t *testing.T, db *pgxpool.Pool, table string) int {
	return count(t, db, `SELECT count(*) FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, table)
}

// process is the gateway command run as a real process.
type process struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
	done chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProcess runs `github-gateway serve` on dbURL and waits for /healthz.
func startProcess(t *testing.T, dbURL string, args ...string) *process {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", addr}, args...)...)
	cmd.Env = append(os.Environ(), envExec+"=1", envSecret+"="+testSecret, envDatabaseURL+"="+dbURL)
	p := &process{cmd: cmd, base: "http://" + addr, logs: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("gateway output:\n%s", p.logs.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("gateway exited before it was ready: %v\n%s", err, p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready:\n%s", p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill SIGKILLs the process and waits for it.
func (p *process) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	err := <-p.done
	p.done <- err
}

// term SIGTERMs the process and returns its exit error.
func (p *process) term(t *testing.T) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
		return nil
	}
}
