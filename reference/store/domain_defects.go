package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// The broken variants of the domain rules, used only by the reference's defects
// (docs/reference.md, "Defects"). Each With... method returns the rules with one
// defect's alternatives in place of the narrow steps it changes (domainSteps,
// domain.go); the receiver calls it once, when it is built, from its defect
// tables. The correct steps are in domain.go.

// WithLastWriteWins drops the version check and the payment state machine: every
// update overwrites (the last-write-wins defect).
func (r Rules) WithLastWriteWins() Rules {
	r.steps.markSucceeded = markSucceededFromAnyState
	r.steps.checkRefund = refundFromAnyState
	r.steps.writeSubscription = writeSubscriptionAnyVersion
	return r
}

// WithNoDomainConstraint credits a payment for every succeeded event: no state
// check and no one-credit-per-payment index (the no-domain-constraint defect,
// whose receiver also drops the index: Schema.WithoutDomainConstraint).
func (r Rules) WithNoDomainConstraint() Rules {
	r.steps.markSucceeded = markSucceededFromAnyState
	r.steps.insertEntry = insertEntryUnconstrained
	return r
}

// WithRefundCheckThenAct reads a refund's payment status with a plain SELECT
// and writes the refund with no one-refund-per-payment index (the
// refund-check-then-act defect, whose receiver also drops the index:
// Schema.WithoutDomainConstraint). The payment credit keeps its atomic state
// check, so only refunds race.
func (r Rules) WithRefundCheckThenAct() Rules {
	r.steps.paymentForRefund = readPaymentUnlocked
	r.steps.insertEntry = insertEntryUnconstrained
	return r
}

// WithDropFirstRefund skips the first refund these rules see: it changes
// nothing and reports it ignored, which is acknowledged like any other no-op
// (the drop-first-refund defect). Later refunds apply as usual.
func (r Rules) WithDropFirstRefund() Rules {
	var dropped atomic.Bool
	next := r.steps.checkRefund
	r.steps.checkRefund = func(ev Event, status string) (string, error) {
		// Wrong: the first call's failure (a client not yet started) is
		// swallowed, so the refund is answered as handled and never applied.
		if dropped.CompareAndSwap(false, true) {
			return "refund_skipped", nil
		}
		return next(ev, status)
	}
	return r
}

// WithApplyUnknownTypes credits the ledger for every type Apply does not handle,
// as the cash credit would (the apply-unknown-types defect).
func (r Rules) WithApplyUnknownTypes() Rules {
	r.steps.unknownType = creditUnknown
	return r
}

// WithSendBeforeCommit makes a credit call the downstream through s itself,
// inside the business transaction, before its ledger entry is written and
// committed, and write no outbox message (the send-before-commit defect).
func (r Rules) WithSendBeforeCommit(s Sender) Rules {
	r.steps.credit = func(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
		return sendThenCredit(ctx, tx, ev, rules, s)
	}
	return r
}

// Sender makes one downstream call with the given Idempotency-Key and JSON body.
type Sender interface {
	SendNow(ctx context.Context, idempotencyKey string, body []byte) error
}

// markSucceededFromAnyState is markSucceeded without the state check. Wrong: a
// refunded payment goes back to succeeded, and a second succeeded event credits
// again wherever the index does not stop it.
func markSucceededFromAnyState(ctx context.Context, tx pgx.Tx, ev Event) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO payments (source, account_id, payment_id, status, amount, currency, updated_by_event_id)
		VALUES ($1, $2, $3, 'succeeded', $4, $5, $6)
		ON CONFLICT (source, account_id, payment_id) DO UPDATE
		SET status = 'succeeded', amount = EXCLUDED.amount, currency = EXCLUDED.currency,
		    updated_by_event_id = EXCLUDED.updated_by_event_id, updated_at = now()`,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Amount, ev.Currency, ev.EventID)
	return tag.RowsAffected() > 0, err
}

// readPaymentUnlocked is lockPayment without FOR UPDATE. Wrong: two refunds
// for one payment at the same moment both read "succeeded" before either
// commits, and both refund it; one after the other, the second reads
// "refunded" and is refused, so only a race shows it.
func readPaymentUnlocked(ctx context.Context, tx pgx.Tx, ev Event) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM payments
		WHERE source = $1 AND account_id = $2 AND payment_id = $3`,
		ev.Source, ev.AccountID, ev.ObjectID).Scan(&status)
	return status, err
}

// refundFromAnyState is checkRefund refusing nothing. Wrong: a refunded payment
// is refunded again, and a pending one before it has succeeded.
func refundFromAnyState(Event, string) (string, error) { return "", nil }

// writeSubscriptionAnyVersion is writeSubscription without the version guard.
// Wrong: deduplication does not order events, so a late older update overwrites a
// newer one (and brings a deleted subscription back).
func writeSubscriptionAnyVersion(ctx context.Context, tx pgx.Tx, ev Event) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO subscriptions (source, account_id, object_id, version, status, updated_by_event_id)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, account_id, object_id) DO UPDATE
		SET version = EXCLUDED.version, status = EXCLUDED.status,
		    updated_by_event_id = EXCLUDED.updated_by_event_id, updated_at = now()`,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Version, ev.Status, ev.EventID)
	return tag.RowsAffected() > 0, err
}

// insertEntryUnconstrained is insertEntry without ON CONFLICT (its index is
// dropped). Wrong: nothing holds one payment to one credit.
func insertEntryUnconstrained(ctx context.Context, tx pgx.Tx, ev Event, kind string, amount int64) (bool, error) {
	var one int
	err := tx.QueryRow(ctx, `INSERT INTO ledger_entries (source, account_id, event_id, object_id, kind, amount)
		VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING 1`, ev.Source, ev.AccountID, ev.EventID, ev.ObjectID, kind, amount).Scan(&one)
	return err == nil, err
}

// creditUnknown is the default branch that treats whatever it does not know as a
// credit (the configured one: rules.steps.credit). Wrong: an unknown type changes
// business state instead of being acknowledged and ignored.
func creditUnknown(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	return rules.steps.credit(ctx, tx, ev, rules)
}

// sendThenCredit is applyCash calling the downstream through s before anything
// is written, instead of writing an outbox message. Wrong: the external call goes
// out before the commit, so a rollback or crash leaves a downstream effect for an
// event that never committed.
func sendThenCredit(ctx context.Context, tx pgx.Tx, ev Event, rules Rules, s Sender) (Result, error) {
	b, err := json.Marshal(creditMessage(ev))
	if err != nil {
		return Result{}, fmt.Errorf("encode credit message: %w", err)
	}
	if err := s.SendNow(ctx, OutboxKey(ev.Key, OutboxCredit), b); err != nil {
		return Result{}, fmt.Errorf("send credit downstream: %w", err)
	}
	if _, err := addLedger(ctx, tx, ev, "cash", ev.Amount, rules); err != nil {
		return Result{}, err
	}
	return Result{Applied: true}, nil
}
