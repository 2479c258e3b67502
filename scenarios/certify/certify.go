// Package certify runs a certification: it provisions PostgreSQL where the target
// asks for it, loads the target file once, starts the receiver when it has a
// lifecycle, wires the adapters into the suite's interfaces, runs the suite,
// judges the history with the checker stage and writes the reports. The suite
// itself (package scenarios) knows none of this: it sees interfaces only.
package certify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/failpoints"
	"github.com/hookcert/hookcert/adapters/fixture"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/process"
	"github.com/hookcert/hookcert/adapters/purge"
	secretscrub "github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/target"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Version is hookcert's version, printed in reports: the module version it was
// built as (go install …@v1.2.3), else "devel" with the commit it was built
// from.
var Version = buildVersion()

func buildVersion() string {
	v, commit, modified := BuildInfo()
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if modified {
			commit += "-modified"
		}
		if v == "devel" {
			return "devel+" + commit
		}
	}
	return v
}

// BuildInfo reads the module version and the commit the binary was built from
// (empty when the build recorded none).
func BuildInfo() (version, commit string, modified bool) {
	version = "devel"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, "", false
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return version, commit, modified
}

// DefaultTimeScale compresses providers' retry schedules during a certification:
// one provider hour passes in one real second.
const DefaultTimeScale = 3600

// Harness errors, classified for exit codes.
var (
	// ErrConfig: the target file or the options are wrong (exit 2).
	ErrConfig = errors.New("configuration error")
	// ErrUnreachable: the target could not be reached or started (exit 3).
	ErrUnreachable = errors.New("target unreachable")
)

// Options configure one certification run.
type Options struct {
	// ConfigPath is the target file; ConfigData, when set, is used instead (the
	// path then only names it in messages).
	ConfigPath string
	ConfigData []byte
	// DatabaseURL is the receiver's database server or database, for targets whose
	// file uses {{.DatabaseURL}}; empty: HOOKCERT_DATABASE_URL, else provisioned.
	DatabaseURL  string
	KeepDatabase bool
	// ReportDir receives results.json, junit.xml, summary.md, index.html,
	// history.jsonl and receiver.log ("" = no files).
	ReportDir string
	Run       scenarios.RunOptions
	TimeScale float64
	// RunID names the run's namespace in every event ID (default: from the clock;
	// it is the only part of a run not derived from the seed).
	RunID string
	// Repro renders the reproduction command of one guarantee.
	Repro func(id string) string
	// Secrets are scrubbed from every report file in addition to the target's.
	Secrets []string
	Logger  *slog.Logger
	Stdout  io.Writer
}

// Harness is a target made ready for the suite: its database, its receiver
// process and the adapters behind the suite's interfaces. Close releases all of
// it.
type Harness struct {
	Env     *scenarios.Env
	info    check.RunInfo
	opts    Options
	secrets []string
	closers []func()
}

// Close stops the receiver, closes the pools and drops a provisioned database, in
// the reverse order of their making.
func (hs *Harness) Close() {
	for i := len(hs.closers) - 1; i >= 0; i-- {
		hs.closers[i]()
	}
	hs.closers = nil
}

// Secrets are the values scrubbed from everything the run writes.
func (hs *Harness) Secrets() []string { return append([]string(nil), hs.secrets...) }

// Certify loads a target, starts it when it has a lifecycle, runs the suite,
// judges the history and writes the reports. The error wraps ErrConfig or
// ErrUnreachable where it applies. When ctx ends mid-run, the results say
// interrupted and every guarantee not judged is an error.
func Certify(ctx context.Context, o Options) (*reports.Results, error) {
	hs, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	defer hs.Close()
	run, err := hs.NewRun()
	if err != nil {
		return nil, err
	}
	defer run.Close()
	if err := run.All(ctx); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return hs.Finish(ctx, run)
}

