package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookcert/hookcert/adapters/fixture"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/process"
	"github.com/hookcert/hookcert/adapters/purge"
	secretscrub "github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The steps of Builder.Open, in the order it takes them: the setup hook, the
// receiver's processes, the observer, the fixtures, the harness's own
// sessions, the purge.

// setup runs the target's setup hook, which creates the receiver's schema
// before it starts, for receivers that do not migrate themselves. Its failure
// is the target's.
func (hs *Harness) setup(ctx context.Context, b *Builder) error {
	tg := hs.tg
	if tg.Setup == nil {
		return nil
	}
	fmt.Fprintf(b.out, "setup: %s\n", tg.Setup)
	so := fixture.SetupOptionsFor(tg)
	so.Secrets = hs.secrets
	if tg.Store.Kind == targetfile.KindMySQL && tg.Setup.SQLFile != "" {
		db, err := hs.mysqlDB(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUnreachable, tg.Store.Field(), err)
		}
		so.DB = db
	}
	if err := fixture.RunSetup(ctx, tg.Setup, so); errors.Is(err, fixture.ErrSetupFailed) {
		return hs.o.configErr(err)
	} else if err != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return nil
}

// start starts the receiver and its worker processes (lifecycle), or takes
// the hooks' controller, or checks that a receiver the harness does not
// control answers.
func (hs *Harness) start(ctx context.Context, b *Builder) error {
	tg, env, h := hs.tg, hs.Env, b.o.Hooks
	switch {
	case h.Kill != nil && h.Restart != nil:
		if h.Start != nil {
			if err := h.Start(ctx); err != nil {
				return fmt.Errorf("%w: starting the receiver: %w", ErrUnreachable, err)
			}
		}
		env.Controller = &funcController{kill: h.Kill, restart: h.Restart, alive: h.Alive, base: tg.BaseURL}
		return nil
	case b.o.NoStart:
		// Left alone (hookcert validate --no-start).
		return nil
	case tg.Lifecycle == nil:
		if err := Reachable(ctx, tg.BaseURL); err != nil {
			return fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		env.Reachable = func(ctx context.Context) error { return Reachable(ctx, tg.BaseURL) }
		return nil
	}
	spec, err := process.SpecFor(tg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	clean := secretscrub.New(hs.secrets...)
	fmt.Fprintf(b.out, "starting the receiver: %s\n", strings.Join(clean.Strings(spec.Command), " "))
	proc, err := process.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("%w: starting the receiver: %w", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, func() { hs.stopProcess(proc, "receiver.log") })
	ctl := &controller{p: proc, ready: spec.ReadyURL}
	// Worker processes start once the receiver is ready (it may create the
	// schema they poll), and stop before it.
	for i, ws := range process.WorkerSpecs(tg) {
		fmt.Fprintf(b.out, "starting worker %d: %s\n", i+1, strings.Join(clean.Strings(ws.Command), " "))
		wp, err := process.Start(ctx, ws)
		if err != nil {
			return fmt.Errorf("%w: starting worker %d: %w", ErrUnreachable, i+1, err)
		}
		ctl.workers = append(ctl.workers, wp)
		hs.closers = append(hs.closers, func() { hs.stopProcess(wp, fmt.Sprintf("worker-%d.log", i+1)) })
	}
	env.Controller = ctl
	if len(ctl.workers) > 0 {
		env.Workers = workers{ctl}
	}
	if err := process.KillSupported(); err != nil {
		// Started and stopped, but not crashable here (Windows).
		env.CrashUnavailable = err.Error()
	}
	return nil
}

// stopProcess stops a process the harness started and keeps its output,
// scrubbed, as name in the log directory.
func (hs *Harness) stopProcess(p *process.Process, name string) {
	if p.Running() {
		_, _ = p.Stop(hs.tg.Lifecycle.StopGrace)
	}
	if dir := hs.o.LogDir; dir != "" {
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, name), []byte(secretscrub.New(hs.secrets...).String(p.Output())), 0o644)
	}
}

