'use strict';

// The receiver over real HTTP against a real MariaDB database of its own.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const mysql = require('mysql2/promise');
const { createApp } = require('../src/app');
const { ensureSchema } = require('../src/schema');
const { SECRET, TEST_SECRET, serverAnswers, createDatabase, newId, signedEvent, post } = require('./helpers');

const ENDPOINTS = [
  { path: '/webhooks/stripe', source: 'stripe', secret: SECRET },
  { path: '/webhooks/stripe-test', source: 'stripe-test', secret: TEST_SECRET },
];

// start runs the app on an ephemeral port over a fresh database; defect
// plants a bug. It returns the base URL, a pool of the test's own, and the
// app's log lines.
async function start(t, defect = '') {
  const db = await createDatabase();
  t.after(() => db.drop());
  const pool = mysql.createPool({ uri: db.url, connectionLimit: 4 });
  const logs = [];
  await ensureSchema(pool, defect);
  const server = http.createServer(createApp({ pool, endpoints: ENDPOINTS, defect, log: (m) => logs.push(m) }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const mine = mysql.createPool({ uri: db.url, connectionLimit: 2 });
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await pool.end();
    await mine.end();
  });
  return { url: `http://127.0.0.1:${server.address().port}`, db, pool: mine, logs };
}

async function count(pool, sql, params) {
  const [rows] = await pool.execute(sql, params);
  return Number(Object.values(rows[0])[0]);
}

const keys = (pool, id, source = 'stripe') =>
  count(pool, 'SELECT COUNT(*) FROM webhook_events WHERE source = ? AND event_id = ?', [source, id]);
const ledger = (pool, id, source = 'stripe') =>
  count(pool, 'SELECT COUNT(*) FROM ledger_entries WHERE source = ? AND event_id = ?', [source, id]);
const allKeys = (pool) => count(pool, 'SELECT COUNT(*) FROM webhook_events', []);

async function orderStatus(pool, pi) {
  const [rows] = await pool.execute('SELECT status, version FROM orders WHERE payment_intent_id = ?', [pi]);
  return rows[0] && `${rows[0].status} v${rows[0].version}`;
}

const invoice = (over = {}) => ({ id: newId('in'), object: 'invoice', amount_paid: 1200, currency: 'eur', ...over });

// lockedAt holds `LOCK TABLES <table> READ` on a connection of its own, as
// hookcert's lock gate does, and waits for n of the database's other sessions
// to wait on it. It returns {ids, release}.
async function lockedAt(db, table) {
  const conn = await mysql.createConnection({ uri: db.url });
  await conn.query(`LOCK TABLES ${table} READ`);
  return {
    async waiting(n) {
      for (let i = 0; i < 500; i++) {
        const [rows] = await conn.query(
          `SELECT ID AS id FROM information_schema.PROCESSLIST
           WHERE DB = ? AND ID <> CONNECTION_ID() AND STATE = 'Waiting for table metadata lock'`,
          [db.name],
        );
        if (rows.length >= n) return rows.map((r) => r.id);
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`fewer than ${n} sessions ever waited on ${table}`);
    },
    kill: (id) => conn.query(`KILL CONNECTION ${Number(id)}`),
    async release() {
      await conn.query('UNLOCK TABLES');
      await conn.end();
    },
  };
}

