'use strict';

// Stripe webhook signature verification (docs.stripe.com/webhooks, "Verify
// webhook signatures manually"): Stripe-Signature is "t=<unix seconds>,
// v1=<hex>[,v1=<hex>...][,v0=<hex>]", each v1 the HMAC-SHA256 of
// "{t}.{raw body}" keyed with the endpoint's whole signing secret ("whsec_..."
// as UTF-8 bytes, not base64-decoded). While a secret is being rolled Stripe
// sends one v1 per active secret; any may match. Other schemes (v0) are ignored.

const crypto = require('node:crypto');

// Stripe's libraries accept timestamps up to five minutes old.
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

class VerificationError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function sign(secret, timestamp, body) {
  return crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.`).update(body).digest();
}

// parseHeader reads t and every v1 of a Stripe-Signature header.
function parseHeader(header) {
  let timestamp;
  const v1 = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    const k = item.slice(0, eq).trim();
    const v = item.slice(eq + 1).trim();
    if (k === 't') timestamp = v;
    else if (k === 'v1') v1.push(v);
  }
  return { timestamp, v1 };
}

// verify checks one delivery: headers are Node's lower-cased request headers,
// body the raw Buffer. It returns the signed timestamp or throws a
// VerificationError carrying the HTTP status to answer.
function verify(secret, headers, body, { now = Date.now(), toleranceSeconds = DEFAULT_TOLERANCE_SECONDS } = {}) {
  const header = headers['stripe-signature'];
  if (typeof header !== 'string' || header === '') throw new VerificationError(400, 'missing Stripe-Signature');
  const { timestamp, v1 } = parseHeader(header);
  if (!timestamp || !/^[0-9]{1,12}$/.test(timestamp)) throw new VerificationError(400, 'Stripe-Signature has no valid t=');
  if (v1.length === 0) throw new VerificationError(400, 'Stripe-Signature has no v1 signature');

  const expected = sign(secret, timestamp, body);
  let match = false;
  for (const hex of v1) {
    if (!/^[0-9a-f]{64}$/.test(hex)) continue; // unparsable entries are ignored, as stripe-node does
    const got = Buffer.from(hex, 'hex');
    // Keep looping: the time taken does not depend on which entry matched.
    if (crypto.timingSafeEqual(got, expected)) match = true;
  }
  if (!match) throw new VerificationError(400, 'no matching v1 signature');
  // After the signature, as Stripe's libraries do: a stale but genuine delivery
  // is told apart from a forged one only in the message.
  const age = Math.floor(now / 1000) - Number(timestamp);
  if (Math.abs(age) > toleranceSeconds) throw new VerificationError(400, 'timestamp outside the tolerance');
  return Number(timestamp);
}

module.exports = { verify, sign, parseHeader, VerificationError, DEFAULT_TOLERANCE_SECONDS };
