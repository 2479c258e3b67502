package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Rules are the business rules Apply runs: the correct domain of this file
// (docs/conformance-domain.md), whose few narrow steps (domainSteps) a defect may
// swap for a wrong alternative, once, when the receiver is built
// (domain_defects.go). Start from CorrectRules; the zero value has no steps.
type Rules struct {
	// Outbox makes an applied refund or credit write its downstream message to
	// outbox_messages in the same transaction. It is a mode, not a defect: a
	// receiver with a downstream (a sink URL) must tell it, one without has nobody
	// to tell, and both are correct, so Apply asks.
	Outbox bool
	// steps are the pieces of the business change a defect replaces.
	steps domainSteps
}

// domainSteps are the narrow seams of the business change. CorrectRules fills
// them with the correct implementations below; a domain defect replaces one or
// more of them ONCE, when the receiver is built (the With... methods,
// domain_defects.go), so Apply never asks which defects are active.
type domainSteps struct {
	// credit applies a cash credit (applyCash).
	credit applier
	// unknownType answers an event of a type the domain does not handle
	// (ignoreUnknown).
	unknownType applier
	// markSucceeded moves a payment to succeeded and reports whether it moved
	// (markSucceeded: only from absent or pending).
	markSucceeded func(ctx context.Context, tx pgx.Tx, ev Event) (bool, error)
	// paymentForRefund reads the payment's status for a refund and locks its
	// row until the transaction ends (lockPayment).
	paymentForRefund func(ctx context.Context, tx pgx.Tx, ev Event) (string, error)
	// checkRefund decides on a refund from the locked payment's status: a
	// refusal, an error, or neither to refund (checkRefund).
	checkRefund func(ev Event, status string) (refused string, err error)
	// writeSubscription writes the event's version and status and reports
	// whether it did (writeSubscription: only over an older version).
	writeSubscription func(ctx context.Context, tx pgx.Tx, ev Event) (bool, error)
	// insertEntry writes one ledger entry and reports whether it did
	// (insertEntry: at most one payment and one refund entry per payment).
	insertEntry func(ctx context.Context, tx pgx.Tx, ev Event, kind string, amount int64) (bool, error)
}

// applier makes the business change of one event in tx under rules.
type applier func(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error)

// CorrectRules returns the correct business rules, without the outbox.
func CorrectRules() Rules {
	return Rules{steps: domainSteps{
		credit:            applyCash,
		unknownType:       ignoreUnknown,
		markSucceeded:     markSucceeded,
		paymentForRefund:  lockPayment,
		checkRefund:       checkRefund,
		writeSubscription: writeSubscription,
		insertEntry:       insertEntry,
	}}
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
		return rules.steps.credit(ctx, tx, ev, rules) // applyCash
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
	return rules.steps.unknownType(ctx, tx, ev, rules) // ignoreUnknown
}

// ignoreUnknown leaves business state alone for a type the domain does not
// handle: the event is acknowledged and recorded, nothing else.
func ignoreUnknown(context.Context, pgx.Tx, Event, Rules) (Result, error) {
	return Result{Reason: "unhandled_type"}, nil
}

