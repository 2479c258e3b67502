package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Inbox states (column inbox_state; NULL for a synchronously processed event).
const (
	InboxPending = "pending"
	InboxClaimed = "claimed"
	InboxDone    = "done"
	InboxDead    = "dead"
)

// ErrClaimLost means the task is no longer claimed by this worker (its lease
// expired and it was re-offered, or it is finished): nothing was applied.
var ErrClaimLost = errors.New("claim lost")

// Beginner starts transactions (a *pgxpool.Pool or a *pgx.Conn).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// storedEvent is the inbox row's event column: the fields the handler read, so a
// worker needs neither the request headers nor the profile to apply it.
type storedEvent struct {
	ObjectID string `json:"object_id,omitempty"`
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	Status   string `json:"status,omitempty"`
	Version  int64  `json:"version,omitempty"`
}

// InsertInbox records the key with the event as pending work (processed_at NULL,
// so the purge keeps it) unless the key exists, and reports whether this call
// inserted it. The unique key index arbitrates concurrent copies as in InsertKey.
func InsertInbox(ctx context.Context, q Querier, ev Event) (bool, error) {
	fields, err := json.Marshal(storedEvent{ev.ObjectID, ev.Amount, ev.Currency, ev.Status, ev.Version})
	if err != nil {
		return false, fmt.Errorf("encode event: %w", err)
	}
	var one int
	err = q.QueryRow(ctx, `INSERT INTO processed_webhook_events
		(source, account_id, event_id, event_type, payload, processed_at, inbox_state, event, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, NULL, 'pending', $6, now())
		ON CONFLICT (source, account_id, event_id) DO NOTHING
		RETURNING 1`, ev.Source, ev.AccountID, ev.EventID, ev.Type, ev.Payload, fields).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("insert inbox event: %w", err)
	}
	return true, nil
}

// Task is one claimed inbox event.
type Task struct {
	Key
	// Attempts counts claims so far, this one included.
	Attempts int
}

// Claim takes up to n pending events whose next attempt is due, for worker, until
// now + lease. FOR UPDATE SKIP LOCKED lets concurrent workers claim disjoint rows
// without waiting for each other.
func Claim(ctx context.Context, q Beginner, worker string, lease time.Duration, n int) ([]Task, error) {
	return claim(ctx, q, worker, lease, n, true)
}

