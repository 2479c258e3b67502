// Package harness is hookcert's composition root: it turns a target model (a
// loaded target file, or the same model built from Go values by hookcerttest)
// into the suite's environment — the downstream sink, the receiver's setup
// hook, its processes, the observer and the queue reads, the fixtures, the
// fault tools, the failpoint client and the purge — and, once the suite has
// run, judges the history and writes the reports. `hookcert certify` (package
// certify, which adds reading the file and provisioning a database) and
// library mode (hookcerttest) both assemble a run here, and nowhere else.
//
// The package pulls in no container runtime: provisioning is the caller's.
package harness

import (
	"context"
	"errors"
	"fmt"
	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/redisobserve"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/failpoints"
	"github.com/hookcert/hookcert/adapters/process"
	secretscrub "github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/simulator/providerapi"
	"github.com/hookcert/hookcert/vocab"
)

// Harness errors, classified for exit codes.
var (
	// ErrConfig: the target or the options are wrong, or the target's setup
	// hook failed.
	ErrConfig = errors.New("configuration error")
	// ErrUnreachable: the target could not be reached or started.
	ErrUnreachable = errors.New("target unreachable")
)

// DefaultTimeScale compresses providers' retry schedules during a run: one
// provider hour passes in one real second.
const DefaultTimeScale = 3600

// Options shape how a target is assembled.
type Options struct {
	// RunID names the run's namespace in every event ID (default: from the
	// clock; it is the only part of a run not derived from the seed).
	RunID string
	// TimeScale compresses providers' retry schedules (default DefaultTimeScale).
	TimeScale float64
	// NoStart leaves the receiver alone: its lifecycle is not started and a
	// receiver without one is not checked to answer (hookcert validate).
	NoStart bool
	// LogDir receives receiver.log and worker-N.log when the harness stops the
	// processes it started ("" = none).
	LogDir string
	// Secrets are scrubbed from everything the run writes, beside the target's.
	Secrets []string
	// Source names the target in configuration errors (the target file).
	Source string
	// Hooks replace parts of the target with Go functions (library mode).
	Hooks Hooks
	// Stdout hears what the harness starts; Logger its details.
	Stdout io.Writer
	Logger *slog.Logger
}

// Hooks are the parts of a target a Go test supplies as functions instead of
// a target file's commands; each one left nil falls back to the target's own.
type Hooks struct {
	// Kill stops the receiver abruptly, as SIGKILL stops a process; Restart
	// starts it again and returns once it is ready; Alive, optional, says
	// whether it is up. Kill and Restart take the place of a lifecycle
	// (capability crash).
	Kill    func() error
	Restart func(ctx context.Context) error
	Alive   func() (ok bool, why string)
	// Start, optional beside Kill and Restart, starts the receiver once the
	// setup hook has run (its schema may come from it); without it the
	// receiver is taken to be running already.
	Start func(ctx context.Context) error
	// Fixtures create business objects by name, in Go.
	Fixtures map[string]func(ctx context.Context, d vocab.ObjectData) error
	// Purge purges the receiver as if its clock read asOf (capability retention).
	Purge func(ctx context.Context, asOf time.Time) error
	// PoolConfig, when set, is the receiver's database as a pgx pool
	// configuration: the harness opens its own small pools with its settings
	// (its sessions marked as the harness's), instead of dialling the
	// target's database URL.
	PoolConfig *pgxpool.Config
}

// Builder assembles one target in two steps: Vars, before the target is
// rendered (it picks the receiver's port and starts the sink its command may
// name), then Open. Close undoes both.
type Builder struct {
	o       Options
	vars    targetfile.Vars
	sink    *sink.Sink
	api     *providerapi.Server
	closers []func()
	secrets []string
	log     *slog.Logger
	out     io.Writer
}

// New starts assembling a target.
func New(o Options) *Builder {
	if o.TimeScale <= 0 {
		o.TimeScale = DefaultTimeScale
	}
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	b := &Builder{o: o, log: o.Logger, out: o.Stdout, secrets: append([]string(nil), o.Secrets...)}
	if b.log == nil {
		b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if b.out == nil {
		b.out = io.Discard
	}
	return b
}

// NewRunID is a run ID from the clock.
func NewRunID() string {
	return strings.ToLower(fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff))
}

// RunID is the run's namespace.
func (b *Builder) RunID() string { return b.o.RunID }

// Vars returns the template values the harness provides to a target shaped
// like inspected (a target rendered with targetfile.PlaceholderVars): a free
// port for the receiver and, when the target names {{.SinkURL}} or declares
// an outbox, the URL of the downstream sink, which listens from now on, before
// the receiver starts; likewise the provider API's, {{.ProviderAPIURL}}. DatabaseURL is the caller's to fill.
func (b *Builder) Vars(inspected *targetfile.Target) (targetfile.Vars, error) {
	addr, err := process.FreeAddr()
	if err != nil {
		return targetfile.Vars{}, fmt.Errorf("%w: choosing a port for the receiver: %w", ErrUnreachable, err)
	}
	b.vars.ListenAddr = addr
	if inspected.Uses("SinkURL") || inspected.Has(targetfile.Outbox) {
		kh := ""
		if inspected.Outbox != nil {
			kh = inspected.Outbox.KeyHeader
		}
		if b.sink, err = sink.NewWith(sink.Options{KeyHeader: kh}); err != nil {
			return targetfile.Vars{}, fmt.Errorf("%w: starting the downstream sink: %w", ErrUnreachable, err)
		}
		s := b.sink
		b.closers = append(b.closers, func() { _ = s.Close() })
		b.vars.SinkURL = s.URL()
		fmt.Fprintf(b.out, "sink: %s\n", b.vars.SinkURL)
	}
	if err := b.startProviderAPI(inspected); err != nil {
		return targetfile.Vars{}, err
	}
	return b.vars, nil
}