// Open makes the target ready for the suite (see Harness).
func Open(ctx context.Context, o Options) (_ *Harness, err error) {
	hs := &Harness{opts: o}
	defer func() {
		if err != nil {
			hs.Close()
		}
	}()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	data := o.ConfigData
	if data == nil {
		var err error
		if data, err = target.ReadFile(o.ConfigPath); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	// The whole file is checked before anything is provisioned or started, and
	// what the run must provide is read off the parsed file, not its text.
	inspected, err := target.Inspect(data, profiles.IDs())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	}
	vars := target.Vars{}
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, fmt.Errorf("choosing a port for the receiver: %w", err)
	}
	vars.ListenAddr = addr
	var provisioned *pgprovision.Database
	if inspected.Uses("DatabaseURL") {
		dbURL := o.DatabaseURL
		if dbURL == "" {
			dbURL = pgprovision.URLFromEnv()
		}
		db, cleanup, err := pgprovision.Provision(ctx, pgprovision.Options{URL: dbURL, KeepDatabase: o.KeepDatabase, Logger: log})
		if err != nil {
			if errors.Is(err, pgprovision.ErrInvalidOptions) {
				return nil, fmt.Errorf("%w: %v", ErrConfig, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
		hs.closers = append(hs.closers, func() { _ = cleanup(context.WithoutCancel(ctx)) })
		provisioned = db
		vars.DatabaseURL = db.URL
		fmt.Fprintf(o.Stdout, "database: %s (%s)\n", pgprovision.Redact(db.URL), db.Method)
		for _, n := range db.Notices {
			fmt.Fprintln(o.Stdout, "database: "+n)
		}
	}
	tg, err := target.Parse(data, vars, target.WithProfiles(profiles.IDs()))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	}

	runID := o.RunID
	if runID == "" {
		runID = newRunID()
	}
	env := &scenarios.Env{
		RunID: runID, Capabilities: make([]string, 0, len(tg.Capabilities)),
		EventTable: tg.Postgres.EventTable, EffectTable: tg.Postgres.EffectTable,
		MaxBodyBytes: tg.MaxBodyBytes, TimeScale: o.TimeScale,
		// Acceptance has its defaults applied by the loader (sync, 1 s settle).
		Acceptance: tg.Acceptance,
		// nil without an events section: the scenarios use the built-in vocabulary.
		Vocab: tg.Events,
	}
	if env.TimeScale <= 0 {
		env.TimeScale = DefaultTimeScale
	}
	secrets := append([]string(nil), o.Secrets...)
	for _, c := range tg.Capabilities {
		env.Capabilities = append(env.Capabilities, string(c))
	}
	for _, ep := range tg.Endpoints {
		p, err := profiles.Lookup(ep.Profile)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		ack, model := AckTimeout(ep, p)
		env.Endpoints = append(env.Endpoints, scenarios.Endpoint{Profile: p, Source: ep.Source, Account: ep.Account, URL: tg.URL(ep.Path),
			Secrets: []string{ep.Secret.Reveal()}, KeyTTL: ep.KeyTTL, PayloadTTL: ep.PayloadTTL, AckTimeout: ack, AckTimeoutModel: model})
		secrets = append(secrets, ep.Secret.Reveal())
	}
	if u := tg.Postgres.URL.Reveal(); u != "" {
		if pu, err := url.Parse(u); err == nil && pu.User != nil {
			if pw, ok := pu.User.Password(); ok && pw != "" {
				secrets = append(secrets, pw)
			}
		}
	}

	var proc *process.Process
	if tg.Lifecycle != nil {
		spec, err := process.SpecFor(tg)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		fmt.Fprintf(o.Stdout, "starting the receiver: %s\n", strings.Join(redactArgs(spec.Command, secrets), " "))
		if proc, err = process.Start(ctx, spec); err != nil {
			return nil, fmt.Errorf("%w: starting the receiver: %v", ErrUnreachable, err)
		}
		hs.closers = append(hs.closers, func() {
			if proc.Running() {
				_, _ = proc.Stop(tg.Lifecycle.StopGrace)
			}
			if o.ReportDir != "" {
				_ = os.MkdirAll(o.ReportDir, 0o755)
				_ = os.WriteFile(filepath.Join(o.ReportDir, "receiver.log"), []byte(scrub(proc.Output(), secrets)), 0o644)
			}
		})
		env.Controller = &controller{p: proc, ready: spec.ReadyURL}
	} else if err := reachable(ctx, tg.BaseURL); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	} else {
		env.Reachable = func(ctx context.Context) error { return reachable(ctx, tg.BaseURL) }
	}

	obs, err := observe.OpenTarget(ctx, tg.Postgres)
	if errors.Is(err, observe.ErrInvalidQuery) {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: observer: %v", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, obs.Close)
	env.Observer = observer{obs}
	if obs.Has(observe.QQuiescent) {
		env.Quiescent = obs.Quiescent
	}
	if len(tg.Fixtures) > 0 {
		fo := fixture.TargetOptions(tg, configDir(o.ConfigPath))
		// The observer's sessions: the harness's own, bounded by its timeouts.
		fo.Pool, fo.Secrets = obs.Pool(), secrets
		fx, err := fixture.New(ctx, tg.Fixtures, fo)
		if errors.Is(err, fixture.ErrInvalid) {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
		} else if err != nil {
			return nil, fmt.Errorf("%w: fixtures: %v", ErrUnreachable, err)
		}
		env.Fixtures = fx
	}
	// The harness's own sessions in the receiver's database: faults where the
	// target allows them, and the activity reads that keep scenarios apart.
	pool, err := pgfault.Connect(ctx, tg.Postgres.URL.Reveal())
	if err != nil {
		return nil, fmt.Errorf("%w: harness database session: %v", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, pool.Close)
	faults := &dbFaults{pool: pool, database: pool.Config().ConnConfig.Database}
	env.Activity = faults
	if tg.Has(target.LockGating) || tg.Has(target.ConnectionLoss) {
		env.DB = faults
	}
	if tg.FailpointsPath != "" {
		env.Failpoints = failpoints.New(tg.BaseURL, tg.FailpointsPath, &http.Client{Timeout: 5 * time.Second})
	}
	if tg.Has(target.Retention) && tg.Retention != nil {
		tr, err := purge.FromTarget(ctx, tg)
		if err != nil {
			return nil, fmt.Errorf("%w: purge trigger: %v", ErrUnreachable, err)
		}
		hs.closers = append(hs.closers, tr.Close)
		env.Retention = retention{tr: tr, o: obs}
	}

	sum := tg.Summary()
	info := check.RunInfo{
		Tool:     reports.ToolInfo{Name: "hookcert", Version: Version},
		Target:   reports.TargetInfo{Name: tg.Name, BaseURL: tg.BaseURL, Capabilities: env.Capabilities},
		Profiles: tg.Profiles(),
		Environment: map[string]string{
			"go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH,
			"time_scale": fmt.Sprint(env.TimeScale), "database": sum.DatabaseURL,
		},
		Repro: map[string]string{},
	}
	if provisioned != nil {
		info.Environment["database_method"] = provisioned.Method
	}
	for _, ep := range tg.Endpoints {
		info.Target.Endpoints = append(info.Target.Endpoints, reports.EndpointInfo{Profile: ep.Profile, Account: ep.Account, Path: ep.Path})
	}
	if o.Repro != nil {
		for _, g := range scenarios.Catalogue() {
			info.Repro[g.ID] = o.Repro(g.ID)
		}
	}

	hs.Env, hs.info, hs.secrets = env, info, secrets
	return hs, nil
}

// ModelAckTimeout is the acknowledgement timeout ACK-2 holds an endpoint to
// when neither the target file (ack_timeout) nor the profile gives one.
// Providers that document no timeout, such as Stripe, still drop endpoints that
// answer slowly; 10 s is hookcert's model of that, not a documented value, and
// the endpoint carries AckTimeoutModel so reports say so.
const ModelAckTimeout = 10 * time.Second

// AckTimeout is the acknowledgement timeout of an endpoint: the target's
// ack_timeout, else the profile's documented timeout, else ModelAckTimeout
// (model is then true).
func AckTimeout(ep target.Endpoint, p profiles.Profile) (d time.Duration, model bool) {
	if ep.AckTimeout > 0 {
		return ep.AckTimeout, false
	}
	if t := p.Facts().Timeout; t != nil && *t > 0 {
		return *t, false
	}
	return ModelAckTimeout, true
}

// configDir is the target file's directory, where command fixtures run when
// the target has no lifecycle.dir ("" when the file has no path).
func configDir(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Dir(path)
}

// NewRun starts a run of the suite against the harness's target.
func (hs *Harness) NewRun() (*scenarios.Run, error) {
	return scenarios.NewRun(hs.Env, hs.opts.Run, simulator.RunMeta{TargetURL: hs.info.Target.BaseURL, TimeScale: hs.Env.TimeScale})
}

// Finish judges what run recorded and writes the reports.
func (hs *Harness) Finish(ctx context.Context, run *scenarios.Run) (*reports.Results, error) {
	info := hs.info
	info.Interrupted = ctx.Err() != nil
	h := run.History()
	var err error
	if h.Meta.Run, err = json.Marshal(info); err != nil {
		return nil, err
	}
	res, err := check.Judge(h)
	if err != nil {
		return nil, err
	}
	if hs.opts.ReportDir != "" {
		if err := WriteRun(hs.opts.ReportDir, h, res, hs.secrets); err != nil {
			return res, err
		}
	}
	return res, nil
}

// WriteRun writes a run's reports and its history (history.jsonl, the input of
// `hookcert check`) into dir, scrubbing secrets from both.
func WriteRun(dir string, h *simulator.History, res *reports.Results, secrets []string) error {
	if _, err := reports.Write(dir, res, reports.Options{Secrets: secrets}); err != nil {
		return fmt.Errorf("writing reports: %w", err)
	}
	var b strings.Builder
	if err := h.WriteJSONL(&b); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), []byte(scrub(b.String(), secrets)), 0o644); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
}

