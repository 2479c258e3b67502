'use strict';

// The HTTP side on real PostgreSQL and a real server on loopback: a delivery
// with a bad signature refused and nothing written, and what the two planted
// defects of the HTTP side do. LEDGERLESS_TEST_DATABASE_URL names the server
// (a database is made per run).

const test = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const http = require('node:http');
const { Client, Pool } = require('pg');
const { ensureSchema } = require('../src/schema');
const { createSync } = require('../src/sync');
const { createApp } = require('../src/app');

const SERVER_URL = process.env.LEDGERLESS_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const SECRET = 'whsec_appTest0000000000000000000000';

async function admin(sql) {
  const c = new Client({ connectionString: SERVER_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

let pool;
let name;
let dbUrl;
test.before(async () => {
  name = `ledgerless_app_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  dbUrl = u.toString();
  pool = new Pool({ connectionString: dbUrl, max: 4 });
  await ensureSchema(pool);
});
test.after(async () => {
  await pool.end();
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

// serve starts the app with defect on a free loopback port.
async function serve(defect) {
  const server = http.createServer(createApp({ pool, secret: SECRET, sync: createSync(defect), defect }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

let seq = 0;
function event(sub) {
  return JSON.stringify({ id: `evt_app_${++seq}`, type: 'customer.subscription.updated', created: 1767225600 + seq,
    data: { object: { id: sub, status: 'active', metadata: { sync_tag: 'v1' },
      items: { data: [{ id: `si_${sub}`, quantity: 1, price: { id: 'price_basic' } }] } } } });
}

function sign(body, secret = SECRET) {
  const t = Math.floor(Date.now() / 1000);
  return `t=${t},v1=${crypto.createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

function post(server, body, signature) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.address().port, path: '/webhooks', method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Stripe-Signature': signature } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function stored(sub) {
  const r = await pool.query('SELECT 1 FROM subscriptions WHERE id = $1', [sub]);
  return r.rowCount === 1;
}

test('a delivery signed with another secret is refused and writes nothing', async () => {
  const server = await serve('');
  try {
    const body = event('sub_app_a');
    assert.strictEqual(await post(server, body, sign(body, 'whsec_another000000000000000000000')), 400);
    assert.strictEqual(await stored('sub_app_a'), false);
    assert.strictEqual(await post(server, body, sign(body)), 200);
    assert.strictEqual(await stored('sub_app_a'), true);
  } finally {
    server.close();
  }
});

test('unsigned: a delivery signed with another secret is applied', async () => {
  const server = await serve('unsigned');
  try {
    const body = event('sub_app_b');
    assert.strictEqual(await post(server, body, sign(body, 'whsec_another000000000000000000000')), 200);
    assert.strictEqual(await stored('sub_app_b'), true);
  } finally {
    server.close();
  }
});

// The items table is locked, so the delivery's transaction waits after the
// subscription's upsert: the correct app answers only once it commits.
async function answeredWhileLocked(defect, sub) {
  const server = await serve(defect);
  const locker = new Client({ connectionString: dbUrl });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE subscription_items IN ACCESS EXCLUSIVE MODE');
    const body = event(sub);
    const answer = post(server, body, sign(body));
    const early = await Promise.race([answer, new Promise((r) => setTimeout(() => r('waiting'), 1000))]);
    await locker.query('ROLLBACK');
    await answer;
    return early;
  } finally {
    await locker.end();
    server.close();
  }
}

test('the 200 comes after the commit', async () => {
  assert.strictEqual(await answeredWhileLocked('', 'sub_app_c'), 'waiting');
});

test('ack-before-commit: the 200 comes while the transaction still waits', async () => {
  assert.strictEqual(await answeredWhileLocked('ack-before-commit', 'sub_app_d'), 200);
});