// observe opens the observer of the target's kind of store: PostgreSQL on the
// target's database URL or on pools of the hooks' configuration, or the
// other kinds (store_<kind>.go).
func (hs *Harness) observe(ctx context.Context) (*observe.Observer, error) {
	tg := hs.tg
	var obs *observe.Observer
	var err error
	switch tg.Store.Kind {
	case targetfile.KindMySQL:
		obs, err = hs.observeMySQL(ctx)
	case targetfile.KindRedis:
		obs, err = hs.observeRedis(ctx)
	case targetfile.KindCommand, targetfile.KindHTTP:
		obs, err = hs.observeNeutral(ctx)
	default:
		obs, err = hs.observePostgres(ctx)
	}
	if errors.Is(err, observe.ErrInvalidQuery) {
		return nil, hs.o.configErr(err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: observer: %w", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, obs.Close)
	hs.Env.Observer = observer{obs}
	hs.Env.ObserverKind = obs.Kind()
	hs.Env.Queries = obs.Has
	hs.unanswered = obs.Unanswered()
	hs.Env.Unanswered = func(name string) string { return hs.unanswered[name] }
	if obs.Has(observe.QQuiescent) {
		hs.Env.Quiescent = obs.Quiescent
	}
	return obs, nil
}

// observePostgres opens the PostgreSQL observer.
func (hs *Harness) observePostgres(ctx context.Context) (*observe.Observer, error) {
	tg := hs.tg
	if cfg := hs.o.Hooks.PoolConfig; cfg != nil {
		to := observe.TargetTimeouts(tg.Store)
		pool, perr := harnessPool(ctx, cfg, to)
		if perr != nil {
			return nil, perr
		}
		hs.closers = append(hs.closers, pool.Close)
		return observe.New(ctx, pool, tg.Store.Queries, observe.WithTimeouts(to))
	}
	return observe.OpenTarget(ctx, tg.Store)
}

// fixtures prepares the target's fixtures, and the hooks' Go ones.
func (hs *Harness) fixtures(ctx context.Context, obs *observe.Observer) error {
	tg, funcs := hs.tg, hs.o.Hooks.Fixtures
	if len(tg.Fixtures) == 0 && len(funcs) == 0 {
		return nil
	}
	f := &fixtures{funcs: funcs}
	if len(tg.Fixtures) > 0 {
		fo := fixture.TargetOptions(tg, tg.Dir)
		// The observer's sessions: the harness's own, bounded by its timeouts.
		fo.Pool, fo.DB, fo.Secrets = obs.Pool(), obs.DB(), hs.secrets
		set, err := fixture.New(ctx, tg.Fixtures, fo)
		if errors.Is(err, fixture.ErrInvalid) {
			return hs.o.configErr(err)
		} else if err != nil {
			return fmt.Errorf("%w: fixtures: %w", ErrUnreachable, err)
		}
		f.set = set
	}
	hs.Env.Fixtures = f
	return nil
}

// faults opens the harness's own sessions in the receiver's database: faults
// where the target allows them, and the activity reads that keep scenarios
// apart. A store other than SQL has neither: the harness then waits only for
// its own attempts between scenarios.
func (hs *Harness) faults(ctx context.Context) error {
	tg := hs.tg
	switch tg.Store.Kind {
	case targetfile.KindMySQL:
		return hs.faultsMySQL(ctx)
	case targetfile.KindRedis:
		hs.faultsRedis()
		return nil
	case targetfile.KindCommand, targetfile.KindHTTP:
		return nil
	}
	var pool *pgxpool.Pool
	var err error
	if cfg := hs.o.Hooks.PoolConfig; cfg != nil {
		// Without the observer's statement timeout: a gate holds its
		// transaction for as long as a scenario needs it.
		pool, err = harnessPool(ctx, cfg, observe.Timeouts{Connect: tg.Store.ConnectTimeout})
	} else {
		pool, err = pgsession.Connect(ctx, tg.Store.URL.Reveal())
	}
	if err != nil {
		return fmt.Errorf("%w: harness database session: %w", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, pool.Close)
	d := &dbFaults{pool: pool, database: pool.Config().ConnConfig.Database}
	hs.Env.Activity = d
	if tg.Has(targetfile.LockGating) || tg.Has(targetfile.ConnectionLoss) {
		hs.Env.DB = d
	}
	return nil
}

// retention wires the purge: the hooks' Go function, or the target's trigger.
func (hs *Harness) retention(ctx context.Context, obs *observe.Observer) error {
	tg := hs.tg
	if !tg.Has(targetfile.Retention) {
		return nil
	}
	if fn := hs.o.Hooks.Purge; fn != nil {
		hs.Env.Retention = retention{purge: fn, o: obs}
		return nil
	}
	if tg.Retention == nil {
		return nil
	}
	if err := preparePurge(ctx, obs, tg.Retention.Purge); err != nil {
		return err
	}
	// A purge command runs in lifecycle.dir, else the file's directory.
	po := purge.Options{BaseURL: tg.BaseURL, DatabaseURL: tg.Store.URL.Reveal(), DB: obs.DB(), Dir: tg.Dir}
	if tg.Lifecycle != nil {
		po.Dir, po.Env = tg.Lifecycle.Dir, tg.Lifecycle.Env
	}
	tr, err := purge.New(ctx, tg.Retention.Purge, po)
	if err != nil {
		return fmt.Errorf("%w: purge trigger: %w", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, tr.Close)
	hs.Env.Retention = retention{purge: tr.Purge, o: obs}
	return nil
}

// preparePurge checks a retention.purge.sql statement on the receiver's
// database, as the observer checks its queries: SQL that does not prepare is a
// configuration error naming the field.
func preparePurge(ctx context.Context, obs *observe.Observer, p targetfile.Purge) error {
	if p.SQL == "" {
		return nil
	}
	const field = "target.retention.purge.sql"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if db := obs.DB(); db != nil {
		_, err := db.Prepare(ctx, p.SQL)
		switch {
		case errors.Is(err, sqlstore.ErrStatement):
			return fmt.Errorf("%w: %s: does not prepare: %v", ErrConfig, field, err)
		case err != nil:
			return fmt.Errorf("%w: checking %s: %w", ErrUnreachable, field, err)
		}
		return nil
	}
	conn, err := obs.Pool().Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%w: checking %s: %w", ErrUnreachable, field, err)
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "hookcert_purge_check", p.SQL)
	if err != nil {
		if pe := pgsession.StatementError(err); pe != nil {
			return fmt.Errorf("%w: %s: does not prepare: %s", ErrConfig, field, pgsession.Message(pe))
		}
		return fmt.Errorf("%w: checking %s: %w", ErrUnreachable, field, err)
	}
	_ = conn.Conn().Deallocate(ctx, sd.Name)
	return nil
}
