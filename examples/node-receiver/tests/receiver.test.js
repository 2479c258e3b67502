'use strict';

// The receiver over real HTTP against a real PostgreSQL database of its own.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { Pool, Client } = require('pg');
const { createApp } = require('../src/app');
const { ensureSchema } = require('../src/schema');
const { KEY, createDatabase, newId, signedRequest, post } = require('./helpers');

// start runs the app on an ephemeral port; defect plants a bug.
async function start(t, db, defect = '') {
  const pool = new Pool({ connectionString: db.url, max: 4, application_name: 'node-receiver' });
  pool.on('error', () => {});
  await ensureSchema(pool);
  const server = http.createServer(createApp({ pool, key: KEY, defect }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await pool.end();
  });
  return { url: `http://127.0.0.1:${server.address().port}`, pool };
}

async function count(pool, sql, params) {
  const r = await pool.query(sql, params);
  return Number(r.rows[0].count);
}

const keys = (pool, id) => count(pool, 'SELECT count(*) FROM webhook_events WHERE event_id = $1', [id]);
const payments = (pool, id) => count(pool, 'SELECT count(*) FROM payments WHERE event_id = $1', [id]);
const allKeys = (pool) => count(pool, 'SELECT count(*) FROM webhook_events');

async function orderStatus(pool, id) {
  const r = await pool.query('SELECT status FROM orders WHERE id = $1', [id]);
  return r.rows[0] && r.rows[0].status;
}

