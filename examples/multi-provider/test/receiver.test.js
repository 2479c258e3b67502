'use strict';

// The receiver as the providers reach it: node server.js on a fresh
// PostgreSQL database, real HTTP, requests signed per each provider's docs.
// Every endpoint: a valid event is stored and applied once and acknowledged,
// a duplicate is acknowledged and changes nothing, a delivery with any signed
// part changed after signing is refused and leaves nothing, and the
// provider's check of the endpoint (Zoom's URL validation, Discord's PING) is
// answered and stores nothing.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const h = require('./helpers');

// accepted asserts a 2xx and exactly one key row and one ledger row.
async function accepted(r, source, req, status = 200) {
  const res = await h.post(r.url, req);
  assert.equal(res.status, status, `${source}: ${res.text}`);
  assert.deepEqual(await h.stored(r.db, source, req.id), { keys: 1, points: 1 }, `${source}: stored`);
  return res;
}

// refused asserts the status and that nothing was stored for id.
async function refused(r, source, req, status, id = req.id) {
  const res = await h.post(r.url, req);
  assert.equal(res.status, status, `${source}: ${res.text}`);
  assert.deepEqual(await h.stored(r.db, source, id), { keys: 0, points: 0 }, `${source}: nothing stored`);
  return res;
}

async function totalRows(r) {
  const { rows } = await r.db.query(
    'SELECT (SELECT count(*) FROM webhook_events)::int AS keys, (SELECT count(*) FROM points)::int AS points',
  );
  return rows[0];
}