// HistoryFile is the history's name in a report directory.
const HistoryFile = "history.jsonl"

// scrub removes the run's secrets, URL and DSN passwords and well-known secret
// formats from text the run writes (receiver.log, history.jsonl).
func scrub(s string, secrets []string) string { return secretscrub.New(secrets...).String(s) }

// redactArgs is scrub for each argument of a command line printed on the console.
func redactArgs(args []string, secrets []string) []string {
	return secretscrub.New(secrets...).Strings(args)
}

func newRunID() string {
	return strings.ToLower(fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff))
}

// reachable checks that something accepts connections at base. How it answers
// HTTP is what the suite judges, so a receiver that misbehaves is still
// reachable; only a refused or unroutable connection is not.
func reachable(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("base_url %q: %w", base, err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443"}[u.Scheme])
		if u.Scheme != "https" {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("%s does not accept connections: %w", base, err)
	}
	return c.Close()
}

// observer adapts the PostgreSQL observer to the scenarios' Observer.
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

// retention adapts the purge trigger and the payload_present query.
type retention struct {
	tr *purge.Trigger
	o  *observe.Observer
}

func (r retention) Purge(ctx context.Context, asOf time.Time) error { return r.tr.Purge(ctx, asOf) }
func (r retention) PayloadPresent(ctx context.Context, k profiles.Key) (bool, bool, error) {
	return r.o.PayloadPresent(ctx, okey(k))
}

// controller adapts the process controller.
type controller struct {
	p *process.Process
	// ready is the readiness URL ("" when the lifecycle has none).
	ready string
}

func (c *controller) Kill() error {
	_, err := c.p.Kill()
	if errors.Is(err, process.ErrNotRunning) {
		return nil
	}
	return err
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

func (c *controller) Restart(ctx context.Context) error { return c.p.Restart(ctx) }

func (c *controller) Alive() (bool, string) {
	if c.p.Running() {
		if err := c.answers(); err != nil {
			return false, fmt.Sprintf("running (pid %d) but not answering its readiness check: %v", c.p.PID(), err)
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

// Busy counts the receiver's sessions (everything in its database but the
// harness's own) that run a statement, hold a transaction open or wait on a lock.
func (d *dbFaults) Busy(ctx context.Context) (int, string, error) {
	return pgfault.Busy(ctx, d.pool, d.database)
}
