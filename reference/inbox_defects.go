package reference

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference/store"
)

// The inbox defects (docs/reference.md, "Inbox and outbox defects"). Each is a
// small alternative to one or more of the workers' correct steps (workerSteps,
// inbox.go), swapped in once by workerDefects when the workers are built; the
// broken statements they call are in store/inbox_defects.go. The handler's and
// the start-up's inbox defects are entries of serverDefects (handler_defects.go)
// and use processInboxAckFirst and requeueOnBoot below.

// workerDefect installs one defect into workers under construction.
type workerDefect struct {
	name    string
	install func(w *Workers)
}

// workerDefects are installed in this order. requeue-on-boot comes before
// no-lease-expiry: where both are active, no-lease-expiry's warning is the one
// logged.
var workerDefects = []workerDefect{
	{DefectPollWithoutClaim, func(w *Workers) { w.steps.step = w.poll }},
	{DefectRequeueOnBoot, func(w *Workers) {
		// Wrong: a claim whose worker dies while its siblings run stays stuck
		// until the next start.
		w.steps.startReconciler = func(context.Context, *sync.WaitGroup) {
			w.log.Warn("DEFECT ACTIVE: " + DefectRequeueOnBoot + ": no reconciler runs; claims are re-offered only when the HTTP process starts")
		}
		w.steps.reconcile = noReconciler
		w.steps.atStart = func(ctx context.Context) error { return requeueOnBoot(ctx, w.pool, w.log) }
	}},
	{DefectNoLeaseExpiry, func(w *Workers) {
		// Wrong: a claim whose worker died stays claimed forever.
		w.steps.startReconciler = func(context.Context, *sync.WaitGroup) {
			w.log.Warn("DEFECT ACTIVE: " + DefectNoLeaseExpiry + ": no reconciler runs; expired claims are never re-offered")
		}
		w.steps.reconcile = noReconciler
	}},
	{DefectMarkDoneSeparateTx, func(w *Workers) { w.steps.apply = w.applyThenMarkDone }},
	{DefectRetryWithoutAttempts, func(w *Workers) {
		// Wrong: an event that always fails is retried forever, invisible to
		// monitoring.
		w.steps.claim = store.ClaimWithoutAttempts
		w.steps.fail = w.failUnrecorded
		w.steps.reclaim = func(ctx context.Context) (int64, error) {
			return store.ReclaimExpiredUnrecorded(ctx, w.pool, 100)
		}
	}},
	{DefectDropDeadLetters, installDropDeadLetters},
}

// installWorkerDefects swaps in the steps of every named inbox defect, in table
// order; other names are ignored.
func installWorkerDefects(w *Workers, names []string) {
	active := newDefectSet(names)
	for _, d := range workerDefects {
		if active.has(d.name) {
			d.install(w)
		}
	}
}

// noReconciler is Reconcile of no-lease-expiry and requeue-on-boot: there is no
// reconciler.
func noReconciler(context.Context) (int64, error) { return 0, nil }

// requeueOnBoot is requeue-on-boot's start-up step (serve and worker): every
// claimed event not locked by an open transaction goes back to pending. Wrong:
// a start is taken for proof that every worker died.
func requeueOnBoot(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	n, err := store.RequeueClaimed(ctx, pool)
	if err != nil {
		return err
	}
	log.Warn("requeue-on-boot: put claimed events back to pending at start", "events", n)
	return nil
}

// announceHandlerOnlyDefects warns that a worker process cannot run the
// handler's inbox defect.
func announceHandlerOnlyDefects(log *slog.Logger, names []string) {
	if slices.Contains(names, DefectInboxAckBeforeCommit) {
		log.Warn("defect " + DefectInboxAckBeforeCommit + " is the HTTP handler's: it has no effect in a worker process")
	}
}

// applyThenMarkDone commits the business change, then marks the event done in a
// second transaction (the mark-done-separate-tx defect). Wrong: a crash between
// the two re-offers the event after the lease and applies it again.
func (w *Workers) applyThenMarkDone(ctx context.Context, t store.Task, id string, hook func(pgx.Tx) error) (store.Result, error) {
	var between func() error
	if w.betweenTx != nil {
		between = func() error { return w.betweenTx(t) }
	}
	return store.ApplyThenMarkDone(ctx, w.pool, t, id, w.rules, hook, between)
}

