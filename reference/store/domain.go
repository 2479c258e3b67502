package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Rules select how Apply treats ordering. The zero value is the correct behaviour.
type Rules struct {
	// LastWriteWins drops the version check and the payment state machine: every
	// update overwrites (the last-write-wins defect).
	LastWriteWins bool
	// NoDomainConstraint credits a payment for every succeeded event: no state
	// check and no one-credit-per-payment index (the no-domain-constraint defect).
	NoDomainConstraint bool
	// ApplyUnknownTypes credits the ledger for every type Apply does not handle,
	// as the cash credit would (the apply-unknown-types defect).
	ApplyUnknownTypes bool
	// Outbox makes an applied refund or credit write its downstream message to
	// outbox_messages in the same transaction.
	Outbox bool
	// SendInline, when set, makes a credit call the downstream itself inside the
	// business transaction, before its ledger entry is written and committed, and
	// write no outbox message (the send-before-commit defect).
	SendInline Sender
}

// Sender makes one downstream call with the given Idempotency-Key and JSON body.
type Sender interface {
	SendNow(ctx context.Context, idempotencyKey string, body []byte) error
}

// Result says what Apply did.
type Result struct {
	// Applied is true when the event changed business state.
	Applied bool
	// Reason explains a no-op ("stale_version", "refused_transition",
	// "unhandled_type", "already_exists"); empty when Applied.
	Reason string
}

// Apply performs the event's business change in tx (docs/conformance-domain.md).
// It returns ErrPrecondition (wrapped) when the event cannot be applied yet; the
// caller must then roll the transaction back. Concurrent events on one object are
// serialised by row locks taken by conditional upserts or SELECT ... FOR UPDATE.
func Apply(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	switch ev.Type {
	case TypeCashBalance:
		return applyCash(ctx, tx, ev, rules)
	case TypePaymentCreated:
		return applyPaymentCreated(ctx, tx, ev)
	case TypePaymentSucceeded:
		return applyPaymentSucceeded(ctx, tx, ev, rules)
	case TypeChargeRefunded:
		return applyRefund(ctx, tx, ev, rules)
	case TypeSubscriptionUpdated:
		return applySubscription(ctx, tx, ev, rules)
	case TypeSubscriptionDeleted:
		// A tombstone at the deletion's version: the version guard keeps every
		// older update out, as it does for newer-wins updates.
		ev.Status = "deleted"
		return applySubscription(ctx, tx, ev, rules)
	}
	if rules.ApplyUnknownTypes {
		// The defect's default branch: whatever it is, treat it as a credit.
		return applyCash(ctx, tx, ev, rules)
	}
	return Result{Reason: "unhandled_type"}, nil
}