test('receiver', async (t) => {
  const why = await serverAnswers();
  if (why) return t.skip(why);
  const { url, db, pool, logs } = await start(t);

  await t.test('an event is stored and applied once; duplicates are acknowledged and change nothing', async () => {
    const req = signedEvent('invoice.paid', invoice());
    assert.equal((await post(url, req)).status, 200);
    assert.equal((await post(url, req)).status, 200);
    const copies = await Promise.all(Array.from({ length: 8 }, () => post(url, req)));
    assert.deepEqual(copies.map((r) => r.status), Array(8).fill(200));
    assert.equal(await keys(pool, req.id), 1);
    assert.equal(await ledger(pool, req.id), 1);
  });

  await t.test('copies held at the event table together converge on one row (the unique key)', async () => {
    const req = signedEvent('invoice.paid', invoice());
    const gate = await lockedAt(db, 'webhook_events');
    let answers;
    try {
      answers = Promise.all(Array.from({ length: 4 }, () => post(url, req)));
      await gate.waiting(4);
    } finally {
      await gate.release();
    }
    assert.deepEqual((await answers).map((r) => r.status), [200, 200, 200, 200]);
    assert.equal(await keys(pool, req.id), 1);
    assert.equal(await ledger(pool, req.id), 1);
  });

  await t.test('the same event ID on the live and the test endpoint is two events', async () => {
    const id = newId('evt');
    assert.equal((await post(url, signedEvent('invoice.paid', invoice(), { id }))).status, 200);
    assert.equal((await post(url, signedEvent('invoice.paid', invoice(), { id, secret: TEST_SECRET }), '/webhooks/stripe-test')).status, 200);
    assert.equal(await keys(pool, id, 'stripe'), 1);
    assert.equal(await keys(pool, id, 'stripe-test'), 1);
    assert.equal(await ledger(pool, id, 'stripe-test'), 1);
    // Each endpoint checks its own secret.
    assert.equal((await post(url, signedEvent('invoice.paid', invoice()), '/webhooks/stripe-test')).status, 400);
  });

  await t.test('invalid deliveries are refused and leave nothing', async () => {
    const before = await allKeys(pool);
    const obj = invoice({ amount_paid: 1 });
    const good = signedEvent('invoice.paid', obj);
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      ['tampered body', { ...good, body: good.body.replace('"amount_paid":1', '"amount_paid":9') }, 400],
      ['no signature', { ...good, headers: { 'content-type': 'application/json' } }, 400],
      ['wrong secret', signedEvent('invoice.paid', obj, { secret: 'whsec_not_the_secret' }), 400],
      ['signed 6 minutes ago', signedEvent('invoice.paid', obj, { timestamp: now - 360 }), 400],
      ['signed 6 minutes ahead', signedEvent('invoice.paid', obj, { timestamp: now + 360 }), 400],
      ['malformed JSON', signedEvent('invoice.paid', null, { body: '{"id": "evt_x", "type": "invoice.paid", "data": {' }), 400],
      ['no event id', signedEvent('invoice.paid', null, { body: JSON.stringify({ type: 'invoice.paid', data: { object: obj } }) }), 400],
      ['no data.object.id', signedEvent('invoice.paid', { amount_paid: 1 }), 400],
      ['over 1 MiB', signedEvent('invoice.paid', { ...obj, pad: 'x'.repeat(1024 * 1024) }), 413],
    ];
    for (const [name, req, want] of cases) assert.equal((await post(url, req)).status, want, name);
    assert.equal(await allKeys(pool), before);
    assert.equal(await count(pool, 'SELECT COUNT(*) FROM ledger_entries WHERE invoice_id = ?', [obj.id]), 0);
    // A body just under the limit is accepted and stored whole.
    const big = signedEvent('invoice.paid', { ...obj, pad: 'x'.repeat(1024 * 1024 - 1200) });
    assert.equal((await post(url, big)).status, 200);
    assert.equal(await count(pool, 'SELECT LENGTH(payload) FROM webhook_events WHERE event_id = ?', [big.id]), big.body.length);
  });

  await t.test('an unhandled type is acknowledged and not stored', async () => {
    const req = signedEvent('invoice.upcoming', { id: newId('in'), object: 'invoice' });
    assert.equal((await post(url, req)).status, 200);
    assert.equal(await keys(pool, req.id), 0);
  });

  await t.test('order events follow the lifecycle; early ones are retried, late ones ignored', async () => {
    const pi = newId('pi');
    const succeeded = signedEvent('payment_intent.succeeded', { id: pi, object: 'payment_intent' });
    // No order yet: 409, and the key is rolled back.
    assert.equal((await post(url, succeeded)).status, 409);
    assert.equal(await keys(pool, succeeded.id), 0);
    await pool.execute("INSERT INTO orders (payment_intent_id, amount, currency) VALUES (?, 500, 'usd')", [pi]);
    // A refund before the payment: 409, nothing kept.
    const refunded = signedEvent('charge.refunded', { id: newId('ch'), object: 'charge', payment_intent: pi });
    assert.equal((await post(url, refunded)).status, 409);
    assert.equal(await keys(pool, refunded.id), 0);
    // The redeliveries now apply, in order.
    assert.equal((await post(url, succeeded)).status, 200);
    assert.equal((await post(url, refunded)).status, 200);
    assert.equal(await orderStatus(pool, pi), 'refunded v3');
    // A late cancellation and a second succeeded event are acknowledged and ignored.
    assert.equal((await post(url, signedEvent('payment_intent.canceled', { id: pi }))).status, 200);
    assert.equal((await post(url, signedEvent('payment_intent.succeeded', { id: pi }))).status, 200);
    assert.equal(await orderStatus(pool, pi), 'refunded v3');
    const [rows] = await pool.execute('SELECT kind, amount FROM ledger_entries WHERE payment_intent_id = ? ORDER BY id', [pi]);
    assert.deepEqual(rows, [{ kind: 'payment', amount: 500 }, { kind: 'refund', amount: -500 }]);
  });

  await t.test('customer updates apply only a newer event; a deletion is final', async () => {
    const id = newId('cus');
    for (const created of [1000, 3000, 2000]) {
      const req = signedEvent('customer.updated', { id, object: 'customer', email: `c${created}@example.com` }, { created });
      assert.equal((await post(url, req)).status, 200);
    }
    const [r] = await pool.execute('SELECT email, last_event_created FROM customers WHERE id = ?', [id]);
    assert.deepEqual(r[0], { email: 'c3000@example.com', last_event_created: 3000 });
    assert.equal((await post(url, signedEvent('customer.deleted', { id, deleted: true }, { created: 5000 }))).status, 200);
    for (const created of [4000, 6000]) {
      assert.equal((await post(url, signedEvent('customer.updated', { id, email: 'back@example.com' }, { created }))).status, 200);
    }
    const [d] = await pool.execute('SELECT email, last_event_created, deleted_at IS NOT NULL AS deleted FROM customers WHERE id = ?', [id]);
    assert.deepEqual(d[0], { email: null, last_event_created: 5000, deleted: 1 });
  });

  await t.test('concurrent first updates of one customer: deadlocks are run again', async () => {
    const id = newId('cus');
    const reqs = [1, 2, 3, 4, 5, 6].map((n) => signedEvent('customer.updated', { id, email: `n${n}@example.com` }, { created: 1000 + n }));
    // Held at the customers table so that all reach their UPDATE together:
    // each takes a gap lock where the row would go, then each INSERT waits on
    // the others' — InnoDB's classic deadlock.
    const gate = await lockedAt(db, 'customers');
    let answers;
    try {
      answers = Promise.all(reqs.map((r) => post(url, r)));
      await gate.waiting(4);
    } finally {
      await gate.release();
    }
    assert.deepEqual((await answers).map((r) => r.status), Array(6).fill(200));
    const [r] = await pool.execute('SELECT email, last_event_created FROM customers WHERE id = ?', [id]);
    assert.deepEqual(r[0], { email: 'n6@example.com', last_event_created: 1006 });
    for (const req of reqs) assert.equal(await keys(pool, req.id), 1);
    assert.ok(logs.some((l) => l.startsWith('deadlock')), `no deadlock was run again; log: ${logs.join(' | ')}`);
  });

  await t.test('a connection killed inside the transaction keeps neither the key nor the entry', async () => {
    const req = signedEvent('invoice.paid', invoice({ amount_paid: 700 }));
    const gate = await lockedAt(db, 'ledger_entries');
    let answer;
    try {
      answer = post(url, req);
      // The receiver waits at its ledger insert, after its key insert.
      const [id] = await gate.waiting(1);
      await gate.kill(id);
      assert.equal((await answer).status, 500);
    } finally {
      await gate.release();
    }
    assert.equal(await keys(pool, req.id), 0);
    assert.equal((await post(url, req)).status, 200);
    assert.equal(await ledger(pool, req.id), 1);
  });
});

