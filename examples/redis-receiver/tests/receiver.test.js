'use strict';

// The receiver over real HTTP against the real Redis server.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { createApp } = require('../src/app');
const { createStore, KEY_TTL_MS, SHORT_TTL_MS } = require('../src/store');
const { SECRET, newId, connect, event, signedRequest, post } = require('./helpers');

const DAY_MS = 24 * 60 * 60 * 1000;

// start runs the app on an ephemeral port with keys kept keyTtlMs.
async function start(t, client, keyTtlMs) {
  const store = createStore(client, keyTtlMs ? { keyTtlMs } : {});
  const server = http.createServer(createApp({ store, secret: SECRET, maxBodyBytes: 64 * 1024 }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${server.address().port}`;
}

async function checkout(url, id, amount = 500) {
  const res = await fetch(`${url}/payments`, { method: 'POST', body: JSON.stringify({ id, amount, currency: 'eur' }) });
  return res.status;
}

test('receiver', async (t) => {
  const client = await connect(t);
  if (!client) return;
  const url = await start(t, client);
  const send = (ev, opts) => post(url, signedRequest(ev, opts));
  const seen = (id) => client.exists(`seen:stripe:${id}`);
  const applied = async (id) => Number((await client.get(`applied:${id}`)) || 0);
  const ledger = (id) => client.lRange(`ledger:${id}`, 0, -1);

  await t.test('an event is applied once; duplicates, sequential or concurrent, are acknowledged', async () => {
    const ch = newId('ch');
    const ev = event('charge.succeeded', { id: ch, object: 'charge', amount: 100 });
    assert.equal((await send(ev)).status, 200);
    assert.equal((await send(ev)).status, 200);
    const copies = await Promise.all(Array.from({ length: 16 }, () => send(ev)));
    assert.deepEqual(copies.map((r) => r.status), Array(16).fill(200));
    assert.equal(await seen(ev.id), 1);
    assert.equal(await applied(ev.id), 1);
    assert.deepEqual(await ledger(ch), [ev.id]);

    // Sixteen copies of a fresh event at once: one applies.
    const ev2 = event('charge.succeeded', { id: ch, object: 'charge', amount: 100 });
    const racing = await Promise.all(Array.from({ length: 16 }, () => send(ev2)));
    assert.deepEqual(racing.map((r) => r.status), Array(16).fill(200));
    assert.equal(racing.filter((r) => JSON.parse(r.body).outcome === 'applied').length, 1);
    assert.deepEqual(await ledger(ch), [ev.id, ev2.id]);
  });

  await t.test('the key outlives Stripe\'s 30-day resend window', async () => {
    const ev = event('charge.succeeded', { id: newId('ch') });
    assert.equal((await send(ev)).status, 200);
    const ttl = await client.pTTL(`seen:stripe:${ev.id}`);
    assert.ok(ttl > 30 * DAY_MS && ttl <= KEY_TTL_MS, `key TTL ${ttl} ms`);
  });

  await t.test('invalid deliveries are refused and leave nothing', async () => {
    const ch = newId('ch');
    const ev = event('charge.succeeded', { id: ch });
    const stale = Math.floor(Date.now() / 1000) - 301;
    const cases = [
      signedRequest(ev, { secret: 'whsec_wrong' }),
      signedRequest(ev, { timestamp: stale }),
      signedRequest(ev, { header: '' }),
      signedRequest(ev, { body: '{"id": "evt_x", ' }),
      signedRequest(null, { body: JSON.stringify({ ...ev, id: undefined }) }),
      signedRequest(null, { body: JSON.stringify({ ...ev, data: {} }) }),
      signedRequest(null, { body: JSON.stringify(event('charge.succeeded', { object: 'charge' }, { id: ev.id })) }),
    ];
    for (const req of cases) {
      const res = await post(url, req);
      assert.equal(res.status, 400, `${req.headers['stripe-signature']} ${req.body}: ${res.body}`);
    }
    const big = signedRequest(event('charge.succeeded', { id: ch, pad: 'x'.repeat(70 * 1024) }, { id: ev.id }));
    assert.equal((await post(url, big)).status, 413);
    assert.equal(await seen(ev.id), 0);
    assert.deepEqual(await ledger(ch), []);
  });

  await t.test('an unhandled type is acknowledged and stores nothing', async () => {
    const ev = event('invoice.upcoming', { id: newId('in') });
    const res = await send(ev);
    assert.equal(res.status, 200);
    assert.match(res.body, /unhandled type invoice.upcoming/);
    assert.equal(await seen(ev.id), 0);
  });

  await t.test('payments: missing and premature events wait; late ones are ignored', async () => {
    const pi = newId('pi');
    const succeeded = event('payment_intent.succeeded', { id: pi, object: 'payment_intent', status: 'succeeded' });
    const refunded = event('charge.refunded', { id: newId('ch'), object: 'charge', payment_intent: pi });
    const failed = event('payment_intent.payment_failed', { id: pi, object: 'payment_intent' });

    // Checkout has not written it: 409, nothing kept.
    assert.equal((await send(succeeded)).status, 409);
    assert.equal(await seen(succeeded.id), 0);
    assert.equal(await checkout(url, pi), 201);
    assert.equal(await checkout(url, pi), 200);
    assert.equal(await client.hGet(`payment:${pi}`, 'status'), 'processing');

    // A refund before the payment succeeded comes before its precondition.
    assert.equal((await send(refunded)).status, 409);
    assert.equal(await seen(refunded.id), 0);

    assert.equal((await send(succeeded)).status, 200);
    // Another event for the same change: acknowledged, no second entry.
    const again = event('payment_intent.succeeded', { id: pi, object: 'payment_intent' });
    assert.equal(JSON.parse((await send(again)).body).outcome, 'unchanged');
    assert.equal((await send(refunded)).status, 200);
    assert.equal(await client.hGet(`payment:${pi}`, 'status'), 'refunded');
    assert.deepEqual(await ledger(pi), [succeeded.id, refunded.id]);

    // A failure after the refund is late: kept as processed, changes nothing.
    const res = await send(failed);
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).outcome, 'past');
    assert.equal(await seen(failed.id), 1);
    assert.equal(await client.hGet(`payment:${pi}`, 'status'), 'refunded');
  });

  await t.test('customers: only a newer event applies, and a deletion stays', async () => {
    const cus = newId('cus');
    const upd = (created) => event('customer.updated', { id: cus, object: 'customer', email: `${created}@example.com` }, { created });
    const state = () => client.hmGet(`customer:${cus}`, ['created', 'status', 'email']);
    assert.equal((await send(upd(20))).status, 200);
    assert.equal((await send(upd(10))).status, 200);
    assert.deepEqual(await state(), ['20', 'active', '20@example.com']);
    assert.equal((await send(event('customer.deleted', { id: cus, object: 'customer', deleted: true }, { created: 30 }))).status, 200);
    assert.equal((await send(upd(25))).status, 200);
    assert.equal((await send(upd(40))).status, 200);
    assert.deepEqual(await state(), ['30', 'deleted', null]);
  });
});

test('the planted defect short-ttl keeps keys for a minute', async (t) => {
  const client = await connect(t);
  if (!client) return;
  const url = await start(t, client, SHORT_TTL_MS);
  const ev = event('charge.succeeded', { id: newId('ch') });
  assert.equal((await post(url, signedRequest(ev))).status, 200);
  const ttl = await client.pTTL(`seen:stripe:${ev.id}`);
  assert.ok(ttl > 50_000 && ttl <= 60_000, `key TTL ${ttl} ms`);
  // Once it expired, a redelivery applies the event again: what the defect costs.
  await client.pExpire(`seen:stripe:${ev.id}`, 1);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal((await post(url, signedRequest(ev))).status, 200);
  assert.equal(await client.get(`applied:${ev.id}`), '2');
});

test('the planted defect check-then-set applies copies that checked before either set the key', async (t) => {
  const client = await connect(t);
  if (!client) return;
  const store = createStore(client, { checkThenSet: true });
  const server = http.createServer(createApp({ store, secret: SECRET, maxBodyBytes: 64 * 1024 }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const url = `http://127.0.0.1:${server.address().port}`;
  const ev = event('charge.succeeded', { id: newId('ch') });
  // Writes paused, reads not: both copies find no key, then wait at their write.
  const admin = client.duplicate();
  await admin.connect();
  t.after(() => admin.quit());
  await admin.sendCommand(['CLIENT', 'PAUSE', '2000', 'WRITE']);
  const copies = [post(url, signedRequest(ev)), post(url, signedRequest(ev))];
  await new Promise((r) => setTimeout(r, 300));
  await admin.sendCommand(['CLIENT', 'UNPAUSE']);
  for (const res of await Promise.all(copies)) assert.equal(res.status, 200);
  assert.equal(await client.get(`applied:${ev.id}`), '2');
});
