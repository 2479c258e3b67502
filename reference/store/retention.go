package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultPurgeBatch is how many rows one purge transaction touches at most: small
// enough that its row locks and its WAL burst are short, so deliveries arriving
// meanwhile are not held up.
const DefaultPurgeBatch = 250

// DefaultPurgePause is the least rest between batches (each rest is also at least
// as long as the batch took). With DefaultPurgeBatch it purges about 8,000 rows/s
// on a 2-core machine, and kept the p99 of concurrent deliveries within 2× of its
// value without a purge in reference/benchmark (docs/reference.md, "Retention").
const DefaultPurgePause = 25 * time.Millisecond

// PurgeScope is the retention of one (source, account) key space, expressed as
// cut-offs: rows received before KeyCutoff lose their key (the whole row), rows
// received before PayloadCutoff lose their payload. A zero cut-off disables that
// tier.
type PurgeScope struct {
	Source        string
	AccountID     string
	KeyCutoff     time.Time
	PayloadCutoff time.Time
}

// PurgeOptions shape a purge run.
type PurgeOptions struct {
	// BatchSize bounds the rows of one transaction; 0 means DefaultPurgeBatch.
	BatchSize int
	// Pause is slept between batches, yielding the database to deliveries: 0 means
	// DefaultPurgePause, a negative value only the rest as long as the batch.
	Pause time.Duration
}

// PurgeResult counts what a purge removed.
type PurgeResult struct {
	KeysDeleted    int64 `json:"keys_deleted"`
	PayloadsPurged int64 `json:"payloads_purged"`
	Batches        int   `json:"batches"`
}

// Add accumulates another result.
func (r *PurgeResult) Add(o PurgeResult) {
	r.KeysDeleted += o.KeysDeleted
	r.PayloadsPurged += o.PayloadsPurged
	r.Batches += o.Batches
}

// The purge statements. Each runs as its own short transaction on at most $4 rows,
// picked through the age index in age order from $5 on (keyset: a batch never
// rescans the dead index entries earlier batches left behind), and returns the
// ages it touched so the next batch starts after them. FOR UPDATE SKIP LOCKED leaves
// rows another transaction holds to a later run instead of waiting for them.
// "processed_at IS NOT NULL" is the unfinished-work hook: a row whose work is
// pending is never purged; the inbox_state guard says the same for inbox rows
// (pending, claimed or dead-lettered rows stay, whatever their processed_at).
const (
	deleteKeysSQL = `DELETE FROM processed_webhook_events WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM processed_webhook_events
		WHERE source = $1 AND account_id = $2 AND received_at < $3 AND received_at >= $5 AND processed_at IS NOT NULL
		  AND (inbox_state IS NULL OR inbox_state = 'done')
		ORDER BY received_at
		LIMIT $4 FOR UPDATE SKIP LOCKED))
		RETURNING received_at`
	purgePayloadsSQL = `UPDATE processed_webhook_events SET payload = NULL, payload_purged_at = now()
		WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM processed_webhook_events
		WHERE source = $1 AND account_id = $2 AND received_at < $3 AND received_at >= $5
		  AND payload IS NOT NULL AND processed_at IS NOT NULL
		  AND (inbox_state IS NULL OR inbox_state = 'done')
		ORDER BY received_at
		LIMIT $4 FOR UPDATE SKIP LOCKED))
		RETURNING received_at`
)

// Purge applies each scope's cut-offs in bounded batches, each batch its own
// transaction, keys first (a row about to be deleted needs no payload pass). It
// returns what was removed so far even when it fails or ctx ends.
func Purge(ctx context.Context, pool *pgxpool.Pool, scopes []PurgeScope, opts PurgeOptions) (PurgeResult, error) {
	return purge(ctx, pool, scopes, opts, deleteKeysSQL)
}

// purge is Purge with the statement that deletes keys (a defect has its own).
func purge(ctx context.Context, pool *pgxpool.Pool, scopes []PurgeScope, opts PurgeOptions, deleteKeys string) (PurgeResult, error) {
	if pool == nil {
		return PurgeResult{}, errors.New("purge: pool: required")
	}
	batch := opts.BatchSize
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	if opts.Pause == 0 {
		opts.Pause = DefaultPurgePause
	}
	var res PurgeResult
	for _, sc := range scopes {
		if !sc.KeyCutoff.IsZero() {
			n, b, err := purgeLoop(ctx, pool, deleteKeys, sc, sc.KeyCutoff, batch, opts.Pause)
			res.KeysDeleted += n
			res.Batches += b
			if err != nil {
				return res, fmt.Errorf("purge keys of (%s, %s): %w", sc.Source, sc.AccountID, err)
			}
		}
		if !sc.PayloadCutoff.IsZero() {
			n, b, err := purgeLoop(ctx, pool, purgePayloadsSQL, sc, sc.PayloadCutoff, batch, opts.Pause)
			res.PayloadsPurged += n
			res.Batches += b
			if err != nil {
				return res, fmt.Errorf("purge payloads of (%s, %s): %w", sc.Source, sc.AccountID, err)
			}
		}
	}
	return res, nil
}

// purgeLoop runs one statement until a batch comes back short. Between batches it
// rests at least as long as the batch took, so the purge never holds more than
// about half of the database's time (and WAL bandwidth) while deliveries arrive.
func purgeLoop(ctx context.Context, pool *pgxpool.Pool, sql string, sc PurgeScope, cutoff time.Time, batch int, pause time.Duration) (int64, int, error) {
	var total int64
	batches := 0
	from := time.Time{} // keyset position: the oldest age not yet passed
	for {
		var n int64
		var last time.Time
		start := time.Now()
		// A purge batch need not wait for its WAL to reach disk: one lost in a
		// crash is redone by the next purge. Not waiting keeps its commits out of
		// the flush queue the deliveries' commits wait in.
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, sql, sc.Source, sc.AccountID, cutoff, batch, from)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var at time.Time
				if err := rows.Scan(&at); err != nil {
					return err
				}
				n++
				if at.After(last) {
					last = at
				}
			}
			return rows.Err()
		})
		if err != nil {
			return total, batches, err
		}
		batches++
		total += n
		if n < int64(batch) {
			return total, batches, nil
		}
		// Rows sharing the last age may remain (LIMIT cut through them): resume at
		// that age, not after it.
		from = last
		rest := max(pause, time.Since(start))
		select {
		case <-ctx.Done():
			return total, batches, ctx.Err()
		case <-time.After(rest):
		}
	}
}
