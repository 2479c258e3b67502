-- Inbox mode (docs/reference.md, "Inbox mode"). The handler stores the verified
-- event with its key, inbox_state 'pending' and processed_at NULL, and commits;
-- workers apply it later. A synchronous receiver leaves inbox_state NULL.
--
-- inbox_state: pending (ready at next_attempt_at), claimed (a worker holds it until
-- lease_until), done (applied; processed_at set in the same transaction), dead
-- (dead-lettered after max attempts; processed_at stays NULL so the purge keeps it
-- for an operator).
ALTER TABLE processed_webhook_events
    ADD COLUMN IF NOT EXISTS inbox_state text
        CHECK (inbox_state IN ('pending', 'claimed', 'done', 'dead')),
    -- The fields the handler read from the delivery (object id, amount, ...), so a
    -- worker applies exactly what was verified, without the request headers.
    ADD COLUMN IF NOT EXISTS event jsonb,
    ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_error text,
    ADD COLUMN IF NOT EXISTS claimed_by text,
    ADD COLUMN IF NOT EXISTS lease_until timestamptz,
    ADD COLUMN IF NOT EXISTS next_attempt_at timestamptz,
    ADD COLUMN IF NOT EXISTS dead_at timestamptz;

-- Workers look only at unfinished rows; the partial index stays as small as the
-- backlog.
CREATE INDEX IF NOT EXISTS processed_webhook_events_inbox_ready
    ON processed_webhook_events (next_attempt_at) WHERE inbox_state = 'pending';
CREATE INDEX IF NOT EXISTS processed_webhook_events_inbox_claimed
    ON processed_webhook_events (lease_until) WHERE inbox_state = 'claimed';
