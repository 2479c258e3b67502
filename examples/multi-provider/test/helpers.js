'use strict';

// Test helpers: a throwaway database on the real server, the receiver started
// as a process (node server.js) on a free port, and requests signed the way
// each provider documents it. The signing here is written from the providers'
// docs with node:crypto, apart from the receiver's own code, so that a
// mistake in one is not repeated in the other.

const crypto = require('node:crypto');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Client } = require('pg');

// The server the tests create their databases on.
const SERVER_URL = process.env.MULTI_PROVIDER_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

// Secrets made per run, each in its provider's format.
const ed = crypto.generateKeyPairSync('ed25519');
const SECRETS = {
  twilioAuthToken: crypto.randomBytes(16).toString('hex'),
  discordPrivateKey: ed.privateKey,
  // The raw 32-byte public key, hex, as Discord's developer portal shows it.
  discordPublicKey: ed.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex'),
  zoomSecretToken: crypto.randomBytes(16).toString('base64url'),
  clerkSecret: `whsec_${crypto.randomBytes(24).toString('base64')}`,
};
// The community the receiver serves: every event's account.
const COMMUNITY = 'north';
// What each provider names its account in the body (the receiver keys on
// COMMUNITY, not on these).
const ACCOUNTS = {
  twilio: `AC${crypto.randomBytes(16).toString('hex')}`,
  discord: '1234567890123456789',
  zoom: 'zoomAcct_1',
  clerk: 'ins_test',
};

function databaseURL(name) {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function withClient(url, fn) {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

// createDatabase makes an empty database and returns {name, url, query, drop}.
async function createDatabase() {
  const name = `multi_provider_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await withClient(SERVER_URL, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = databaseURL(name);
  return {
    name,
    url,
    query: (sql, params) => withClient(url, (c) => c.query(sql, params)),
    drop: () => withClient(SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// receiverEnv is what server.js needs to serve the four providers.
function receiverEnv(port, dbURL, extra = {}) {
  return {
    PATH: process.env.PATH,
    PORT: String(port),
    DATABASE_URL: dbURL,
    COMMUNITY,
    TWILIO_AUTH_TOKEN: SECRETS.twilioAuthToken,
    DISCORD_PUBLIC_KEY: SECRETS.discordPublicKey,
    ZOOM_SECRET_TOKEN: SECRETS.zoomSecretToken,
    CLERK_WEBHOOK_SECRET: SECRETS.clerkSecret,
    ...extra,
  };
}

// spawnReceiver runs node server.js with env; it returns the child, its
// output so far (a function) and a promise of its exit.
function spawnReceiver(env) {
  const child = spawn(process.execPath, ['server.js'], {
    cwd: path.join(__dirname, '..'),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

// startReceiver starts the receiver on a fresh database and waits until
// /healthz answers. It returns {url, db, output, stop}.
async function startReceiver(t, extra = {}) {
  const db = await createDatabase();
  const port = await freePort();
  const r = spawnReceiver(receiverEnv(port, db.url, extra));
  const url = `http://127.0.0.1:${port}`;
  t.after(async () => {
    r.child.kill('SIGKILL');
    await r.exited;
    await db.drop();
  });
  let ready = false;
  for (let i = 0; i < 200 && !ready; i++) {
    ready = await fetch(`${url}/healthz`).then(
      (res) => res.ok,
      () => false,
    );
    if (!ready) await new Promise((res) => setTimeout(res, 50));
  }
  if (!ready) throw new Error(`receiver not ready:\n${r.output()}`);
  return { url, port, db, output: r.output, child: r.child, exited: r.exited };
}

let seq = 0;
function newId(prefix) {
  seq += 1;
  return `${prefix}_${process.pid}_${seq}_${crypto.randomBytes(3).toString('hex')}`;
}

function nowSeconds() {
  return Math.floor(Date.now() / 1000);
}

// Twilio: base64 HMAC-SHA1 (Auth Token) of the full URL then each parameter
// sorted by name, name then value.
function twilioSignature(token, url, params) {
  let data = url;
  for (const [k, v] of [...params].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1))) {
    data += k + v;
  }
  return crypto.createHmac('sha1', token).update(Buffer.from(data, 'utf8')).digest('base64');
}

// twilio builds a status callback of type for the receiver at base + path;
// opts: id (idempotency token), sid, token, signedURL (the URL signed, when
// not the one posted to), query (appended to the path posted to).
function twilio(base, type, opts = {}) {
  const pathAndQuery = `/webhooks/twilio${opts.query || ''}`;
  const params = new URLSearchParams({
    AccountSid: ACCOUNTS.twilio,
    MessageSid: opts.sid || newId('SM'),
    MessageStatus: type,
  });
  const body = params.toString();
  const signedURL = opts.signedURL || base + pathAndQuery;
  const id = opts.id === undefined ? crypto.randomUUID() : opts.id;
  return {
    id,
    path: pathAndQuery,
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'i-twilio-idempotency-token': id || undefined,
      'x-twilio-signature': twilioSignature(opts.token || SECRETS.twilioAuthToken, signedURL, params),
    },
  };
}

