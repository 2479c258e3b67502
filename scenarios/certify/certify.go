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
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/failpoints"
	"github.com/hookcert/hookcert/adapters/fixture"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/adapters/process"
	"github.com/hookcert/hookcert/adapters/purge"
	secretscrub "github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
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
	// ErrConfig: the target file or the options are wrong, or the target's
	// setup hook failed (exit 2).
	ErrConfig = errors.New("configuration error")
	// ErrUnreachable: the target could not be reached or started (exit 3).
	ErrUnreachable = errors.New("target unreachable")
	// ErrNothing: the label filter and focus select no guarantee (exit 4).
	ErrNothing = errors.New("no scenario selected")
)

// Options configure one certification run.
type Options struct {
	// ConfigPath is the target file; ConfigData, when set, is used instead (the
	// path then only names it in messages).
	ConfigPath string
	ConfigData []byte
	// ConfigDir is the directory the file's relative paths resolve against
	// (lifecycle.dir, ./bin/…, setup.sql_file). Default: the directory of
	// ConfigPath when the file is read from there; with ConfigData, the
	// harness's working directory.
	ConfigDir string
	// NoStart leaves the receiver alone: its lifecycle is not started and a
	// receiver without one is not checked to answer (hookcert validate).
	NoStart bool
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
	tg      *targetfile.Target
}

// Target is the loaded target, rendered with the run's values.
func (hs *Harness) Target() *targetfile.Target { return hs.tg }

