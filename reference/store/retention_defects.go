package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The broken variant of the purge, used only by the reference's purge-pending
// defect (docs/reference.md, "Defects"); the correct purge is in retention.go.

// deleteAllKeysSQL is deleteKeysSQL without the unfinished-work guard.
const deleteAllKeysSQL = `DELETE FROM processed_webhook_events WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM processed_webhook_events
		WHERE source = $1 AND account_id = $2 AND received_at < $3 AND received_at >= $5
		ORDER BY received_at
		LIMIT $4 FOR UPDATE SKIP LOCKED))
		RETURNING received_at`

// PurgeUnfinished is Purge deleting keys past their TTL whatever their work's
// state (the purge-pending defect): pending and claimed inbox events go too, so
// accepted work is never applied.
func PurgeUnfinished(ctx context.Context, pool *pgxpool.Pool, scopes []PurgeScope, opts PurgeOptions) (PurgeResult, error) {
	return purge(ctx, pool, scopes, opts, deleteAllKeysSQL)
}
