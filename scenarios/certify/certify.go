package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/failpoints"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/process"
	"github.com/hookcert/hookcert/adapters/purge"
	"github.com/hookcert/hookcert/adapters/target"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Version is hookcert's version, printed in reports.
var Version = "0.1.0-dev"

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

// CertifyOptions configure one certification run.
type CertifyOptions struct {
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
	Run       RunOptions
	TimeScale float64
	// Repro renders the reproduction command of one guarantee.
	Repro func(id string) string
	// Secrets are scrubbed from every report file in addition to the target's.
	Secrets []string
	Logger  *slog.Logger
	Stdout  io.Writer
}

// Certify loads a target, starts it when it has a lifecycle, runs the suite, and
// writes the reports. The error wraps ErrConfig or ErrUnreachable where it applies.
func Certify(ctx context.Context, o CertifyOptions) (*reports.Results, error) {
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
		if data, err = os.ReadFile(o.ConfigPath); err != nil {
			return nil, fmt.Errorf("%w: target file: %v", ErrConfig, err)
		}
	}
	vars := target.Vars{}
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, fmt.Errorf("choosing a port for the receiver: %w", err)
	}
	vars.ListenAddr = addr
	var provisioned *pgprovision.Database
	if strings.Contains(string(data), ".DatabaseURL") {
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
		defer func() { _ = cleanup(context.WithoutCancel(ctx)) }()
		provisioned = db
		vars.DatabaseURL = db.URL
		fmt.Fprintf(o.Stdout, "database: %s (%s)\n", pgprovision.Redact(db.URL), db.Method)
	}
	tg, err := target.Parse(data, vars)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	}
	if err := tg.CheckProfiles(profiles.IDs()); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, o.ConfigPath, err)
	}

	env := &Env{
		RunID: newRunID(), Capabilities: make([]string, 0, len(tg.Capabilities)),
		EventTable: tg.Postgres.EventTable, EffectTable: tg.Postgres.EffectTable,
		MaxBodyBytes: tg.MaxBodyBytes, TimeScale: o.TimeScale,
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
		env.Endpoints = append(env.Endpoints, Endpoint{Profile: p, Source: ep.Source, Account: ep.Account, URL: tg.URL(ep.Path),
			Secrets: []string{ep.Secret.Reveal()}, KeyTTL: ep.KeyTTL, PayloadTTL: ep.PayloadTTL})
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
		defer func() {
			if proc.Running() {
				_, _ = proc.Stop(tg.Lifecycle.StopGrace)
			}
			if o.ReportDir != "" {
				_ = os.MkdirAll(o.ReportDir, 0o755)
				_ = os.WriteFile(filepath.Join(o.ReportDir, "receiver.log"), []byte(scrub(proc.Output(), secrets)), 0o644)
			}
		}()
		env.Controller = &controller{p: proc}
	} else if err := reachable(ctx, tg.BaseURL); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}

	obs, err := observe.Open(ctx, tg.Postgres.URL.Reveal(), tg.Postgres.Queries)
	if err != nil {
		return nil, fmt.Errorf("%w: observer: %v", ErrUnreachable, err)
	}
	defer obs.Close()
	env.Observer = observer{obs}
	if tg.Has(target.LockGating) || tg.Has(target.ConnectionLoss) {
		pool, err := pgfault.Connect(ctx, tg.Postgres.URL.Reveal())
		if err != nil {
			return nil, fmt.Errorf("%w: harness database session: %v", ErrUnreachable, err)
		}
		defer pool.Close()
		env.DB = &dbFaults{pool: pool, database: pool.Config().ConnConfig.Database}
	}
	if tg.FailpointsPath != "" {
		env.Failpoints = failpoints.New(tg.BaseURL, tg.FailpointsPath, &http.Client{Timeout: 5 * time.Second})
	}
	if tg.Has(target.Retention) && tg.Retention != nil {
		tr, err := purge.FromTarget(ctx, tg)
		if err != nil {
			return nil, fmt.Errorf("%w: purge trigger: %v", ErrUnreachable, err)
		}
		defer tr.Close()
		env.Retention = retention{tr: tr, o: obs}
	}

	started := time.Now()
	outcomes, err := Run(env, o.Run)
	if err != nil {
		return nil, err
	}
	finished := time.Now()
	sum := tg.Summary()
	res := &reports.Results{
		Schema: reports.Schema, Tool: reports.ToolInfo{Name: "hookcert", Version: Version},
		RunID: env.RunID, Seed: env.Seed, StartedAt: started.UTC(), FinishedAt: finished.UTC(),
		DurationMS: finished.Sub(started).Milliseconds(),
		Target:     reports.TargetInfo{Name: tg.Name, BaseURL: tg.BaseURL, Capabilities: env.Capabilities},
		Profiles:   tg.Profiles(),
		Guarantees: Verdicts(outcomes, started, o.Repro),
		Environment: map[string]string{
			"go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH,
			"time_scale": fmt.Sprint(env.TimeScale), "database": sum.DatabaseURL,
		},
	}
	if provisioned != nil {
		res.Environment["database_method"] = provisioned.Method
	}
	for _, ep := range tg.Endpoints {
		res.Target.Endpoints = append(res.Target.Endpoints, reports.EndpointInfo{Profile: ep.Profile, Account: ep.Account, Path: ep.Path})
	}
	res.Summary = reports.Summarize(res.Guarantees)
	if o.ReportDir != "" {
		if _, err := reports.Write(o.ReportDir, res, reports.Options{Secrets: secrets}); err != nil {
			return res, fmt.Errorf("writing reports: %w", err)
		}
		if err := writeHistory(filepath.Join(o.ReportDir, "history.jsonl"), outcomes, secrets); err != nil {
			return res, fmt.Errorf("writing history: %w", err)
		}
	}
	return res, nil
}

