// Package certify runs a certification from a target file: it reads and
// checks the file, provisions PostgreSQL where the file asks for it, has the
// composition root (package harness) assemble the target, runs the suite,
// judges the history with the checker stage and writes the reports. The suite
// itself (package scenarios) knows none of this: it sees interfaces only.
package certify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/pgprovision"
	secretscrub "github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/harness"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Version is hookcert's version, printed in reports (harness.Version).
var Version = harness.Version

// BuildInfo reads the module version and the commit the binary was built from.
func BuildInfo() (version, commit string, modified bool) { return harness.BuildInfo() }

// DefaultTimeScale compresses providers' retry schedules during a certification:
// one provider hour passes in one real second.
const DefaultTimeScale = harness.DefaultTimeScale

// Harness errors, classified for exit codes.
var (
	// ErrConfig: the target file or the options are wrong, or the target's
	// setup hook failed (exit 2).
	ErrConfig = harness.ErrConfig
	// ErrUnreachable: the target could not be reached or started (exit 3).
	ErrUnreachable = harness.ErrUnreachable
	// ErrNothing: the label filter and focus select no guarantee (exit 4).
	ErrNothing = errors.New("no scenario selected")
)

// HistoryFile is the history's name in a report directory.
const HistoryFile = harness.HistoryFile

// Reachable checks that something accepts connections at base, as certify
// does for a target without lifecycle.
func Reachable(ctx context.Context, base string) error { return harness.Reachable(ctx, base) }

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

// Harness is a target file made ready for the suite: the composition root's
// harness, with the database the run provided and the run's options.
type Harness struct {
	*harness.Harness
	opts     Options
	database map[string]string
}

// Database describes the receiver's database for the console: its URL with the
// password hidden, and how the harness provided it ("" when the file names its
// own database).
func (hs *Harness) Database() (url, method string) {
	return hs.database["database"], hs.database["database_method"]
}

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
		return st.stopped(o, started, fmt.Errorf("%w: %w", ErrConfig, err))
	}
	defer run.Close()
	if err := run.All(ctx); err != nil {
		return st.stopped(o, started, fmt.Errorf("%w: %w", ErrConfig, err))
	}
	return hs.Finish(ctx, run)
}

// NewRun starts a run of the suite against the harness's target.
func (hs *Harness) NewRun() (*scenarios.Run, error) { return hs.Harness.NewRun(hs.opts.Run) }

// Finish judges what run recorded and writes the reports.
func (hs *Harness) Finish(ctx context.Context, run *scenarios.Run) (*reports.Results, error) {
	return hs.Harness.Finish(ctx, run, harness.Report{Environment: hs.database, Repro: hs.opts.Repro, Dir: hs.opts.ReportDir})
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
		return res, fmt.Errorf("%w (and the reports could not be written: %w)", err, werr)
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
	// Passwords of the database the run was given are secrets of the run from
	// the start: a provisioning error may quote them.
	st.secrets = append(append(st.secrets, o.Secrets...), secretscrub.Password(o.DatabaseURL), secretscrub.Password(pgprovision.URLFromEnv()), secretscrub.Password(os.Getenv(MySQLURLEnv)))
	st.runID = o.RunID
	if st.runID == "" {
		st.runID = harness.NewRunID()
	}
	data := o.ConfigData
	baseDir := o.ConfigDir
	if data == nil {
		if data, err = targetfile.ReadFile(o.ConfigPath); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if baseDir == "" {
			if baseDir, err = targetfile.BaseDir(o.ConfigPath); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrConfig, err)
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
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, o.ConfigPath, err)
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
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if len(specs) == 0 {
			return nil, fmt.Errorf("%w: the label filter %q and focus %q match no guarantee (labels: guarantee IDs, families, needs:<capability>; see hookcert guarantees)",
				ErrNothing, o.Run.LabelFilter, strings.Join(o.Run.Focus, ","))
		}
	}
	b := harness.New(harness.Options{RunID: st.runID, TimeScale: o.TimeScale, NoStart: o.NoStart, LogDir: o.ReportDir,
		Secrets: st.secrets, Source: o.ConfigPath, Stdout: o.Stdout, Logger: o.Logger})
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	vars, err := b.Vars(inspected)
	if err != nil {
		return nil, err
	}
	database := map[string]string{}
	if inspected.Uses("DatabaseURL") {
		provide := provision
		if inspected.Store.Kind == targetfile.KindMySQL {
			provide = provisionMySQL
		}
		if vars.DatabaseURL, err = provide(ctx, o, b, database); err != nil {
			return nil, err
		}
	}
	tg, err := targetfile.Parse(data, vars, targetfile.WithProfiles(profiles.IDs()), pathOpt)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, o.ConfigPath, err)
	}
	st.target.BaseURL = tg.BaseURL
	for _, ep := range tg.Endpoints {
		st.target.Endpoints = append(st.target.Endpoints, reports.EndpointInfo{Profile: ep.Profile, Account: ep.Account, Path: ep.Path})
	}
	st.profile = tg.Profiles()
	st.secrets = append(st.secrets, tg.Secrets()...)
	database["database"] = tg.Summary().DatabaseURL
	hs, err := b.Open(ctx, tg)
	if err != nil {
		return nil, err
	}
	return &Harness{Harness: hs, opts: o, database: database}, nil
}

