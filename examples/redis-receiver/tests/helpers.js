'use strict';

// Test helpers: the real Redis server with keys of the run's own, and signed
// Stripe deliveries.

const crypto = require('node:crypto');
const { createClient } = require('redis');
const { sign } = require('../src/signature');

// The server the tests use; its keys are the app's own names with IDs unique
// to this run, deleted afterwards.
const REDIS_URL = process.env.REDIS_RECEIVER_TEST_REDIS_URL || 'redis://127.0.0.1:6379/0';

const SECRET = `whsec_${crypto.randomBytes(24).toString('hex')}`;

// TAG is in every ID the tests make, so their keys can be found and deleted.
const TAG = `t${process.pid}x${crypto.randomBytes(3).toString('hex')}`;

let seq = 0;
function newId(prefix) {
  seq += 1;
  return `${prefix}_${TAG}_${seq}`;
}

// connect returns a client, or null after skipping t when no server answers.
async function connect(t) {
  const client = createClient({ url: REDIS_URL, socket: { connectTimeout: 2000, reconnectStrategy: false } });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    t.skip(`no Redis answers at ${new URL(REDIS_URL).host} (start redis-server, or set REDIS_RECEIVER_TEST_REDIS_URL): ${err.message}`);
    return null;
  }
  t.after(async () => {
    const keys = [];
    for await (const batch of client.scanIterator({ MATCH: `*${TAG}*`, COUNT: 1000 })) keys.push(...batch);
    if (keys.length > 0) await client.del(keys);
    await client.close();
  });
  return client;
}

// event builds a Stripe Event envelope around object.
function event(type, object, opts = {}) {
  return {
    id: opts.id || newId('evt'),
    object: 'event',
    api_version: '2026-03-25.dahlia',
    created: opts.created ?? Math.floor(Date.now() / 1000),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    type,
  };
}

// signedRequest signs a body the way Stripe does. opts: timestamp (Unix
// seconds), secret, body (override), header (override).
function signedRequest(ev, opts = {}) {
  const body = opts.body ?? JSON.stringify(ev);
  const ts = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const sig = sign(opts.secret || SECRET, ts, Buffer.from(body)).toString('hex');
  return {
    id: ev && ev.id,
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': opts.header ?? `t=${ts},v1=${sig}` },
  };
}

async function post(baseURL, req, path = '/webhooks/stripe') {
  const res = await fetch(`${baseURL}${path}`, { method: 'POST', headers: req.headers, body: req.body });
  return { status: res.status, body: await res.text() };
}

module.exports = { REDIS_URL, SECRET, TAG, newId, connect, event, signedRequest, post };
