package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Retention of stripe_events. Stripe retries for up to 3 days and its CLI
// resends events up to 30 days old: an event ID is kept that long so a resend
// is still recognised. The payload is only for debugging and is cleared after
// a week.
const (
	DefaultKeyTTL     = 30 * 24 * time.Hour
	DefaultPayloadTTL = 7 * 24 * time.Hour
)

type purgeResult struct{ KeysDeleted, PayloadsCleared int64 }

// purge deletes the event keys received before asOf − keyTTL and clears the
// payloads of those received before asOf − payloadTTL, as if the clock read
// asOf (a cron job passes now).
func purge(ctx context.Context, pool *pgxpool.Pool, asOf time.Time, keyTTL, payloadTTL time.Duration) (purgeResult, error) {
	var res purgeResult
	tx, err := pool.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `DELETE FROM stripe_events WHERE received_at < $1`, asOf.Add(-keyTTL))
	if err != nil {
		return res, err
	}
	res.KeysDeleted = tag.RowsAffected()
	tag, err = tx.Exec(ctx, `UPDATE stripe_events SET payload = NULL WHERE payload IS NOT NULL AND received_at < $1`, asOf.Add(-payloadTTL))
	if err != nil {
		return res, err
	}
	res.PayloadsCleared = tag.RowsAffected()
	return res, tx.Commit(ctx)
}

// purgeDatabase is the purge command: it opens the database at url, brings
// its schema up to date and purges it as of asOf.
func purgeDatabase(ctx context.Context, url string, asOf time.Time, keyTTL, payloadTTL time.Duration) (purgeResult, error) {
	pool, err := openPool(ctx, url, 2)
	if err != nil {
		return purgeResult{}, fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return purgeResult{}, fmt.Errorf("migrations: %w", err)
	}
	return purge(ctx, pool, asOf, keyTTL, payloadTTL)
}
