package soak

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The aims that kill worker processes and dispatchers need real processes:
// the reference's HTTP side is served in process, as in run_test.go, and its
// inbox workers and outbox dispatchers run in worker processes, this test
// binary started again as "hookcert reference worker" would be, each killed
// with SIGKILL and started again by the soak.

// Environment of a worker process.
const (
	envWorker  = "HOOKCERT_SOAK_TEST_WORKER" // the database URL
	envSink    = "HOOKCERT_SOAK_TEST_SINK"
	envDefects = "HOOKCERT_SOAK_TEST_DEFECTS"
)

// testLease is the workers' lease (and the outbox's): a claim a killed
// worker held is re-offered a second later by a correct receiver.
const testLease = time.Second

func TestMain(m *testing.M) {
	if dbURL := os.Getenv(envWorker); dbURL != "" {
		os.Exit(runTestWorker(dbURL))
	}
	os.Exit(m.Run())
}

// runTestWorker is a worker process: the reference's inbox workers and
// outbox dispatcher until SIGTERM (or SIGKILL).
func runTestWorker(dbURL string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var defects []string
	if d := os.Getenv(envDefects); d != "" {
		defects = strings.Split(d, ",")
	}
	in := reference.InboxOptions{Workers: 2, Lease: testLease, PollInterval: 50 * time.Millisecond, MaxAttempts: 5,
		BackoffBase: 250 * time.Millisecond, BackoffMax: time.Second, Defects: defects}
	out := reference.OutboxOptions{SinkURL: os.Getenv(envSink), Defects: defects}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := reference.RunWorkers(ctx, dbURL, in, out, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// processes are the reference's worker processes: scenarios.Workers, and the
// receiver's Controller (its HTTP side, in process, is never killed).
type processes struct {
	t      *testing.T
	dbURL  string
	env    []string
	mu     sync.Mutex
	cmds   []*exec.Cmd
	exited []chan struct{}
}

func (p *processes) Processes() int { return len(p.cmds) }

// start starts worker process i (from 0), its sessions named soakwI+1.
func (p *processes) start(i int) error {
	u, err := url.Parse(p.dbURL)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("application_name", fmt.Sprintf("soakw%d", i+1))
	u.RawQuery = q.Encode()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{envWorker + "=" + u.String()}, p.env...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmds[i], p.exited[i] = cmd, done
	return nil
}

func (p *processes) running(i int) bool {
	if p.cmds[i] == nil {
		return false
	}
	select {
	case <-p.exited[i]:
		return false
	default:
		return true
	}
}

func (p *processes) kill(i int) error {
	if !p.running(i) {
		return nil
	}
	if err := p.cmds[i].Process.Kill(); err != nil {
		return err
	}
	<-p.exited[i]
	return nil
}

func (p *processes) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.cmds {
		if err := p.kill(i); err != nil {
			return err
		}
	}
	return nil
}

func (p *processes) Restart(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.cmds {
		if !p.running(i) {
			if err := p.start(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// KillHolder kills the worker process whose session waits on g, told by
// its sessions' application name.
func (p *processes) KillHolder(ctx context.Context, g scenarios.Gate) (int, error) {
	ws, err := g.(testGate).g.Waiters(ctx)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range ws {
		var n int
		if _, err := fmt.Sscanf(w.ApplicationName, "soakw%d", &n); err == nil && n >= 1 && n <= len(p.cmds) && p.running(n-1) {
			return n, p.kill(n - 1)
		}
	}
	return 0, nil
}

func (p *processes) WaitExit(context.Context) error { return nil }

// Alive says which worker process is not running, as the harness does.
func (p *processes) Alive() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.cmds {
		if !p.running(i) {
			return false, fmt.Sprintf("worker process %d is not running", i+1)
		}
	}
	return true, ""
}

// testGate and testDB are the harness's lock gate and session terminations.
type testGate struct{ g *pgfault.Gate }

func (g testGate) Held(ctx context.Context) (scenarios.GateHeld, error) {
	h, err := g.g.Held(ctx)
	return scenarios.GateHeld{AtGate: h.AtGate, Behind: h.Behind, Foreign: h.Foreign}, err
}
func (g testGate) Release(ctx context.Context) error { return g.g.Release(ctx) }

type testDB struct{ pool *pgxpool.Pool }

func (d testDB) Hold(ctx context.Context, table string) (scenarios.Gate, error) {
	g, err := pgfault.Hold(ctx, d.pool, table, "")
	if err != nil {
		return nil, err
	}
	return testGate{g}, nil
}

func (d testDB) TerminateWaiters(ctx context.Context, g scenarios.Gate, ownOnly bool) ([]int, error) {
	return pgfault.TerminateBackends(ctx, d.pool, d.pool.Config().ConnConfig.Database, pgfault.Filter{WaitingOn: g.(testGate).g, OwnOnly: ownOnly})
}

// testSink attributes the sink's calls to events by the event ID in their
// body, as the harness does.
type testSink struct{ s *sink.Sink }

func (d testSink) Calls(eventID string) []scenarios.SinkCall {
	var out []scenarios.SinkCall
	for _, c := range d.s.Matching(eventID) {
		out = append(out, scenarios.SinkCall{Seq: c.Seq, At: c.Time, Key: c.IdempotencyKey, Status: c.Status, Outcome: c.Outcome})
	}
	return out
}
func (d testSink) CallsEach(eventIDs []string) map[string][]scenarios.SinkCall {
	out := map[string][]scenarios.SinkCall{}
	for id, cs := range d.s.MatchingEach(eventIDs) {
		for _, c := range cs {
			out[id] = append(out[id], scenarios.SinkCall{Seq: c.Seq, At: c.Time, Key: c.IdempotencyKey, Status: c.Status, Outcome: c.Outcome})
		}
	}
	return out
}
func (d testSink) Fail(eventID string, n, status int) {
	d.s.Inject(sink.Fault{Match: eventID, Times: n, Status: status})
}
func (d testSink) Lose(eventID string, n int) {
	d.s.Inject(sink.Fault{Match: eventID, Times: n, Lose: true})
}
func (d testSink) HoldAfterApply(eventID string, dur time.Duration) {
	d.s.Inject(sink.Fault{Match: eventID, Times: 1, HoldAfterApply: dur})
}

// testQueue reads an event's inbox state, as the demo's inbox_state query.
type testQueue struct{ pool *pgxpool.Pool }

func (q testQueue) InboxState(ctx context.Context, k profiles.Key) (scenarios.QueueState, error) {
	var st scenarios.QueueState
	err := q.pool.QueryRow(ctx, `SELECT CASE inbox_state WHEN 'claimed' THEN 'processing' ELSE inbox_state END, attempts
		FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3`, k.Source, k.Account, k.EventID).Scan(&st.State, &st.Attempts)
	if err != nil {
		return st, nil // no row: not found
	}
	st.Found = true
	return st, nil
}
func (testQueue) OutboxState(context.Context, profiles.Key) (scenarios.QueueState, error) {
	return scenarios.QueueState{}, nil
}

// scenarioEnv is a receiver as the soak sees it.
type scenarioEnv struct {
	env   *scenarios.Env
	hooks Hooks
}

// newScenarioEnv serves the reference in inbox mode with procs worker
// processes (running defects) that call a sink, on a throwaway database, and
// returns the soak's view of it; everything stops when t ends.
func newScenarioEnv(ctx context.Context, t *testing.T, procs int, defects ...string) *scenarioEnv {
	t.Helper()
	dbURL := pgtest.Database(t)
	sk, err := sink.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sk.Close() })
	eps := reference.DefaultEndpoints()[:2]
	srv, err := reference.Open(ctx, dbURL, reference.Options{Endpoints: eps, PurgeInterval: -1, Mode: reference.ModeInbox,
		Inbox: reference.InboxOptions{Workers: -1, Lease: testLease}, Outbox: reference.OutboxOptions{SinkURL: sk.URL()}, Defects: defects})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hts := httptest.NewServer(srv.Handler())
	t.Cleanup(hts.Close)
	pool, err := pgsession.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	p := &processes{t: t, dbURL: dbURL, env: []string{envSink + "=" + sk.URL(), envDefects + "=" + strings.Join(defects, ",")},
		cmds: make([]*exec.Cmd, procs), exited: make([]chan struct{}, procs)}
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	env := &scenarios.Env{RunID: "aimtest", TimeScale: 3600, Observer: pgObserver{pool}, DB: testDB{pool},
		EffectTable: "ledger_entries", EventTable: "processed_webhook_events", Workers: p, Queue: testQueue{pool},
		Inbox: scenarios.InboxSpec{Lease: testLease}, Sink: testSink{sk}}
	env.Acceptance.Async = true
	env.Quiescent = func(ctx context.Context) (bool, error) {
		var ok bool
		err := pool.QueryRow(ctx, "SELECT count(*) = 0 FROM processed_webhook_events WHERE inbox_state = 'claimed' OR (inbox_state = 'pending' AND next_attempt_at <= now())").Scan(&ok)
		return ok, err
	}
	for _, ep := range eps {
		pr, err := profiles.Lookup(ep.Profile)
		if err != nil {
			t.Fatal(err)
		}
		env.Endpoints = append(env.Endpoints, scenarios.Endpoint{Profile: pr, Account: ep.Account, URL: hts.URL + ep.Path, Secrets: []string{ep.Secret}})
	}
	return &scenarioEnv{env: env, hooks: Hooks{Controller: p}}
}
