package hookcerttest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgsession"
)

// A receiver that runs inside the test process cannot be SIGKILLed, yet the
// crash guarantees need it to die as a process dies. Receiver does for an
// http.Handler what a process supervisor and the kernel do for a binary: each
// incarnation is built afresh by a Factory and served at one fixed address,
// and Kill ends it the way SIGKILL ends a process.

// Factory builds one incarnation of an in-process receiver and returns its
// handler. Everything the incarnation opens through inc dies with it: its
// database pools (Incarnation.Pool, Incarnation.SQLDB) and the work it runs
// on inc.Context(). ctx bounds the build only.
type Factory func(ctx context.Context, inc *Incarnation) (http.Handler, error)

// ErrKilled is what a killed incarnation's database pools answer instead of
// opening a session.
var ErrKilled = errors.New("hookcerttest: the receiver's incarnation was killed")

// killTimeout bounds the termination of a killed incarnation's sessions.
const killTimeout = 10 * time.Second

// receivers numbers the Receivers of this process, so that the sessions of
// two receivers on one server never share an application_name.
var receivers atomic.Int64

// Receiver serves a receiver built by a Factory at a fixed loopback address,
// so that a restart comes back at the same URL, and crashes it as SIGKILL
// crashes a process. Its Kill, Restart and Alive are Target's crash hooks.
type Receiver struct {
	build Factory
	addr  string
	// prefix makes the incarnations' application_names unique on the server.
	prefix string

	// mu is held while an incarnation is built: Kill and Alive wait for it.
	mu     sync.Mutex
	n      int
	cur    *Incarnation
	closed bool
	// down says why no incarnation is up.
	down string
	// admins terminate the incarnations' sessions: one small pool per
	// database, kept across incarnations.
	amu    sync.Mutex
	admins map[string]*pgxpool.Pool
	// dying are the killed incarnations still dying and their pools still
	// closing; a kill is counted while r.mu still shows the incarnation.
	dying sync.WaitGroup
}

// NewReceiver returns a receiver that serves f's incarnations at addr, a
// loopback host:port ("127.0.0.1:8080"), once Restart starts the first one.
func NewReceiver(addr string, f Factory) (*Receiver, error) {
	r, err := newReceiver(addr, f)
	if err != nil {
		return nil, fmt.Errorf("hookcerttest: NewReceiver: %w", err)
	}
	return r, nil
}

func newReceiver(addr string, f Factory) (*Receiver, error) {
	if f == nil {
		return nil, errors.New("the Factory is nil")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		return nil, fmt.Errorf("address %q must be host:port with a fixed port, so that a restart comes back at the same URL", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("address %q is not on loopback (127.0.0.0/8, ::1 or localhost): a receiver in the test process is served on this machine only", addr)
	}
	prefix := fmt.Sprintf("hookcerttest-%d-%d", os.Getpid(), receivers.Add(1))
	return &Receiver{build: f, addr: addr, prefix: prefix, admins: map[string]*pgxpool.Pool{}, down: "the receiver was never started"}, nil
}

// StartReceiver serves f's first incarnation on a free loopback port and
// returns once it is ready. Close stops it.
func StartReceiver(ctx context.Context, f Factory) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hookcerttest: StartReceiver: choosing a port: %w", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	r, err := NewReceiver(addr, f)
	if err != nil {
		return nil, err
	}
	if err := r.Restart(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// URL is the receiver's base URL, the same for every incarnation.
func (r *Receiver) URL() string { return "http://" + r.addr }

// Addr is the receiver's host:port.
func (r *Receiver) Addr() string { return r.addr }

// Restart builds and serves a new incarnation (a no-op while one is up) and
// returns once it accepts connections.
func (r *Receiver) Restart(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return errors.New("hookcerttest: the receiver is closed")
	case r.cur != nil:
		return nil
	}
	r.n++
	inc := newIncarnation(r, r.n)
	h, err := r.build(ctx, inc)
	if err == nil && h == nil {
		err = errors.New("the Factory returned no handler")
	}
	if err != nil {
		inc.release()
		r.down = fmt.Sprintf("incarnation %d of the receiver failed to start", inc.n)
		return fmt.Errorf("hookcerttest: building incarnation %d of the receiver: %w", inc.n, err)
	}
	ln, err := listen(ctx, r.addr)
	if err != nil {
		inc.release()
		r.down = fmt.Sprintf("incarnation %d of the receiver could not listen", inc.n)
		return fmt.Errorf("hookcerttest: serving incarnation %d of the receiver at %s: %w", inc.n, r.addr, err)
	}
	// Requests see the incarnation's end as their context's end.
	inc.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return inc.ctx }}
	go func() { _ = inc.srv.Serve(ln) }()
	r.cur = inc
	return nil
}

