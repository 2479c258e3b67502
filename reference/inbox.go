package reference

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	crand "crypto/rand"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference/store"
)

// Modes of the receiver (Options.Mode, serve --mode).
const (
	// ModeSync verifies, records the key, applies the business change and commits
	// before answering (the default).
	ModeSync = "sync"
	// ModeInbox verifies, records the key with the stored event as pending work and
	// commits before answering 202; workers apply it later.
	ModeInbox = "inbox"
)

// StatusAccepted is the inbox mode's answer to a new event: stored, not yet applied.
const StatusAccepted = "accepted"

// Inbox defaults (InboxOptions).
const (
	DefaultWorkers      = 4
	DefaultMaxAttempts  = 5
	DefaultLease        = 30 * time.Second
	DefaultPollInterval = 250 * time.Millisecond
	DefaultClaimBatch   = 8
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = 5 * time.Minute
)

// InboxOptions configure inbox workers, in-process (Options.Inbox) or in a
// separate process (RunWorkers). The zero value of every field is usable.
type InboxOptions struct {
	// Workers is how many workers run; 0 means DefaultWorkers, negative none.
	Workers int
	// MaxAttempts is how many attempts an event gets before it is dead-lettered;
	// 0 means DefaultMaxAttempts.
	MaxAttempts int
	// Lease is how long a claim lasts; a claim whose worker is gone is re-offered
	// after it. 0 means DefaultLease.
	Lease time.Duration
	// PollInterval is how often an idle worker looks for work; 0 means
	// DefaultPollInterval. In-process workers are also woken by each new event.
	PollInterval time.Duration
	// ClaimBatch is how many due events a worker claims in one claim transaction
	// before applying them one transaction each; 0 means DefaultClaimBatch.
	// Batching halves the commits per event; a worker starts no claimed event
	// once half its lease has gone, and hands the rest back (ReleaseClaims).
	ClaimBatch int
	// BackoffBase and BackoffMax bound the delay before a failed event is retried:
	// BackoffBase doubled per attempt, capped at BackoffMax, with up to 10% jitter.
	BackoffBase, BackoffMax time.Duration
	// ReconcileInterval is how often expired leases are looked for; 0 means half
	// the lease, at most 10s.
	ReconcileInterval time.Duration
	// WorkerID prefixes the claim owner name (claimed_by); "" means host-pid.
	WorkerID string
	// Defects are the inbox defects the workers run with (names from Defects();
	// other names are ignored here). Options.Defects fills it for in-process
	// workers.
	Defects []string
}

