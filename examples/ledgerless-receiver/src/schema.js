'use strict';

// The synced tables: Stripe's objects as they were last seen. No table of
// events: each row carries last_synced_at, the created time of the event it
// was last written from, and that is all the deduplication there is.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS customers (
  id             text PRIMARY KEY,
  email          text,
  name           text,
  metadata       jsonb NOT NULL DEFAULT '{}',
  deleted        boolean NOT NULL DEFAULT false,
  last_synced_at timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS subscriptions (
  id             text PRIMARY KEY,
  customer       text,
  status         text,
  metadata       jsonb NOT NULL DEFAULT '{}',
  deleted        boolean NOT NULL DEFAULT false,
  last_synced_at timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS subscription_items (
  id             text PRIMARY KEY,
  subscription   text NOT NULL,
  price          text,
  quantity       integer,
  last_synced_at timestamptz NOT NULL
);
`;

// ensureSchema creates the tables under an advisory lock, so two processes
// starting at once do not race on the catalog.
async function ensureSchema(pool) {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(72310901)');
    try {
      await client.query(SCHEMA);
    } finally {
      await client.query('SELECT pg_advisory_unlock(72310901)');
    }
  } finally {
    client.release();
  }
}

module.exports = { ensureSchema };
