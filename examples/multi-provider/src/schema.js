'use strict';

// The app's tables, created at startup when missing (one version of the
// schema, so no migration table). Unique constraints live in CREATE TABLE:
// CREATE INDEX IF NOT EXISTS locks the table even when the index exists, and
// a restart must not queue behind a long transaction.
const SCHEMA = `
-- One row per event processed, keyed as the providers identify events: the
-- source (twilio, discord, zoom, clerk), the account the endpoint serves, and
-- the provider's event ID.
CREATE TABLE IF NOT EXISTS webhook_events (
  source      text NOT NULL,
  account     text NOT NULL,
  event_id    text NOT NULL,
  type        text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  payload     text,
  PRIMARY KEY (source, account, event_id)
);

-- The points ledger: one row per handled event.
CREATE TABLE IF NOT EXISTS points (
  id          bigserial PRIMARY KEY,
  source      text NOT NULL,
  account     text NOT NULL,
  event_id    text NOT NULL,
  subject     text NOT NULL,
  points      integer NOT NULL,
  reason      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
`;

// ensureSchema creates the tables, serialised by an advisory lock so that two
// instances starting together do not race on the catalog.
async function ensureSchema(pool) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('multi-provider schema'))");
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