// provision gives the run a database of its own: the one the options or the
// environment name, else a container or a throwaway local cluster. It is
// dropped when the harness closes (unless KeepDatabase); database gets how it
// was provided.
func provision(ctx context.Context, o Options, b *harness.Builder, database map[string]string) (string, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	out := o.Stdout
	if out == nil {
		out = io.Discard
	}
	dbURL := o.DatabaseURL
	if dbURL == "" {
		dbURL = pgprovision.URLFromEnv()
	}
	db, cleanup, err := pgprovision.Provision(ctx, pgprovision.Options{URL: dbURL, KeepDatabase: o.KeepDatabase, Logger: log})
	if err != nil {
		if errors.Is(err, pgprovision.ErrInvalidOptions) {
			return "", fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return "", fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	b.Defer(func() { _ = cleanup(context.WithoutCancel(ctx)) })
	database["database_method"] = db.Method
	fmt.Fprintf(out, "database: %s (%s)\n", pgprovision.Redact(db.URL), db.Method)
	for _, n := range db.Notices {
		fmt.Fprintln(out, "database: "+n)
	}
	return db.URL, nil
}

// MySQLURLEnv names the MySQL or MariaDB server a target on observe.mysql
// gets its run's database on, when --database-url does not say.
const MySQLURLEnv = "HOOKCERT_MYSQL_URL"

// provisionMySQL gives a run on observe.mysql a database of its own on the
// server the options (or HOOKCERT_MYSQL_URL) name: created for the run and
// dropped when the harness closes, unless KeepDatabase.
func provisionMySQL(ctx context.Context, o Options, b *harness.Builder, database map[string]string) (string, error) {
	out := o.Stdout
	if out == nil {
		out = io.Discard
	}
	server := o.DatabaseURL
	if server == "" {
		server = os.Getenv(MySQLURLEnv)
	}
	if server == "" {
		return "", fmt.Errorf("%w: the target reads a MySQL database ({{.DatabaseURL}} in observe.mysql): give its server with --database-url mysql://user@host:3306/ or $%s", ErrConfig, MySQLURLEnv)
	}
	if !strings.HasPrefix(server, "mysql://") && !strings.HasPrefix(server, "mariadb://") {
		return "", fmt.Errorf("%w: --database-url: the target reads a MySQL database (observe.mysql): want a mysql:// server URL, got a %s one", ErrConfig, scheme(server))
	}
	dbURL, drop, err := mysqlstore.Provision(ctx, server)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if !o.KeepDatabase {
		b.Defer(func() { _ = drop(context.WithoutCancel(ctx)) })
	}
	database["database_method"] = "mysql-database"
	fmt.Fprintf(out, "database: %s (a database of its own on the MySQL server)\n", pgprovision.Redact(dbURL))
	return dbURL, nil
}

// scheme is a URL's scheme for a message (never the rest: it may hold a password).
func scheme(u string) string {
	if i := strings.Index(u, "://"); i > 0 {
		return u[:i]
	}
	return "non-URL"
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
