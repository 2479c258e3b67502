'use strict';

// The app's tables (InnoDB, utf8mb4), created at startup when missing. There is
// one version of the schema, so no migration table.

// webhookEvents is the event log. The UNIQUE key on (source, event_id) is what
// deduplicates: a second insert of a key fails with ER_DUP_ENTRY. The planted
// defect "check-then-insert" creates it with a plain index instead, as the
// app's first version did, and looks the key up before inserting it.
function webhookEvents(unique) {
  return `
CREATE TABLE IF NOT EXISTS webhook_events (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  source      VARCHAR(32)  NOT NULL,
  event_id    VARCHAR(255) NOT NULL,
  type        VARCHAR(255) NOT NULL,
  received_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  payload     LONGTEXT,
  ${unique ? 'UNIQUE KEY' : 'KEY'} webhook_events_key (source, event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;
}

const TABLES = [
  // One row per credit or debit; every row comes from one event.
  `
CREATE TABLE IF NOT EXISTS ledger_entries (
  id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  source            VARCHAR(32)  NOT NULL,
  event_id          VARCHAR(255) NOT NULL,
  kind              VARCHAR(16)  NOT NULL,
  invoice_id        VARCHAR(255),
  payment_intent_id VARCHAR(255),
  amount            BIGINT       NOT NULL,
  currency          CHAR(3),
  created_at        TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ledger_entries_event (source, event_id),
  KEY ledger_entries_payment_intent (payment_intent_id),
  CONSTRAINT ledger_entries_kind CHECK (kind IN ('invoice', 'payment', 'refund'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  // Written by checkout (status awaiting_payment) with the PaymentIntent it
  // created, before Stripe sends anything about it. version counts changes.
  `
CREATE TABLE IF NOT EXISTS orders (
  id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  payment_intent_id VARCHAR(255) NOT NULL,
  amount            BIGINT       NOT NULL,
  currency          CHAR(3)      NOT NULL,
  status            VARCHAR(20)  NOT NULL DEFAULT 'awaiting_payment',
  version           INT UNSIGNED NOT NULL DEFAULT 1,
  created_at        TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at        TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY orders_payment_intent (payment_intent_id),
  CONSTRAINT orders_status CHECK (status IN ('awaiting_payment', 'paid', 'canceled', 'refunded'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  // Stripe's customers, mirrored. last_event_created is the created time
  // (Unix seconds) of the event applied last: Stripe does not deliver in
  // order, so only a newer event overwrites. A deleted customer stays as a
  // tombstone so that an older update arriving late does not bring it back.
  `
CREATE TABLE IF NOT EXISTS customers (
  id                 VARCHAR(255) NOT NULL PRIMARY KEY,
  email              VARCHAR(255),
  name               VARCHAR(255),
  last_event_created BIGINT       NOT NULL,
  deleted_at         TIMESTAMP(6) NULL,
  updated_at         TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
];

function statements(defect = '') {
  return [webhookEvents(defect !== 'check-then-insert'), ...TABLES];
}

// ensureSchema creates the tables, serialised by a named lock so that two
// instances starting together do not race on the data dictionary.
async function ensureSchema(pool, defect = '') {
  const conn = await pool.getConnection();
  try {
    const [[got]] = await conn.query("SELECT GET_LOCK('mariadb-receiver schema', 30) AS locked");
    if (got.locked !== 1) throw new Error('could not take the schema lock within 30 s');
    try {
      for (const sql of statements(defect)) await conn.query(sql);
    } finally {
      await conn.query("SELECT RELEASE_LOCK('mariadb-receiver schema')");
    }
  } finally {
    conn.release();
  }
}

module.exports = { ensureSchema, statements };
