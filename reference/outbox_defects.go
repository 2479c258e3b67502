package reference

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"log/slog"

	"github.com/hookcert/hookcert/reference/store"
)

// The outbox defects (docs/reference.md, "Inbox and outbox defects"). Each is a
// small alternative to one or more of the dispatcher's correct steps
// (dispatchSteps, outbox.go), swapped in once by dispatcherDefects when the
// dispatcher is built.

// dispatcherDefect installs one defect into a dispatcher under construction.
type dispatcherDefect struct {
	name    string
	install func(d *Dispatcher)
}

// dispatcherDefects are installed in this order.
var dispatcherDefects = []dispatcherDefect{
	{DefectFreshIdempotencyKey, func(d *Dispatcher) { d.steps.key = freshKey }},
	{DefectSendBeforeCommit, func(d *Dispatcher) {
		// Wrong: a credit's downstream call goes out inside the business
		// transaction, before its commit, with no outbox row; a rollback or crash
		// leaves an external effect for an event that never committed.
		next := d.steps.withOutbox
		d.steps.withOutbox = func(r store.Rules) store.Rules { return next(r).WithSendBeforeCommit(d) }
	}},
	{DefectDropFailedSends, installDropFailedSends},
}

// installDispatcherDefects swaps in the steps of every named outbox defect, in
// table order; other names are ignored.
func installDispatcherDefects(d *Dispatcher, names []string) {
	active := newDefectSet(names)
	for _, x := range dispatcherDefects {
		if active.has(x.name) {
			x.install(d)
		}
	}
}

// freshKey is a new random Idempotency-Key per attempt (the fresh-idempotency-key
// defect). Wrong: the downstream cannot tell a resend from a new operation.
func freshKey(m store.OutboxMessage) string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	return "hookcert-" + m.Kind + "-" + hex.EncodeToString(b)
}

// installDropFailedSends marks sent a message that would be dead-lettered ("give
// up quietly"). Wrong: a downstream that kept failing looks served, and nobody
// retries or sees it.
func installDropFailedSends(d *Dispatcher) {
	fail := d.steps.fail
	d.steps.fail = func(ctx context.Context, log *slog.Logger, m store.OutboxMessage, id string, status int, msg string, permanent bool) {
		if permanent || m.Attempts >= d.retry.MaxAttempts {
			// The defect: "give up quietly" — the message is recorded as delivered.
			if _, serr := store.MarkSent(ctx, d.pool, m.ID, id, status); serr != nil {
				log.Error("outbox send failed and could not be recorded", "err", msg, "record_err", serr)
				return
			}
			log.Warn("outbox send failed for the last time; marked sent", "err", msg)
			return
		}
		fail(ctx, log, m, id, status, msg, permanent)
	}
	reconcile := d.steps.reconcile
	d.steps.reconcile = func(ctx context.Context) {
		if n, err := store.ReclaimOutboxAsSent(ctx, d.pool, d.retry.MaxAttempts, 100); err != nil && ctx.Err() == nil {
			d.log.Warn("outbox reconciler", "err", err)
		} else if n > 0 {
			d.log.Warn("outbox: marked sent messages whose lease expired after their last attempt", "messages", n)
		}
		reconcile(ctx)
	}
}
