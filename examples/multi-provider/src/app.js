'use strict';

// The HTTP side: GET /healthz and one POST endpoint per provider. A delivery
// is checked by its provider's rules (signature first), then stored and
// applied in one PostgreSQL transaction: the event key, then the points,
// then the commit, then the 2xx.

const { readBody, TooLarge } = require('./body');
const { Refused } = require('./refuse');
const events = require('./events');

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

function reply(res, status, contentType, text) {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function replyJSON(res, status, body) {
  reply(res, status, 'application/json', JSON.stringify(body));
}

// createApp returns the request listener. opts: pool (pg.Pool), endpoints
// (path → provider endpoint, src/providers/*.js), maxBodyBytes, log.
function createApp(opts) {
  const { pool, endpoints, log = () => {} } = opts;
  const maxBodyBytes = opts.maxBodyBytes || DEFAULT_MAX_BODY_BYTES;

  // record stores the event's key and applies it in one transaction. It
  // returns what to answer.
  async function record(ep, ev, payload) {
    const client = await pool.connect();
    // A checked-out client has no error listener in pg-pool: without this one
    // a session terminated between two queries would crash the process.
    const onError = (err) => log(`database session error: ${err.message}`);
    client.on('error', onError);
    let broken;
    try {
      await client.query('BEGIN');
      const inserted = await client.query(
        `INSERT INTO webhook_events (source, account, event_id, type, payload)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (source, account, event_id) DO NOTHING`,
        [ep.source, ep.account, ev.id, ev.type, payload],
      );
      if (inserted.rowCount === 0) {
        await client.query('ROLLBACK');
        return { received: true, duplicate: true };
      }
      const outcome = await events.apply(client, { ...ev, source: ep.source, account: ep.account });
      await client.query('COMMIT');
      return { received: true, outcome };
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

  async function webhook(ep, req, res) {
    let body;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (err) {
      if (err instanceof TooLarge) return replyJSON(res, 413, { error: `body larger than ${maxBodyBytes} bytes` });
      return replyJSON(res, 400, { error: 'could not read body' });
    }
    let got;
    try {
      got = await ep.receive(req, body);
      if (got.answer) {
        // A provider's check of the endpoint (Zoom's URL validation, Discord's
        // PING): answered, not stored.
        return replyJSON(res, got.answer[0], got.answer[1]);
      }
      if (!events.handles(got.event.type)) {
        // Acknowledged so that the provider stops; nothing is stored.
        return reply(res, ...ep.ok({ received: true, ignored: true }));
      }
      events.validate(got.event);
    } catch (err) {
      if (err instanceof Refused || err instanceof events.BadEvent) return replyJSON(res, err.status, { error: err.message });
      throw err;
    }
    try {
      return reply(res, ...ep.ok(await record(ep, got.event, body.toString('utf8'))));
    } catch (err) {
      log(`${ep.source} event ${got.event.id} (${got.event.type}) failed: ${err.message}`);
      return replyJSON(res, 500, { error: 'internal error' });
    }
  }

  return function listener(req, res) {
    const path = (req.url || '').split('?')[0];
    let work;
    const ep = Object.prototype.hasOwnProperty.call(endpoints, path) ? endpoints[path] : undefined;
    if (path === '/healthz') {
      // Does not touch the database: a busy pool must not look like a dead process.
      work = req.method === 'GET' ? replyJSON(res, 200, { ok: true }) : replyJSON(res, 405, { error: 'method not allowed' });
    } else if (ep) {
      if (req.method !== 'POST') {
        replyJSON(res, 405, { error: 'method not allowed' });
        req.resume();
        return;
      }
      work = webhook(ep, req, res);
    } else {
      req.resume();
      replyJSON(res, 404, { error: 'not found' });
      return;
    }
    Promise.resolve(work).catch((err) => {
      log(`unexpected error: ${err && err.message}`);
      replyJSON(res, 500, { error: 'internal error' });
    });
  };
}

module.exports = { createApp, DEFAULT_MAX_BODY_BYTES };
