-- Outbox (docs/reference.md, "Outbox"). A business change that must reach a
-- downstream service writes its message here in the business transaction; a
-- dispatcher sends it later with an Idempotency-Key derived from the event key, so
-- a resend after a lost response or a crash is applied once downstream.
CREATE TABLE IF NOT EXISTS outbox_messages (
    id              bigserial   PRIMARY KEY,
    source          text        NOT NULL,
    account_id      text        NOT NULL,
    event_id        text        NOT NULL,
    kind            text        NOT NULL,
    -- Stable across retries, crashes and redeliveries: one message per event and kind.
    idempotency_key text        NOT NULL UNIQUE,
    body            jsonb       NOT NULL,
    state           text        NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'claimed', 'sent', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text,
    last_status     integer,
    claimed_by      text,
    lease_until     timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    dead_at         timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_messages_ready ON outbox_messages (next_attempt_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS outbox_messages_claimed ON outbox_messages (lease_until) WHERE state = 'claimed';
CREATE INDEX IF NOT EXISTS outbox_messages_event ON outbox_messages (source, account_id, event_id);
