package reference

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookcert/hookcert/reference/signature"
	"github.com/hookcert/hookcert/reference/store"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes    = 1 << 20
	DefaultDBTimeout       = 30 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultMaxConns is the pool size Open uses when the URL sets none: enough for
	// a burst of concurrent duplicates to reach the database together, which is
	// what the database must arbitrate.
	DefaultMaxConns = 32
)

// ErrUnreachable marks an Open error caused by the database not answering.
var ErrUnreachable = errors.New("database unreachable")

// Options configure a Server. The zero value of every field but Endpoints is usable.
type Options struct {
	// Endpoints to serve; nil means DefaultEndpoints().
	Endpoints []Endpoint
	// Defects to activate (names from Defects()).
	Defects []string
	// EnableFailpoints mounts the failpoint control surface under /_hookcert/failpoints.
	EnableFailpoints bool
	// Crash is what an armed crash failpoint calls; nil means SIGKILL of this process.
	Crash func()
	// MaxBodyBytes limits request bodies (413 above it); 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Tolerance for signed timestamps; 0 means each profile's documented default.
	Tolerance time.Duration
	// DBTimeout bounds the database work of one delivery; 0 means DefaultDBTimeout.
	DBTimeout time.Duration
	// ShutdownTimeout bounds graceful shutdown in Serve; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock for timestamp checks and the purger; nil means time.Now.
	Now func() time.Time
	// EnableAdmin mounts the admin purge call (POST /_hookcert/purge) without the
	// failpoints; EnableFailpoints mounts it too.
	EnableAdmin bool
	// PurgeInterval is how often Serve's in-process purger runs; 0 means
	// DefaultPurgeInterval, negative disables it.
	PurgeInterval time.Duration
	// Purge shapes every purge (batch size, pause between batches).
	Purge store.PurgeOptions
	// Mode is ModeSync ("" too) or ModeInbox (docs/reference.md, "Inbox mode").
	// Most defects break the synchronous design and run in sync mode only; the
	// inbox defects need ModeInbox, the outbox defects Outbox.SinkURL (either mode).
	Mode string
	// MaxConns is the pool size Open uses when the URL sets no pool_max_conns
	// (DefaultMaxConns when zero).
	MaxConns int32
	// Inbox configures inbox mode's in-process workers (Inbox.Workers negative:
	// none; run "hookcert reference worker" instead), and the outbox's retries.
	Inbox InboxOptions
	// Outbox, with SinkURL set, makes applied refunds and credits write an outbox
	// message in their business transaction and runs dispatchers that send them
	// (either mode).
	Outbox OutboxOptions
}

// Server is a running reference receiver bound to one database.
type Server struct {
	pool      *pgxpool.Pool
	ownPool   bool
	endpoints map[string]Endpoint
	// epLog is each endpoint's logger, built once: a logger per delivery is an
	// allocation on the hot path for an attribute that never changes.
	epLog  map[string]*slog.Logger
	epList []Endpoint
	// steps are the seams of the delivery path, the purge and the start (see
	// steps); defects replace some of them once, in New.
	steps steps
	// rules are store.Apply's business rules: store.CorrectRules, with the
	// outbox mode when a sink is configured; domain defects swap some of their
	// steps once, in New.
	rules     store.Rules
	schema    store.Schema
	maxBody   int64
	tolerance time.Duration
	dbTimeout time.Duration
	shutdown  time.Duration
	log       *slog.Logger
	now       func() time.Time
	fp        hitter
	fpHandler http.Handler
	metrics   *metrics
	handler   http.Handler
	admin     bool
	// purgeEvery is the in-process purger's interval (0: off); purgeOpts shape
	// each purge.
	purgeEvery time.Duration
	purgeOpts  store.PurgeOptions
	// inbox is set in inbox mode: the handler stores events for workers and wakes
	// them.
	inbox *Workers
	// outbox is set when a sink URL is configured.
	outbox *Dispatcher
	// oneTrip lets processOneTx apply a cash credit in one statement
	// (creditOneTrip): set when no defect and no outbox is in play.
	oneTrip bool
}

