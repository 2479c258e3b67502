// Package gotest certifies a webhook receiver from inside its own `go test`,
// through the hookcerttest library: the receiver (here hookcert's reference
// receiver) runs in the test process, on a throwaway PostgreSQL database, and
// the harness kills and restarts it in process, as SIGKILL and a supervisor
// would. reference_test.go is the test; this file is what a receiver's own
// test needs around it: the crashable in-process server and the database.
package gotest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios/hookcerttest"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// receiverConns bounds the receiver's pool: enough for a burst of concurrent
// duplicates to reach the database together, small on a shared server.
const receiverConns = 10

// Reference is the reference receiver served in this process at a fixed
// loopback address, so that a restart comes back at the same URL. Kill acts as
// SIGKILL would on a process: the listener and every connection close, the
// receiver's database sessions are terminated (a transaction in flight never
// commits) and no new one can open; the handlers still running only fail.
type Reference struct {
	dbURL string
	opts  reference.Options
	addr  string
	admin *pgxpool.Pool

	mu   sync.Mutex
	gen  int
	life *life // nil while killed
}

// life is one incarnation of the receiver, as one process would be.
type life struct {
	app     *reference.Server
	pool    *pgxpool.Pool
	srv     *http.Server
	appName string
	dead    atomic.Bool
}

// StartReference migrates the database at dbURL and serves the reference
// receiver on a free loopback port. opts.Crash is set by Reference: a crash
// failpoint kills the current incarnation. Close stops it.
func StartReference(ctx context.Context, dbURL string, opts reference.Options) (*Reference, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	admin, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("admin pool: %w", err)
	}
	if opts.Endpoints == nil {
		opts.Endpoints = reference.DefaultEndpoints()
	}
	r := &Reference{dbURL: dbURL, opts: opts, addr: addr, admin: admin}
	// A failpoint crash is this incarnation dying, not the test process.
	r.opts.Crash = r.crash
	if err := r.Restart(ctx); err != nil {
		admin.Close()
		return nil, err
	}
	return r, nil
}

// URL is the receiver's base URL.
func (r *Reference) URL() string { return "http://" + r.addr }

// Restart starts a new incarnation (a no-op while one is up); it is ready when
// Restart returns.
func (r *Reference) Restart(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.life != nil {
		return nil
	}
	r.gen++
	l := &life{appName: fmt.Sprintf("reference-inproc-%d", r.gen)}
	cfg, err := pgxpool.ParseConfig(r.dbURL)
	if err != nil {
		return errors.New("reference: database URL does not parse")
	}
	cfg.MaxConns = receiverConns
	cfg.ConnConfig.RuntimeParams["application_name"] = l.appName
	// A killed incarnation opens no session again: its handlers' work fails.
	cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
		if l.dead.Load() {
			return errors.New("receiver killed")
		}
		return nil
	}
	if l.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return err
	}
	if l.app, err = reference.New(ctx, l.pool, r.opts); err != nil {
		l.pool.Close()
		return err
	}
	ln, err := listen(ctx, r.addr)
	if err != nil {
		l.pool.Close()
		return err
	}
	l.srv = &http.Server{Handler: l.app.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	r.life = l
	return nil
}

// listen binds addr again after a kill; the port was just released, so a
// short retry covers a bind that races its release.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	for i := 0; ; i++ {
		ln, err := net.Listen("tcp", addr)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || i == 50 {
			return ln, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill stops the current incarnation as SIGKILL would (a no-op when none is up).
func (r *Reference) Kill() error {
	r.mu.Lock()
	l := r.life
	r.life = nil
	r.mu.Unlock()
	if l == nil {
		return nil
	}
	return r.kill(l)
}

func (r *Reference) kill(l *life) error {
	l.dead.Store(true)
	_ = l.srv.Close() // the listener and every connection, at once
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var db string
	if err := r.admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return fmt.Errorf("killing the receiver: %w", err)
	}
	if _, err := pgfault.TerminateBackends(ctx, r.admin, db, pgfault.Filter{ApplicationName: l.appName}); err != nil {
		return fmt.Errorf("killing the receiver's sessions: %w", err)
	}
	// Returns once the handlers still running have given their connections back.
	go l.pool.Close()
	return nil
}

// crash is what an armed crash failpoint calls, inside the handler.
func (r *Reference) crash() {
	if err := r.Kill(); err != nil {
		panic(err) // the crash must happen: a receiver that survives it would be judged wrongly
	}
}

// Purge purges the running receiver as of asOf (its admin purge, in process).
func (r *Reference) Purge(ctx context.Context, asOf time.Time) error {
	r.mu.Lock()
	l := r.life
	r.mu.Unlock()
	if l == nil {
		return errors.New("the receiver is down")
	}
	_, err := l.app.Purge(ctx, asOf)
	return err
}

// Close stops the receiver and releases its pools.
func (r *Reference) Close() {
	r.mu.Lock()
	l := r.life
	r.life = nil
	r.mu.Unlock()
	if l != nil {
		l.dead.Store(true)
		_ = l.srv.Close()
		l.pool.Close()
	}
	r.admin.Close()
}

// Endpoints are the reference endpoints of the example: two accounts of one
// profile, several profiles, header-carried and body-carried event IDs, signed
// timestamps and not (as in `hookcert demo`), each with a fresh secret.
func Endpoints() ([]reference.Endpoint, error) {
	var out []reference.Endpoint
	for _, e := range []struct{ profile, account string }{
		{"stripe", "acct_A"}, {"stripe", "acct_B"}, {"standard-webhooks", "acct_A"},
		{"github", "acct_A"}, {"shopify", "acct_A"}, {"svix", "acct_A"},
	} {
		sec, err := profiles.GenerateSecret(e.profile, rand.Reader)
		if err != nil {
			return nil, err
		}
		out = append(out, reference.Endpoint{Profile: e.profile, Account: e.account, Path: "/webhooks/" + e.profile + "/" + e.account, Secret: sec})
	}
	return out, nil
}

// Target describes the running reference to the harness: its endpoints and
// retention, its tables and queries (those of `hookcert demo`), the in-process
// crash hooks and every capability it offers.
func (r *Reference) Target(dbURL string) hookcerttest.Target {
	tg := hookcerttest.Target{
		Name:        "reference receiver (in process)",
		BaseURL:     r.URL(),
		DatabaseURL: dbURL,
		EventTable:  "processed_webhook_events",
		EffectTable: "ledger_entries",
		Queries: hookcerttest.Queries{
			EventRows:      "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
			Effects:        "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
			ObjectEffects:  "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4",
			Object:         "SELECT version, status FROM subscriptions WHERE source=$1 AND account_id=$2 AND object_id=$4",
			Payment:        "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4",
			PayloadPresent: reference.PayloadPresentQuery,
		},
		FailpointsPath: "/_hookcert/failpoints",
		Retention:      &hookcerttest.Retention{Purge: r.Purge},
		Kill:           r.Kill,
		Restart:        r.Restart,
		Capabilities:   []string{"crash", "lock-gating", "connection-loss", "failpoints", "ordering", "state-machine", "domain-constraint", "deletion", "retention"},
	}
	for _, e := range r.opts.Endpoints {
		ret := e.Retention()
		tg.Endpoints = append(tg.Endpoints, hookcerttest.Endpoint{Profile: e.Profile, Source: e.Source, Account: e.Account, Path: e.Path,
			Secret: e.Secret, KeyTTL: ret.KeyTTL, PayloadTTL: ret.PayloadTTL})
	}
	return tg
}
