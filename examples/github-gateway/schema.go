package main

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaInbox is the queue: one row per accepted delivery, redeliveries
// included (deduplication is the workers' job). available_at delays a retry.
const schemaInbox = `
CREATE TABLE IF NOT EXISTS inbox (
    id           bigserial   PRIMARY KEY,
    delivery_id  text        NOT NULL,
    event        text        NOT NULL,
    payload      jsonb       NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    attempts     int         NOT NULL DEFAULT 0,
    last_error   text,
    done_at      timestamptz,
    available_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (id) WHERE done_at IS NULL;
CREATE INDEX IF NOT EXISTS inbox_delivery ON inbox (delivery_id);

CREATE TABLE IF NOT EXISTS issue_activity (
    id          bigserial   PRIMARY KEY,
    delivery_id text        NOT NULL,
    issue_id    bigint,
    action      text,
    repo        text,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS issue_activity_delivery ON issue_activity (delivery_id);
`

// schemaProcessed records each delivery GUID applied; the primary key is what
// makes two workers holding copies of one delivery apply it once.
const schemaProcessed = `
CREATE TABLE IF NOT EXISTS processed (
    delivery_id  text        PRIMARY KEY,
    event        text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
`

// schemaProcessedOld is the processed table of an older version, before the
// key was a constraint (defect check-then-insert).
const schemaProcessedOld = `
CREATE TABLE IF NOT EXISTS processed (
    delivery_id  text        NOT NULL,
    event        text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS processed_delivery ON processed (delivery_id);
`

// migrate creates the schema. The advisory lock serialises gateways starting
// at once: concurrent CREATE TABLE IF NOT EXISTS can still collide.
func migrate(ctx context.Context, pool *pgxpool.Pool, d Defect) error {
	processed := schemaProcessed
	if d == DefectCheckThenInsert {
		processed = schemaProcessedOld
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7263541)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schemaInbox+processed)
		return err
	})
}