// listen binds addr again after a kill: the port was just released, so a
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

// Kill ends the current incarnation as SIGKILL ends a process (a no-op when
// none is up): its listener and every connection close at once, its context
// ends, its database sessions are terminated, so no transaction in flight
// commits, and no new session of it can open; handlers still running only
// fail. It returns once those sessions are gone.
func (r *Receiver) Kill() error {
	r.mu.Lock()
	inc := r.cur
	r.cur = nil
	if inc != nil {
		r.down = fmt.Sprintf("incarnation %d of the receiver was killed and not restarted", inc.n)
		// Counted before it stops being current: a Close that no longer sees it
		// still waits for its pools (and never Waits while they are Added).
		r.dying.Add(1)
	}
	r.mu.Unlock()
	if inc == nil {
		return nil
	}
	defer r.dying.Done()
	return inc.kill()
}

// Alive reports whether an incarnation is up and, when none is, why.
func (r *Receiver) Alive() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		return true, ""
	}
	return false, r.down
}

// Current is the incarnation up now, nil while none is.
func (r *Receiver) Current() *Incarnation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Close kills the current incarnation and releases everything the receiver
// holds; it waits (bounded) for the killed incarnations' pools to close.
func (r *Receiver) Close() {
	r.mu.Lock()
	inc := r.cur
	r.cur, r.closed, r.down = nil, true, "the receiver was closed"
	r.mu.Unlock()
	if inc != nil {
		_ = inc.kill()
	}
	done := make(chan struct{})
	go func() { r.dying.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(killTimeout):
		// A handler still holds a session of a dead incarnation: leave it.
	}
	r.amu.Lock()
	defer r.amu.Unlock()
	for k, p := range r.admins {
		p.Close()
		delete(r.admins, k)
	}
}

// admin is the pool that terminates sessions in the database cfg names: one
// session, made as the caller's are (their connect hooks may fetch a
// credential), marked as the harness's.
func (r *Receiver) admin(cfg *pgxpool.Config) *pgxpool.Pool {
	c := cfg.ConnConfig
	key := c.Host + "|" + strconv.Itoa(int(c.Port)) + "|" + c.User + "|" + c.Database
	r.amu.Lock()
	defer r.amu.Unlock()
	if p := r.admins[key]; p != nil {
		return p
	}
	ac := cfg.Copy()
	ac.MaxConns, ac.MinConns = 1, 0
	// The harness's own mark: the faults and busy checks spare it.
	ac.ConnConfig.RuntimeParams["application_name"] = pgsession.ApplicationName
	// NewWithConfig connects lazily: it fails only on a bad configuration,
	// which the incarnation's own pool just accepted.
	p, err := pgxpool.NewWithConfig(context.Background(), ac)
	if err != nil {
		return nil
	}
	r.admins[key] = p
	return p
}

// Incarnation is one life of an in-process receiver, as one process would be.
type Incarnation struct {
	r *Receiver
	n int
	// name is the application_name of its sessions.
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	dead   atomic.Bool
	srv    *http.Server

	mu    sync.Mutex
	pools []*incPool
}

type incPool struct {
	pool  *pgxpool.Pool
	admin *pgxpool.Pool
	db    string
	sql   *sql.DB
}

func newIncarnation(r *Receiver, n int) *Incarnation {
	ctx, cancel := context.WithCancel(context.Background())
	return &Incarnation{r: r, n: n, name: fmt.Sprintf("%s-%d", r.prefix, n), ctx: ctx, cancel: cancel}
}

// N is the incarnation's number: 1 for the first, one more at each restart.
func (inc *Incarnation) N() int { return inc.n }

// ApplicationName is the application_name its database sessions carry.
func (inc *Incarnation) ApplicationName() string { return inc.name }

// Context ends when the incarnation is killed: background work (workers,
// pollers) started by the Factory runs on it, as a process's threads die
// with it.
func (inc *Incarnation) Context() context.Context { return inc.ctx }

// Killed reports whether the incarnation was killed.
func (inc *Incarnation) Killed() bool { return inc.dead.Load() }

