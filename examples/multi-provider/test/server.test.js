'use strict';

// node server.js as the harness runs it: configuration errors name the
// variable and the rule, never a value; graceful SIGTERM; no secret in the
// output.

const test = require('node:test');
const assert = require('node:assert/strict');
const h = require('./helpers');

test('server.js starts, serves and stops on SIGTERM, printing no secret', async (t) => {
  const r = await h.startReceiver(t);
  const req = h.clerk('user.created');
  assert.equal((await h.post(r.url, req)).status, 200);
  r.child.kill('SIGTERM');
  assert.deepEqual(await r.exited, { code: 0, signal: null });
  const out = r.output();
  assert.match(out, /listening on .*\/webhooks\/twilio, \/webhooks\/discord, \/webhooks\/zoom, \/webhooks\/clerk/);
  for (const [name, v] of Object.entries(h.SECRETS)) {
    if (typeof v === 'string') assert.ok(!out.includes(v), `${name} appears in the output`);
  }
  assert.ok(!out.includes(h.SECRETS.clerkSecret.slice('whsec_'.length)), 'the Clerk key appears in the output');
  assert.ok(!out.includes(r.db.url), 'the database URL appears in the output');
});

test('a provider without its secret has no endpoint', async (t) => {
  const r = await h.startReceiver(t, { ZOOM_SECRET_TOKEN: '' });
  assert.equal((await h.post(r.url, h.zoom('user.created'))).status, 404);
  assert.equal((await h.post(r.url, h.clerk('user.created'))).status, 200);
});

test('bad configuration stops the start, naming the variable, never the value', async (t) => {
  const port = await h.freePort();
  const db = 'postgres://postgres@127.0.0.1:5432/unused';
  const cases = [
    [{ MULTI_DEFECT: 'no-such-defect' }, /MULTI_DEFECT: unknown defect "no-such-defect" \(known: zoom-handshake-plain, twilio-signature-path-only, discord-ping-unverified\)/],
    [{ DISCORD_PUBLIC_KEY: 'secretish-not-hex' }, /DISCORD_PUBLIC_KEY must be the application public key: 64 hex digits/, 'secretish-not-hex'],
    [{ CLERK_WEBHOOK_SECRET: 'sk_live_secretvalue' }, /CLERK_WEBHOOK_SECRET must be the endpoint signing secret: whsec_ then base64/, 'sk_live_secretvalue'],
    [{ COMMUNITY: '' }, /COMMUNITY is not set/],
    [{ COMMUNITY: 'north side' }, /COMMUNITY must be 1 to 128 letters, digits or _.:-/],
    [{ PUBLIC_BASE_URL: 'https://hooks.example.com/?a=1' }, /PUBLIC_BASE_URL must be an http:\/\/ or https:\/\/ URL without query/],
    [{ DATABASE_URL: '' }, /DATABASE_URL is not set/],
    [
      { TWILIO_AUTH_TOKEN: '', DISCORD_PUBLIC_KEY: '', ZOOM_SECRET_TOKEN: '', CLERK_WEBHOOK_SECRET: '' },
      /no provider is configured/,
    ],
  ];
  for (const [extra, want, secret] of cases) {
    const r = h.spawnReceiver(h.receiverEnv(port, db, extra));
    const exit = await r.exited;
    assert.deepEqual(exit, { code: 2, signal: null }, `${JSON.stringify(extra)}: ${r.output()}`);
    assert.match(r.output(), want);
    if (secret) assert.ok(!r.output().includes(secret), `${Object.keys(extra)[0]}'s value appears in the output`);
  }
  t.diagnostic(`${cases.length} configurations refused`);
});