// failUnrecorded puts a failed event back to pending with no attempt count and
// no last error (the retry-without-attempts defect). Wrong: it is never
// dead-lettered.
func (w *Workers) failUnrecorded(ctx context.Context, log *slog.Logger, t store.Task, id string, err error) {
	state, ferr := store.FailClaimedUnrecorded(ctx, w.pool, t, id, backoff(w.opts, t.Attempts))
	w.logFailure(log, err, state, ferr)
}

// installDropDeadLetters deletes an event where it would be dead-lettered ("keep
// the table clean"). Wrong: nothing shows it failed, and its key is gone.
func installDropDeadLetters(w *Workers) {
	fail := w.steps.fail
	w.steps.fail = func(ctx context.Context, log *slog.Logger, t store.Task, id string, err error) {
		var perm *store.PermanentError
		dropped, derr := store.DropClaimedIfDead(ctx, w.pool, t, id, errors.As(err, &perm), w.opts.MaxAttempts)
		if derr == nil && dropped {
			log.Warn("inbox event failed for the last time; deleted", "err", err)
			return
		}
		fail(ctx, log, t, id, err)
	}
	reclaim := w.steps.reclaim
	w.steps.reclaim = func(ctx context.Context) (int64, error) {
		dropped, err := store.DropExpiredDead(ctx, w.pool, w.opts.MaxAttempts, 100)
		if dropped > 0 {
			w.log.Warn("inbox: deleted events whose lease expired after their last attempt", "events", dropped)
		}
		if err != nil {
			return dropped, err
		}
		n, err := reclaim(ctx)
		return n + dropped, err
	}
}

// poll is the poll-without-claim defect's step: the oldest due pending event,
// read without a lock or claim, applied and marked done in one transaction.
// Wrong: idle workers that poll together all apply the same event.
func (w *Workers) poll(ctx context.Context, id string, _ int) (int, error) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opts.Lease)
	defer cancel()
	t, res, ok, err := store.PollAndApply(tctx, w.pool, w.rules, nil)
	if !ok {
		if ctx.Err() != nil {
			return 0, nil
		}
		return 0, err
	}
	log := w.log.With("worker", id, "source", t.Source, "account", t.AccountID, "event_id", t.EventID)
	if err == nil {
		log.Info("inbox event done", "applied", res.Applied, "reason", res.Reason)
		if w.afterApply != nil {
			w.afterApply()
		}
		return 1, nil
	}
	var perm *store.PermanentError
	state, ferr := store.FailUnclaimed(tctx, w.pool, t.Key, truncate(err.Error(), 1000), errors.As(err, &perm), w.opts.MaxAttempts, backoff(w.opts, t.Attempts))
	switch {
	case ferr != nil:
		log.Error("inbox attempt failed and could not be recorded", "err", err, "record_err", ferr)
	case state == store.InboxDead:
		log.Error("inbox event DEAD-LETTERED", "err", err, "max_attempts", w.opts.MaxAttempts)
	default:
		log.Warn("inbox attempt failed; will retry", "err", err)
	}
	return 1, nil
}

// processInboxAckFirst is the inbox-ack-before-commit defect: every delivery that
// passed validation is answered 202 and flushed first, and only then is the event
// inserted and committed. Anything that stops the process after the ack, or a
// failed insert or commit, loses an event the provider was told was accepted.
func (s *Server) processInboxAckFirst(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result {
	res := result{http.StatusAccepted, response{Status: StatusAccepted}}
	ack(res)
	s.hit(log, fpAfterResponse, ev.EventID)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		log.Error("begin failed after the event was accepted: the event is lost", "event_id", ev.EventID, "err", err)
		return res
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	inserted, err := store.InsertInbox(ctx, tx, ev)
	if err != nil {
		log.Error("insert failed after the event was accepted: the event is lost", "event_id", ev.EventID, "err", err)
		return res
	}
	if !inserted {
		return res
	}
	if err := s.fp.hit(fpAfterInsertBeforeCommit, ev.EventID); err != nil {
		log.Warn("failpoint injected an error after the event was accepted: the event is lost", "point", fpAfterInsertBeforeCommit.String(), "event_id", ev.EventID, "err", err)
		return res
	}
	if err := tx.Commit(ctx); err != nil {
		log.Error("commit failed after the event was accepted: the event is lost", "event_id", ev.EventID, "err", err)
		return res
	}
	s.inbox.Wake()
	s.hit(log, fpAfterCommitBeforeResponse, ev.EventID)
	return res
}
