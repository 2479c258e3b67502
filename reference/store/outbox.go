package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Outbox states (outbox_messages.state).
const (
	OutboxPending = "pending"
	OutboxClaimed = "claimed"
	OutboxSent    = "sent"
	OutboxDead    = "dead"
)

// Kinds of outbox messages.
const (
	// OutboxRefund is the kind of the message an applied refund sends downstream.
	OutboxRefund = "refund"
	// OutboxCredit is the kind of the message an applied credit (cash balance
	// transaction) sends downstream.
	OutboxCredit = "credit"
)

// OutboxKey is the Idempotency-Key of the kind's message for an event: a hash of
// the event key, so every resend of it (after a lost response, a crash, a
// redelivery) carries the same key, and distinct events never share one.
func OutboxKey(k Key, kind string) string {
	h := sha256.New()
	for _, part := range []string{k.Source, k.AccountID, k.EventID, kind} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "hookcert-" + kind + "-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// RefundMessage is the body of a refund's outbox message.
type RefundMessage struct {
	Source    string `json:"source"`
	AccountID string `json:"account_id"`
	EventID   string `json:"event_id"`
	PaymentID string `json:"payment_id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency,omitempty"`
}

// CreditMessage is the body of a credit's outbox message.
type CreditMessage struct {
	Source    string `json:"source"`
	AccountID string `json:"account_id"`
	EventID   string `json:"event_id"`
	ObjectID  string `json:"object_id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

// enqueueOutbox writes the message in the caller's (business) transaction; a second
// write for the same event and kind is a no-op.
func enqueueOutbox(ctx context.Context, tx pgx.Tx, k Key, kind string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode outbox message: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox_messages (source, account_id, event_id, kind, idempotency_key, body)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (idempotency_key) DO NOTHING`,
		k.Source, k.AccountID, k.EventID, kind, OutboxKey(k, kind), b); err != nil {
		return fmt.Errorf("write outbox message: %w", err)
	}
	return nil
}

// OutboxMessage is one claimed message.
type OutboxMessage struct {
	ID int64
	Key
	Kind           string
	IdempotencyKey string
	Body           []byte
	// Attempts counts claims so far, this one included.
	Attempts int
}

// ClaimOutbox takes up to n due messages for worker until now + lease (FOR UPDATE
// SKIP LOCKED: concurrent dispatchers take disjoint messages).
func ClaimOutbox(ctx context.Context, db Beginner, worker string, lease time.Duration, n int) ([]OutboxMessage, error) {
	var msgs []OutboxMessage
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE outbox_messages o
			SET state = 'claimed', claimed_by = $1, lease_until = now() + $2 * interval '1 millisecond', attempts = o.attempts + 1
			FROM (SELECT id FROM outbox_messages WHERE state = 'pending' AND next_attempt_at <= now()
			      ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) c
			WHERE o.id = c.id
			RETURNING o.id, o.source, o.account_id, o.event_id, o.kind, o.idempotency_key, o.body, o.attempts`,
			worker, lease.Milliseconds(), n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m OutboxMessage
			if err := rows.Scan(&m.ID, &m.Source, &m.AccountID, &m.EventID, &m.Kind, &m.IdempotencyKey, &m.Body, &m.Attempts); err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim outbox messages: %w", err)
	}
	return msgs, nil
}

// MarkSent records a delivered message if worker still claims it; false means the
// claim was lost (another dispatcher resends it with the same key, which the
// downstream deduplicates).
func MarkSent(ctx context.Context, q Querier, id int64, worker string, status int) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE outbox_messages SET state = 'sent', sent_at = now(), last_status = $3,
		claimed_by = NULL, lease_until = NULL WHERE id = $1 AND state = 'claimed' AND claimed_by = $2`, id, worker, status)
	if err != nil {
		return false, fmt.Errorf("mark outbox message sent: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailOutbox records a failed send of a message worker still claims: retried after
// backoff, or dead-lettered after maxAttempts attempts (or at once if permanent).
// It returns the new state ("" if the claim was lost).
func FailOutbox(ctx context.Context, q Querier, id int64, worker string, status int, lastError string, permanent bool, maxAttempts int, backoff time.Duration) (string, error) {
	var state string
	var st *int
	if status != 0 {
		st = &status
	}
	err := q.QueryRow(ctx, `UPDATE outbox_messages
		SET state = CASE WHEN $3 OR attempts >= $4 THEN 'dead' ELSE 'pending' END,
		    dead_at = CASE WHEN $3 OR attempts >= $4 THEN now() END,
		    last_status = $5, last_error = $6, next_attempt_at = now() + $7 * interval '1 millisecond',
		    claimed_by = NULL, lease_until = NULL
		WHERE id = $1 AND state = 'claimed' AND claimed_by = $2
		RETURNING state`, id, worker, permanent, maxAttempts, st, lastError, backoff.Milliseconds()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("record failed send: %w", err)
	}
	return state, nil
}

// ReclaimOutbox re-offers up to n claimed messages whose lease expired (their
// dispatcher died, perhaps after the downstream applied it: the resend carries the
// same key), dead-lettering those with maxAttempts attempts.
func ReclaimOutbox(ctx context.Context, q Querier, maxAttempts, n int) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE outbox_messages o
		SET state = CASE WHEN o.attempts >= $1 THEN 'dead' ELSE 'pending' END,
		    dead_at = CASE WHEN o.attempts >= $1 THEN now() END,
		    last_error = 'lease of ' || coalesce(o.claimed_by, '?') || ' expired before the message was sent',
		    next_attempt_at = now(), claimed_by = NULL, lease_until = NULL
		FROM (SELECT id FROM outbox_messages WHERE state = 'claimed' AND lease_until < now()
		      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) c
		WHERE o.id = c.id`, maxAttempts, n)
	if err != nil {
		return 0, fmt.Errorf("reclaim outbox leases: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OutboxEntry is one message as an operator sees it.
type OutboxEntry struct {
	IdempotencyKey string `json:"idempotency_key"`
	State          string `json:"state"`
	Attempts       int    `json:"attempts"`
	LastStatus     int    `json:"last_status,omitempty"`
	LastError      string `json:"last_error,omitempty"`
}

// LookupOutbox returns the messages written for one event.
func LookupOutbox(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, k Key) ([]OutboxEntry, error) {
	rows, err := q.Query(ctx, `SELECT idempotency_key, state, attempts, coalesce(last_status, 0), coalesce(last_error, '')
		FROM outbox_messages WHERE source = $1 AND account_id = $2 AND event_id = $3 ORDER BY id`, k.Source, k.AccountID, k.EventID)
	if err != nil {
		return nil, fmt.Errorf("look up outbox: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxEntry, error) {
		var e OutboxEntry
		err := r.Scan(&e.IdempotencyKey, &e.State, &e.Attempts, &e.LastStatus, &e.LastError)
		return e, err
	})
}
