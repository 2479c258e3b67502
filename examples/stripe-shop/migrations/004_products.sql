-- The catalogue mirrored from Stripe's products. Like customers, a product is
-- updated only by an event newer than the one last applied (last_event_at),
-- and a deleted product keeps its row as a tombstone.
CREATE TABLE IF NOT EXISTS products (
    id            text PRIMARY KEY, -- prod_...
    account       text NOT NULL,
    name          text,
    active        boolean NOT NULL DEFAULT true,
    last_event_at timestamptz,
    deleted_at    timestamptz
);
