package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// maxAttempts: a task that failed this often stays in the inbox, pending,
	// with its last error (the dead letter an operator looks at).
	maxAttempts = 5
	// retryBase is the first retry's delay; each further one doubles it.
	retryBase = 50 * time.Millisecond
	// claimLease is how long a claimed task is held back from other workers:
	// a worker that dies leaves it to be claimed again after this.
	claimLease = time.Second
	// taskTimeout bounds one task's transaction. It is generous: the task may
	// wait on a lock another session holds.
	taskTimeout = 60 * time.Second
)

// task is one claimed inbox row.
type task struct {
	id         int64
	deliveryID string
	event      string
	payload    []byte
	attempts   int
}

// work runs one worker until the gateway stops. A task in progress is
// finished first: its transaction does not use the stop signal.
func (g *Gateway) work(n int) {
	idle := time.NewTimer(g.pollEvery)
	defer idle.Stop()
	for {
		select {
		case <-g.stop:
			return
		default:
		}
		did, err := g.runOne()
		if err != nil {
			// The claim itself failed (the database is away): wait a poll.
			g.log.Warn("worker could not claim a task", "worker", n, "err", err)
		}
		if did {
			continue
		}
		idle.Reset(g.pollEvery)
		select {
		case <-g.stop:
			return
		case <-g.wake:
		case <-idle.C:
		}
	}
}

// runOne claims one due task and processes it. The claim is committed on its
// own and counts the attempt at once, with the task held back for claimLease:
// an attempt whose session dies (a crash, a terminated backend) is counted all
// the same, and the task comes back when the lease runs out. The task is then
// processed in one transaction that locks its row again, so it is done exactly
// when its effect is committed. did is false when no task was due.
func (g *Gateway) runOne() (did bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), taskTimeout)
	defer cancel()
	var t task
	err = g.pool.QueryRow(ctx, `
		UPDATE inbox SET attempts = attempts + 1, available_at = now() + $2 * interval '1 millisecond'
		WHERE id = (SELECT id FROM inbox
		            WHERE done_at IS NULL AND attempts < $1 AND available_at <= now()
		            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id, delivery_id, event, payload::text, attempts`, maxAttempts, claimLease.Milliseconds()).
		Scan(&t.id, &t.deliveryID, &t.event, &t.payload, &t.attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	tx, err := g.pool.Begin(ctx)
	if err != nil {
		return true, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// Still ours: not done meanwhile (by a worker that took it after an
	// expired lease) and not claimed again since.
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM inbox WHERE id = $1 AND done_at IS NULL AND attempts = $2 FOR UPDATE`, t.id, t.attempts).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return true, err
	}
	// The effect runs under a savepoint, so a failure is recorded in the same
	// transaction, while the row is still locked.
	sp, err := tx.Begin(ctx)
	if err != nil {
		return true, err
	}
	perr := g.process(ctx, sp, t)
	if perr == nil {
		perr = sp.Commit(ctx)
	}
	if perr == nil {
		// last_error stays as the record of the last failure before the task
		// succeeded.
		_, err := tx.Exec(ctx, `UPDATE inbox SET done_at = now() WHERE id = $1`, t.id)
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			// The transaction is gone with its effect: a failed attempt,
			// counted at the claim; the task comes back after the lease.
			g.log.Warn("task failed at commit, will retry after the lease", "task", t.id, "delivery", t.deliveryID, "err", err)
		}
		return true, nil
	}
	if sp.Rollback(ctx) == nil && g.fail(ctx, tx, t, perr) == nil && tx.Commit(ctx) == nil {
		return true, nil
	}
	// The session itself failed (say it was terminated): the attempt was
	// counted at the claim, and the task is offered again after the lease. Its
	// error is noted on another session, unless the task was claimed since.
	_ = tx.Rollback(context.Background())
	msg := perr.Error()
	if len(msg) > 2000 {
		msg = msg[:2000]
	}
	_, _ = g.pool.Exec(ctx, `UPDATE inbox SET last_error = $2 WHERE id = $1 AND attempts = $3 AND done_at IS NULL`, t.id, msg, t.attempts)
	g.log.Warn("task failed with its session; will retry after the lease", "task", t.id, "delivery", t.deliveryID, "attempts", t.attempts, "err", perr)
	return true, nil
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// fail records a failed attempt (counted at the claim) with its error, and
// schedules the retry with exponential backoff, in the task's transaction.
func (g *Gateway) fail(ctx context.Context, db execer, t task, cause error) error {
	delay := retryBase << (t.attempts - 1)
	msg := cause.Error()
	if len(msg) > 2000 {
		msg = msg[:2000]
	}
	if _, err := db.Exec(ctx, `
		UPDATE inbox SET last_error = $2, available_at = now() + $3 * interval '1 millisecond'
		WHERE id = $1`, t.id, msg, delay.Milliseconds()); err != nil {
		g.log.Error("could not record a failed attempt", "task", t.id, "delivery", t.deliveryID, "err", err)
		return err
	}
	if t.attempts >= maxAttempts {
		g.log.Error("task dead-lettered", "task", t.id, "delivery", t.deliveryID, "event", t.event, "attempts", t.attempts, "err", cause)
	} else {
		g.log.Warn("task failed, will retry", "task", t.id, "delivery", t.deliveryID, "event", t.event, "attempts", t.attempts, "retry_in", delay, "err", cause)
	}
	return nil
}

// process applies one delivery at most once per delivery GUID: the processed
// row and the effect commit together, or neither does.
func (g *Gateway) process(ctx context.Context, tx pgx.Tx, t task) error {
	first, err := g.claimDelivery(ctx, tx, t)
	if err != nil || !first {
		return err
	}
	switch t.event {
	case "issues":
		return applyIssues(ctx, tx, t)
	default:
		// Events the gateway is subscribed to but does not act on (ping, watch…)
		// are recorded and done.
		return nil
	}
}

// claimDelivery records the delivery as processed; first is false when it
// already was (a redelivery, or another copy of the task).
func (g *Gateway) claimDelivery(ctx context.Context, tx pgx.Tx, t task) (first bool, err error) {
	if g.cfg.Defect == DefectCheckThenInsert {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM processed WHERE delivery_id = $1`, t.deliveryID).Scan(&one)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO processed (delivery_id, event) VALUES ($1, $2)`, t.deliveryID, t.event)
		return err == nil, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO processed (delivery_id, event) VALUES ($1, $2) ON CONFLICT (delivery_id) DO NOTHING`,
		t.deliveryID, t.event)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// issuesPayload is the part of an issues event the gateway records
// (docs.github.com, webhook events and payloads: issues).
type issuesPayload struct {
	Action string `json:"action"`
	Issue  *struct {
		ID int64 `json:"id"`
	} `json:"issue"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// applyIssues records one issue_activity row for the delivery.
func applyIssues(ctx context.Context, tx pgx.Tx, t task) error {
	var p issuesPayload
	if err := json.Unmarshal(t.payload, &p); err != nil {
		return fmt.Errorf("issues payload: %w", err)
	}
	var issueID *int64
	if p.Issue != nil {
		issueID = &p.Issue.ID
	}
	var repo *string
	if p.Repository != nil && p.Repository.FullName != "" {
		repo = &p.Repository.FullName
	}
	var action *string
	if p.Action != "" {
		action = &p.Action
	}
	_, err := tx.Exec(ctx, `INSERT INTO issue_activity (delivery_id, issue_id, action, repo) VALUES ($1, $2, $3, $4)`,
		t.deliveryID, issueID, action, repo)
	return err
}
