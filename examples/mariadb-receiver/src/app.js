'use strict';

// The HTTP side: GET /healthz and one POST path per Stripe webhook endpoint.
// One delivery is one MariaDB transaction: the event key, then the business
// change, then the COMMIT, then the 2xx.

const { verify, VerificationError } = require('./signature');
const events = require('./events');

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
// A deadlock rolls the whole transaction back; it is run again this many times in all.
const MAX_ATTEMPTS = 5;

class TooLarge extends Error {}

// readBody buffers the request body up to limit bytes. Past the limit it stops
// buffering and rejects; the rest of the body is discarded once the 413 is
// sent, so the sender reads the answer instead of a reset.
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

// parseEvent reads a Stripe Event object: {"id", "type", "created", "data":
// {"object": {...}}}; anything else is a 400.
function parseEvent(body) {
  let ev;
  try {
    ev = JSON.parse(body.toString('utf8'));
  } catch {
    throw new events.BadEvent('malformed JSON');
  }
  if (ev === null || typeof ev !== 'object' || Array.isArray(ev)) throw new events.BadEvent('body is not a JSON object');
  if (typeof ev.id !== 'string' || ev.id === '' || ev.id.length > 255) throw new events.BadEvent('missing or invalid event id');
  if (typeof ev.type !== 'string' || ev.type === '') throw new events.BadEvent('missing type');
  const data = ev.data;
  if (data === null || typeof data !== 'object' || data.object === null || typeof data.object !== 'object' || Array.isArray(data.object)) {
    throw new events.BadEvent('missing data.object');
  }
  return ev;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// createApp returns the request listener. opts: pool (mysql2/promise pool),
// endpoints ([{path, source, secret}]), maxBodyBytes, toleranceSeconds, log,
// defect (string).
function createApp(opts) {
  const { pool, log = () => {} } = opts;
  const maxBodyBytes = opts.maxBodyBytes || DEFAULT_MAX_BODY_BYTES;
  const toleranceSeconds = opts.toleranceSeconds;
  const defect = opts.defect || '';
  const endpoints = new Map(opts.endpoints.map((ep) => [ep.path, ep]));

  // inTransaction runs work(conn) between START TRANSACTION and COMMIT on one
  // pooled connection, and runs it again from the start when InnoDB picked it
  // as a deadlock victim (it has then rolled the whole transaction back).
  async function inTransaction(work) {
    for (let attempt = 1; ; attempt++) {
      const conn = await pool.getConnection();
      let broken = false;
      try {
        await conn.beginTransaction();
        const out = await work(conn);
        await conn.commit();
        return out;
      } catch (err) {
        await conn.rollback().catch(() => {
          broken = true;
        });
        if (err.code === 'ER_LOCK_DEADLOCK' && attempt < MAX_ATTEMPTS) {
          log(`deadlock (attempt ${attempt} of ${MAX_ATTEMPTS}); running the transaction again`);
          await sleep(5 + Math.floor(Math.random() * 20 * attempt));
          continue;
        }
        throw err;
      } finally {
        // A connection whose rollback failed has lost its session: drop it.
        if (broken) conn.destroy();
        else conn.release();
      }
    }
  }

  const INSERT_KEY = 'INSERT INTO webhook_events (source, event_id, type, payload) VALUES (?, ?, ?, ?)';

  // storeAndApply inserts the event key and applies the event in one
  // transaction. The UNIQUE key refuses a key seen before (ER_DUP_ENTRY, also
  // for a concurrent copy, once the first commits): nothing more is done.
  async function storeAndApply(key, ev, raw) {
    return inTransaction(async (conn) => {
      try {
        await conn.execute(INSERT_KEY, [key.source, key.eventId, ev.type, raw]);
      } catch (err) {
        if (err.code === 'ER_DUP_ENTRY') return { received: true, duplicate: true };
        throw err;
      }
      return { received: true, outcome: await events.apply(conn, key, ev) };
    });
  }

  // The planted defect "check-then-insert": the table has no unique key, so
  // the handler looks the key up first. Under REPEATABLE READ the SELECT is a
  // plain snapshot read: two copies in flight together both find nothing.
  async function checkThenInsert(key, ev, raw) {
    return inTransaction(async (conn) => {
      const [seen] = await conn.execute('SELECT id FROM webhook_events WHERE source = ? AND event_id = ? LIMIT 1', [key.source, key.eventId]);
      if (seen.length > 0) return { received: true, duplicate: true };
      await conn.execute(INSERT_KEY, [key.source, key.eventId, ev.type, raw]);
      return { received: true, outcome: await events.apply(conn, key, ev) };
    });
  }

  const processEvent = defect === 'check-then-insert' ? checkThenInsert : storeAndApply;

  function fail(res, key, ev, err) {
    if (err instanceof events.RetryLater) return reply(res, err.status, { error: err.message });
    log(`event ${key.eventId} (${ev.type}) failed: ${err.message}`);
    return reply(res, 500, { error: 'internal error' });
  }

  async function webhook(ep, req, res) {
    let body;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (err) {
      if (err instanceof TooLarge) return reply(res, 413, { error: `body larger than ${maxBodyBytes} bytes` });
      return reply(res, 400, { error: 'could not read body' });
    }
    try {
      verify(ep.secret, req.headers['stripe-signature'], body, { toleranceSeconds });
    } catch (err) {
      if (err instanceof VerificationError) return reply(res, err.status, { error: `Webhook Error: ${err.message}` });
      throw err;
    }
    let ev;
    try {
      ev = parseEvent(body);
      if (!events.handles(ev.type)) {
        // Acknowledged so that Stripe stops sending it; nothing is stored.
        return reply(res, 200, { received: true, ignored: `unhandled type ${ev.type}` });
      }
      events.validate(ev);
    } catch (err) {
      if (err instanceof events.BadEvent) return reply(res, err.status, { error: err.message });
      throw err;
    }
    const key = { source: ep.source, eventId: ev.id };
    const raw = body.toString('utf8');
    if (defect === 'ack-before-commit') {
      // The planted defect "ack-before-commit": Stripe asks for a quick 2xx,
      // so the answer goes out first and the transaction runs after it. A
      // crash before the COMMIT loses an event Stripe will never resend.
      reply(res, 200, { received: true });
      try {
        await processEvent(key, ev, raw);
      } catch (err) {
        log(`event ${key.eventId} (${ev.type}) failed after its 2xx: ${err.message}`);
      }
      return undefined;
    }
    try {
      return reply(res, 200, await processEvent(key, ev, raw));
    } catch (err) {
      return fail(res, key, ev, err);
    }
  }

  return function listener(req, res) {
    const path = (req.url || '').split('?')[0];
    let work;
    const ep = endpoints.get(path);
    if (path === '/healthz') {
      // Does not touch the database: a busy pool must not look like a dead process.
      work = req.method === 'GET' ? reply(res, 200, { ok: true }) : reply(res, 405, { error: 'method not allowed' });
    } else if (ep) {
      if (req.method !== 'POST') {
        reply(res, 405, { error: 'method not allowed' });
        req.resume();
        return;
      }
      work = webhook(ep, req, res);
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

module.exports = { createApp, readBody, parseEvent, DEFAULT_MAX_BODY_BYTES, MAX_ATTEMPTS };