// claim is Claim; countAttempt false leaves attempts alone (a defect).
func claim(ctx context.Context, q Beginner, worker string, lease time.Duration, n int, countAttempt bool) ([]Task, error) {
	var tasks []Task
	err := pgx.BeginFunc(ctx, q, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE processed_webhook_events p
			SET inbox_state = 'claimed', claimed_by = $1, lease_until = now() + $2 * interval '1 millisecond',
			    attempts = p.attempts + CASE WHEN $4 THEN 1 ELSE 0 END
			FROM (SELECT source, account_id, event_id FROM processed_webhook_events
			      WHERE inbox_state = 'pending' AND next_attempt_at <= now()
			      ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) c
			WHERE p.source = c.source AND p.account_id = c.account_id AND p.event_id = c.event_id
			RETURNING p.source, p.account_id, p.event_id, p.attempts`, worker, lease.Milliseconds(), n, countAttempt)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t Task
			if err := rows.Scan(&t.Source, &t.AccountID, &t.EventID, &t.Attempts); err != nil {
				return err
			}
			tasks = append(tasks, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim inbox events: %w", err)
	}
	return tasks, nil
}

// ApplyClaimed applies a claimed event and marks it done in ONE transaction: the
// row is locked only if worker still holds the claim (ErrClaimLost otherwise), so
// a duplicate dispatch of one task applies nothing, and a worker that dies
// mid-transaction leaves the event claimed, to be re-offered after its lease.
// hook, if set, runs inside the transaction after Apply (a test seam).
func ApplyClaimed(ctx context.Context, db Beginner, t Task, worker string, rules Rules, hook func(pgx.Tx) error) (Result, error) {
	return applyClaimed(ctx, db, t, worker, rules, hook, true)
}

// applyClaimed is ApplyClaimed; markDone false commits the business change
// without marking the event done (a defect does that in a second transaction).
func applyClaimed(ctx context.Context, db Beginner, t Task, worker string, rules Rules, hook func(pgx.Tx) error, markDone bool) (Result, error) {
	var res Result
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		ev := Event{Key: t.Key}
		var fields []byte
		err := tx.QueryRow(ctx, `SELECT event_type, event FROM processed_webhook_events
			WHERE source = $1 AND account_id = $2 AND event_id = $3 AND inbox_state = 'claimed' AND claimed_by = $4
			FOR UPDATE`, t.Source, t.AccountID, t.EventID, worker).Scan(&ev.Type, &fields)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrClaimLost
		}
		if err != nil {
			return fmt.Errorf("lock claimed event: %w", err)
		}
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
		if !markDone {
			return nil
		}
		return markDoneIn(ctx, tx, t.Key)
	})
	return res, err
}

// markDoneIn marks the event done in q's transaction.
func markDoneIn(ctx context.Context, q Querier, k Key) error {
	_, err := q.Exec(ctx, `UPDATE processed_webhook_events
		SET inbox_state = 'done', processed_at = now(), claimed_by = NULL, lease_until = NULL
		WHERE source = $1 AND account_id = $2 AND event_id = $3`, k.Source, k.AccountID, k.EventID)
	if err != nil {
		return fmt.Errorf("mark done: %w", err)
	}
	return nil
}

// decodeStored fills ev from the inbox row's event column.
func decodeStored(ev *Event, fields []byte) error {
	var se storedEvent
	if len(fields) > 0 {
		if err := json.Unmarshal(fields, &se); err != nil {
			return &PermanentError{Err: fmt.Errorf("decode stored event: %w", err)}
		}
	}
	ev.ObjectID, ev.Amount, ev.Currency, ev.Status, ev.Version = se.ObjectID, se.Amount, se.Currency, se.Status, se.Version
	return nil
}

// PermanentError is a failure retrying cannot cure: the event is dead-lettered at
// once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// FailClaimed records a failed attempt of a task worker still claims: the event is
// offered again after backoff, or dead-lettered when it has had maxAttempts
// attempts (or permanent is set). It reports the new state ("" if the claim was
// lost meanwhile).
func FailClaimed(ctx context.Context, q Querier, t Task, worker, lastError string, permanent bool, maxAttempts int, backoff time.Duration) (string, error) {
	var state string
	err := q.QueryRow(ctx, `UPDATE processed_webhook_events
		SET inbox_state = CASE WHEN $5 OR attempts >= $6 THEN 'dead' ELSE 'pending' END,
		    dead_at = CASE WHEN $5 OR attempts >= $6 THEN now() END,
		    last_error = $7, next_attempt_at = now() + $8 * interval '1 millisecond',
		    claimed_by = NULL, lease_until = NULL
		WHERE source = $1 AND account_id = $2 AND event_id = $3 AND inbox_state = 'claimed' AND claimed_by = $4
		RETURNING inbox_state`, t.Source, t.AccountID, t.EventID, worker, permanent, maxAttempts, lastError,
		backoff.Milliseconds()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("record failed attempt: %w", err)
	}
	return state, nil
}

// ReclaimExpired re-offers up to n claimed events whose lease has run out (their
// worker died or hung outside its transaction), dead-lettering those that have had
// maxAttempts attempts. A worker still inside its apply transaction holds the row
// lock, so SKIP LOCKED leaves it alone. It returns how many rows it touched.
func ReclaimExpired(ctx context.Context, q Querier, maxAttempts, n int) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE processed_webhook_events p
		SET inbox_state = CASE WHEN p.attempts >= $1 THEN 'dead' ELSE 'pending' END,
		    dead_at = CASE WHEN p.attempts >= $1 THEN now() END,
		    last_error = 'lease of ' || coalesce(p.claimed_by, '?') || ' expired before the event was done',
		    next_attempt_at = now(), claimed_by = NULL, lease_until = NULL
		FROM (SELECT source, account_id, event_id FROM processed_webhook_events
		      WHERE inbox_state = 'claimed' AND lease_until < now()
		      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) c
		WHERE p.source = c.source AND p.account_id = c.account_id AND p.event_id = c.event_id`, maxAttempts, n)
	if err != nil {
		return 0, fmt.Errorf("reclaim expired leases: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ReleaseClaims hands back claims worker took but never started (its lease ran
// short before their turn): each is pending again at once, and the attempt its
// claim counted is undone, since nothing was attempted. A claim the worker no
// longer holds is left alone.
func ReleaseClaims(ctx context.Context, q Querier, worker string, tasks []Task) error {
	for _, t := range tasks {
		if _, err := q.Exec(ctx, `UPDATE processed_webhook_events
			SET inbox_state = 'pending', claimed_by = NULL, lease_until = NULL, attempts = greatest(attempts - 1, 0)
			WHERE source = $1 AND account_id = $2 AND event_id = $3 AND inbox_state = 'claimed' AND claimed_by = $4`,
			t.Source, t.AccountID, t.EventID, worker); err != nil {
			return fmt.Errorf("release inbox claim: %w", err)
		}
	}
	return nil
}

// InboxEntry is one inbox row as an operator sees it.
type InboxEntry struct {
	Key
	Type       string     `json:"type"`
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	LastError  string     `json:"last_error,omitempty"`
	ClaimedBy  string     `json:"claimed_by,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	DeadAt     *time.Time `json:"dead_at,omitempty"`
}

// LookupInbox returns the inbox row of a key (pgx.ErrNoRows wrapped when absent).
func LookupInbox(ctx context.Context, q Querier, k Key) (InboxEntry, error) {
	e := InboxEntry{Key: k}
	var state, lastErr, claimedBy *string
	err := q.QueryRow(ctx, `SELECT event_type, inbox_state, attempts, last_error, claimed_by, lease_until, dead_at
		FROM processed_webhook_events WHERE source = $1 AND account_id = $2 AND event_id = $3`,
		k.Source, k.AccountID, k.EventID).Scan(&e.Type, &state, &e.Attempts, &lastErr, &claimedBy, &e.LeaseUntil, &e.DeadAt)
	if err != nil {
		return e, fmt.Errorf("look up inbox event: %w", err)
	}
	e.State, e.LastError, e.ClaimedBy = deref(state), deref(lastErr), deref(claimedBy)
	return e, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
