'use strict';

// The planted defects (MULTI_DEFECT), each a mistake receivers really make:
// the receiver started with one does the wrong thing the clean receiver
// (receiver.test.js) refuses, and nothing else changes.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const h = require('./helpers');

test('zoom-handshake-plain: the validation echoes plainToken with an unkeyed hash', async (t) => {
  const r = await h.startReceiver(t, { MULTI_DEFECT: 'zoom-handshake-plain' });
  const plainToken = crypto.randomBytes(16).toString('base64url');
  const res = await h.post(r.url, h.zoom(null, { body: JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken } }) }));
  assert.equal(res.status, 200);
  const got = JSON.parse(res.text);
  assert.equal(got.plainToken, plainToken);
  assert.notEqual(got.encryptedToken, crypto.createHmac('sha256', h.SECRETS.zoomSecretToken).update(plainToken).digest('hex'));
  assert.equal(got.encryptedToken, crypto.createHash('sha256').update(plainToken).digest('hex'));
  // Events are still verified.
  assert.equal((await h.post(r.url, h.zoom('user.created', { secret: 'another-secret-token' }))).status, 401);
  assert.equal((await h.post(r.url, h.zoom('user.created'))).status, 200);
});

test('twilio-signature-path-only: a query added after signing is accepted', async (t) => {
  const r = await h.startReceiver(t, { MULTI_DEFECT: 'twilio-signature-path-only' });
  const req = h.twilio(r.url, 'received', { query: '?extra=1', signedURL: `${r.url}/webhooks/twilio` });
  const res = await h.post(r.url, req);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(await h.stored(r.db, 'twilio', req.id), { keys: 1, points: 1 });
  // The host, the path, the parameters and the token still count.
  assert.equal((await h.post(r.url, h.twilio(r.url, 'received', { signedURL: 'http://example.com/webhooks/twilio' }))).status, 401);
  assert.equal((await h.post(r.url, h.twilio(r.url, 'received', { token: crypto.randomBytes(16).toString('hex') }))).status, 401);
  assert.equal((await h.post(r.url, h.twilio(r.url, 'received'))).status, 200);
});

test('discord-ping-unverified: a badly signed PING is answered', async (t) => {
  const r = await h.startReceiver(t, { MULTI_DEFECT: 'discord-ping-unverified' });
  const other = crypto.generateKeyPairSync('ed25519').privateKey;
  const res = await h.post(r.url, h.discord(null, { body: JSON.stringify({ id: 'ping_bad', type: 1 }), key: other }));
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.text), { type: 1 });
  // Events are still verified.
  assert.equal((await h.post(r.url, h.discord('user.created', { key: other }))).status, 401);
  const ok = h.discord('user.created');
  assert.equal((await h.post(r.url, ok)).status, 204);
  assert.deepEqual(await h.stored(r.db, 'discord', ok.id), { keys: 1, points: 1 });
});
