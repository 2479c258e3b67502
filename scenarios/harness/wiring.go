package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/fixture"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/process"
	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// The adapters behind the suite's interfaces: the observer and queue reads,
// the sink, the receiver's processes, the fault tools.

// observer adapts the observer (of any kind) to the scenarios' Observer.
type observer struct{ o *observe.Observer }

func okey(k profiles.Key) observe.Key {
	return observe.Key{Source: k.Source, Account: k.Account, EventID: k.EventID}
}

func (o observer) EventRows(ctx context.Context, k profiles.Key) (int, error) {
	return o.o.EventRows(ctx, okey(k))
}
func (o observer) Effects(ctx context.Context, k profiles.Key, objectID string) (int, error) {
	key := okey(k)
	key.ObjectID = objectID
	return o.o.Effects(ctx, key)
}
func (o observer) ObjectEffects(ctx context.Context, source, account, objectID string) (int, error) {
	return o.o.ObjectEffects(ctx, source, account, objectID)
}
func (o observer) Object(ctx context.Context, source, account, objectID string) (int64, string, bool, error) {
	return o.o.Object(ctx, source, account, objectID)
}
func (o observer) ObjectChildren(ctx context.Context, source, account, objectID string) (int64, bool, error) {
	return o.o.ObjectChildren(ctx, source, account, objectID)
}
func (o observer) Payment(ctx context.Context, source, account, objectID string) (string, bool, error) {
	return o.o.Payment(ctx, source, account, objectID)
}
func (o observer) EffectsOf(ctx context.Context, query string, k profiles.Key, objectID string) (int, error) {
	key := okey(k)
	key.ObjectID = objectID
	return o.o.EffectsOf(ctx, query, key)
}
func (o observer) ObjectEffectsOf(ctx context.Context, query, source, account, objectID string) (int, error) {
	return o.o.ObjectEffectsOf(ctx, query, source, account, objectID)
}
func (o observer) ObjectOf(ctx context.Context, query, source, account, objectID string) (int64, string, bool, error) {
	return o.o.ObjectOf(ctx, query, source, account, objectID)
}
func (o observer) PaymentOf(ctx context.Context, query, source, account, objectID string) (string, bool, error) {
	return o.o.PaymentOf(ctx, query, source, account, objectID)
}

// The adapter answers the queries of every role.
var _ scenarios.RoleObserver = observer{}

func (o observer) KeyTTL(ctx context.Context, k profiles.Key) (time.Duration, bool, bool, error) {
	return o.o.KeyTTL(ctx, okey(k))
}

// retention adapts the purge (the target's trigger, or the hooks' function)
// and the payload_present query.
type retention struct {
	purge func(ctx context.Context, asOf time.Time) error
	o     *observe.Observer
}

func (r retention) Purge(ctx context.Context, asOf time.Time) error { return r.purge(ctx, asOf) }
func (r retention) PayloadPresent(ctx context.Context, k profiles.Key) (bool, bool, error) {
	return r.o.PayloadPresent(ctx, okey(k))
}

// controller adapts the process controller: the receiver and its worker
// processes (lifecycle.worker), which crash and restart with it.
type controller struct {
	p *process.Process
	// ready is the readiness URL ("" when the lifecycle has none).
	ready   string
	workers []*process.Process
}

func (c *controller) Kill() error {
	err := killProc(c.p)
	return errors.Join(err, c.killWorkers())
}

func killProc(p *process.Process) error {
	_, err := p.Kill()
	if errors.Is(err, process.ErrNotRunning) {
		return nil
	}
	return err
}