// discordSign signs "{timestamp}{body}" with Ed25519, hex.
function discordSign(privateKey, ts, body) {
  return crypto.sign(null, Buffer.from(ts + body, 'utf8'), privateKey).toString('hex');
}

// discord builds an event (or, with opts.body, any body) for the
// application; opts: key (another private key), timestamp.
function discord(type, opts = {}) {
  const id = opts.id || newId('evt');
  const body =
    opts.body ??
    JSON.stringify({
      id,
      application_id: ACCOUNTS.discord,
      event: { type, timestamp: new Date().toISOString(), data: { id: opts.subject || newId('usr'), amount: 100 } },
    });
  const ts = String(opts.timestamp ?? nowSeconds());
  return {
    id,
    path: '/webhooks/discord',
    body,
    headers: {
      'content-type': 'application/json',
      'x-signature-timestamp': ts,
      'x-signature-ed25519': discordSign(opts.key || SECRETS.discordPrivateKey, ts, body),
    },
  };
}

// zoomSign is "v0=" and hex HMAC-SHA256 of "v0:{timestamp}:{body}".
function zoomSign(secret, ts, body) {
  return `v0=${crypto.createHmac('sha256', secret).update(`v0:${ts}:${body}`, 'utf8').digest('hex')}`;
}

// zoom builds an event notification (or, with opts.body, any body).
function zoom(type, opts = {}) {
  const id = opts.id || String(Date.now() * 1000 + (seq++ % 1000));
  const body =
    opts.body ??
    JSON.stringify({
      event: type,
      event_ts: opts.numericTs ? Number(id) : id,
      payload: { account_id: ACCOUNTS.zoom, object: { id: opts.subject || newId('mtg'), amount: 100 } },
    });
  const ts = String(opts.timestamp ?? nowSeconds());
  return {
    id,
    path: '/webhooks/zoom',
    body,
    headers: {
      'content-type': 'application/json',
      'x-zm-request-timestamp': ts,
      'x-zm-signature': zoomSign(opts.secret || SECRETS.zoomSecretToken, ts, body),
    },
  };
}

// clerkSign is Svix's "v1,<base64 HMAC-SHA256>" of "{id}.{timestamp}.{body}"
// keyed with the base64 decoding of the whsec_ secret.
function clerkSign(secret, id, ts, body) {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${ts}.${body}`, 'utf8').digest('base64')}`;
}

// clerk builds a Clerk event delivered through Svix.
function clerk(type, opts = {}) {
  const id = opts.id || newId('msg');
  const body =
    opts.body ??
    JSON.stringify({
      type,
      timestamp: new Date().toISOString(),
      data: { id: opts.subject || newId('user'), amount: 100 },
      object: 'event',
    });
  const ts = String(opts.timestamp ?? nowSeconds());
  return {
    id,
    path: '/webhooks/clerk',
    body,
    headers: {
      'content-type': 'application/json',
      'svix-id': id,
      'svix-timestamp': ts,
      'svix-signature': clerkSign(opts.secret || SECRETS.clerkSecret, id, ts, body),
    },
  };
}

// post sends req to the receiver at base; it returns {status, text, type}.
async function post(base, req) {
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([, v]) => v !== undefined));
  const res = await fetch(base + req.path, { method: 'POST', headers, body: req.body });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

// stored counts the event's key rows and ledger rows.
async function stored(db, source, id) {
  const account = COMMUNITY;
  const keys = await db.query('SELECT count(*)::int AS n FROM webhook_events WHERE source = $1 AND account = $2 AND event_id = $3', [
    source,
    account,
    id,
  ]);
  const points = await db.query('SELECT count(*)::int AS n FROM points WHERE source = $1 AND account = $2 AND event_id = $3', [
    source,
    account,
    id,
  ]);
  return { keys: keys.rows[0].n, points: points.rows[0].n };
}

module.exports = {
  SERVER_URL,
  SECRETS,
  COMMUNITY,
  ACCOUNTS,
  createDatabase,
  freePort,
  receiverEnv,
  spawnReceiver,
  startReceiver,
  newId,
  nowSeconds,
  twilio,
  twilioSignature,
  discord,
  discordSign,
  zoom,
  zoomSign,
  clerk,
  clerkSign,
  post,
  stored,
};
