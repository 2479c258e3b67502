package hookcerttest

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

	"github.com/hookcert/hookcert/adapters/failpoints"
	"github.com/hookcert/hookcert/adapters/fixture"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// harnessConns is the size of each of the harness's own pools (observer,
// faults): their reads are sequential, and the server is shared.
const harnessConns = 4

// harness is a Target wired into the suite's interfaces.
type harness struct {
	env     *scenarios.Env
	secrets []string
	closers []func()
}

func (h *harness) close() {
	for i := len(h.closers) - 1; i >= 0; i-- {
		h.closers[i]()
	}
	h.closers = nil
}

// open validates tg and builds the suite's environment. The error says which
// field is wrong, or what could not be reached.
func open(ctx context.Context, tg Target, o options) (_ *harness, err error) {
	if err := tg.validate(); err != nil {
		return nil, err
	}
	h := &harness{}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	base := strings.TrimSuffix(tg.BaseURL, "/")
	env := &scenarios.Env{
		RunID: o.runID, Capabilities: append([]string(nil), tg.Capabilities...),
		EventTable: tg.EventTable, EffectTable: tg.EffectTable,
		MaxBodyBytes: tg.MaxBodyBytes, TimeScale: o.timeScale,
		Acceptance: tg.acceptance(), Vocab: tg.vocabulary(),
	}
	if env.MaxBodyBytes == 0 {
		env.MaxBodyBytes = defaultMaxBodyBytes
	}
	var keyTTL, payloadTTL time.Duration
	if r := tg.Retention; r != nil {
		keyTTL, payloadTTL = r.KeyTTL, r.PayloadTTL
	}
	for _, ep := range tg.Endpoints {
		p, _ := profiles.Lookup(ep.Profile) // validated
		src := ep.Source
		if src == "" {
			src = p.ID()
		}
		e := scenarios.Endpoint{Profile: p, Source: src, Account: ep.Account, URL: base + ep.Path, Secrets: []string{ep.Secret},
			KeyTTL: orDuration(ep.KeyTTL, keyTTL), PayloadTTL: orDuration(ep.PayloadTTL, payloadTTL)}
		e.AckTimeout, e.AckTimeoutModel = ackTimeout(ep, p)
		env.Endpoints = append(env.Endpoints, e)
		h.secrets = append(h.secrets, ep.Secret)
	}

	// The harness's sessions: its own pools, labelled so that faults and the
	// busy checks spare them, built from the URL or from the caller's pool.
	var cfg *pgxpool.Config
	if tg.Pool != nil {
		cfg = tg.Pool.Config()
	} else {
		h.secrets = append(h.secrets, scrub.Password(tg.DatabaseURL))
		if cfg, err = pgxpool.ParseConfig(tg.DatabaseURL); err != nil {
			// pgx's parse errors can quote the URL and its password.
			return nil, errors.New("Target.DatabaseURL: cannot be parsed as a PostgreSQL connection string (not shown: it may hold a password)")
		}
	}
	if pw := cfg.ConnConfig.Password; pw != "" {
		h.secrets = append(h.secrets, pw)
	}
	to := observe.Timeouts{Connect: orDuration(tg.Timeouts.Connect, targetfile.DefaultConnectTimeout),
		Statement: orDuration(tg.Timeouts.Statement, targetfile.DefaultStatementTimeout), Lock: orDuration(tg.Timeouts.Lock, targetfile.DefaultLockTimeout)}
	obsPool, err := harnessPool(ctx, cfg, to)
	if err != nil {
		return nil, err
	}
	h.closers = append(h.closers, obsPool.Close)
	obs, err := observe.New(ctx, obsPool, tg.targetQueries(), observe.WithTimeouts(to))
	if err != nil {
		return nil, err
	}
	env.Observer = observer{obs}
	if obs.Has(observe.QQuiescent) {
		env.Quiescent = obs.Quiescent
	}
	// Faults and activity reads run without the observer's statement timeout: a
	// gate holds its transaction for as long as a scenario needs it.
	faultPool, err := harnessPool(ctx, cfg, observe.Timeouts{Connect: to.Connect})
	if err != nil {
		return nil, err
	}
	h.closers = append(h.closers, faultPool.Close)
	faults := &dbFaults{pool: faultPool, database: cfg.ConnConfig.Database}
	env.Activity = faults
	if tg.has(string(targetfile.LockGating)) || tg.has(string(targetfile.ConnectionLoss)) {
		env.DB = faults
	}

	if len(tg.Fixtures) > 0 {
		fx, err := newFixtures(ctx, tg.Fixtures, fixture.Options{Pool: obsPool, BaseURL: base, Secrets: h.secrets})
		if err != nil {
			return nil, err
		}
		env.Fixtures = fx
	}
	if tg.FailpointsPath != "" {
		env.Failpoints = failpoints.New(base, tg.FailpointsPath, &http.Client{Timeout: 5 * time.Second})
	}
	if tg.has(string(targetfile.Retention)) {
		env.Retention = retention{purge: tg.Retention.Purge, o: obs}
	}
	if tg.Kill != nil && tg.Restart != nil {
		env.Controller = &controller{kill: tg.Kill, restart: tg.Restart, alive: tg.Alive, base: base}
	} else {
		if err := reachable(ctx, base); err != nil {
			return nil, err
		}
		env.Reachable = func(ctx context.Context) error { return reachable(ctx, base) }
	}
	h.env = env
	return h, nil
}

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

