'use strict';

// The app's tables. Created at startup when missing; there is one version of
// the schema, so no migration table.
//
// Unique constraints live in CREATE TABLE rather than separate CREATE INDEX
// statements: CREATE INDEX IF NOT EXISTS locks the table even when the index
// exists, and a restart must not queue behind a long transaction.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_events (
  event_id    text PRIMARY KEY,
  type        text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  payload     jsonb
);

CREATE TABLE IF NOT EXISTS payments (
  id          bigserial PRIMARY KEY,
  invoice_id  text NOT NULL,
  event_id    text NOT NULL,
  customer_id text,
  amount      bigint,
  currency    text,
  paid_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS orders (
  id          text PRIMARY KEY,
  customer_id text,
  amount      bigint NOT NULL,
  currency    text NOT NULL,
  status      text NOT NULL DEFAULT 'pending'
              CHECK (status IN ('pending', 'shipped', 'delivered', 'cancelled')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS shipments (
  id              bigserial PRIMARY KEY,
  order_id        text NOT NULL UNIQUE REFERENCES orders (id),
  carrier         text,
  tracking_number text,
  event_id        text NOT NULL,
  shipped_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS customers (
  id         text PRIMARY KEY,
  email      text,
  name       text,
  version    bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- A deleted customer stays as a tombstone holding the deletion's version,
  -- so that an older update arriving late cannot bring it back.
  deleted_at timestamptz
);
`;

// ensureSchema creates the tables, serialised by an advisory lock so that two
// instances starting together do not race on the catalog.
async function ensureSchema(pool) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('node-receiver schema'))");
    await client.query(SCHEMA);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

module.exports = { ensureSchema, SCHEMA };
