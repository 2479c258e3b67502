'use strict';

// The HTTP side: GET /healthz and POST /webhooks (Stripe). One delivery is one
// transaction: the guarded upserts, the commit, then the 200.

const { verify, VerificationError } = require('./signature');
const { BadEvent } = require('./sync');

const MAX_BODY_BYTES = 1024 * 1024;

function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        return;
      }
      if (!over) chunks.push(chunk);
    });
    req.on('end', () => (over ? reject(new BadEvent('body too large')) : resolve(Buffer.concat(chunks))));
    req.on('error', reject);
  });
}

function reply(res, status, body) {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

// parse reads a Stripe event; an event without an ID, type, created time or
// object is refused (the sync once stored such events).
function parse(body) {
  let ev;
  try {
    ev = JSON.parse(body.toString('utf8'));
  } catch {
    throw new BadEvent('malformed JSON');
  }
  if (ev === null || typeof ev !== 'object') throw new BadEvent('body is not a JSON object');
  if (typeof ev.id !== 'string' || ev.id === '') throw new BadEvent('missing event id');
  if (typeof ev.type !== 'string' || ev.type === '') throw new BadEvent('missing type');
  if (!Number.isSafeInteger(ev.created)) throw new BadEvent('missing created');
  if (ev.data === null || typeof ev.data !== 'object') throw new BadEvent('missing data');
  return ev;
}

function createApp({ pool, secret, sync, log = () => {}, defect = '' }) {
  async function apply(ev) {
    const client = await pool.connect();
    const onError = (err) => log(`database session error: ${err.message}`);
    client.on('error', onError);
    let broken;
    try {
      await client.query('BEGIN');
      await sync.apply(client, ev);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch((e) => {
        broken = e;
      });
      throw err;
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  async function webhook(req, res) {
    let ev;
    try {
      const body = await readBody(req, MAX_BODY_BYTES);
      if (defect !== 'unsigned') verify(secret, req.headers['stripe-signature'], body);
      ev = parse(body);
    } catch (err) {
      if (err instanceof VerificationError || err instanceof BadEvent) return reply(res, 400, { error: err.message });
      throw err;
    }
    if (!sync.handles(ev.type)) {
      if (defect === 'reject-unknown-types') return reply(res, 400, { error: `unknown event type ${ev.type}` });
      return reply(res, 200, { received: true, ignored: ev.type });
    }
    if (defect === 'ack-before-commit') {
      // Answered first, applied after: a failure now is the provider's loss.
      reply(res, 200, { received: true });
      return apply(ev).catch((err) => log(`event ${ev.id} (${ev.type}) failed after its 200: ${err.message}`));
    }
    try {
      await apply(ev);
    } catch (err) {
      if (err instanceof BadEvent) return reply(res, 400, { error: err.message });
      log(`event ${ev.id} (${ev.type}) failed: ${err.message}`);
      return reply(res, 500, { error: 'internal error' });
    }
    return reply(res, 200, { received: true });
  }

  return function listener(req, res) {
    const path = (req.url || '').split('?')[0];
    let work;
    if (path === '/healthz' && req.method === 'GET') {
      work = reply(res, 200, { ok: true });
    } else if (path === '/webhooks' && req.method === 'POST') {
      work = webhook(req, res);
    } else {
      req.resume();
      return reply(res, 404, { error: 'not found' });
    }
    Promise.resolve(work).catch((err) => {
      log(`unexpected error: ${err && err.message}`);
      reply(res, 500, { error: 'internal error' });
    });
  };
}

module.exports = { createApp };
