'use strict';

// Zoom: x-zm-signature is "v0=" and the lowercase hex HMAC-SHA256, keyed with
// the app's Secret Token, of "v0:{x-zm-request-timestamp}:{raw body}"; an
// endpoint.url_validation event is answered 200 with the plainToken and
// encryptedToken = hex HMAC-SHA256(Secret Token, plainToken), within 3 s
// (https://developers.zoom.us/docs/api/webhooks/,
// https://developers.zoom.us/changelog/platform/webhook-url-validation/).
// Zoom publishes no npm verifier; this is node:crypto as the docs describe.

const crypto = require('node:crypto');
const { Refused, header, parseObject, isObject, text } = require('../refuse');

function signature(secretToken, timestamp, body) {
  return `v0=${crypto.createHmac('sha256', secretToken).update(`v0:${timestamp}:`).update(body).digest('hex')}`;
}

// verify checks x-zm-signature; it throws a Refused (401) otherwise. Zoom
// documents no timestamp tolerance, so none is applied: the timestamp counts
// only as signed content.
function verify(secretToken, req, body) {
  const ts = header(req, 'x-zm-request-timestamp');
  const got = Buffer.from(header(req, 'x-zm-signature'), 'utf8');
  if (!ts) throw new Refused(401, 'missing x-zm-request-timestamp');
  if (got.length === 0) throw new Refused(401, 'missing x-zm-signature');
  const want = Buffer.from(signature(secretToken, ts, body), 'utf8');
  // timingSafeEqual needs equal lengths; a digest's length is no secret.
  if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) {
    throw new Refused(401, 'x-zm-signature does not match');
  }
}

// urlValidation is the answer to endpoint.url_validation.
function urlValidation(secretToken, plainToken) {
  return { plainToken, encryptedToken: crypto.createHmac('sha256', secretToken).update(plainToken).digest('hex') };
}

// endpoint receives one Zoom app's event notifications for its account. Zoom
// sends no event ID: event_ts (the event's time in milliseconds) is the same
// in every retry of an event, and is what the app deduplicates on.
// unkeyedValidation answers the validation with a plain SHA-256 of the
// token (the planted defect).
function endpoint({ account, secretToken, unkeyedValidation = false }) {
  return {
    source: 'zoom',
    account,
    async receive(req, body) {
      verify(secretToken, req, body);
      const msg = parseObject(body);
      if (msg.event === 'endpoint.url_validation') {
        const plainToken = text(isObject(msg.payload) ? msg.payload.plainToken : undefined, 'payload.plainToken');
        const answer = unkeyedValidation
          ? { plainToken, encryptedToken: crypto.createHash('sha256').update(plainToken).digest('hex') }
          : urlValidation(secretToken, plainToken);
        return { answer: [200, answer] };
      }
      const type = text(msg.event, 'event');
      const ts = typeof msg.event_ts === 'number' ? String(msg.event_ts) : text(msg.event_ts, 'event_ts');
      if (!isObject(msg.payload) || !isObject(msg.payload.object)) throw new Refused(400, 'missing payload.object');
      return { event: { id: ts, type, subject: msg.payload.object.id } };
    },
    ok: (out) => [200, 'application/json', JSON.stringify(out)],
  };
}

module.exports = { signature, verify, urlValidation, endpoint };
