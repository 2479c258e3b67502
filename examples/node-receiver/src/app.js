'use strict';

// The HTTP side: GET /healthz and POST /webhooks. One delivery is one
// PostgreSQL transaction: the event key, then the business change, then the
// commit, then the 2xx.

const { verify, VerificationError } = require('./signature');
const events = require('./events');

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

class TooLarge extends Error {}

// readBody buffers the request body up to limit bytes. Past the limit it stops
// buffering and rejects; the rest of the body is discarded by Node once the
// 413 is sent, so the sender reads the answer instead of a reset.
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

// parseEnvelope reads {"type", "timestamp", "data"}; anything else is a 400.
function parseEnvelope(body) {
  let ev;
  try {
    ev = JSON.parse(body.toString('utf8'));
  } catch {
    throw new events.BadEvent('malformed JSON');
  }
  if (ev === null || typeof ev !== 'object' || Array.isArray(ev)) throw new events.BadEvent('body is not a JSON object');
  if (typeof ev.type !== 'string' || ev.type === '') throw new events.BadEvent('missing type');
  if (ev.data === null || typeof ev.data !== 'object' || Array.isArray(ev.data)) throw new events.BadEvent('missing data object');
  return ev;
}

// createApp returns the request listener. opts: pool (pg.Pool), key (HMAC key
// Buffer), maxBodyBytes, toleranceSeconds, log (function), defect (string).
function createApp(opts) {
  const { pool, key, log = () => {} } = opts;
  const maxBodyBytes = opts.maxBodyBytes || DEFAULT_MAX_BODY_BYTES;
  const toleranceSeconds = opts.toleranceSeconds;
  const defect = opts.defect || '';

  // process stores the event and applies it in one transaction. It returns
  // [status, body].
  async function processInTransaction(eventId, ev, raw) {
    const client = await pool.connect();
    // A checked-out client has no error listener in pg-pool: without this one
    // a session terminated between two queries would crash the process.
    const onError = (err) => log(`database session error: ${err.message}`);
    client.on('error', onError);
    let broken;
    try {
      await client.query('BEGIN');
      const inserted = await client.query(
        `INSERT INTO webhook_events (event_id, type, received_at, payload)
         VALUES ($1, $2, now(), $3::jsonb) ON CONFLICT (event_id) DO NOTHING`,
        [eventId, ev.type, raw],
      );
      if (inserted.rowCount === 0) {
        await client.query('ROLLBACK');
        return [200, { received: true, duplicate: true }];
      }
      const outcome = await events.apply(client, eventId, ev.type, ev.data);
      await client.query('COMMIT');
      return [200, { received: true, outcome }];
    } catch (err) {
      await client.query('ROLLBACK').catch((e) => {
        broken = e;
      });
      throw err;
    } finally {
      client.removeListener('error', onError);
      // A client whose rollback failed has lost its session: drop it.
      client.release(broken);
    }
  }

  // The planted defect "no-transaction": the key and the business change are
  // separate autocommit statements.
  async function processWithoutTransaction(eventId, ev, raw) {
    const inserted = await pool.query(
      `INSERT INTO webhook_events (event_id, type, received_at, payload)
       VALUES ($1, $2, now(), $3::jsonb) ON CONFLICT (event_id) DO NOTHING`,
      [eventId, ev.type, raw],
    );
    if (inserted.rowCount === 0) return [200, { received: true, duplicate: true }];
    const outcome = await events.apply(pool, eventId, ev.type, ev.data);
    return [200, { received: true, outcome }];
  }

  const processEvent = defect === 'no-transaction' ? processWithoutTransaction : processInTransaction;

  async function webhook(req, res) {
    let body;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (err) {
      if (err instanceof TooLarge) return reply(res, 413, { error: `body larger than ${maxBodyBytes} bytes` });
      return reply(res, 400, { error: 'could not read body' });
    }
    let id;
    try {
      ({ id } = verify(key, req.headers, body, { toleranceSeconds }));
    } catch (err) {
      if (err instanceof VerificationError) return reply(res, err.status, { error: err.message });
      throw err;
    }
    let ev;
    try {
      ev = parseEnvelope(body);
      if (!events.handles(ev.type)) {
        // Acknowledged so the sender stops; nothing is stored.
        return reply(res, 200, { received: true, ignored: `unhandled type ${ev.type}` });
      }
      events.validate(ev.type, ev.data);
    } catch (err) {
      if (err instanceof events.BadEvent) return reply(res, 400, { error: err.message });
      throw err;
    }
    try {
      const [status, out] = await processEvent(id, ev, body.toString('utf8'));
      return reply(res, status, out);
    } catch (err) {
      if (err instanceof events.RetryLater) return reply(res, err.status, { error: err.message });
      log(`event ${id} (${ev.type}) failed: ${err.message}`);
      return reply(res, 500, { error: 'internal error' });
    }
  }

  return function listener(req, res) {
    const path = (req.url || '').split('?')[0];
    let work;
    if (path === '/healthz') {
      // Does not touch the database: a busy pool must not look like a dead process.
      work = req.method === 'GET' ? reply(res, 200, { ok: true }) : reply(res, 405, { error: 'method not allowed' });
    } else if (path === '/webhooks') {
      if (req.method !== 'POST') {
        reply(res, 405, { error: 'method not allowed' });
        req.resume();
        return;
      }
      work = webhook(req, res);
    } else {
      req.resume();
      reply(res, 404, { error: 'not found' });
      return;
    }
    Promise.resolve(work).catch((err) => {
      log(`unexpected error: ${err && err.message}`);
      reply(res, 500, { error: 'internal error' });
    });
  };
}

module.exports = { createApp, readBody, parseEnvelope, DEFAULT_MAX_BODY_BYTES };