test('receiver', async (t) => {
  const db = await createDatabase();
  const { url, pool } = await start(t, db).finally(() => t.after(() => db.drop()));

  await t.test('an event is stored and applied once; a duplicate is acknowledged and changes nothing', async () => {
    const req = signedRequest('invoice.paid', { id: newId('in'), amount_paid: 1200, currency: 'eur' });
    assert.equal((await post(url, req)).status, 200);
    assert.equal((await post(url, req)).status, 200);
    // Concurrent copies converge too.
    const copies = await Promise.all(Array.from({ length: 8 }, () => post(url, req)));
    assert.deepEqual(copies.map((r) => r.status), Array(8).fill(200));
    assert.equal(await keys(pool, req.id), 1);
    assert.equal(await payments(pool, req.id), 1);
  });

  await t.test('invalid deliveries are refused and leave nothing', async () => {
    const before = await allKeys(pool);
    const data = { id: newId('in'), amount_paid: 1 };
    const good = signedRequest('invoice.paid', data);
    const cases = [
      ['tampered body', { ...good, body: good.body.replace('"amount_paid":1', '"amount_paid":9') }, 401],
      ['no signature', { ...good, headers: { ...good.headers, 'webhook-signature': undefined } }, 401],
      ['wrong secret', signedRequest('invoice.paid', data, { key: Buffer.from('not the secret') }), 401],
      ['signed 6 minutes ago', signedRequest('invoice.paid', data, { timestamp: Math.floor(Date.now() / 1000) - 360 }), 401],
      ['signed 6 minutes ahead', signedRequest('invoice.paid', data, { timestamp: Math.floor(Date.now() / 1000) + 360 }), 401],
      ['malformed JSON', signedRequest('invoice.paid', null, { body: '{"type": "invoice.paid", "data": {' }), 400],
      ['no event id', { ...good, headers: { ...good.headers, 'webhook-id': undefined } }, 400],
      ['no data.id', signedRequest('invoice.paid', { amount_paid: 1 }), 400],
      ['over 1 MiB', signedRequest('invoice.paid', { ...data, pad: 'x'.repeat(1024 * 1024) }), 413],
    ];
    for (const [name, req, want] of cases) {
      for (const k of Object.keys(req.headers)) if (req.headers[k] === undefined) delete req.headers[k];
      assert.equal((await post(url, req)).status, want, name);
    }
    assert.equal(await allKeys(pool), before);
    assert.equal(await count(pool, 'SELECT count(*) FROM payments WHERE invoice_id = $1', [data.id]), 0);
    // A body just under the limit is accepted.
    const big = signedRequest('invoice.paid', { ...data, pad: 'x'.repeat(1024 * 1024 - 1200) });
    assert.equal((await post(url, big)).status, 200);
  });

  await t.test('an unhandled type is acknowledged and not stored', async () => {
    const req = signedRequest('invoice.finalized', { id: newId('in') });
    assert.equal((await post(url, req)).status, 200);
    assert.equal(await keys(pool, req.id), 0);
  });

  await t.test('order events follow the lifecycle; early ones are retried, late ones ignored', async () => {
    const id = newId('ord');
    const shipped = signedRequest('order.shipped', { id, tracking_number: 'trk_1' });
    // The order does not exist yet: 409, and the key is rolled back.
    assert.equal((await post(url, shipped)).status, 409);
    assert.equal(await keys(pool, shipped.id), 0);
    await pool.query("INSERT INTO orders (id, amount, currency) VALUES ($1, 500, 'usd')", [id]);
    // delivered before shipped: 409, nothing kept.
    const delivered = signedRequest('order.delivered', { id });
    assert.equal((await post(url, delivered)).status, 409);
    assert.equal(await keys(pool, delivered.id), 0);
    // The redeliveries now apply.
    assert.equal((await post(url, shipped)).status, 200);
    assert.equal((await post(url, delivered)).status, 200);
    assert.equal(await orderStatus(pool, id), 'delivered');
    // A late cancellation and a second shipped event are acknowledged and ignored.
    assert.equal((await post(url, signedRequest('order.cancelled', { id }))).status, 200);
    assert.equal((await post(url, signedRequest('order.shipped', { id }))).status, 200);
    assert.equal(await orderStatus(pool, id), 'delivered');
    assert.equal(await count(pool, 'SELECT count(*) FROM shipments WHERE order_id = $1', [id]), 1);
  });

  await t.test('customer updates apply only a newer version; a deletion is final', async () => {
    const id = newId('cus');
    for (const version of [1, 3, 2]) {
      const req = signedRequest('customer.updated', { id, version, email: `v${version}@example.com` });
      assert.equal((await post(url, req)).status, 200);
    }
    const r = await pool.query('SELECT version, email FROM customers WHERE id = $1', [id]);
    assert.deepEqual(r.rows[0], { version: '3', email: 'v3@example.com' });
    // A deletion leaves a tombstone that neither an older nor a newer update revives.
    assert.equal((await post(url, signedRequest('customer.deleted', { id, version: 5 }))).status, 200);
    for (const version of [4, 6]) {
      assert.equal((await post(url, signedRequest('customer.updated', { id, version, email: 'back@example.com' }))).status, 200);
    }
    const d = await pool.query('SELECT version, email, deleted_at IS NOT NULL AS deleted FROM customers WHERE id = $1', [id]);
    assert.deepEqual(d.rows[0], { version: '5', email: null, deleted: true });
  });

  await t.test('a session lost inside the transaction keeps neither the key nor the payment', async () => {
    const req = signedRequest('invoice.paid', { id: newId('in'), amount_paid: 700 });
    const locker = new Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE payments IN ACCESS EXCLUSIVE MODE');
      const answer = post(url, req);
      // Wait for the receiver's session to queue on the lock, after its key insert.
      let pid;
      for (let i = 0; i < 200 && !pid; i++) {
        const w = await locker.query(
          `SELECT pid FROM pg_stat_activity
           WHERE datname = current_database() AND application_name = 'node-receiver' AND wait_event_type = 'Lock'`,
        );
        pid = w.rows[0] && w.rows[0].pid;
        if (!pid) await new Promise((r) => setTimeout(r, 10));
      }
      assert.ok(pid, 'the receiver never waited on the payments lock');
      await locker.query('SELECT pg_terminate_backend($1)', [pid]);
      assert.equal((await answer).status, 500);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    assert.equal(await keys(pool, req.id), 0);
    assert.equal((await post(url, req)).status, 200);
    assert.equal(await payments(pool, req.id), 1);
  });
});

test('planted defect no-transaction keeps the key of a refused event', async (t) => {
  const db = await createDatabase();
  const { url, pool } = await start(t, db, 'no-transaction').finally(() => t.after(() => db.drop()));
  const req = signedRequest('order.shipped', { id: newId('ord') });
  assert.equal((await post(url, req)).status, 409);
  // The key survived the refusal: the redelivery will be taken for a duplicate.
  assert.equal(await keys(pool, req.id), 1);
});
