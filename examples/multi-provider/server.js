'use strict';

// node server.js — the webhook receiver of the community's points app.
//
// Environment (docs: README.md). Secrets are never printed.
//   PORT, HOST            where to listen (default 127.0.0.1:3000)
//   DATABASE_URL          PostgreSQL connection string (required)
//   PUBLIC_BASE_URL       the URL the app is reached at (Twilio signs it);
//                         default http:// and the request's Host
//   COMMUNITY             the community the app serves: the account its
//                         events are keyed under (required)
//   TWILIO_AUTH_TOKEN     POST /webhooks/twilio
//   DISCORD_PUBLIC_KEY    POST /webhooks/discord
//   ZOOM_SECRET_TOKEN     POST /webhooks/zoom
//   CLERK_WEBHOOK_SECRET  POST /webhooks/clerk
//   DB_POOL_MAX           connections in the pool (default 4)
//   MAX_BODY_BYTES        largest accepted body (default 1 MiB)
//   MULTI_DEFECT          a planted bug for certification runs (README.md)

const http = require('node:http');
const { Pool } = require('pg');
const { createApp, DEFAULT_MAX_BODY_BYTES } = require('./src/app');
const { ensureSchema } = require('./src/schema');
const twilio = require('./src/providers/twilio');
const discord = require('./src/providers/discord');
const zoom = require('./src/providers/zoom');
const clerk = require('./src/providers/clerk');

const DEFECTS = ['zoom-handshake-plain', 'twilio-signature-path-only', 'discord-ping-unverified'];
// In-flight deliveries get this long to finish after SIGTERM.
const SHUTDOWN_GRACE_MS = 8000;

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} multi-provider: ${msg}\n`);
}

// fail stops the start with a message naming the variable and the rule,
// never its value.
function fail(msg) {
  log(msg);
  process.exit(2);
}

function intEnv(name, def) {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) fail(`${name} must be a positive integer`);
  return n;
}

// community reads the account every event is keyed under: the community
// this deployment serves, from its configuration, never from a request.
function community() {
  const v = process.env.COMMUNITY;
  if (!v) fail('COMMUNITY is not set');
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(v)) fail('COMMUNITY must be 1 to 128 letters, digits or _.:-');
  return v;
}

function publicBaseURL() {
  const v = process.env.PUBLIC_BASE_URL;
  if (!v) return '';
  let u;
  try {
    u = new URL(v);
  } catch {
    fail('PUBLIC_BASE_URL must be an absolute http:// or https:// URL');
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.search || u.hash || u.username || u.password) {
    fail('PUBLIC_BASE_URL must be an http:// or https:// URL without query, fragment or credentials');
  }
  // The path Twilio requested follows it: no trailing slash.
  return v.replace(/\/+$/, '');
}

// endpoints builds an endpoint for each provider whose secret is set; a
// provider left unconfigured has no endpoint (404).
function endpoints(defect) {
  const out = {};
  const env = process.env;
  const account = community();
  if (env.TWILIO_AUTH_TOKEN) {
    out['/webhooks/twilio'] = twilio.endpoint({
      account,
      authToken: env.TWILIO_AUTH_TOKEN,
      publicBaseURL: publicBaseURL(),
      pathOnly: defect === 'twilio-signature-path-only',
    });
  }
  if (env.DISCORD_PUBLIC_KEY) {
    let publicKey;
    try {
      publicKey = discord.publicKeyFrom(env.DISCORD_PUBLIC_KEY);
    } catch (err) {
      fail(`DISCORD_PUBLIC_KEY ${err.message}`);
    }
    out['/webhooks/discord'] = discord.endpoint({
      account,
      publicKey,
      pingFirst: defect === 'discord-ping-unverified',
    });
  }
  if (env.ZOOM_SECRET_TOKEN) {
    out['/webhooks/zoom'] = zoom.endpoint({
      account,
      secretToken: env.ZOOM_SECRET_TOKEN,
      unkeyedValidation: defect === 'zoom-handshake-plain',
    });
  }
  if (env.CLERK_WEBHOOK_SECRET) {
    let webhook;
    try {
      webhook = clerk.verifier(env.CLERK_WEBHOOK_SECRET);
    } catch (err) {
      fail(`CLERK_WEBHOOK_SECRET ${err.message}`);
    }
    out['/webhooks/clerk'] = clerk.endpoint({ account, webhook });
  }
  return out;
}

async function main() {
  const port = intEnv('PORT', 3000);
  const host = process.env.HOST || '127.0.0.1';
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) fail('DATABASE_URL is not set');
  const defect = process.env.MULTI_DEFECT || '';
  if (defect !== '' && !DEFECTS.includes(defect)) {
    fail(`MULTI_DEFECT: unknown defect ${JSON.stringify(defect)} (known: ${DEFECTS.join(', ')})`);
  }
  const eps = endpoints(defect);
  if (Object.keys(eps).length === 0) {
    fail('no provider is configured: set at least one of TWILIO_AUTH_TOKEN, DISCORD_PUBLIC_KEY, ZOOM_SECRET_TOKEN, CLERK_WEBHOOK_SECRET');
  }

  const pool = new Pool({
    connectionString: databaseUrl,
    max: intEnv('DB_POOL_MAX', 4),
    connectionTimeoutMillis: 10000,
    application_name: 'multi-provider',
  });
  // An idle connection the server closes must not crash the process.
  pool.on('error', (err) => log(`idle database connection lost: ${err.message}`));

  await ensureSchema(pool);

  const server = http.createServer(
    createApp({ pool, endpoints: eps, log, maxBodyBytes: intEnv('MAX_BODY_BYTES', DEFAULT_MAX_BODY_BYTES) }),
  );
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  log(
    `listening on http://${host}:${port}: ${Object.keys(eps).join(', ')}${defect ? ` (planted defect: ${defect})` : ''}`,
  );

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