// addLedger writes one ledger entry and moves the balance, in that order, so that
// the balance can never move without its entry. For payment and refund entries the
// partial unique index turns a second entry for one payment into a no-op.
func addLedger(ctx context.Context, tx pgx.Tx, ev Event, kind string, amount int64, rules Rules) (bool, error) {
	inserted, err := rules.steps.insertEntry(ctx, tx, ev, kind, amount)
	if err != nil {
		return false, fmt.Errorf("insert %s ledger entry: %w", kind, err)
	}
	if !inserted {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO account_balances (source, account_id, balance) VALUES ($1, $2, $3)
		ON CONFLICT (source, account_id) DO UPDATE
		SET balance = account_balances.balance + EXCLUDED.balance, updated_at = now()`,
		ev.Source, ev.AccountID, amount); err != nil {
		return false, fmt.Errorf("update balance: %w", err)
	}
	return true, nil
}

// insertEntry writes one ledger entry, or nothing (false) when it would be a
// second payment or refund entry for one payment: the domain constraint, held by
// the partial unique index.
func insertEntry(ctx context.Context, tx pgx.Tx, ev Event, kind string, amount int64) (bool, error) {
	var one int
	err := tx.QueryRow(ctx, `INSERT INTO ledger_entries (source, account_id, event_id, object_id, kind, amount)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, account_id, object_id, kind) WHERE kind IN ('payment', 'refund') DO NOTHING
		RETURNING 1`, ev.Source, ev.AccountID, ev.EventID, ev.ObjectID, kind, amount).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// applyCash credits the account and, in outbox mode, writes the credit's
// downstream message in the same transaction; the dispatcher sends it after the
// commit.
func applyCash(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	// Credit-like: no constraint beyond the event key, so this is exactly where a
	// broken key shows as a second entry.
	if _, err := addLedger(ctx, tx, ev, "cash", ev.Amount, rules); err != nil {
		return Result{}, err
	}
	if rules.Outbox {
		if err := enqueueOutbox(ctx, tx, ev.Key, OutboxCredit, creditMessage(ev)); err != nil {
			return Result{}, err
		}
	}
	return Result{Applied: true}, nil
}

// creditMessage is the downstream message of a credit.
func creditMessage(ev Event) CreditMessage {
	return CreditMessage{ev.Source, ev.AccountID, ev.EventID, ev.ObjectID, ev.Amount, ev.Currency}
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
	moved, err := rules.steps.markSucceeded(ctx, tx, ev)
	if err != nil {
		return Result{}, fmt.Errorf("mark payment succeeded: %w", err)
	}
	if !moved {
		return Result{Reason: "refused_transition"}, nil
	}
	// The partial unique index holds the domain constraint even if two events got
	// here: one payment credits the ledger once.
	if _, err := addLedger(ctx, tx, ev, "payment", ev.Amount, rules); err != nil {
		return Result{}, err
	}
	return Result{Applied: true}, nil
}

// markSucceeded moves the payment from absent or pending to succeeded (the state
// machine); false when it is already succeeded or refunded. ON CONFLICT DO UPDATE
// locks the row and evaluates the WHERE on its latest committed version, so of
// two concurrent events for one payment exactly one sees 'pending'.
func markSucceeded(ctx context.Context, tx pgx.Tx, ev Event) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO payments (source, account_id, payment_id, status, amount, currency, updated_by_event_id)
		VALUES ($1, $2, $3, 'succeeded', $4, $5, $6)
		ON CONFLICT (source, account_id, payment_id) DO UPDATE
		SET status = 'succeeded', amount = EXCLUDED.amount, currency = EXCLUDED.currency,
		    updated_by_event_id = EXCLUDED.updated_by_event_id, updated_at = now()
		WHERE payments.status = 'pending'`,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Amount, ev.Currency, ev.EventID)
	return tag.RowsAffected() > 0, err
}

