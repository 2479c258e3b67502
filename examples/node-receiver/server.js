'use strict';

// node server.js — the webhook receiver.
//
// Environment:
//   PORT            port to listen on (default 3000), on HOST (default 127.0.0.1)
//   DATABASE_URL    PostgreSQL connection string (never printed)
//   WEBHOOK_SECRET  the endpoint's signing secret, whsec_<base64> (never printed)
//   DB_POOL_MAX     connections in the pool (default 4)
//   MAX_BODY_BYTES  largest accepted body (default 1 MiB)
//   NODE_RECEIVER_DEFECT  a planted bug for certification runs (README.md)

const http = require('node:http');
const { Pool } = require('pg');
const { createApp } = require('./src/app');
const { ensureSchema } = require('./src/schema');
const { decodeSecret } = require('./src/signature');

const DEFECTS = new Set(['', 'no-transaction']);
// In-flight deliveries get this long to finish after SIGTERM.
const SHUTDOWN_GRACE_MS = 8000;

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} node-receiver: ${msg}\n`);
}

function intEnv(name, def) {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) {
    log(`${name} must be a positive integer`);
    process.exit(2);
  }
  return n;
}

async function main() {
  const port = intEnv('PORT', 3000);
  const host = process.env.HOST || '127.0.0.1';
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    log('DATABASE_URL is not set');
    process.exit(2);
  }
  let key;
  try {
    key = decodeSecret(process.env.WEBHOOK_SECRET);
  } catch (err) {
    // The message names the rule, never the value.
    log(`WEBHOOK_SECRET: ${err.message}`);
    process.exit(2);
  }
  const defect = process.env.NODE_RECEIVER_DEFECT || '';
  if (!DEFECTS.has(defect)) {
    log(`NODE_RECEIVER_DEFECT: unknown defect ${JSON.stringify(defect)} (known: no-transaction)`);
    process.exit(2);
  }

  const pool = new Pool({
    connectionString: databaseUrl,
    max: intEnv('DB_POOL_MAX', 4),
    connectionTimeoutMillis: 10000,
    application_name: 'node-receiver',
  });
  // An idle connection the server closes must not crash the process.
  pool.on('error', (err) => log(`idle database connection lost: ${err.message}`));

  await ensureSchema(pool);

  const server = http.createServer(
    createApp({ pool, key, log, defect, maxBodyBytes: intEnv('MAX_BODY_BYTES', 1024 * 1024) }),
  );
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  log(`listening on http://${host}:${port}${defect ? ` (planted defect: ${defect})` : ''}`);

  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: finishing in-flight deliveries`);
    const force = setTimeout(() => {
      log('shutdown grace period over; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    // close() stops accepting and waits for open requests; idle keep-alive
    // connections would hold it open, so they are closed now.
    server.close(async () => {
      await pool.end().catch(() => {});
      log('stopped');
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  log(`startup failed: ${err.message}`);
  process.exit(1);
});