// steps are the narrow seams of the receiver, each one step of the recipe
// (docs/reference.md, "The design, and why"). correctSteps fills them with the
// correct implementations, which sit beside their callers in handler.go and
// retention.go. A defect replaces or wraps one or more of them ONCE, when the
// server is built (serverDefects, handler_defects.go), so nothing on the request
// path asks which defects are active.
type steps struct {
	// verify checks the delivery's signature and the age of its timestamp.
	verify func(ep Endpoint, h http.Header, body []byte) error
	// sigOptions are verify's options: the timestamp tolerance.
	sigOptions signature.Options
	// handshake answers a verified handshake's challenge (handshake.go).
	handshake func(ctx context.Context, w http.ResponseWriter, ep Endpoint, challenge string, log *slog.Logger)
	// readEvent reads the event of a verified delivery; ok false answers res
	// without processing the event.
	readEvent func(ep Endpoint, h http.Header, body []byte, log *slog.Logger) (ev store.Event, res result, ok bool)
	// fields are extract's rules for the event ID and for unknown types.
	fields eventRules
	// refuse answers a delivery whose event extract could not read.
	refuse func(err error, log *slog.Logger) result
	// deliver processes a readable event and answers it.
	deliver func(w http.ResponseWriter, r *http.Request, ev store.Event, log *slog.Logger, start time.Time)
	// process records the key and applies the event (in inbox mode: stores it
	// for the workers) and returns the answer. ack answers early; only a defect
	// calls it.
	process func(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result
	// begin starts the delivery's transaction.
	begin func(ctx context.Context) (pgx.Tx, error)
	// recordKey records the event key in tx; ok false answers res instead.
	recordKey func(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (res result, ok bool)
	// commit commits tx and returns the answer to the applied event.
	commit func(ctx context.Context, tx pgx.Tx, ev store.Event, applied store.Result, ack func(result), log *slog.Logger) result
	// copyPayload keeps a copy of the payload beside its key; only the
	// two-transaction defects call it, after their key insert.
	copyPayload func(ctx context.Context, q store.Querier, ev store.Event) error
	// atStart runs when Serve starts.
	atStart func(ctx context.Context) error
	// purgeScope turns one key space's TTLs into the purge's cut-offs.
	purgeScope func(source, account string, keyTTL, payloadTTL time.Duration, asOf time.Time) store.PurgeScope
	// purge deletes what the cut-offs allow.
	purge func(ctx context.Context, pool *pgxpool.Pool, scopes []store.PurgeScope, opts store.PurgeOptions) (store.PurgeResult, error)
	// shortKeyTTL reports, at start, an endpoint whose key TTL is below its
	// provider's redelivery horizon.
	shortKeyTTL func(e Endpoint, r Retention, h Horizon)
}

// correctSteps returns the receiver's correct steps (sync mode).
func (s *Server) correctSteps() steps {
	return steps{
		verify:     s.verify,
		sigOptions: signature.Options{Tolerance: s.tolerance},
		handshake:  s.answerHandshake,
		readEvent:  s.readEvent,
		fields:     eventRules{checkID: requireEventID, unknownType: recordUnknown},
		refuse:     refuse,
		deliver:    s.deliver,
		process:    s.processOneTx,
		begin:      s.begin,
		recordKey:  s.recordKey,
		commit:     s.commitThenAnswer,
		// The correct receiver keeps the payload in the key's row only.
		copyPayload: func(context.Context, store.Querier, store.Event) error { return nil },
		// Nothing to recover at start: expired leases are re-offered by the
		// workers' reconciler.
		atStart:     func(context.Context) error { return nil },
		purgeScope:  purgeScope,
		purge:       store.Purge,
		shortKeyTTL: s.warnShortKeyTTL,
	}
}

// New prepares a receiver on pool: it validates the options, applies the migrations
// (or, for check-then-insert and memory-dedup, drops the unique key index, loudly) and logs the
// endpoints (never their secrets) and every active defect.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Server, error) {
	if pool == nil {
		return nil, errors.New("reference: pool: required")
	}
	eps := opts.Endpoints
	if eps == nil {
		eps = DefaultEndpoints()
	}
	if err := validateOptions(opts, eps); err != nil {
		return nil, err
	}
	// The workers and the dispatcher run the inbox and outbox defects.
	opts.Inbox.Defects = append(append([]string(nil), opts.Inbox.Defects...), scoped(opts.Defects, scopeInbox)...)
	opts.Outbox.Defects = append(append([]string(nil), opts.Outbox.Defects...), scoped(opts.Defects, scopeOutbox)...)
	s := &Server{
		pool:      pool,
		endpoints: map[string]Endpoint{},
		epList:    eps,
		maxBody:   orDefault(opts.MaxBodyBytes, DefaultMaxBodyBytes),
		tolerance: opts.Tolerance,
		dbTimeout: orDefault(opts.DBTimeout, DefaultDBTimeout),
		shutdown:  orDefault(opts.ShutdownTimeout, DefaultShutdownTimeout),
		log:       opts.Logger,
		now:       opts.Now,
		metrics:   newMetrics(),
		admin:     opts.EnableAdmin || opts.EnableFailpoints,
		purgeOpts: opts.Purge,
		rules:     store.CorrectRules(),
	}
	switch {
	case opts.PurgeInterval == 0:
		s.purgeEvery = DefaultPurgeInterval
	case opts.PurgeInterval > 0:
		s.purgeEvery = opts.PurgeInterval
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.epLog = make(map[string]*slog.Logger, len(eps))
	for _, e := range eps {
		s.endpoints[e.Path] = e
		s.epLog[e.Path] = s.log.With("endpoint", e.Path)
	}
	s.steps = s.correctSteps()
	if opts.Mode == ModeInbox {
		// The handler stores the event for the workers instead of applying it.
		s.steps.process = s.processInbox
	}
	// Each defect swaps its steps (and the rules, schema or body limit it
	// changes) now, once.
	// A credit takes one round trip only on the clean receiver without an
	// outbox: every defect keeps the step-by-step path it was written against.
	s.oneTrip = installServerDefects(s, opts.Defects) == 0 && opts.Outbox.SinkURL == ""

	applied, err := store.MigrateSchema(ctx, pool, s.schema)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	s.log.Info("schema ready", "applied_migrations", applied)
	announceDefects(s.log, opts.Defects)
	announceDroppedKeyIndex(s.log, opts.Defects)
	for _, e := range eps {
		s.log.Info("endpoint", "path", e.Path, "profile", e.Profile, "source", e.KeySource(), "account", e.Account)
	}
	s.logRetention()
	if opts.Outbox.SinkURL != "" {
		if s.outbox, err = NewDispatcher(pool, opts.Outbox, opts.Inbox, s.log); err != nil {
			return nil, err
		}
		s.rules = s.outbox.steps.withOutbox(s.rules)
	}
	if opts.Mode == ModeInbox {
		if s.inbox, err = NewWorkers(pool, opts.Inbox, s.log); err != nil {
			return nil, err
		}
		s.inbox.rules = s.rules
		if s.outbox != nil {
			s.inbox.afterApply = s.outbox.Wake
		}
		s.log.Info("inbox mode: deliveries are stored and answered 202; workers apply them",
			"in_process_workers", max(s.inbox.opts.Workers, 0))
	}

	s.fp = noFailpoints{}
	if opts.EnableFailpoints {
		s.fp, s.fpHandler = newFailpoints(opts.Crash) // nil crash: SIGKILL of this process
		s.log.Warn("failpoints enabled: /_hookcert/failpoints can crash or fail this receiver on demand")
	}
	s.handler = s.routes()
	return s, nil
}

// validateOptions refuses options New cannot run with: unknown defects, or
// defects of another design, invalid endpoints, a negative body limit or
// tolerance, an unknown mode.
func validateOptions(opts Options, eps []Endpoint) error {
	if err := ValidateDefects(opts.Defects); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if err := ValidateEndpointsWithDefects(eps, opts.Defects); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if opts.MaxBodyBytes < 0 {
		return fmt.Errorf("reference: max body bytes: must be positive, got %d", opts.MaxBodyBytes)
	}
	if opts.Tolerance < 0 {
		return fmt.Errorf("reference: tolerance: must not be negative, got %s", opts.Tolerance)
	}
	switch opts.Mode {
	case "", ModeSync, ModeInbox:
		if err := ValidateDefectsFor(opts.Defects, opts.Mode, opts.Outbox.SinkURL != ""); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	default:
		return fmt.Errorf("reference: mode: must be %s or %s, got %q", ModeSync, ModeInbox, opts.Mode)
	}
	return nil
}

// Open connects to url (pool size opts.MaxConns, else DefaultMaxConns, unless
// the URL sets pool_max_conns) and calls New; Close releases the pool.
func Open(ctx context.Context, url string, opts Options) (*Server, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL, password included; do not wrap.
		return nil, errors.New("reference: database url: cannot be parsed as a PostgreSQL connection string")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
		if opts.MaxConns > 0 {
			cfg.MaxConns = opts.MaxConns
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("reference: %w: %w", ErrUnreachable, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reference: %w: %w", ErrUnreachable, err)
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// Close releases the pool if Open created it.
func (s *Server) Close() {
	if s.ownPool {
		s.pool.Close()
	}
}

// Endpoints returns the endpoints served (secrets included: callers must not log them).
func (s *Server) Endpoints() []Endpoint { return append([]Endpoint(nil), s.epList...) }

// Handler returns the receiver's HTTP handler: the endpoints, /healthz, /metrics and,
// with EnableFailpoints, /_hookcert/failpoints.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx is done, then shuts down gracefully: new
// connections are refused and in-flight deliveries finish (up to ShutdownTimeout).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds a sender trickling a body; providers send theirs at once.
		ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("listening", "addr", ln.Addr().String())
	if s.purgeEvery > 0 {
		pctx, stopPurger := context.WithCancel(ctx)
		purged := make(chan struct{})
		go func() { defer close(purged); s.runPurger(pctx) }()
		// The purger stops before Serve returns, so the caller may close the pool.
		defer func() { stopPurger(); <-purged }()
	}
	if err := s.steps.atStart(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if s.inbox != nil {
		// Workers outlive the HTTP shutdown so that events accepted by in-flight
		// deliveries are still picked up; they stop before Serve returns.
		wctx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
		stopped := make(chan struct{})
		go func() { defer close(stopped); s.inbox.Run(wctx) }()
		defer func() { stopWorkers(); <-stopped }()
	}
	if s.outbox != nil {
		dctx, stopDispatch := context.WithCancel(context.WithoutCancel(ctx))
		stopped := make(chan struct{})
		go func() { defer close(stopped); s.outbox.Run(dctx) }()
		defer func() { stopDispatch(); <-stopped }()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing in-flight deliveries", "timeout", s.shutdown.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

// Migrate applies the reference schema to pool (idempotent, safe concurrently) and
// makes sure the unique event-key index exists.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := store.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	return nil
}

// ListenAndServe listens on addr and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	if s.fpHandler != nil {
		mux.Handle("/_hookcert/failpoints", s.fpHandler)
		mux.Handle("/_hookcert/failpoints/", s.fpHandler)
	}
	if s.admin {
		mux.HandleFunc(AdminPurgePath, s.servePurge)
	}
	mux.HandleFunc("/", s.serveDelivery)
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		s.log.Warn("health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, response{Status: "unhealthy", Reason: "database_unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, response{Status: "ok"})
}

func orDefault[T int64 | time.Duration](v, d T) T {
	if v == 0 {
		return d
	}
	return v
}

// metrics are registered on a per-server registry so that several servers can run
// in one process (tests, demo).
type metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	rejections *prometheus.CounterVec
	latency    *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookcert_reference_deliveries_total",
			Help: "Deliveries by outcome: processed (accepted and applied), accepted (stored for inbox workers), duplicate, ignored, rejected, retry.",
		}, []string{"outcome"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookcert_reference_rejections_total",
			Help: "Rejected deliveries (4xx) by reason.",
		}, []string{"reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookcert_reference_delivery_duration_seconds",
			Help:    "Time from request start to response, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.deliveries, m.rejections, m.latency)
	return m
}
