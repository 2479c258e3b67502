'use strict';

// node server.js — the webhook receiver.
//
// Environment:
//   PORT                   port to listen on (default 3000), on HOST (default 127.0.0.1)
//   REDIS_URL              redis://[user:password@]host[:port][/db] (never printed)
//   STRIPE_WEBHOOK_SECRET  the endpoint's signing secret, whsec_... (never printed)
//   MAX_BODY_BYTES         largest accepted body (default 1 MiB)
//   REDIS_RECEIVER_DEFECT  a planted bug for certification runs (README.md)

const http = require('node:http');
const { createClientPool } = require('redis');
const { createApp } = require('./src/app');
const { createStore, KEY_TTL_MS, SHORT_TTL_MS } = require('./src/store');

const DEFECTS = {
  '': { keyTtlMs: KEY_TTL_MS },
  'short-ttl': { keyTtlMs: SHORT_TTL_MS },
  'check-then-set': { keyTtlMs: KEY_TTL_MS, checkThenSet: true },
};
// In-flight deliveries get this long to finish after SIGTERM.
const SHUTDOWN_GRACE_MS = 8000;

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} redis-receiver: ${msg}\n`);
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
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    log('REDIS_URL is not set');
    process.exit(2);
  }
  const secret = process.env.STRIPE_WEBHOOK_SECRET;
  if (!secret) {
    log('STRIPE_WEBHOOK_SECRET is not set');
    process.exit(2);
  }
  const defect = process.env.REDIS_RECEIVER_DEFECT || '';
  if (!(defect in DEFECTS)) {
    log(`REDIS_RECEIVER_DEFECT: unknown defect ${JSON.stringify(defect)} (known: ${Object.keys(DEFECTS).filter(Boolean).join(', ')})`);
    process.exit(2);
  }

  // A pool: a delivery waiting on Redis does not hold up the others, as one
  // multiplexed connection would (its commands run one after another).
  const client = createClientPool({ url: redisUrl, socket: { connectTimeout: 10000 } }, { minimum: 1, maximum: intEnv('REDIS_POOL_SIZE', 16) });
  // Without a listener a lost connection would crash the process; node-redis
  // reconnects on its own. The message names the address, never the URL.
  client.on('error', (err) => log(`redis: ${err.message}`));
  await client.connect();

  const store = createStore(client, DEFECTS[defect]);
  const server = http.createServer(
    createApp({ store, secret, log, maxBodyBytes: intEnv('MAX_BODY_BYTES', 1024 * 1024) }),
  );
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  log(`listening on http://${host}:${port}, keys kept ${store.keyTtlMs / 1000} s${defect ? ` (planted defect: ${defect})` : ''}`);

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
      await client.close().catch(() => {});
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