test('planted defect check-then-insert: copies held at the insert both apply', async (t) => {
  const why = await serverAnswers();
  if (why) return t.skip(why);
  const { url, db, pool } = await start(t, 'check-then-insert');
  // One after the other, the lookup finds the key.
  const first = signedEvent('invoice.paid', invoice());
  assert.equal((await post(url, first)).status, 200);
  assert.equal((await post(url, first)).status, 200);
  assert.equal(await keys(pool, first.id), 1);
  // Held together: both SELECTs find nothing, both INSERTs wait at the lock.
  const req = signedEvent('invoice.paid', invoice());
  const gate = await lockedAt(db, 'webhook_events');
  let answers;
  try {
    answers = Promise.all([post(url, req), post(url, req)]);
    await gate.waiting(2);
  } finally {
    await gate.release();
  }
  assert.deepEqual((await answers).map((r) => r.status), [200, 200]);
  assert.equal(await keys(pool, req.id), 2);
  assert.equal(await ledger(pool, req.id), 2);
});

test('planted defect ack-before-commit: the 2xx comes before anything is committed', async (t) => {
  const why = await serverAnswers();
  if (why) return t.skip(why);
  const { url, db, pool } = await start(t, 'ack-before-commit');
  const req = signedEvent('invoice.paid', invoice());
  const gate = await lockedAt(db, 'ledger_entries');
  try {
    assert.equal((await post(url, req)).status, 200);
    await gate.waiting(1);
    // Acknowledged, and still not committed: a crash now loses it.
    assert.equal(await keys(pool, req.id), 0);
  } finally {
    await gate.release();
  }
  for (let i = 0; i < 100 && (await keys(pool, req.id)) === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(await ledger(pool, req.id), 1);
});