// writeHistory writes every delivery attempt of the run as JSON Lines, each with
// the guarantee and scenario it belongs to, so a run can be re-checked later.
func writeHistory(path string, outcomes []SpecOutcome, secrets []string) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, o := range outcomes {
		if o.Record == nil {
			continue
		}
		for _, a := range o.Record.Attempts {
			if err := enc.Encode(struct {
				Guarantee string `json:"guarantee"`
				Scenario  string `json:"scenario"`
				Attempt   any    `json:"attempt"`
			}{o.Guarantee, o.Name, a}); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(path, []byte(scrub(b.String(), secrets)), 0o644)
}

func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, reports.Redacted)
		}
	}
	return s
}

func redactArgs(args []string, secrets []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = pgprovision.Redact(scrub(a, secrets))
	}
	return out
}

func newRunID() string {
	return strings.ToLower(fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff))
}

func reachable(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s does not answer: %w", base, err)
	}
	resp.Body.Close()
	return nil
}

// observer adapts the PostgreSQL observer to the scenarios' Observer.
type observer struct{ o *observe.Observer }

func okey(k profiles.Key) observe.Key {
	return observe.Key{Source: k.Source, Account: k.Account, EventID: k.EventID}
}

func (o observer) EventRows(ctx context.Context, k profiles.Key) (int, error) {
	return o.o.EventRows(ctx, okey(k))
}
func (o observer) Effects(ctx context.Context, k profiles.Key) (int, error) {
	return o.o.Effects(ctx, okey(k))
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
type controller struct{ p *process.Process }

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

func (d *dbFaults) Hold(ctx context.Context, table string) (Gate, error) {
	g, err := pgfault.Hold(ctx, d.pool, table, "")
	if err != nil {
		return nil, err
	}
	return gate{g}, nil
}

func (d *dbFaults) TerminateInTransaction(ctx context.Context) ([]int, error) {
	return pgfault.TerminateBackends(ctx, d.pool, d.database, pgfault.Filter{InTransaction: true})
}