// Defer has fn run when the harness closes, after everything Open starts
// has stopped (a provisioned database is dropped so).
func (b *Builder) Defer(fn func()) { b.closers = append(b.closers, fn) }

// configErr classifies err as the target's mistake, naming the target.
func (o Options) configErr(err error) error {
	if o.Source == "" {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrConfig, o.Source, err)
}

// Close releases what Vars started, for a Builder whose Open was never
// called or failed (a Harness closes it all itself).
func (b *Builder) Close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// Harness is a target made ready for the suite: its receiver process, the
// harness's own sessions and the adapters behind the suite's interfaces.
type Harness struct {
	// Env is what the suite reaches the target through.
	Env     *scenarios.Env
	tg      *targetfile.Target
	o       Options
	secrets []string
	closers []func()
	// mysql is the harness's sessions in a MySQL database (observe.mysql).
	mysql *mysqlstore.DB
	// redis is the observer's reader of a Redis store (observe.redis).
	redis *redisobserve.Reader
	// unanswered are the configured queries the observer does not answer.
	unanswered map[string]string
}

// Unanswered gives, for each configured query the observer's store said it
// cannot answer, why (nil when there is none).
func (hs *Harness) Unanswered() map[string]string { return hs.unanswered }

// Target is the target the harness was assembled from.
func (hs *Harness) Target() *targetfile.Target { return hs.tg }

// Secrets are the values scrubbed from everything the run writes.
func (hs *Harness) Secrets() []string { return append([]string(nil), hs.secrets...) }

// Close stops the receiver, closes the pools and the sink, in the reverse
// order of their making.
func (hs *Harness) Close() {
	for i := len(hs.closers) - 1; i >= 0; i-- {
		hs.closers[i]()
	}
	hs.closers = nil
}

// Open assembles tg, rendered with the values Vars returned (and the
// caller's database), into a Harness: it runs the target's setup hook,
// starts its lifecycle and worker processes unless NoStart, and wires every
// adapter the target declares. The error wraps ErrConfig or ErrUnreachable
// where it applies and is scrubbed of the target's secrets. On error
// everything started so far is stopped, Vars' too.
func (b *Builder) Open(ctx context.Context, tg *targetfile.Target) (_ *Harness, err error) {
	hs := &Harness{tg: tg, o: b.o, closers: b.closers}
	b.closers = nil
	defer func() {
		if err != nil {
			hs.Close()
			err = secretscrub.New(hs.secrets...).Error(err)
		}
	}()
	env := &scenarios.Env{
		RunID: b.o.RunID, Capabilities: make([]string, 0, len(tg.Capabilities)),
		EventTable: tg.Store.EventTable, EffectTable: tg.Store.EffectTable,
		MaxBodyBytes: tg.MaxBodyBytes, TimeScale: b.o.TimeScale,
		// Acceptance has its defaults applied by the loader (sync, 1 s settle).
		Acceptance: tg.Acceptance,
		// nil without an events section: the scenarios use the built-in vocabulary.
		Vocab: tg.Events,
		// object-version: no event rows to count (guarantees that need them
		// are not applicable) and reconciliation by the objects' keys.
		Idempotency: tg.Idempotency,
	}
	hs.Env = env
	for _, c := range tg.Capabilities {
		env.Capabilities = append(env.Capabilities, string(c))
	}
	hs.secrets = append(b.secrets, tg.Secrets()...)
	if cfg := b.o.Hooks.PoolConfig; cfg != nil && cfg.ConnConfig.Password != "" {
		hs.secrets = append(hs.secrets, cfg.ConnConfig.Password)
	}
	for _, ep := range tg.Endpoints {
		// A profile the file declares, else a built-in one.
		p, err := tg.LookupProfile(ep.Profile)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		ack, model := AckTimeout(ep, p)
		env.Endpoints = append(env.Endpoints, scenarios.Endpoint{Profile: p, Source: ep.Source, Account: ep.Account, URL: tg.URL(ep.Path),
			Secrets: []string{ep.Secret.Reveal()}, KeyTTL: ep.KeyTTL, PayloadTTL: ep.PayloadTTL, AckTimeout: ack, AckTimeoutModel: model})
	}
	if err := hs.setup(ctx, b); err != nil {
		return nil, err
	}
	if err := hs.start(ctx, b); err != nil {
		return nil, err
	}
	obs, err := hs.observe(ctx)
	if err != nil {
		return nil, err
	}
	wireQueues(env, tg, obs, b.sink)
	if b.api != nil {
		env.ProviderAPI = modelAPI{b.api}
	}
	if err := hs.fixtures(ctx, obs); err != nil {
		return nil, err
	}
	if err := hs.faults(ctx); err != nil {
		return nil, err
	}
	if tg.FailpointsPath != "" {
		env.Failpoints = failpoints.New(tg.BaseURL, tg.FailpointsPath, &http.Client{Timeout: 5 * time.Second})
	}
	if err := hs.retention(ctx, obs); err != nil {
		return nil, err
	}
	return hs, nil
}

// ModelAckTimeout is the acknowledgement timeout ACK-2 holds an endpoint to
// when neither the target (ack_timeout) nor the profile gives one. Providers
// that document no timeout, such as Stripe, still drop endpoints that answer
// slowly; 10 s is hookcert's model of that, not a documented value, and the
// endpoint carries AckTimeoutModel so reports say so.
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
