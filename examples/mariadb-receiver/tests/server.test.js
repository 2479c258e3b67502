'use strict';

// node server.js as the harness runs it: schema at startup, /healthz, a
// delivery, graceful SIGTERM, and no secret in its output.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { SECRET, TEST_SECRET, serverAnswers, createDatabase, newId, signedEvent, post } = require('./helpers');

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

function run(env) {
  const child = spawn(process.execPath, ['server.js'], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, MARIADB_RECEIVER_DEFECT: '', STRIPE_TEST_WEBHOOK_SECRET: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { text: '' };
  child.stdout.on('data', (d) => (out.text += d));
  child.stderr.on('data', (d) => (out.text += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, out, exited };
}

test('server.js starts, serves and stops on SIGTERM', async (t) => {
  const why = await serverAnswers();
  if (why) return t.skip(why);
  const db = await createDatabase();
  t.after(() => db.drop());
  const port = await freePort();
  const { child, out, exited } = run({ PORT: String(port), DATABASE_URL: db.url, STRIPE_WEBHOOK_SECRET: SECRET, STRIPE_TEST_WEBHOOK_SECRET: TEST_SECRET });
  t.after(() => child.kill('SIGKILL'));

  const url = `http://127.0.0.1:${port}`;
  let ready = false;
  for (let i = 0; i < 100 && !ready; i++) {
    ready = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(ready, `not ready:\n${out.text}`);

  const obj = { id: newId('in'), object: 'invoice', amount_paid: 42, currency: 'usd' };
  assert.equal((await post(url, signedEvent('invoice.paid', obj))).status, 200);
  assert.equal((await post(url, signedEvent('invoice.paid', obj, { secret: TEST_SECRET }), '/webhooks/stripe-test')).status, 200);

  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(out.text, /listening/);
  for (const secret of [SECRET, TEST_SECRET]) assert.ok(!out.text.includes(secret), 'a secret appears in the output');
  assert.ok(!out.text.includes(db.url), 'the database URL appears in the output');
});

test('server.js refuses bad configuration with exit 2, naming the variable', async () => {
  const cases = [
    [{ DATABASE_URL: '', STRIPE_WEBHOOK_SECRET: SECRET }, /DATABASE_URL is not set/],
    [{ DATABASE_URL: 'postgres://u:hunter2@h/db', STRIPE_WEBHOOK_SECRET: SECRET }, /DATABASE_URL must be mysql:/],
    [{ DATABASE_URL: 'mysql://u:hunter2@h/db', STRIPE_WEBHOOK_SECRET: 'sk_live_hunter3' }, /STRIPE_WEBHOOK_SECRET: does not start with whsec_/],
    [{ DATABASE_URL: 'mysql://u:hunter2@h/db', STRIPE_WEBHOOK_SECRET: SECRET, MARIADB_RECEIVER_DEFECT: 'nope' }, /unknown defect "nope"/],
  ];
  for (const [env, want] of cases) {
    const { out, exited } = run(env);
    assert.deepEqual(await exited, { code: 2, signal: null }, out.text);
    assert.match(out.text, want);
    assert.ok(!/hunter/.test(out.text), `a credential appears in the output: ${out.text}`);
  }
});
