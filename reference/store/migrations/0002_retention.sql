-- Two-tier retention (docs/reference.md, "Retention").
--
-- processed_at: when the event's work finished. The synchronous receiver finishes
-- inside the insert's transaction, so the default marks it done at once; an inbox or
-- outbox receiver inserts NULL and sets it when its worker is done. The purge never
-- touches a row whose processed_at is NULL: unfinished work keeps its key and its
-- payload whatever its age.
ALTER TABLE processed_webhook_events ADD COLUMN IF NOT EXISTS processed_at timestamptz DEFAULT now();
-- payload_purged_at: when the purge removed the payload (the key stays until the key
-- TTL); NULL while the payload is kept.
ALTER TABLE processed_webhook_events ADD COLUMN IF NOT EXISTS payload_purged_at timestamptz;

-- The purge walks each endpoint's (source, account_id) rows by age. The partial index
-- lets the payload pass skip rows whose payload is already gone, so a batch never
-- rescans what earlier batches cleared.
CREATE INDEX IF NOT EXISTS processed_webhook_events_age
    ON processed_webhook_events (source, account_id, received_at);
CREATE INDEX IF NOT EXISTS processed_webhook_events_payload_age
    ON processed_webhook_events (source, account_id, received_at) WHERE payload IS NOT NULL;