func (o InboxOptions) withDefaults() InboxOptions {
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.ClaimBatch <= 0 {
		o.ClaimBatch = DefaultClaimBatch
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = DefaultBackoffBase
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	if o.BackoffMax < o.BackoffBase {
		o.BackoffMax = o.BackoffBase
	}
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = min(o.Lease/2, 10*time.Second)
	}
	if o.WorkerID == "" {
		host, _ := os.Hostname()
		o.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return o
}

// Validate reports a negative duration or attempt count.
func (o InboxOptions) Validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{"lease": o.Lease, "poll interval": o.PollInterval,
		"backoff base": o.BackoffBase, "backoff max": o.BackoffMax, "reconcile interval": o.ReconcileInterval} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("inbox %s: must not be negative, got %s", name, d))
		}
	}
	if o.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("inbox max attempts: must not be negative, got %d", o.MaxAttempts))
	}
	if err := ValidateDefects(o.Defects); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Workers apply inbox events: each claims due events (FOR UPDATE SKIP LOCKED, with
// a lease), applies each and marks it done in one transaction, and records failed
// attempts with backoff; a reconciler re-offers expired leases.
type Workers struct {
	pool  *pgxpool.Pool
	opts  InboxOptions
	log   *slog.Logger
	rules store.Rules
	wake  chan struct{}
	// steps are the workers' seams (see workerSteps); inbox defects replace some
	// of them once, in NewWorkers.
	steps workerSteps
	// applyHook runs inside each apply transaction after the business change
	// (tests only).
	applyHook func(pgx.Tx, store.Task) error
	// betweenTx runs between the business commit and the mark-done transaction of
	// the mark-done-separate-tx defect (tests only).
	betweenTx func(store.Task) error
	// afterApply runs after each committed event (wakes the outbox dispatcher).
	afterApply func()
}

// workerSteps are the narrow seams of the inbox workers. correctSteps fills them
// with the correct implementations below; an inbox defect replaces or wraps one
// or more of them ONCE, when the workers are built (workerDefects,
// inbox_defects.go), so no worker path asks which defects are active.
type workerSteps struct {
	// step takes up to n due events as worker id and processes them (Step).
	step func(ctx context.Context, id string, n int) (int, error)
	// claim claims due events for worker with a lease, counting the attempt.
	claim func(ctx context.Context, q store.Beginner, worker string, lease time.Duration, n int) ([]store.Task, error)
	// apply applies a claimed event and marks it done.
	apply func(ctx context.Context, t store.Task, id string, hook func(pgx.Tx) error) (store.Result, error)
	// fail records a failed attempt and logs what became of the event.
	fail func(ctx context.Context, log *slog.Logger, t store.Task, id string, err error)
	// startReconciler starts the reconciler beside the workers, on wg.
	startReconciler func(ctx context.Context, wg *sync.WaitGroup)
	// reconcile re-offers every expired claim (Reconcile).
	reconcile func(ctx context.Context) (int64, error)
	// reclaim re-offers one batch of expired claims.
	reclaim func(ctx context.Context) (int64, error)
	// atStart runs when a worker process starts (RunWorkers).
	atStart func(ctx context.Context) error
}

// correctSteps returns the workers' correct steps.
func (w *Workers) correctSteps() workerSteps {
	return workerSteps{
		step:            w.claimAndProcess,
		claim:           store.Claim,
		apply:           w.applyClaimed,
		fail:            w.failClaimed,
		startReconciler: func(ctx context.Context, wg *sync.WaitGroup) { wg.Go(func() { w.reconcileLoop(ctx) }) },
		reconcile:       w.reconcile,
		reclaim:         w.reclaimExpired,
		// Nothing to recover at start: the reconciler re-offers expired leases.
		atStart: func(context.Context) error { return nil },
	}
}

// NewWorkers prepares workers on pool (whose schema must be migrated). A nil
// logger discards logs.
func NewWorkers(pool *pgxpool.Pool, opts InboxOptions, log *slog.Logger) (*Workers, error) {
	if pool == nil {
		return nil, errors.New("reference: pool: required")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 3)
	_, _ = crand.Read(b)
	opts = opts.withDefaults()
	// A random suffix keeps claims of a restarted process (same pid in a container)
	// apart from those of its previous life.
	opts.WorkerID += "-" + hex.EncodeToString(b)
	w := &Workers{pool: pool, opts: opts, log: log, rules: store.CorrectRules(), wake: make(chan struct{}, 1)}
	w.steps = w.correctSteps()
	installWorkerDefects(w, opts.Defects)
	return w, nil
}

// Wake tells one idle worker that work is waiting (never blocks).
func (w *Workers) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run runs the workers and the reconciler until ctx ends, then waits for every
// in-flight event to finish or roll back. With Workers negative it returns at once.
func (w *Workers) Run(ctx context.Context) {
	if w.opts.Workers < 0 {
		return
	}
	w.log.Info("inbox workers started", "workers", w.opts.Workers, "worker_id", w.opts.WorkerID,
		"max_attempts", w.opts.MaxAttempts, "lease", w.opts.Lease.String())
	var wg sync.WaitGroup
	for i := range w.opts.Workers {
		id := fmt.Sprintf("%s/%d", w.opts.WorkerID, i)
		wg.Go(func() { w.loop(ctx, id) })
	}
	w.steps.startReconciler(ctx, &wg)
	wg.Wait()
	w.log.Info("inbox workers stopped")
}

func (w *Workers) loop(ctx context.Context, id string) {
	for ctx.Err() == nil {
		n, err := w.steps.step(ctx, id, w.opts.ClaimBatch)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("inbox worker", "worker", id, "err", err)
		}
		if n > 0 {
			continue // more may be waiting
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-time.After(w.opts.PollInterval):
		}
	}
}

