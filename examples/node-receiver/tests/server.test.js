'use strict';

// node server.js as the harness runs it: schema at startup, /healthz, a
// delivery, graceful SIGTERM, and no secret in its output.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { SECRET, createDatabase, newId, signedRequest, post } = require('./helpers');

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

test('server.js starts, serves and stops on SIGTERM', async (t) => {
  const db = await createDatabase();
  t.after(() => db.drop());
  const port = await freePort();
  const child = spawn(process.execPath, ['server.js'], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, PORT: String(port), DATABASE_URL: db.url, WEBHOOK_SECRET: SECRET, NODE_RECEIVER_DEFECT: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  t.after(() => child.kill('SIGKILL'));

  const url = `http://127.0.0.1:${port}`;
  let ready = false;
  for (let i = 0; i < 100 && !ready; i++) {
    ready = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(ready, `not ready:\n${output}`);

  const req = signedRequest('invoice.paid', { id: newId('in'), amount_paid: 42 });
  assert.equal((await post(url, req)).status, 200);

  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(output, /listening/);
  assert.ok(!output.includes(SECRET.slice('whsec_'.length)), 'the secret appears in the output');
  assert.ok(!output.includes(db.url), 'the database URL appears in the output');
});