func orDuration(v, d time.Duration) time.Duration {
	if v != 0 {
		return v
	}
	return d
}

// ackTimeout is the endpoint's AckTimeout, else the profile's documented
// timeout, else ModelAckTimeout (model is then true).
func ackTimeout(ep Endpoint, p profiles.Profile) (time.Duration, bool) {
	if ep.AckTimeout > 0 {
		return ep.AckTimeout, false
	}
	if t := p.Facts().Timeout; t != nil && *t > 0 {
		return *t, false
	}
	return ModelAckTimeout, true
}

// reachable checks that something accepts TCP connections at base: how it
// answers HTTP is what the suite judges.
func reachable(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("Target.BaseURL %q: %w", base, err)
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

// observer adapts the PostgreSQL observer to the suite's Observer.
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

func (o observer) Payment(ctx context.Context, source, account, objectID string) (string, bool, error) {
	return o.o.Payment(ctx, source, account, objectID)
}

// retention adapts the caller's purge and the payload_present query.
type retention struct {
	purge func(ctx context.Context, asOf time.Time) error
	o     *observe.Observer
}

func (r retention) Purge(ctx context.Context, asOf time.Time) error { return r.purge(ctx, asOf) }

func (r retention) PayloadPresent(ctx context.Context, k profiles.Key) (bool, bool, error) {
	return r.o.PayloadPresent(ctx, okey(k))
}

// controller is the suite's Controller over the caller's Kill and Restart.
type controller struct {
	kill    func() error
	restart func(ctx context.Context) error
	alive   func() (bool, string)
	base    string

	mu     sync.Mutex
	killed bool
}

func (c *controller) Kill() error {
	if err := c.kill(); err != nil {
		return err
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	return nil
}

func (c *controller) Restart(ctx context.Context) error {
	if err := c.restart(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.killed = false
	c.mu.Unlock()
	return nil
}

func (c *controller) Alive() (bool, string) {
	c.mu.Lock()
	killed := c.killed
	c.mu.Unlock()
	if killed {
		return false, "killed by the harness and not restarted"
	}
	if c.alive != nil {
		return c.alive()
	}
	if err := reachable(context.Background(), c.base); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// WaitExit waits for a receiver crashing by itself (at a failpoint) to be
// gone, as Alive tells.
func (c *controller) WaitExit(ctx context.Context) error {
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

// dbFaults adapts the PostgreSQL fault tools.
type dbFaults struct {
	pool     *pgxpool.Pool
	database string
}

type gate struct{ g *pgfault.Gate }

func (g gate) Waiters(ctx context.Context) (int, error) {
	ws, err := g.g.Waiters(ctx)
	return len(ws), err
}

func (g gate) Release(ctx context.Context) error { return g.g.Release(ctx) }

func (d *dbFaults) Hold(ctx context.Context, table string) (scenarios.Gate, error) {
	g, err := pgfault.Hold(ctx, d.pool, table, "")
	if err != nil {
		return nil, err
	}
	return gate{g}, nil
}

func (d *dbFaults) TerminateWaiters(ctx context.Context, g scenarios.Gate) ([]int, error) {
	pg, ok := g.(gate)
	if !ok {
		return nil, fmt.Errorf("gate %T was not made by this harness", g)
	}
	return pgfault.TerminateBackends(ctx, d.pool, d.database, pgfault.Filter{WaitingOn: pg.g})
}

func (d *dbFaults) Busy(ctx context.Context) (int, string, error) {
	return pgfault.Busy(ctx, d.pool, d.database)
}

// fixtures runs SQL fixtures through the fixture adapter (prepared up front)
// and Go ones directly.
type fixtures struct {
	sql   *fixture.Set
	funcs map[string]func(context.Context, vocab.ObjectData) error
}

func newFixtures(ctx context.Context, fs map[string]Fixture, o fixture.Options) (*fixtures, error) {
	f := &fixtures{funcs: map[string]func(context.Context, vocab.ObjectData) error{}}
	sql := map[string]targetfile.Fixture{}
	for name, fx := range fs {
		if fx.Func != nil {
			f.funcs[name] = fx.Func
			continue
		}
		sql[name] = targetfile.Fixture{Name: name, SQL: fx.SQL}
	}
	if len(sql) > 0 {
		set, err := fixture.New(ctx, sql, o)
		if err != nil {
			return nil, err
		}
		f.sql = set
	}
	return f, nil
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
	if f.sql == nil {
		return fmt.Errorf("fixture %s: %w", name, fixture.ErrUnknown)
	}
	return f.sql.Create(ctx, name, d)
}