func (w *Workers) reconcileLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.opts.ReconcileInterval):
		}
		if _, err := w.Reconcile(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("inbox reconciler", "err", err)
		}
	}
}

// Reconcile re-offers every claimed event whose lease has expired (or
// dead-letters it after MaxAttempts) and returns how many it touched.
func (w *Workers) Reconcile(ctx context.Context) (int64, error) {
	return w.steps.reconcile(ctx)
}

// reconcile is Reconcile: batches of expired claims until one comes back short.
func (w *Workers) reconcile(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := w.steps.reclaim(ctx)
		total += n
		if err != nil {
			return total, fmt.Errorf("reference: %w", err)
		}
		if n < 100 {
			if total > 0 {
				w.log.Warn("inbox: re-offered events whose lease expired", "events", total)
				w.Wake()
			}
			return total, nil
		}
	}
}

// reclaimExpired re-offers one batch of expired claims, dead-lettering those that
// have had MaxAttempts attempts.
func (w *Workers) reclaimExpired(ctx context.Context) (int64, error) {
	return store.ReclaimExpired(ctx, w.pool, w.opts.MaxAttempts, 100)
}

// Step claims one due event as worker id and processes it; it returns how many it
// processed (0 when none was due).
func (w *Workers) Step(ctx context.Context, id string) (int, error) {
	return w.steps.step(ctx, id, 1)
}

// claimAndProcess is Step: claim (FOR UPDATE SKIP LOCKED, with a lease), then
// process each claimed event.
func (w *Workers) claimAndProcess(ctx context.Context, id string, n int) (int, error) {
	claimed := time.Now()
	tasks, err := w.steps.claim(ctx, w.pool, id, w.opts.Lease, n)
	if err != nil {
		return 0, err
	}
	for i, t := range tasks {
		// A claim whose lease is half gone is handed back rather than started:
		// it could expire mid-apply and be re-offered while this worker works.
		if i > 0 && (time.Since(claimed) > w.opts.Lease/2 || ctx.Err() != nil) {
			rest := tasks[i:]
			if err := store.ReleaseClaims(context.WithoutCancel(ctx), w.pool, id, rest); err != nil {
				// The reconciler re-offers them after the lease.
				w.log.Warn("inbox: could not hand back claims", "worker", id, "events", len(rest), "err", err)
			}
			return i, nil
		}
		w.process(ctx, id, t)
	}
	return len(tasks), nil
}

// process applies one claimed task. Its database work is not cut short by ctx
// (shutdown): it finishes or fails within the lease.
func (w *Workers) process(ctx context.Context, id string, t store.Task) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opts.Lease)
	defer cancel()
	log := w.log.With("worker", id, "source", t.Source, "account", t.AccountID, "event_id", t.EventID, "attempt", t.Attempts)
	var hook func(pgx.Tx) error
	if w.applyHook != nil {
		hook = func(tx pgx.Tx) error { return w.applyHook(tx, t) }
	}
	res, err := w.steps.apply(tctx, t, id, hook)
	switch {
	case err == nil:
		log.Info("inbox event done", "applied", res.Applied, "reason", res.Reason)
		if w.afterApply != nil {
			w.afterApply()
		}
		return
	case errors.Is(err, store.ErrClaimLost):
		log.Warn("inbox claim lost before apply (lease expired and re-offered?); nothing applied")
		return
	}
	w.steps.fail(tctx, log, t, id, err)
}

// applyClaimed applies a claimed event and marks it done in ONE transaction,
// conditional on the claim (store.ApplyClaimed).
func (w *Workers) applyClaimed(ctx context.Context, t store.Task, id string, hook func(pgx.Tx) error) (store.Result, error) {
	return store.ApplyClaimed(ctx, w.pool, t, id, w.rules, hook)
}

