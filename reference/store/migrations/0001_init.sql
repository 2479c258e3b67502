-- The reference receiver's schema. Every table is keyed by (source, account_id, ...)
-- so that two providers or two accounts can never collide on an ID.

-- One row per accepted event: the event key that gates the business change.
CREATE TABLE IF NOT EXISTS processed_webhook_events (
    source      text        NOT NULL,
    account_id  text        NOT NULL,
    event_id    text        NOT NULL,
    event_type  text        NOT NULL,
    -- Raw request body, kept for later processing; bytea so that any byte sequence
    -- the signature covered is stored exactly.
    payload     bytea,
    received_at timestamptz NOT NULL DEFAULT now()
);
-- The database arbitrates concurrent duplicates through this index
-- (INSERT ... ON CONFLICT DO NOTHING). It is (re)created by Migrate, not here, so that
-- a database left by a check-then-insert defect run is detected with a clear message.

CREATE TABLE IF NOT EXISTS ledger_entries (
    id         bigserial   PRIMARY KEY,
    source     text        NOT NULL,
    account_id text        NOT NULL,
    event_id   text        NOT NULL,
    object_id  text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('cash', 'payment', 'refund')),
    amount     bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Domain constraint: one payment and one refund entry per payment, whatever the
-- number of distinct events that claim it.
CREATE UNIQUE INDEX IF NOT EXISTS ledger_entries_one_per_payment
    ON ledger_entries (source, account_id, object_id, kind) WHERE kind IN ('payment', 'refund');
CREATE INDEX IF NOT EXISTS ledger_entries_event
    ON ledger_entries (source, account_id, event_id);

CREATE TABLE IF NOT EXISTS account_balances (
    source     text        NOT NULL,
    account_id text        NOT NULL,
    balance    bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, account_id)
);

CREATE TABLE IF NOT EXISTS payments (
    source              text        NOT NULL,
    account_id          text        NOT NULL,
    payment_id          text        NOT NULL,
    status              text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'refunded')),
    amount              bigint      NOT NULL,
    currency            text        NOT NULL DEFAULT '',
    updated_by_event_id text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, account_id, payment_id)
);

CREATE TABLE IF NOT EXISTS subscriptions (
    source              text        NOT NULL,
    account_id          text        NOT NULL,
    object_id           text        NOT NULL,
    version             bigint      NOT NULL,
    status              text        NOT NULL,
    updated_by_event_id text        NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, account_id, object_id)
);
