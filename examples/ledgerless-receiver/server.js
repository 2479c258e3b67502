'use strict';

// node server.js — the Stripe webhook receiver of a sync without an event
// ledger (README.md).
//
// Environment:
//   PORT, HOST             where to listen (default 3000 on 127.0.0.1)
//   DATABASE_URL           PostgreSQL connection string (never printed)
//   STRIPE_WEBHOOK_SECRET  the endpoint's whsec_ signing secret (never printed)
//   LEDGERLESS_DEFECT      a planted bug for certification runs (README.md)

const http = require('node:http');
const { Pool } = require('pg');
const { createApp } = require('./src/app');
const { ensureSchema } = require('./src/schema');
const { createSync, DEFECTS } = require('./src/sync');

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} ledgerless-receiver: ${msg}\n`);
}

async function main() {
  const port = Number(process.env.PORT || 3000);
  const host = process.env.HOST || '127.0.0.1';
  const databaseUrl = process.env.DATABASE_URL;
  const secret = process.env.STRIPE_WEBHOOK_SECRET;
  if (!databaseUrl) {
    log('DATABASE_URL is not set');
    process.exit(2);
  }
  if (!secret || !secret.startsWith('whsec_')) {
    log('STRIPE_WEBHOOK_SECRET must be set to the endpoint\'s whsec_ secret');
    process.exit(2);
  }
  const defect = process.env.LEDGERLESS_DEFECT || '';
  if (defect !== '' && !DEFECTS.includes(defect)) {
    log(`LEDGERLESS_DEFECT: unknown defect ${JSON.stringify(defect)} (known: ${DEFECTS.join(', ')})`);
    process.exit(2);
  }
  const pool = new Pool({ connectionString: databaseUrl, max: 8, connectionTimeoutMillis: 10000, application_name: 'ledgerless-receiver' });
  pool.on('error', (err) => log(`idle database connection lost: ${err.message}`));
  await ensureSchema(pool);

  const server = http.createServer(createApp({ pool, secret, sync: createSync(defect), log, defect }));
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
    setTimeout(() => process.exit(1), 8000).unref();
    server.close(async () => {
      await pool.end().catch(() => {});
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