// failClaimed records a failed attempt: the event is offered again after
// backoff, or dead-lettered after MaxAttempts attempts (at once if permanent).
func (w *Workers) failClaimed(ctx context.Context, log *slog.Logger, t store.Task, id string, err error) {
	var perm *store.PermanentError
	permanent := errors.As(err, &perm)
	state, ferr := store.FailClaimed(ctx, w.pool, t, id, truncate(err.Error(), 1000), permanent, w.opts.MaxAttempts, backoff(w.opts, t.Attempts))
	w.logFailure(log, err, state, ferr)
}

// logFailure logs what became of an event whose attempt failed with err.
func (w *Workers) logFailure(log *slog.Logger, err error, state string, ferr error) {
	switch {
	case ferr != nil:
		// The claim stays; the reconciler re-offers it after the lease.
		log.Error("inbox attempt failed and could not be recorded", "err", err, "record_err", ferr)
	case state == store.InboxDead:
		log.Error("inbox event DEAD-LETTERED", "err", err, "max_attempts", w.opts.MaxAttempts)
	case state == store.InboxPending:
		log.Warn("inbox attempt failed; will retry", "err", err)
	default:
		log.Warn("inbox attempt failed after the claim was lost", "err", err)
	}
}

// backoff is the delay after the given (1-based) attempt failed.
func backoff(o InboxOptions, attempt int) time.Duration {
	d := o.BackoffBase
	for i := 1; i < attempt && d < o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, o.BackoffMax)
	// Jitter spreads retries of events that failed together.
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// RunWorkers runs inbox workers without HTTP (hookcert reference worker): it
// connects to url, applies the migrations, and runs until ctx ends; with
// outbox.SinkURL set, refunds and credits write outbox messages and dispatchers
// send them. Handler-only defects among opts.Defects have no effect here. The
// pool holds one connection per worker and dispatcher plus one for reconciling.
func RunWorkers(ctx context.Context, url string, opts InboxOptions, outbox OutboxOptions, log *slog.Logger) error {
	if opts.Workers < 0 {
		return errors.New("reference: workers: a worker process needs at least one")
	}
	if err := outbox.Validate(); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	if err := ValidateDefectsFor(append(append([]string(nil), opts.Defects...), outbox.Defects...), ModeInbox, outbox.SinkURL != ""); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return errors.New("reference: database url: cannot be parsed as a PostgreSQL connection string")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(opts.withDefaults().Workers + max(outbox.Dispatchers, 1) + 2)
	}
	cfg.AfterConnect = checkClientConnection
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("reference: %w: %w", ErrUnreachable, err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("reference: %w: %w", ErrUnreachable, err)
	}
	if err := Migrate(ctx, pool); err != nil {
		return err
	}
	w, err := NewWorkers(pool, opts, log)
	if err != nil {
		return err
	}
	announceDefects(w.log, append(append([]string(nil), opts.Defects...), outbox.Defects...))
	if err := w.steps.atStart(ctx); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	announceHandlerOnlyDefects(w.log, opts.Defects)
	if outbox.SinkURL == "" {
		w.Run(ctx)
		return nil
	}
	d, err := NewDispatcher(pool, outbox, opts, log)
	if err != nil {
		return err
	}
	w.rules = d.steps.withOutbox(w.rules)
	w.afterApply = d.Wake
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	w.Run(ctx)
	wg.Wait()
	return nil
}

// checkClientConnection asks the server to notice a vanished worker even while
// its query waits on a lock, so a killed worker's transaction (and row lock) goes
// at once instead of when the lock is granted. Servers before PostgreSQL 14 lack
// the setting; they roll back later, which is still correct.
func checkClientConnection(ctx context.Context, c *pgx.Conn) error {
	_, _ = c.Exec(ctx, `SELECT set_config('client_connection_check_interval', '1000', false)`)
	return nil
}
