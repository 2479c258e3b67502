'use strict';

// The HTTP side: GET /healthz, POST /webhooks/stripe and the app's own
// POST /payments (checkout). A delivery is answered 2xx only once its script
// has run in Redis.

const { verify, VerificationError } = require('./signature');
const events = require('./events');

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

class TooLarge extends Error {}

// readBody buffers the request body up to limit bytes. Past the limit it stops
// buffering and rejects; the rest is discarded once the 413 is sent, so the
// sender reads the answer instead of a reset.
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new TooLarge());
      return;
    }
    const chunks = [];
    let size = 0;
    let done = false;
    const onData = (chunk) => {
      size += chunk.length;
      if (size > limit) {
        done = true;
        chunks.length = 0;
        req.removeListener('data', onData);
        req.resume();
        reject(new TooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks, size));
    });
    req.on('error', (err) => {
      if (!done) {
        done = true;
        reject(err);
      }
    });
  });
}

function reply(res, status, body) {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function parseJSONObject(body) {
  let v;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new events.BadEvent('malformed JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new events.BadEvent('body is not a JSON object');
  return v;
}

// parseEvent reads Stripe's Event envelope: id, type, data.object.
function parseEvent(body) {
  const ev = parseJSONObject(body);
  if (typeof ev.id !== 'string' || !/^[^\s]{1,255}$/.test(ev.id)) throw new events.BadEvent('missing or invalid event id');
  if (typeof ev.type !== 'string' || ev.type === '') throw new events.BadEvent('missing type');
  const obj = ev.data && ev.data.object;
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new events.BadEvent('missing data.object');
  return ev;
}

// createApp returns the request listener. opts: store (store.js), secret (the
// endpoint's signing secret), maxBodyBytes, toleranceSeconds, log.
function createApp(opts) {
  const { store, secret, log = () => {} } = opts;
  const maxBodyBytes = opts.maxBodyBytes || DEFAULT_MAX_BODY_BYTES;
  const toleranceSeconds = opts.toleranceSeconds;

  async function webhook(req, res) {
    let body;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (err) {
      if (err instanceof TooLarge) return reply(res, 413, { error: `body larger than ${maxBodyBytes} bytes` });
      return reply(res, 400, { error: 'could not read body' });
    }
    try {
      verify(secret, req.headers, body, { toleranceSeconds });
    } catch (err) {
      if (err instanceof VerificationError) return reply(res, err.status, { error: err.message });
      throw err;
    }
    let ev;
    try {
      ev = parseEvent(body);
    } catch (err) {
      if (err instanceof events.BadEvent) return reply(res, 400, { error: err.message });
      throw err;
    }
    if (!events.handles(ev.type)) {
      // Acknowledged so that Stripe stops; nothing is stored.
      return reply(res, 200, { received: true, ignored: `unhandled type ${ev.type}` });
    }
    try {
      const outcome = await events.apply(store, ev);
      return reply(res, 200, { received: true, outcome });
    } catch (err) {
      if (err instanceof events.BadEvent) return reply(res, 400, { error: err.message });
      if (err instanceof events.RetryLater) return reply(res, err.status, { error: err.message });
      log(`event ${ev.id} (${ev.type}) failed: ${err.message}`);
      return reply(res, 500, { error: 'internal error' });
    }
  }

  // checkout is the app's own API: it writes the payment before Stripe sends
  // anything about it.
  async function checkout(req, res) {
    let p;
    try {
      p = parseJSONObject(await readBody(req, 64 * 1024));
    } catch (err) {
      return reply(res, 400, { error: err instanceof events.BadEvent ? err.message : 'could not read body' });
    }
    if (typeof p.id !== 'string' || !/^[^\s]{1,255}$/.test(p.id) || !Number.isSafeInteger(p.amount) || typeof p.currency !== 'string') {
      return reply(res, 400, { error: 'want {"id": string, "amount": integer, "currency": string}' });
    }
    try {
      const created = await store.checkout(p.id, p.amount, p.currency);
      return reply(res, created === 1 ? 201 : 200, { id: p.id, created: created === 1 });
    } catch (err) {
      log(`checkout ${p.id} failed: ${err.message}`);
      return reply(res, 500, { error: 'internal error' });
    }
  }

  const routes = {
    '/webhooks/stripe': { POST: webhook },
    '/payments': { POST: checkout },
    '/healthz': { GET: (req, res) => reply(res, 200, { ok: true }) },
  };

  return function listener(req, res) {
    const route = routes[(req.url || '').split('?')[0]];
    if (!route) {
      req.resume();
      reply(res, 404, { error: 'not found' });
      return;
    }
    const handler = route[req.method];
    if (!handler) {
      req.resume();
      reply(res, 405, { error: 'method not allowed' });
      return;
    }
    Promise.resolve(handler(req, res)).catch((err) => {
      log(`unexpected error: ${err && err.message}`);
      reply(res, 500, { error: 'internal error' });
    });
  };
}

module.exports = { createApp, readBody, parseEvent, DEFAULT_MAX_BODY_BYTES };
