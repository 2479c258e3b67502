'use strict';

// node server.js as the harness runs it: /healthz, a delivery, graceful
// SIGTERM, and neither the secret nor the Redis URL in its output.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { REDIS_URL, SECRET, newId, connect, event, signedRequest, post } = require('./helpers');

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

function run(t, env) {
  const child = spawn(process.execPath, ['server.js'], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, STRIPE_WEBHOOK_SECRET: SECRET, REDIS_RECEIVER_DEFECT: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { text: '' };
  child.stdout.on('data', (d) => (out.text += d));
  child.stderr.on('data', (d) => (out.text += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  t.after(() => child.kill('SIGKILL'));
  return { child, out, exited };
}

test('server.js starts, serves and stops on SIGTERM', async (t) => {
  const client = await connect(t);
  if (!client) return;
  const port = await freePort();
  const { child, out, exited } = run(t, { PORT: String(port), REDIS_URL });
  const url = `http://127.0.0.1:${port}`;
  let ready = false;
  for (let i = 0; i < 100 && !ready; i++) {
    ready = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(ready, `not ready:\n${out.text}`);

  const ev = event('charge.succeeded', { id: newId('ch') });
  assert.equal((await post(url, signedRequest(ev))).status, 200);
  assert.equal(await client.exists(`seen:stripe:${ev.id}`), 1);

  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(out.text, /listening/);
  assert.ok(!out.text.includes(SECRET), 'the secret appears in the output');
  assert.ok(!out.text.includes(REDIS_URL), 'the Redis URL appears in the output');
});

test('server.js refuses an unknown defect and a missing REDIS_URL', async (t) => {
  for (const [env, want] of [
    [{ REDIS_URL: '' }, /REDIS_URL is not set/],
    [{ REDIS_URL, REDIS_RECEIVER_DEFECT: 'nope' }, /unknown defect "nope"/],
  ]) {
    const { out, exited } = run(t, { PORT: '1', ...env });
    assert.deepEqual(await exited, { code: 2, signal: null });
    assert.match(out.text, want);
  }
});
