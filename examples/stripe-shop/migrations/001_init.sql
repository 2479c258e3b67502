-- Webhook bookkeeping: one row per Stripe event, per endpoint (mode, account).
-- The primary key is what makes a redelivery a no-op; the payload is kept for
-- debugging and replays and cleared by `stripe-shop purge` after 7 days.
CREATE TABLE IF NOT EXISTS stripe_events (
    mode        text        NOT NULL CHECK (mode IN ('live', 'test')),
    account     text        NOT NULL,
    event_id    text        NOT NULL,
    type        text        NOT NULL,
    payload     jsonb,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (mode, account, event_id)
);
CREATE INDEX IF NOT EXISTS stripe_events_received_at ON stripe_events (received_at);

-- Orders' payments. Checkout creates the row (status processing) when it
-- creates the PaymentIntent, before Stripe sends anything about it.
CREATE TABLE IF NOT EXISTS payments (
    id         text        PRIMARY KEY, -- pi_...
    account    text        NOT NULL,
    amount     bigint      NOT NULL CHECK (amount >= 0),
    currency   text        NOT NULL,
    status     text        NOT NULL DEFAULT 'processing'
               CHECK (status IN ('processing', 'succeeded', 'failed', 'refunded')),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Money movements as the shop books them.
CREATE TABLE IF NOT EXISTS ledger (
    id         bigserial   PRIMARY KEY,
    mode       text        NOT NULL,
    account    text        NOT NULL,
    payment_id text,
    charge_id  text,
    kind       text        NOT NULL CHECK (kind IN ('charge', 'payment', 'refund')),
    amount     bigint      NOT NULL,
    currency   text        NOT NULL,
    event_id   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Stripe may send two events (two evt_ IDs) for one change: a payment is
-- credited once and refunded once whatever the events say.
CREATE UNIQUE INDEX IF NOT EXISTS ledger_one_per_payment ON ledger (payment_id, kind)
    WHERE kind IN ('payment', 'refund');
CREATE INDEX IF NOT EXISTS ledger_event ON ledger (mode, account, event_id);
CREATE INDEX IF NOT EXISTS ledger_charge ON ledger (charge_id);

-- Customer profile mirrored from Stripe. last_event_at is the created time of
-- the event last applied: Stripe does not deliver in order.
CREATE TABLE IF NOT EXISTS customers (
    id            text PRIMARY KEY, -- cus_...
    account       text NOT NULL,
    email         text,
    last_event_at timestamptz
);