// addLedger writes one ledger entry and moves the balance, in that order, so that
// the balance can never move without its entry. For payment and refund entries the
// partial unique index turns a second entry for one payment into a no-op.
func addLedger(ctx context.Context, tx pgx.Tx, ev Event, kind string, amount int64, rules Rules) (bool, error) {
	var one int
	onConflict := `ON CONFLICT (source, account_id, object_id, kind) WHERE kind IN ('payment', 'refund') DO NOTHING`
	if rules.NoDomainConstraint {
		onConflict = "" // the index is gone: nothing holds a payment to one credit
	}
	err := tx.QueryRow(ctx, `INSERT INTO ledger_entries (source, account_id, event_id, object_id, kind, amount)
		VALUES ($1, $2, $3, $4, $5, $6) `+onConflict+`
		RETURNING 1`, ev.Source, ev.AccountID, ev.EventID, ev.ObjectID, kind, amount).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("insert %s ledger entry: %w", kind, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO account_balances (source, account_id, balance) VALUES ($1, $2, $3)
		ON CONFLICT (source, account_id) DO UPDATE
		SET balance = account_balances.balance + EXCLUDED.balance, updated_at = now()`,
		ev.Source, ev.AccountID, amount); err != nil {
		return false, fmt.Errorf("update balance: %w", err)
	}
	return true, nil
}

func applyCash(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	msg := CreditMessage{ev.Source, ev.AccountID, ev.EventID, ev.ObjectID, ev.Amount, ev.Currency}
	if rules.SendInline != nil {
		// The defect: the external call goes out before anything is committed.
		b, err := json.Marshal(msg)
		if err != nil {
			return Result{}, fmt.Errorf("encode credit message: %w", err)
		}
		if err := rules.SendInline.SendNow(ctx, OutboxKey(ev.Key, OutboxCredit), b); err != nil {
			return Result{}, fmt.Errorf("send credit downstream: %w", err)
		}
	}
	// Credit-like: no constraint beyond the event key, so this is exactly where a
	// broken key shows as a second entry.
	if _, err := addLedger(ctx, tx, ev, "cash", ev.Amount, rules); err != nil {
		return Result{}, err
	}
	if rules.Outbox && rules.SendInline == nil {
		if err := enqueueOutbox(ctx, tx, ev.Key, OutboxCredit, msg); err != nil {
			return Result{}, err
		}
	}
	return Result{Applied: true}, nil
}

func applyPaymentCreated(ctx context.Context, tx pgx.Tx, ev Event) (Result, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO payments (source, account_id, payment_id, status, amount, currency, updated_by_event_id)
		VALUES ($1, $2, $3, 'pending', $4, $5, $6)
		ON CONFLICT (source, account_id, payment_id) DO NOTHING`,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Amount, ev.Currency, ev.EventID)
	if err != nil {
		return Result{}, fmt.Errorf("create payment: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return Result{Reason: "already_exists"}, nil
	}
	return Result{Applied: true}, nil
}

func applyPaymentSucceeded(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	// absent/pending -> succeeded. ON CONFLICT DO UPDATE locks the row and evaluates
	// the WHERE on its latest committed version, so of two concurrent events for one
	// payment exactly one sees 'pending'.
	guard := `WHERE payments.status = 'pending'`
	if rules.LastWriteWins || rules.NoDomainConstraint {
		guard = ""
	}
	tag, err := tx.Exec(ctx, `INSERT INTO payments (source, account_id, payment_id, status, amount, currency, updated_by_event_id)
		VALUES ($1, $2, $3, 'succeeded', $4, $5, $6)
		ON CONFLICT (source, account_id, payment_id) DO UPDATE
		SET status = 'succeeded', amount = EXCLUDED.amount, currency = EXCLUDED.currency,
		    updated_by_event_id = EXCLUDED.updated_by_event_id, updated_at = now() `+guard,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Amount, ev.Currency, ev.EventID)
	if err != nil {
		return Result{}, fmt.Errorf("mark payment succeeded: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return Result{Reason: "refused_transition"}, nil
	}
	// The partial unique index holds the domain constraint even if two events got
	// here: one payment credits the ledger once.
	if _, err := addLedger(ctx, tx, ev, "payment", ev.Amount, rules); err != nil {
		return Result{}, err
	}
	return Result{Applied: true}, nil
}

func applyRefund(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM payments
		WHERE source = $1 AND account_id = $2 AND payment_id = $3 FOR UPDATE`,
		ev.Source, ev.AccountID, ev.ObjectID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, fmt.Errorf("refund of payment %q: payment absent: %w", ev.ObjectID, ErrPrecondition)
	}
	if err != nil {
		return Result{}, fmt.Errorf("lock payment: %w", err)
	}
	if !rules.LastWriteWins {
		switch status {
		case "refunded":
			return Result{Reason: "refused_transition"}, nil
		case "pending":
			return Result{}, fmt.Errorf("refund of payment %q: payment pending: %w", ev.ObjectID, ErrPrecondition)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'refunded', updated_by_event_id = $4, updated_at = now()
		WHERE source = $1 AND account_id = $2 AND payment_id = $3`,
		ev.Source, ev.AccountID, ev.ObjectID, ev.EventID); err != nil {
		return Result{}, fmt.Errorf("mark payment refunded: %w", err)
	}
	if _, err := addLedger(ctx, tx, ev, "refund", -ev.Amount, rules); err != nil {
		return Result{}, err
	}
	if rules.Outbox {
		if err := enqueueOutbox(ctx, tx, ev.Key, OutboxRefund, RefundMessage{ev.Source, ev.AccountID, ev.EventID,
			ev.ObjectID, ev.Amount, ev.Currency}); err != nil {
			return Result{}, err
		}
	}
	return Result{Applied: true}, nil
}

func applySubscription(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	// Deduplication does not order events: only a newer version may overwrite.
	guard := `WHERE subscriptions.version < EXCLUDED.version`
	if rules.LastWriteWins {
		guard = ""
	}
	tag, err := tx.Exec(ctx, `INSERT INTO subscriptions (source, account_id, object_id, version, status, updated_by_event_id)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, account_id, object_id) DO UPDATE
		SET version = EXCLUDED.version, status = EXCLUDED.status,
		    updated_by_event_id = EXCLUDED.updated_by_event_id, updated_at = now() `+guard,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Version, ev.Status, ev.EventID)
	if err != nil {
		return Result{}, fmt.Errorf("update subscription: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return Result{Reason: "stale_version"}, nil
	}
	return Result{Applied: true}, nil
}
