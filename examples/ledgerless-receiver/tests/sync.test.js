'use strict';

// The sync's guard on real PostgreSQL: a late older update refused, a tie
// applied (last wins), a tombstone that keeps older updates out, items written
// only with their subscription, and what each planted defect breaks.
// LEDGERLESS_TEST_DATABASE_URL names the server (a database is made per run).

const test = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const { Client, Pool } = require('pg');
const { ensureSchema } = require('../src/schema');
const { createSync } = require('../src/sync');

const SERVER_URL = process.env.LEDGERLESS_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

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
test.before(async () => {
  name = `ledgerless_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  pool = new Pool({ connectionString: u.toString(), max: 2 });
  await ensureSchema(pool);
});
test.after(async () => {
  await pool.end();
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

let seq = 0;
const T0 = 1767225600;

// update is a customer.subscription.updated event for sub at T0+second.
function update(sub, second, tag) {
  return { id: `evt_${++seq}`, type: 'customer.subscription.updated', created: T0 + second,
    data: { object: { id: sub, status: 'active', metadata: { sync_tag: tag },
      items: { data: [{ id: `si_${sub}`, quantity: second, price: { id: 'price_basic' } }] } } } };
}

function deletion(sub, second) {
  return { id: `evt_${++seq}`, type: 'customer.subscription.deleted', created: T0 + second, data: { object: { id: sub } } };
}

async function run(sync, ...events) {
  for (const ev of events) await sync.apply(pool, ev);
}

async function state(sub) {
  const r = await pool.query(
    `SELECT extract(epoch FROM s.last_synced_at)::bigint - $2 AS key, s.deleted, s.metadata->>'sync_tag' AS tag,
            (SELECT min(extract(epoch FROM i.last_synced_at))::bigint - $2 FROM subscription_items i WHERE i.subscription = s.id) AS items
     FROM subscriptions s WHERE s.id = $1`, [sub, T0]);
  return r.rows[0] && { key: Number(r.rows[0].key), deleted: r.rows[0].deleted, tag: r.rows[0].tag,
    items: r.rows[0].items === null ? null : Number(r.rows[0].items) };
}

test('a late older update is refused, with its items', async () => {
  await run(createSync(), update('sub_a', 1, 'v1'), update('sub_a', 3, 'v3'), update('sub_a', 2, 'v2'));
  assert.deepStrictEqual(await state('sub_a'), { key: 3, deleted: false, tag: 'v3', items: 3 });
});

test('of two updates in one second the later wins', async () => {
  await run(createSync(), update('sub_b', 2, 'v2'), update('sub_b', 2, 'v2-tie'));
  assert.strictEqual((await state('sub_b')).tag, 'v2-tie');
});

test('a deletion leaves a tombstone older updates cannot undo', async () => {
  await run(createSync(), update('sub_c', 1, 'v1'), deletion('sub_c', 3), update('sub_c', 2, 'v2'));
  const s = await state('sub_c');
  assert.strictEqual(s.deleted, true);
  assert.strictEqual(s.key, 3);
});

test('hard-delete: a late older update brings the subscription back', async () => {
  await run(createSync('hard-delete'), update('sub_d', 1, 'v1'), deletion('sub_d', 3), update('sub_d', 2, 'v2'));
  assert.deepStrictEqual(await state('sub_d'), { key: 2, deleted: false, tag: 'v2', items: 2 });
});

test('same-second-drop: the second update in one second is dropped', async () => {
  await run(createSync('same-second-drop'), update('sub_e', 2, 'v2'), update('sub_e', 2, 'v2-tie'));
  assert.strictEqual((await state('sub_e')).tag, 'v2');
});

test('unguarded-children: a late older update rewrites the items', async () => {
  await run(createSync('unguarded-children'), update('sub_f', 1, 'v1'), update('sub_f', 3, 'v3'), update('sub_f', 2, 'v2'));
  assert.deepStrictEqual(await state('sub_f'), { key: 3, deleted: false, tag: 'v3', items: 2 });
});
