'use strict';

// Standard Webhooks v1 signature verification
// (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
// webhook-signature holds a space-delimited list of "v1,<base64 HMAC-SHA256>"
// entries over "{webhook-id}.{webhook-timestamp}.{raw body}", keyed with the
// base64-decoded secret (without its "whsec_" prefix).

const crypto = require('node:crypto');

// The reference libraries accept timestamps up to five minutes away, both ways.
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

class VerificationError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// decodeSecret turns "whsec_<base64>" (or the bare base64) into the HMAC key.
function decodeSecret(secret) {
  if (typeof secret !== 'string' || secret === '') {
    throw new Error('webhook secret is empty');
  }
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) {
    throw new Error('webhook secret is not base64 (expected whsec_<base64>)');
  }
  const key = Buffer.from(b64, 'base64');
  if (key.length === 0) {
    throw new Error('webhook secret decodes to no bytes');
  }
  return key;
}

function sign(key, id, timestamp, body) {
  return crypto
    .createHmac('sha256', key)
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest();
}

// verify checks one delivery. headers are Node's lower-cased request headers;
// body is the raw Buffer. It returns {id, timestamp} or throws a
// VerificationError carrying the HTTP status to answer.
function verify(key, headers, body, { now = Date.now(), toleranceSeconds = DEFAULT_TOLERANCE_SECONDS } = {}) {
  const id = single(headers['webhook-id']);
  const ts = single(headers['webhook-timestamp']);
  const sigs = single(headers['webhook-signature']);
  if (!id) throw new VerificationError(400, 'missing webhook-id');
  if (!ts) throw new VerificationError(400, 'missing webhook-timestamp');
  if (!sigs) throw new VerificationError(401, 'missing webhook-signature');
  // The id and timestamp are signed with "." as separator, so neither may hold one.
  if (id.length > 255 || id.includes('.')) throw new VerificationError(400, 'invalid webhook-id');
  if (!/^[0-9]{1,12}$/.test(ts)) throw new VerificationError(400, 'invalid webhook-timestamp');

  const nowSeconds = Math.floor(now / 1000);
  const timestamp = Number(ts);
  if (nowSeconds - timestamp > toleranceSeconds) throw new VerificationError(401, 'message timestamp too old');
  if (timestamp - nowSeconds > toleranceSeconds) throw new VerificationError(401, 'message timestamp too new');

  const expected = sign(key, id, ts, body);
  let match = false;
  for (const entry of sigs.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue; // other schemes (v1a) are not ours
    const got = Buffer.from(entry.slice(comma + 1), 'base64');
    // timingSafeEqual needs equal lengths; the length of a digest is no secret.
    if (got.length === expected.length && crypto.timingSafeEqual(got, expected)) {
      match = true; // keep looping: the time taken does not depend on which entry matched
    }
  }
  if (!match) throw new VerificationError(401, 'no matching signature');
  return { id, timestamp };
}

// single reads one header value (a repeated header reaches us joined with
// ", ", which then fails the checks below).
function single(v) {
  return typeof v === 'string' ? v.trim() : undefined;
}

module.exports = { verify, sign, decodeSecret, VerificationError, DEFAULT_TOLERANCE_SECONDS };