// Kill kills this incarnation if it is still the receiver's current one:
// what a receiver calls to crash itself (an armed crash failpoint, say).
func (inc *Incarnation) Kill() error {
	r := inc.r
	r.mu.Lock()
	if r.cur != inc {
		r.mu.Unlock()
		return nil
	}
	r.cur = nil
	r.down = fmt.Sprintf("incarnation %d of the receiver killed itself and was not restarted", inc.n)
	r.dying.Add(1) // as in Receiver.Kill
	r.mu.Unlock()
	defer r.dying.Done()
	return inc.kill()
}

// Pool opens a pgx pool on dbURL for this incarnation, with pgx's defaults
// (see PoolWithConfig).
func (inc *Incarnation) Pool(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		// pgx's parse errors can quote the URL and its password.
		return nil, errors.New("hookcerttest: Incarnation.Pool: the database URL does not parse (not shown: it may hold a password)")
	}
	return inc.PoolWithConfig(ctx, cfg)
}

// PoolWithConfig opens a pgx pool of cfg (from pgxpool.ParseConfig; it is
// copied, not changed) for this incarnation: its sessions carry the
// incarnation's application_name, are terminated when it is killed, and no
// new one opens after that (cfg's own connect hooks still run before). It is
// closed when the incarnation ends.
func (inc *Incarnation) PoolWithConfig(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	if cfg == nil {
		return nil, errors.New("hookcerttest: Incarnation.PoolWithConfig: the configuration is nil")
	}
	admin := inc.r.admin(cfg)
	if admin == nil {
		return nil, errors.New("hookcerttest: Incarnation.Pool: cannot open the session that would terminate this pool's sessions")
	}
	c := cfg.Copy()
	c.ConnConfig.RuntimeParams["application_name"] = inc.name
	before, after := c.BeforeConnect, c.AfterConnect
	c.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		return inc.alive(func() error { return callIf(before, ctx, cc) })
	}
	// Checked again once connected: a session that was opening while Kill
	// terminated the others must not outlive it.
	c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		return inc.alive(func() error { return callIf(after, ctx, conn) })
	}
	pool, err := pgxpool.NewWithConfig(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("hookcerttest: Incarnation.Pool: %w", err)
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.dead.Load() {
		pool.Close()
		return nil, ErrKilled
	}
	inc.pools = append(inc.pools, &incPool{pool: pool, admin: admin, db: c.ConnConfig.Database})
	return pool, nil
}

// alive runs next unless the incarnation was killed.
func (inc *Incarnation) alive(next func() error) error {
	if inc.dead.Load() {
		return ErrKilled
	}
	return next()
}

// callIf calls a caller's connect hook, when there is one.
func callIf[T any](hook func(context.Context, T) error, ctx context.Context, arg T) error {
	if hook == nil {
		return nil
	}
	return hook(ctx, arg)
}

// SQLDB is Pool for database/sql (through pgx's stdlib driver): a receiver
// written against *sql.DB dies with the incarnation the same way.
func (inc *Incarnation) SQLDB(ctx context.Context, dbURL string) (*sql.DB, error) {
	pool, err := inc.Pool(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	inc.mu.Lock()
	inc.pools[len(inc.pools)-1].sql = db
	inc.mu.Unlock()
	return db, nil
}

// kill ends the incarnation: what Receiver.Kill does once it is no longer
// current.
func (inc *Incarnation) kill() error {
	inc.mu.Lock()
	inc.dead.Store(true)
	pools := inc.pools
	inc.mu.Unlock()
	// The connections close before anything else: a handler woken by what
	// follows (a cancelled context, a lost session) must find no client to
	// answer, as a killed process answers none.
	if inc.srv != nil {
		_ = inc.srv.Close() // the listener and every connection, at once
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	var errs []error
	for _, p := range pools {
		if _, err := pgfault.TerminateBackends(ctx, p.admin, p.db, pgfault.Filter{ApplicationName: inc.name}); err != nil {
			errs = append(errs, fmt.Errorf("hookcerttest: terminating the killed receiver's sessions: %w", err))
		}
	}
	// Its background work stops only now: a worker cut off by its lost
	// session, not by a context it could have answered.
	inc.release()
	return errors.Join(errs...)
}

// release closes the incarnation's pools once its handlers have given their
// connections back (they fail fast: their sessions are gone).
func (inc *Incarnation) release() {
	inc.dead.Store(true)
	inc.cancel()
	inc.mu.Lock()
	pools := inc.pools
	inc.pools = nil
	inc.mu.Unlock()
	for _, p := range pools {
		inc.r.dying.Add(1)
		go func() {
			defer inc.r.dying.Done()
			if p.sql != nil {
				_ = p.sql.Close()
			}
			p.pool.Close()
		}()
	}
}