func applyRefund(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	status, err := rules.steps.paymentForRefund(ctx, tx, ev)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, fmt.Errorf("refund of payment %q: payment absent: %w", ev.ObjectID, ErrPrecondition)
	}
	if err != nil {
		return Result{}, fmt.Errorf("lock payment: %w", err)
	}
	if refused, err := rules.steps.checkRefund(ev, status); refused != "" || err != nil {
		return Result{Reason: refused}, err
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

// lockPayment reads the payment's status FOR UPDATE: of two refunds for one
// payment, the second waits here until the first commits, then reads
// "refunded".
func lockPayment(ctx context.Context, tx pgx.Tx, ev Event) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM payments
		WHERE source = $1 AND account_id = $2 AND payment_id = $3 FOR UPDATE`,
		ev.Source, ev.AccountID, ev.ObjectID).Scan(&status)
	return status, err
}

// checkRefund is the refund's state machine on the locked payment: a succeeded
// payment is refunded; a refunded one refuses a second refund; a pending one
// cannot be refunded yet (ErrPrecondition: the provider retries after the
// succeeded event).
func checkRefund(ev Event, status string) (refused string, err error) {
	switch status {
	case "refunded":
		return "refused_transition", nil
	case "pending":
		return "", fmt.Errorf("refund of payment %q: payment pending: %w", ev.ObjectID, ErrPrecondition)
	}
	return "", nil
}

func applySubscription(ctx context.Context, tx pgx.Tx, ev Event, rules Rules) (Result, error) {
	written, err := rules.steps.writeSubscription(ctx, tx, ev)
	if err != nil {
		return Result{}, fmt.Errorf("update subscription: %w", err)
	}
	if !written {
		return Result{Reason: "stale_version"}, nil
	}
	return Result{Applied: true}, nil
}

// writeSubscription writes the event's version and status over an older version
// only; false when the stored version is as new or newer. Deduplication does not
// order events: only a newer version may overwrite.
func writeSubscription(ctx context.Context, tx pgx.Tx, ev Event) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO subscriptions (source, account_id, object_id, version, status, updated_by_event_id)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, account_id, object_id) DO UPDATE
		SET version = EXCLUDED.version, status = EXCLUDED.status,
		    updated_by_event_id = EXCLUDED.updated_by_event_id, updated_at = now()
		WHERE subscriptions.version < EXCLUDED.version`,
		ev.Source, ev.AccountID, ev.ObjectID, ev.Version, ev.Status, ev.EventID)
	return tag.RowsAffected() > 0, err
}

// CreditSQL is the whole of a clean cash credit as one statement: the key insert,
// the ledger entry and the balance upsert of InsertKey then Apply (applyCash,
// addLedger, insertEntry), in that order, each running only if the one before it
// wrote its row. Sent on its own, outside BEGIN, it is its own transaction.
// Parameters: $1 source, $2 account, $3 event ID, $4 type, $5 payload, $6 object
// ID, $7 amount. It answers whether the key was inserted (false: a duplicate, and
// nothing was written); PostgreSQL runs every data-modifying WITH to completion,
// read or not.
const CreditSQL = `WITH k AS (
	INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload)
	VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (source, account_id, event_id) DO NOTHING
	RETURNING 1
), l AS (
	INSERT INTO ledger_entries (source, account_id, event_id, object_id, kind, amount)
	SELECT $1, $2, $3, $6::text, 'cash', $7::bigint FROM k
	ON CONFLICT (source, account_id, object_id, kind) WHERE kind IN ('payment', 'refund') DO NOTHING
	RETURNING 1
), b AS (
	INSERT INTO account_balances (source, account_id, balance) SELECT $1, $2, $7::bigint FROM l
	ON CONFLICT (source, account_id) DO UPDATE
	SET balance = account_balances.balance + EXCLUDED.balance, updated_at = now()
)
SELECT EXISTS (SELECT 1 FROM k)`

// CreditOneTrip records the key of a cash credit and applies it under the
// correct rules without the outbox, in one round trip and one transaction
// (CreditSQL): the same rows as InsertKey then Apply in a transaction, for a
// fifth of the round trips. inserted false means a duplicate: nothing written.
// q must not be inside a transaction the caller commits later, or the
// statement's locks outlive it (the point is to commit with no round trip in
// between).
func CreditOneTrip(ctx context.Context, q Querier, ev Event) (inserted bool, err error) {
	if ev.Type != TypeCashBalance {
		return false, fmt.Errorf("credit in one trip: type must be %s, got %q", TypeCashBalance, ev.Type)
	}
	if err := q.QueryRow(ctx, CreditSQL, ev.Source, ev.AccountID, ev.EventID, ev.Type, ev.Payload,
		ev.ObjectID, ev.Amount).Scan(&inserted); err != nil {
		return false, fmt.Errorf("credit in one trip: %w", err)
	}
	return inserted, nil
}
