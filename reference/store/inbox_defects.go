package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The broken variants of the inbox statements, used only by the reference's inbox
// defects (docs/reference.md, "Defects"). Each is a faithful copy of a real-world
// mistake; the correct statements are in inbox.go.

// ClaimWithoutAttempts is Claim without counting the attempt (the
// retry-without-attempts defect): attempts stays 0 whatever happens.
func ClaimWithoutAttempts(ctx context.Context, q Beginner, worker string, lease time.Duration, n int) ([]Task, error) {
	return claim(ctx, q, worker, lease, n, false)
}

// PollAndApply is the poll-without-claim defect's worker step: ONE transaction
// reads the oldest due pending event with a plain SELECT (no FOR UPDATE, no SKIP
// LOCKED, no claim written), applies it and marks it done by key, checking nothing
// else. Workers that poll while another is still applying the same event (its
// transaction uncommitted, so the row still reads pending) all apply it. ok is
// false when nothing was due. On an apply error the transaction rolls back and
// the task is returned for FailUnclaimed.
func PollAndApply(ctx context.Context, db Beginner, rules Rules, hook func(pgx.Tx) error) (t Task, res Result, ok bool, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		ev := Event{}
		var fields []byte
		err := tx.QueryRow(ctx, `SELECT source, account_id, event_id, event_type, event, attempts
			FROM processed_webhook_events
			WHERE inbox_state = 'pending' AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT 1`).Scan(&ev.Source, &ev.AccountID, &ev.EventID, &ev.Type, &fields, &t.Attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("poll pending event: %w", err)
		}
		ok = true
		t.Key = ev.Key
		t.Attempts++ // this one
		if err := decodeStored(&ev, fields); err != nil {
			return err
		}
		if res, err = Apply(ctx, tx, ev, rules); err != nil {
			return err
		}
		if hook != nil {
			if err := hook(tx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE processed_webhook_events
			SET inbox_state = 'done', processed_at = now(), attempts = attempts + 1
			WHERE source = $1 AND account_id = $2 AND event_id = $3`, ev.Source, ev.AccountID, ev.EventID)
		if err != nil {
			return fmt.Errorf("mark done: %w", err)
		}
		return nil
	})
	return t, res, ok, err
}

// FailUnclaimed records a failed attempt of a polled (never claimed) event, by
// key: retried after backoff, dead-lettered after maxAttempts attempts or at once
// if permanent. It returns the new state ("" if the event is no longer pending).
func FailUnclaimed(ctx context.Context, q Querier, k Key, lastError string, permanent bool, maxAttempts int, backoff time.Duration) (string, error) {
	var state string
	err := q.QueryRow(ctx, `UPDATE processed_webhook_events
		SET attempts = attempts + 1,
		    inbox_state = CASE WHEN $4 OR attempts + 1 >= $5 THEN 'dead' ELSE 'pending' END,
		    dead_at = CASE WHEN $4 OR attempts + 1 >= $5 THEN now() END,
		    last_error = $6, next_attempt_at = now() + $7 * interval '1 millisecond'
		WHERE source = $1 AND account_id = $2 AND event_id = $3 AND inbox_state = 'pending'
		RETURNING inbox_state`, k.Source, k.AccountID, k.EventID, permanent, maxAttempts, lastError,
		backoff.Milliseconds()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("record failed attempt: %w", err)
	}
	return state, nil
}

// ApplyThenMarkDone is the mark-done-separate-tx defect: the business change
// commits in one transaction (conditional on the claim, as ApplyClaimed), and the
// event is marked done in a second one. A worker that dies between the two leaves
// the event claimed with its effect committed; after the lease it is re-offered
// and applied again. between, if set, runs between the two transactions (a test
// seam); an error from it returns before the event is marked done.
func ApplyThenMarkDone(ctx context.Context, db Beginner, t Task, worker string, rules Rules, hook func(pgx.Tx) error, between func() error) (Result, error) {
	res, err := applyClaimed(ctx, db, t, worker, rules, hook, false)
	if err != nil {
		return res, err
	}
	if between != nil {
		if err := between(); err != nil {
			return res, err
		}
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return markDoneIn(ctx, tx, t.Key) })
	return res, err
}

// FailClaimedUnrecorded is the retry-without-attempts defect's failure path: the
// event goes back to pending after backoff with no attempt count and no last
// error, and is never dead-lettered. It reports the new state ("" if the claim
// was lost).
func FailClaimedUnrecorded(ctx context.Context, q Querier, t Task, worker string, backoff time.Duration) (string, error) {
	var state string
	err := q.QueryRow(ctx, `UPDATE processed_webhook_events
		SET inbox_state = 'pending', next_attempt_at = now() + $5 * interval '1 millisecond',
		    claimed_by = NULL, lease_until = NULL
		WHERE source = $1 AND account_id = $2 AND event_id = $3 AND inbox_state = 'claimed' AND claimed_by = $4
		RETURNING inbox_state`, t.Source, t.AccountID, t.EventID, worker, backoff.Milliseconds()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("put failed event back: %w", err)
	}
	return state, nil
}

// ReclaimExpiredUnrecorded is ReclaimExpired for the retry-without-attempts
// defect: expired claims go back to pending with no last error and are never
// dead-lettered.
func ReclaimExpiredUnrecorded(ctx context.Context, q Querier, n int) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE processed_webhook_events p
		SET inbox_state = 'pending', next_attempt_at = now(), claimed_by = NULL, lease_until = NULL
		FROM (SELECT source, account_id, event_id FROM processed_webhook_events
		      WHERE inbox_state = 'claimed' AND lease_until < now()
		      ORDER BY lease_until LIMIT $1 FOR UPDATE SKIP LOCKED) c
		WHERE p.source = c.source AND p.account_id = c.account_id AND p.event_id = c.event_id`, n)
	if err != nil {
		return 0, fmt.Errorf("reclaim expired leases: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DropClaimedIfDead is the drop-dead-letters defect: a claimed event that would
// be dead-lettered now (permanent, or maxAttempts attempts) is deleted, key and
// all. It reports whether it deleted the row; false leaves the caller to record
// the failure as usual.
func DropClaimedIfDead(ctx context.Context, q Querier, t Task, worker string, permanent bool, maxAttempts int) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM processed_webhook_events
		WHERE source = $1 AND account_id = $2 AND event_id = $3 AND inbox_state = 'claimed' AND claimed_by = $4
		  AND ($5 OR attempts >= $6)`, t.Source, t.AccountID, t.EventID, worker, permanent, maxAttempts)
	if err != nil {
		return false, fmt.Errorf("drop dead event: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// DropExpiredDead is the drop-dead-letters defect's reconciler step: expired
// claims that have had maxAttempts attempts are deleted instead of
// dead-lettered. It returns how many it deleted.
func DropExpiredDead(ctx context.Context, q Querier, maxAttempts, n int) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM processed_webhook_events p
		USING (SELECT source, account_id, event_id FROM processed_webhook_events
		       WHERE inbox_state = 'claimed' AND lease_until < now() AND attempts >= $1
		       ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) c
		WHERE p.source = c.source AND p.account_id = c.account_id AND p.event_id = c.event_id`, maxAttempts, n)
	if err != nil {
		return 0, fmt.Errorf("drop expired dead events: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ReclaimOutboxAsSent is the drop-failed-sends defect's reconciler step: expired
// claims that have had maxAttempts attempts are marked sent instead of
// dead-lettered. It returns how many it marked.
func ReclaimOutboxAsSent(ctx context.Context, q Querier, maxAttempts, n int) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE outbox_messages o
		SET state = 'sent', sent_at = now(), claimed_by = NULL, lease_until = NULL
		FROM (SELECT id FROM outbox_messages WHERE state = 'claimed' AND lease_until < now() AND attempts >= $1
		      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) c
		WHERE o.id = c.id`, maxAttempts, n)
	if err != nil {
		return 0, fmt.Errorf("mark expired outbox messages sent: %w", err)
	}
	return tag.RowsAffected(), nil
}

// RequeueClaimed is the requeue-on-boot defect's start-up step: every claimed
// event not locked by a worker's open transaction goes back to pending, lease
// or no lease, on the belief that a starting process means its workers died.
func RequeueClaimed(ctx context.Context, q Querier) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE processed_webhook_events p
		SET inbox_state = 'pending', next_attempt_at = now(), claimed_by = NULL, lease_until = NULL
		FROM (SELECT source, account_id, event_id FROM processed_webhook_events
		      WHERE inbox_state = 'claimed' FOR UPDATE SKIP LOCKED) c
		WHERE p.source = c.source AND p.account_id = c.account_id AND p.event_id = c.event_id`)
	if err != nil {
		return 0, fmt.Errorf("requeue claimed events: %w", err)
	}
	return tag.RowsAffected(), nil
}