test('the receiver', async (t) => {
  const r = await h.startReceiver(t);

  await t.test('twilio: accepted once, TwiML back, duplicates acknowledged', async () => {
    const req = h.twilio(r.url, 'received');
    const res = await accepted(r, 'twilio', req);
    assert.match(res.type, /^text\/xml/);
    assert.match(res.text, /<Response><\/Response>/);
    assert.equal((await h.post(r.url, req)).status, 200);
    assert.deepEqual(await h.stored(r.db, 'twilio', req.id), { keys: 1, points: 1 });
    // A new token is a new event, even for the same message and status.
    const again = h.twilio(r.url, 'received', { sid: new URLSearchParams(req.body).get('MessageSid') });
    await accepted(r, 'twilio', again);
  });

  await t.test('twilio: the URL and every parameter are signed', async () => {
    const other = crypto.randomBytes(16).toString('hex');
    await refused(r, 'twilio', h.twilio(r.url, 'received', { token: other }), 401);
    // Posted with a query the signature did not cover.
    await refused(r, 'twilio', h.twilio(r.url, 'received', { query: '?extra=1', signedURL: `${r.url}/webhooks/twilio` }), 401);
    // Signed for another host.
    await refused(r, 'twilio', h.twilio(r.url, 'received', { signedURL: 'http://example.com/webhooks/twilio' }), 401);
    // A parameter changed after signing.
    const req = h.twilio(r.url, 'received');
    await refused(r, 'twilio', { ...req, body: req.body.replace('MessageStatus=received', 'MessageStatus=receivee') }, 401);
    await refused(r, 'twilio', { ...req, body: `${req.body}&Body=hi` }, 401);
    const noSig = h.twilio(r.url, 'received');
    delete noSig.headers['x-twilio-signature'];
    await refused(r, 'twilio', noSig, 401);
    // A query the signature covers is accepted.
    await accepted(r, 'twilio', h.twilio(r.url, 'received', { query: '?tenant=north' }));
  });

  await t.test('twilio: no idempotency token, no event', async () => {
    const before = await totalRows(r);
    const res = await h.post(r.url, h.twilio(r.url, 'received', { id: '' }));
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(await totalRows(r), before);
  });

  await t.test('discord: PING answered {"type":1}; badly signed PING refused 401', async () => {
    const before = await totalRows(r);
    const ping = h.discord(null, { body: JSON.stringify({ id: 'ping_1', type: 1 }) });
    const res = await h.post(r.url, ping);
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.text), { type: 1 });
    const other = crypto.generateKeyPairSync('ed25519').privateKey;
    const bad = await h.post(r.url, h.discord(null, { body: JSON.stringify({ id: 'ping_2', type: 1 }), key: other }));
    assert.equal(bad.status, 401);
    assert.deepEqual(await totalRows(r), before, 'a PING is not an event');
  });

  await t.test('discord: events accepted once (204), the body and timestamp signed', async () => {
    const req = h.discord('user.created');
    await accepted(r, 'discord', req, 204);
    assert.equal((await h.post(r.url, req)).status, 204);
    assert.deepEqual(await h.stored(r.db, 'discord', req.id), { keys: 1, points: 1 });
    await accepted(r, 'discord', h.discord('APPLICATION_AUTHORIZED'), 204);

    const other = crypto.generateKeyPairSync('ed25519').privateKey;
    await refused(r, 'discord', h.discord('user.created', { key: other }), 401);
    const fresh = h.discord('user.created');
    await refused(r, 'discord', { ...fresh, body: fresh.body.replace(fresh.id, `${fresh.id}x`) }, 401);
    await refused(r, 'discord', { ...fresh, headers: { ...fresh.headers, 'x-signature-timestamp': String(Number(fresh.headers['x-signature-timestamp']) + 1) } }, 401);
    const sig = fresh.headers['x-signature-ed25519'];
    await refused(r, 'discord', { ...fresh, headers: { ...fresh.headers, 'x-signature-ed25519': sig.slice(0, 64) } }, 401);
  });

  await t.test('zoom: URL validation answered with the keyed token, nothing stored', async () => {
    const before = await totalRows(r);
    const plainToken = crypto.randomBytes(16).toString('base64url');
    const req = h.zoom(null, { body: JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken } }) });
    const started = Date.now();
    const res = await h.post(r.url, req);
    assert.ok(Date.now() - started < 3000, 'answered within Zoom\'s 3 s');
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.text), {
      plainToken,
      encryptedToken: crypto.createHmac('sha256', h.SECRETS.zoomSecretToken).update(plainToken).digest('hex'),
    });
    // A validation signed with another secret is not answered.
    const forged = h.zoom(null, { body: JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken } }), secret: 'not-the-secret' });
    assert.equal((await h.post(r.url, forged)).status, 401);
    assert.deepEqual(await totalRows(r), before, 'a validation is not an event');
  });

  await t.test('zoom: events accepted once, keyed on event_ts', async () => {
    const req = h.zoom('user.created');
    await accepted(r, 'zoom', req);
    assert.equal((await h.post(r.url, req)).status, 200);
    assert.deepEqual(await h.stored(r.db, 'zoom', req.id), { keys: 1, points: 1 });
    // Zoom itself sends event_ts as a number.
    await accepted(r, 'zoom', h.zoom('meeting.ended', { numericTs: true }));

    await refused(r, 'zoom', h.zoom('user.created', { secret: 'another-secret-token' }), 401);
    const fresh = h.zoom('user.created');
    await refused(r, 'zoom', { ...fresh, body: fresh.body.replace('"amount":100', '"amount":101') }, 401);
    await refused(r, 'zoom', { ...fresh, headers: { ...fresh.headers, 'x-zm-request-timestamp': String(Number(fresh.headers['x-zm-request-timestamp']) - 1) } }, 401);
    await refused(r, 'zoom', { ...fresh, headers: { ...fresh.headers, 'x-zm-signature': fresh.headers['x-zm-signature'].replace('v0=', 'v1=') } }, 401);
  });

  await t.test('clerk: events accepted once, tolerance both ways, svix-id signed', async () => {
    const req = h.clerk('user.created');
    await accepted(r, 'clerk', req);
    assert.equal((await h.post(r.url, req)).status, 200);
    assert.deepEqual(await h.stored(r.db, 'clerk', req.id), { keys: 1, points: 1 });
    await accepted(r, 'clerk', h.clerk('user.created', { timestamp: h.nowSeconds() - 240 }));
    await accepted(r, 'clerk', h.clerk('user.created', { timestamp: h.nowSeconds() + 240 }));

    await refused(r, 'clerk', h.clerk('user.created', { timestamp: h.nowSeconds() - 360 }), 401);
    await refused(r, 'clerk', h.clerk('user.created', { timestamp: h.nowSeconds() + 360 }), 401);
    await refused(r, 'clerk', h.clerk('user.created', { secret: `whsec_${crypto.randomBytes(24).toString('base64')}` }), 401);
    const fresh = h.clerk('user.created');
    await refused(r, 'clerk', { ...fresh, headers: { ...fresh.headers, 'svix-id': `${fresh.id}x` } }, 401, `${fresh.id}x`);
    await refused(r, 'clerk', { ...fresh, body: fresh.body.replace('"amount":100', '"amount":101') }, 401);
  });

  await t.test('the same event ID from two providers is two events, keyed under the community', async () => {
    const id = h.newId('shared');
    await accepted(r, 'clerk', h.clerk('user.created', { id }));
    await accepted(r, 'discord', h.discord('user.created', { id }), 204);
    const { rows } = await r.db.query('SELECT DISTINCT account FROM webhook_events WHERE event_id = $1', [id]);
    assert.deepEqual(rows, [{ account: h.COMMUNITY }]);
  });

  await t.test('unhandled types acknowledged on every endpoint, nothing stored', async () => {
    const before = await totalRows(r);
    assert.equal((await h.post(r.url, h.twilio(r.url, 'delivered'))).status, 200);
    assert.equal((await h.post(r.url, h.discord('ENTITLEMENT_CREATE'))).status, 204);
    assert.equal((await h.post(r.url, h.zoom('meeting.started'))).status, 200);
    assert.equal((await h.post(r.url, h.clerk('session.created'))).status, 200);
    assert.deepEqual(await totalRows(r), before);
  });

  await t.test('malformed events refused 400 after the signature, nothing stored', async () => {
    const before = await totalRows(r);
    assert.equal((await h.post(r.url, h.clerk(null, { body: '{"type":"user.created"' }))).status, 400);
    assert.equal((await h.post(r.url, h.clerk(null, { body: '{"type":"user.created","data":{"id":""}}' }))).status, 400);
    assert.equal((await h.post(r.url, h.zoom(null, { body: '{"event":"user.created","payload":{}}' }))).status, 400);
    assert.equal((await h.post(r.url, h.discord(null, { body: '[1]' }))).status, 400);
    assert.deepEqual(await totalRows(r), before);
  });

  await t.test('bodies over the limit get 413; the limit itself is accepted', async () => {
    const big = h.clerk(null, {
      body: JSON.stringify({ type: 'user.created', data: { id: 'user_big', pad: 'x'.repeat(1024 * 1024) } }),
    });
    assert.equal((await h.post(r.url, big)).status, 413);
    const fill = 1024 * 1024 - JSON.stringify({ type: 'user.created', data: { id: 'user_fit', pad: '' } }).length;
    const fit = h.clerk(null, { body: JSON.stringify({ type: 'user.created', data: { id: 'user_fit', pad: 'x'.repeat(fill) } }) });
    assert.equal(Buffer.byteLength(fit.body), 1024 * 1024);
    await accepted(r, 'clerk', fit);
  });

  await t.test('concurrent copies of one event: one row, every copy acknowledged', async () => {
    for (const [source, req, status] of [
      ['twilio', h.twilio(r.url, 'received'), 200],
      ['discord', h.discord('user.created'), 204],
      ['zoom', h.zoom('user.created'), 200],
      ['clerk', h.clerk('user.created'), 200],
    ]) {
      const answers = await Promise.all(Array.from({ length: 8 }, () => h.post(r.url, req)));
      assert.deepEqual(
        answers.map((a) => a.status),
        Array(8).fill(status),
        source,
      );
      assert.deepEqual(await h.stored(r.db, source, req.id), { keys: 1, points: 1 }, source);
    }
  });

  await t.test('wrong methods and paths', async () => {
    assert.equal((await fetch(`${r.url}/webhooks/zoom`)).status, 405);
    assert.equal((await fetch(`${r.url}/webhooks/stripe`, { method: 'POST', body: '{}' })).status, 404);
  });
});