func (c *controller) killWorkers() error {
	var errs []error
	for i, w := range c.workers {
		if err := killProc(w); err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

func (c *controller) restartWorkers(ctx context.Context) error {
	for i, w := range c.workers {
		if w.Running() {
			continue
		}
		if err := w.Restart(ctx); err != nil {
			return fmt.Errorf("worker %d: %w", i+1, err)
		}
	}
	return nil
}

// workers adapts the worker processes for the scenarios (scenarios.Workers).
type workers struct{ c *controller }

func (w workers) Processes() int                    { return len(w.c.workers) }
func (w workers) Kill() error                       { return w.c.killWorkers() }
func (w workers) Restart(ctx context.Context) error { return w.c.restartWorkers(ctx) }

// KillHolder finds the worker process behind the session waiting on g by its
// client port (process.OwnerOfLocalPort) and kills it alone.
func (w workers) KillHolder(ctx context.Context, g scenarios.Gate) (int, error) {
	hg, ok := g.(holderGate)
	if !ok {
		return 0, nil
	}
	ports, err := hg.holderPorts(ctx)
	if err != nil {
		return 0, err
	}
	groups := make([]int, len(w.c.workers))
	for i, p := range w.c.workers {
		groups[i] = p.PID() // each runs in a process group of its own
	}
	for _, port := range ports {
		if i := process.OwnerOfLocalPort(port, groups); i >= 0 {
			if err := killProc(w.c.workers[i]); err != nil {
				return 0, fmt.Errorf("worker %d: %w", i+1, err)
			}
			return i + 1, nil
		}
	}
	return 0, nil
}

func (c *controller) WaitExit(ctx context.Context) error {
	for c.p.Running() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("still running (pid %d): %w", c.p.PID(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// Restart starts the receiver, then the worker processes not running.
func (c *controller) Restart(ctx context.Context) error {
	if err := c.p.Restart(ctx); err != nil {
		return err
	}
	return c.restartWorkers(ctx)
}

func (c *controller) Alive() (bool, string) {
	if c.p.Running() {
		if err := c.answers(); err != nil {
			return false, fmt.Sprintf("running (pid %d) but not answering its readiness check: %v", c.p.PID(), err)
		}
		for i, w := range c.workers {
			if w.Running() {
				continue
			}
			why := fmt.Sprintf("worker process %d is not running", i+1)
			if e, ok := w.LastExit(); ok {
				why += " (" + e.String() + ")"
			}
			if tail := strings.TrimSpace(w.Tail(15)); tail != "" {
				why += "; its last output:\n" + tail
			}
			return false, why
		}
		return true, ""
	}
	why := "not running"
	if e, ok := c.p.LastExit(); ok {
		why = e.String()
	}
	if tail := strings.TrimSpace(c.p.Tail(15)); tail != "" {
		why += "; last output:\n" + tail
	}
	return false, why
}

// answers checks the receiver's readiness URL: two tries of 3 s, so a receiver
// busy with a burst is not taken for a hung one.
func (c *controller) answers() error {
	if c.ready == "" {
		return nil
	}
	var err error
	for range 2 {
		var resp *http.Response
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.ready, nil)
		if resp, err = http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				cancel()
				return nil
			}
			err = fmt.Errorf("GET %s: %s", c.ready, resp.Status)
		}
		cancel()
	}
	return err
}

// dbFaults adapts the PostgreSQL fault tools.
type dbFaults struct {
	pool     *pgxpool.Pool
	database string
}

type gate struct{ g *pgfault.Gate }

// holderGate is a gate of this harness's (PostgreSQL, MySQL, Redis): it
// gives the client ports of the connections waiting on it, which tie them to
// the worker processes holding them.
type holderGate interface {
	holderPorts(ctx context.Context) ([]int, error)
}

func (g gate) holderPorts(ctx context.Context) ([]int, error) {
	ws, err := g.g.Waiters(ctx)
	if err != nil {
		return nil, err
	}
	var ports []int
	for _, wt := range ws {
		if wt.ClientPort > 0 {
			ports = append(ports, wt.ClientPort)
		}
	}
	return ports, nil
}

func (g gate) Held(ctx context.Context) (scenarios.GateHeld, error) {
	h, err := g.g.Held(ctx)
	return scenarios.GateHeld{AtGate: h.AtGate, Behind: h.Behind, Foreign: h.Foreign}, err
}
func (g gate) Release(ctx context.Context) error { return g.g.Release(ctx) }

func (d *dbFaults) Hold(ctx context.Context, table string) (scenarios.Gate, error) {
	g, err := pgfault.Hold(ctx, d.pool, table, "")
	if err != nil {
		return nil, err
	}
	return gate{g}, nil
}

func (d *dbFaults) TerminateWaiters(ctx context.Context, g scenarios.Gate, ownOnly bool) ([]int, error) {
	pg, ok := g.(gate)
	if !ok {
		return nil, fmt.Errorf("gate %T was not made by this harness", g)
	}
	return pgfault.TerminateBackends(ctx, d.pool, d.database, pgfault.Filter{WaitingOn: pg.g, OwnOnly: ownOnly})
}

// Busy counts the receiver's sessions (everything in its database but the
// harness's own) that run a statement, hold a transaction open or wait on a lock.
func (d *dbFaults) Busy(ctx context.Context) (int, string, error) {
	return pgfault.Busy(ctx, d.pool, d.database)
}

// queueObserver adapts the inbox_state and outbox_state queries.
type queueObserver struct{ o *observe.Observer }

func (q queueObserver) InboxState(ctx context.Context, k profiles.Key) (scenarios.QueueState, error) {
	st, err := q.o.InboxState(ctx, okey(k))
	return scenarios.QueueState{State: st.State, Attempts: st.Attempts, Found: st.Found}, err
}

func (q queueObserver) OutboxState(ctx context.Context, k profiles.Key) (scenarios.QueueState, error) {
	st, err := q.o.OutboxState(ctx, okey(k))
	return scenarios.QueueState{State: st.State, Attempts: st.Attempts, Found: st.Found}, err
}

// downstream adapts the harness's sink: calls are attributed to an event by
// the event ID their body carries, and read with the target's key header.
type downstream struct{ s *sink.Sink }

func (d downstream) Calls(eventID string) []scenarios.SinkCall {
	var out []scenarios.SinkCall
	for _, c := range d.s.Matching(eventID) {
		out = append(out, scenarios.SinkCall{Seq: c.Seq, At: c.Time, Key: c.IdempotencyKey, Status: c.Status, Outcome: c.Outcome})
	}
	return out
}

// CallsEach is Calls for many events in one pass over the sink's calls.
func (d downstream) CallsEach(eventIDs []string) map[string][]scenarios.SinkCall {
	out := map[string][]scenarios.SinkCall{}
	for id, cs := range d.s.MatchingEach(eventIDs) {
		for _, c := range cs {
			out[id] = append(out[id], scenarios.SinkCall{Seq: c.Seq, At: c.Time, Key: c.IdempotencyKey, Status: c.Status, Outcome: c.Outcome})
		}
	}
	return out
}

func (d downstream) Fail(eventID string, n, status int) {
	d.s.Inject(sink.Fault{Match: eventID, Times: n, Status: status})
}

func (d downstream) Lose(eventID string, n int) {
	d.s.Inject(sink.Fault{Match: eventID, Times: n, Lose: true})
}

func (d downstream) HoldAfterApply(eventID string, dur time.Duration) {
	d.s.Inject(sink.Fault{Match: eventID, Times: 1, HoldAfterApply: dur})
}

// wireQueues gives the scenarios the target's inbox and outbox.
func wireQueues(env *scenarios.Env, tg *targetfile.Target, obs *observe.Observer, s *sink.Sink) {
	if obs.Has(observe.QInboxState) || obs.Has(observe.QOutboxState) {
		env.Queue = queueObserver{obs}
	}
	if tg.Inbox != nil {
		env.Inbox = scenarios.InboxSpec{Lease: tg.Inbox.Lease, MaxAttempts: tg.Inbox.MaxAttempts, Table: tg.Inbox.Table}
	}
	if tg.Outbox != nil {
		env.Outbox = scenarios.OutboxSpec{MaxAttempts: tg.Outbox.MaxAttempts, HasState: obs.Has(observe.QOutboxState)}
	}
	if s != nil {
		env.Sink = downstream{s}
	}
}

// funcController is the suite's Controller over a Go test's Kill, Restart and
// Alive (Hooks).
type funcController struct {
	kill    func() error
	restart func(ctx context.Context) error
	alive   func() (bool, string)
	base    string

	mu     sync.Mutex
	killed bool
}

func (c *funcController) Kill() error {
	if err := c.kill(); err != nil {
		return err
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	return nil
}

func (c *funcController) Restart(ctx context.Context) error {
	if err := c.restart(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.killed = false
	c.mu.Unlock()
	return nil
}

// Alive is the hook's answer; without one the receiver is up unless it was
// killed since its last restart, and its base URL accepts connections.
func (c *funcController) Alive() (bool, string) {
	c.mu.Lock()
	killed := c.killed
	c.mu.Unlock()
	if killed {
		return false, "killed by the harness and not restarted"
	}
	if c.alive != nil {
		return c.alive()
	}
	if err := Reachable(context.Background(), c.base); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// WaitExit waits for a receiver crashing by itself (at a failpoint) to be
// gone, as Alive tells.
func (c *funcController) WaitExit(ctx context.Context) error {
	for {
		if ok, _ := c.Alive(); !ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still up: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// fixtures runs the target's fixtures (prepared up front) and the hooks' Go
// ones, a Go one first where both name the same.
type fixtures struct {
	set   *fixture.Set
	funcs map[string]func(context.Context, vocab.ObjectData) error
}

func (f *fixtures) Create(ctx context.Context, name string, d vocab.ObjectData) error {
	if fn := f.funcs[name]; fn != nil {
		ctx, cancel := context.WithTimeout(ctx, fixture.Timeout)
		defer cancel()
		if err := fn(ctx, d); err != nil {
			return fmt.Errorf("fixture %s: %w", name, err)
		}
		return nil
	}
	if f.set == nil {
		return fmt.Errorf("fixture %s: %w", name, fixture.ErrUnknown)
	}
	return f.set.Create(ctx, name, d)
}

// harnessConns is the size of each of the harness's own pools made from a
// hooks' pool configuration: their reads are sequential, and the server is
// shared.
const harnessConns = 4

// harnessPool opens a small pool with cfg's connection settings whose sessions
// carry the harness's application_name and, when given, the observer's
// statement and lock timeouts.
func harnessPool(ctx context.Context, base *pgxpool.Config, to observe.Timeouts) (*pgxpool.Pool, error) {
	cfg := base.Copy()
	cfg.MaxConns, cfg.MinConns = harnessConns, 0
	cc := cfg.ConnConfig
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["application_name"] = pgsession.ApplicationName
	if to.Statement > 0 {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(to.Statement.Milliseconds(), 10)
	}
	if to.Lock > 0 {
		cc.RuntimeParams["lock_timeout"] = strconv.FormatInt(to.Lock.Milliseconds(), 10)
	}
	if to.Connect > 0 {
		cc.ConnectTimeout = to.Connect
	}
	where := fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("the receiver's database %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("the receiver's database %s does not answer: %w", where, err)
	}
	return pool, nil
}

// Reachable checks that something accepts connections at base. How it
// answers HTTP is what the suite judges, so a receiver that misbehaves is
// still reachable; only a refused or unroutable connection is not.
func Reachable(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("base_url %q: %w", base, err)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("%s does not accept connections: %w", base, err)
	}
	return c.Close()
}

// ReceiverPID is the receiver process's current pid, also its process group
// (0 when the harness did not start it): what a pause nemesis stops and
// continues.
func (hs *Harness) ReceiverPID() int {
	if c, ok := hs.Env.Controller.(*controller); ok {
		return c.p.PID()
	}
	return 0
}

// TerminateReceiverSessions ends every database session of the receiver (all
// of its database's client sessions but the harness's own) with
// pg_terminate_backend (KILL CONNECTION on MySQL), waits until they are gone
// and returns their pids (connection IDs).
func (hs *Harness) TerminateReceiverSessions(ctx context.Context) ([]int, error) {
	switch d := hs.Env.Activity.(type) {
	case *dbFaults:
		return pgfault.TerminateBackends(ctx, d.pool, d.database, pgfault.Filter{})
	case *myFaults:
		return d.db.TerminateSessions(ctx)
	}
	return nil, errors.New("the harness holds no session in the receiver's database")
}
