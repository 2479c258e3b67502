'use strict';

// node server.js — the shop's Stripe webhook receiver.
//
// Environment:
//   PORT, HOST                  where to listen (default 3000 on 127.0.0.1)
//   DATABASE_URL                mysql://user[:password]@host[:port]/database (never printed)
//   STRIPE_WEBHOOK_SECRET       the live endpoint's signing secret, whsec_... (never printed)
//   STRIPE_TEST_WEBHOOK_SECRET  the test-mode endpoint's, optional (never printed)
//   DB_POOL_SIZE                connections in the pool (default 4)
//   MAX_BODY_BYTES              largest accepted body (default 1 MiB)
//   MARIADB_RECEIVER_DEFECT     a planted bug for certification runs (README.md)

const http = require('node:http');
const mysql = require('mysql2/promise');
const { createApp } = require('./src/app');
const { ensureSchema } = require('./src/schema');
const { checkSecret } = require('./src/signature');

const DEFECTS = ['check-then-insert', 'ack-before-commit'];
// In-flight deliveries get this long to finish after SIGTERM.
const SHUTDOWN_GRACE_MS = 8000;

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} mariadb-receiver: ${msg}\n`);
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

// secretEnv reads a signing secret; the message names the rule, never the value.
function secretEnv(name, required) {
  const v = process.env[name];
  if (!required && (v === undefined || v === '')) return undefined;
  try {
    return checkSecret(v);
  } catch (err) {
    log(`${name}: ${err.message}`);
    process.exit(2);
  }
}

// databaseURL checks the URL's shape without ever printing it.
function databaseURL() {
  const v = process.env.DATABASE_URL;
  if (!v) {
    log('DATABASE_URL is not set');
    process.exit(2);
  }
  let u;
  try {
    u = new URL(v);
  } catch {
    log('DATABASE_URL is not a URL (mysql://user[:password]@host[:port]/database)');
    process.exit(2);
  }
  if (!['mysql:', 'mariadb:'].includes(u.protocol) || u.pathname.length <= 1) {
    log('DATABASE_URL must be mysql://user[:password]@host[:port]/database');
    process.exit(2);
  }
  // mysql2 reads mysql:// only; mariadb:// names the same thing.
  u.protocol = 'mysql:';
  return u.toString();
}

async function main() {
  const port = intEnv('PORT', 3000);
  const host = process.env.HOST || '127.0.0.1';
  const uri = databaseURL();
  const endpoints = [{ path: '/webhooks/stripe', source: 'stripe', secret: secretEnv('STRIPE_WEBHOOK_SECRET', true) }];
  const testSecret = secretEnv('STRIPE_TEST_WEBHOOK_SECRET', false);
  if (testSecret) endpoints.push({ path: '/webhooks/stripe-test', source: 'stripe-test', secret: testSecret });
  const defect = process.env.MARIADB_RECEIVER_DEFECT || '';
  if (defect !== '' && !DEFECTS.includes(defect)) {
    log(`MARIADB_RECEIVER_DEFECT: unknown defect ${JSON.stringify(defect)} (known: ${DEFECTS.join(', ')})`);
    process.exit(2);
  }

  const pool = mysql.createPool({
    uri,
    connectionLimit: intEnv('DB_POOL_SIZE', 4),
    waitForConnections: true,
    connectTimeout: 10000,
    charset: 'utf8mb4',
    enableKeepAlive: true,
  });
  // A connection the server drops while idle must not crash the process.
  pool.pool.on('connection', (conn) => conn.on('error', (err) => log(`database connection lost: ${err.code || err.message}`)));

  await ensureSchema(pool, defect);

  const server = http.createServer(createApp({ pool, endpoints, log, defect, maxBodyBytes: intEnv('MAX_BODY_BYTES', 1024 * 1024) }));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  log(`listening on http://${host}:${port} (${endpoints.map((e) => e.path).join(', ')})${defect ? ` (planted defect: ${defect})` : ''}`);

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
  // mysql2's messages name the user and host at most, never the password.
  log(`startup failed: ${err.code ? `${err.code}: ` : ''}${err.message}`);
  process.exit(1);
});