// Database describes the receiver's database for the console: its URL with the
// password hidden, and how the harness provided it ("" when the file names its
// own database).
func (hs *Harness) Database() (url, method string) {
	return hs.info.Environment["database"], hs.info.Environment["database_method"]
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
// judges the history and writes the reports. The error wraps ErrConfig,
// ErrUnreachable or ErrNothing where it applies. When ctx ends mid-run, the
// results say interrupted and every guarantee not judged is an error.
//
// A run that stops before it judges anything, once it has read its target
// file, still writes results.json and the other reports, with no guarantees and
// the outcome and error saying why (secrets removed); those results are
// returned beside the error.
func Certify(ctx context.Context, o Options) (*reports.Results, error) {
	started := time.Now()
	st := &openState{}
	hs, err := open(ctx, o, st)
	if err != nil {
		return st.stopped(o, started, err)
	}
	defer hs.Close()
	run, err := hs.NewRun()
	if err != nil {
		return st.stopped(o, started, fmt.Errorf("%w: %v", ErrConfig, err))
	}
	defer run.Close()
	if err := run.All(ctx); err != nil {
		return st.stopped(o, started, fmt.Errorf("%w: %v", ErrConfig, err))
	}
	return hs.Finish(ctx, run)
}

// openState is what open learnt before it stopped, for the report of a run that
// judged nothing.
type openState struct {
	// read: the target file was read (only then is a report written).
	read    bool
	runID   string
	target  reports.TargetInfo
	profile []string
	secrets []string
}

// stopped writes the reports of a run that stopped before it judged anything
// (when it got as far as reading its target) and returns them with err, both
// scrubbed of the run's secrets.
func (st *openState) stopped(o Options, started time.Time, err error) (*reports.Results, error) {
	err = secretscrub.New(st.secrets...).Error(err)
	if !st.read || o.ReportDir == "" {
		return nil, err
	}
	outcome := reports.RunUnreachable
	switch {
	case errors.Is(err, ErrConfig):
		outcome = reports.RunConfigError
	case errors.Is(err, ErrNothing):
		outcome = reports.RunNothingSelected
	}
	now := time.Now()
	res := &reports.Results{
		Schema: reports.Schema, Tool: reports.ToolInfo{Name: "hookcert", Version: Version},
		RunID: st.runID, Seed: o.Run.Seed, StartedAt: started.UTC(), FinishedAt: now.UTC(),
		DurationMS: now.Sub(started).Milliseconds(), Target: st.target, Profiles: st.profile,
		Guarantees:  []reports.Guarantee{},
		Environment: map[string]string{"go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH},
		Outcome:     outcome, Error: err.Error(),
	}
	if _, werr := reports.Write(o.ReportDir, res, reports.Options{Secrets: st.secrets}); werr != nil {
		return res, fmt.Errorf("%w (and the reports could not be written: %v)", err, werr)
	}
	return reports.Redact(res, st.secrets), err
}

// Open makes the target ready for the suite (see Harness). Its error is
// scrubbed of the run's secrets.
func Open(ctx context.Context, o Options) (*Harness, error) {
	st := &openState{}
	hs, err := open(ctx, o, st)
	if err != nil {
		return nil, secretscrub.New(st.secrets...).Error(err)
	}
	return hs, nil
}

func open(ctx context.Context, o Options, st *openState) (_ *Harness, err error) {
	hs := &Harness{opts: o}
	defer func() {
		if err != nil {
			hs.Close()
		}
	}()
	// Passwords of the database the run was given are secrets of the run from
	// the start: a provisioning error may quote them.
	st.secrets = append(append(st.secrets, o.Secrets...), secretscrub.Password(o.DatabaseURL), secretscrub.Password(pgprovision.URLFromEnv()))
	st.runID = o.RunID
	if st.runID == "" {
		st.runID = newRunID()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	data := o.ConfigData
	baseDir := o.ConfigDir
	if data == nil {
		var err error
		if data, err = targetfile.ReadFile(o.ConfigPath); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		if baseDir == "" {
			if baseDir, err = targetfile.BaseDir(o.ConfigPath); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrConfig, err)
			}
		}
	}
	st.read = true
	// The file's relative paths are the file's, wherever the harness runs.
	pathOpt := targetfile.WithBaseDir(baseDir)
	// The whole file is checked before anything is provisioned or started, and
	// what the run must provide is read off the parsed file, not its text.
	inspected, err := targetfile.Inspect(data, profiles.IDs(), pathOpt)
	if err != nil {
		st.target.Name = nameOf(data, o.ConfigPath)
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	}
	// Names, profiles and capabilities are literal in the file: the stand-ins
	// do not change them.
	st.target.Name, st.profile = inspected.Name, inspected.Profiles()
	for _, c := range inspected.Capabilities {
		st.target.Capabilities = append(st.target.Capabilities, string(c))
	}
	if o.Run.LabelFilter != "" || len(o.Run.Focus) > 0 {
		specs, err := scenarios.Select(o.Run)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		if len(specs) == 0 {
			return nil, fmt.Errorf("%w: the label filter %q and focus %q match no guarantee (labels: guarantee IDs, families, needs:<capability>; see hookcert guarantees)",
				ErrNothing, o.Run.LabelFilter, strings.Join(o.Run.Focus, ","))
		}
	}
	vars := targetfile.Vars{}
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, fmt.Errorf("%w: choosing a port for the receiver: %v", ErrUnreachable, err)
	}
	vars.ListenAddr = addr
	// The downstream sink listens before the receiver starts: its URL is part
	// of the receiver's command line or environment.
	var downstreamSink *sink.Sink
	if inspected.Uses("SinkURL") || inspected.Has(targetfile.Outbox) {
		kh := ""
		if inspected.Outbox != nil {
			kh = inspected.Outbox.KeyHeader
		}
		if downstreamSink, err = sink.NewWith(sink.Options{KeyHeader: kh}); err != nil {
			return nil, fmt.Errorf("%w: starting the downstream sink: %v", ErrUnreachable, err)
		}
		hs.closers = append(hs.closers, func() { _ = downstreamSink.Close() })
		vars.SinkURL = downstreamSink.URL()
		fmt.Fprintf(o.Stdout, "sink: %s\n", vars.SinkURL)
	}
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
	tg, err := targetfile.Parse(data, vars, targetfile.WithProfiles(profiles.IDs()), pathOpt)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	}
	st.target.BaseURL = tg.BaseURL
	for _, ep := range tg.Endpoints {
		st.target.Endpoints = append(st.target.Endpoints, reports.EndpointInfo{Profile: ep.Profile, Account: ep.Account, Path: ep.Path})
	}
	st.profile = tg.Profiles()

	runID := st.runID
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
	secrets = append(secrets, tg.EnvSecrets()...)
	st.secrets = append(st.secrets, secrets...)

	// The setup hook creates the receiver's schema before it starts, for
	// receivers that do not migrate themselves. Its failure is the target's.
	if tg.Setup != nil {
		fmt.Fprintf(o.Stdout, "setup: %s\n", tg.Setup)
		so := fixture.SetupOptionsFor(tg)
		so.Secrets = secrets
		if err := fixture.RunSetup(ctx, tg.Setup, so); errors.Is(err, fixture.ErrSetupFailed) {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
		} else if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
	}

	var proc *process.Process
	if o.NoStart {
		// Left alone (hookcert validate --no-start).
	} else if tg.Lifecycle != nil {
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
		ctl := &controller{p: proc, ready: spec.ReadyURL}
		// Worker processes start once the receiver is ready (it may create the
		// schema they poll), and stop before it.
		for i, ws := range process.WorkerSpecs(tg) {
			fmt.Fprintf(o.Stdout, "starting worker %d: %s\n", i+1, strings.Join(redactArgs(ws.Command, secrets), " "))
			wp, err := process.Start(ctx, ws)
			if err != nil {
				return nil, fmt.Errorf("%w: starting worker %d: %v", ErrUnreachable, i+1, err)
			}
			ctl.workers = append(ctl.workers, wp)
			hs.closers = append(hs.closers, func() {
				if wp.Running() {
					_, _ = wp.Stop(tg.Lifecycle.StopGrace)
				}
				if o.ReportDir != "" {
					_ = os.MkdirAll(o.ReportDir, 0o755)
					_ = os.WriteFile(filepath.Join(o.ReportDir, fmt.Sprintf("worker-%d.log", i+1)), []byte(scrub(wp.Output(), secrets)), 0o644)
				}
			})
		}
		env.Controller = ctl
		if len(ctl.workers) > 0 {
			env.Workers = workers{ctl}
		}
		if err := process.KillSupported(); err != nil {
			// Started and stopped, but not crashable here (Windows).
			env.CrashUnavailable = err.Error()
		}
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
	wireQueues(env, tg, obs, downstreamSink)
	if len(tg.Fixtures) > 0 {
		fo := fixture.TargetOptions(tg, tg.Dir)
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
	pool, err := pgsession.Connect(ctx, tg.Postgres.URL.Reveal())
	if err != nil {
		return nil, fmt.Errorf("%w: harness database session: %v", ErrUnreachable, err)
	}
	hs.closers = append(hs.closers, pool.Close)
	faults := &dbFaults{pool: pool, database: pool.Config().ConnConfig.Database}
	env.Activity = faults
	if tg.Has(targetfile.LockGating) || tg.Has(targetfile.ConnectionLoss) {
		env.DB = faults
	}
	if tg.FailpointsPath != "" {
		env.Failpoints = failpoints.New(tg.BaseURL, tg.FailpointsPath, &http.Client{Timeout: 5 * time.Second})
	}
	if tg.Has(targetfile.Retention) && tg.Retention != nil {
		if err := preparePurge(ctx, obs, tg.Retention.Purge); err != nil {
			return nil, err
		}
		// A purge command runs in lifecycle.dir, else the file's directory.
		po := purge.Options{BaseURL: tg.BaseURL, DatabaseURL: tg.Postgres.URL.Reveal(), Dir: tg.Dir}
		if tg.Lifecycle != nil {
			po.Dir, po.Env = tg.Lifecycle.Dir, tg.Lifecycle.Env
		}
		tr, err := purge.New(ctx, tg.Retention.Purge, po)
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

	hs.Env, hs.info, hs.secrets, hs.tg = env, info, secrets, tg
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
func AckTimeout(ep targetfile.Endpoint, p profiles.Profile) (d time.Duration, model bool) {
	if ep.AckTimeout > 0 {
		return ep.AckTimeout, false
	}
	if t := p.Facts().Timeout; t != nil && *t > 0 {
		return *t, false
	}
	return ModelAckTimeout, true
}

// nameOf is a file's target.name when its YAML reads that far, else the
// file's path: what a report of a file that does not load calls it.
func nameOf(data []byte, path string) string {
	var doc struct {
		Target struct {
			Name any `yaml:"name"`
		} `yaml:"target"`
	}
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if n, ok := doc.Target.Name.(string); ok && n != "" {
			return n
		}
	}
	return path
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
	conn, err := obs.Pool().Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%w: checking %s: %v", ErrUnreachable, field, err)
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "hookcert_purge_check", p.SQL)
	if err != nil {
		if pe := pgsession.StatementError(err); pe != nil {
			return fmt.Errorf("%w: %s: does not prepare: %s", ErrConfig, field, pgsession.Message(pe))
		}
		return fmt.Errorf("%w: checking %s: %v", ErrUnreachable, field, err)
	}
	_ = conn.Conn().Deallocate(ctx, sd.Name)
	return nil
}

// NewRun starts a run of the suite against the harness's target.
func (hs *Harness) NewRun() (*scenarios.Run, error) {
	return scenarios.NewRun(hs.Env, hs.opts.Run, history.Meta{TargetURL: hs.info.Target.BaseURL, TimeScale: hs.Env.TimeScale})
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
func WriteRun(dir string, h *history.History, res *reports.Results, secrets []string) error {
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

// Reachable checks that something accepts connections at base, as certify
// does for a target without lifecycle.
func Reachable(ctx context.Context, base string) error { return reachable(ctx, base) }

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
	pg, ok := g.(gate)
	if !ok {
		return 0, nil
	}
	ws, err := pg.g.Waiters(ctx)
	if err != nil {
		return 0, err
	}
	groups := make([]int, len(w.c.workers))
	for i, p := range w.c.workers {
		groups[i] = p.PID() // each runs in a process group of its own
	}
	for _, wt := range ws {
		if wt.ClientPort <= 0 {
			continue
		}
		if i := process.OwnerOfLocalPort(wt.ClientPort, groups); i >= 0 {
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
