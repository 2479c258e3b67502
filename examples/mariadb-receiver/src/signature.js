'use strict';

// Stripe webhook signature verification (docs.stripe.com/webhooks, "Verify
// webhook signatures with your own code"): the Stripe-Signature header is a
// comma-separated list of key=value pairs, "t" the Unix time of signing and
// one "v1" per active secret (a rolled secret keeps signing for up to 24 h).
// Each v1 is the hex HMAC-SHA256 of "{t}.{raw body}", keyed with the whole
// endpoint secret ("whsec_..." included) as UTF-8. Other schemes (v0, the
// test-mode scheme of old) are ignored.

const crypto = require('node:crypto');

// Stripe's libraries allow five minutes between signing and checking.
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

class VerificationError extends Error {
  constructor(message) {
    super(message);
    // Stripe's own examples answer 400 to any verification failure.
    this.status = 400;
  }
}

function sign(secret, timestamp, body) {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

// signatureHeader builds the header Stripe would send (used by the tests).
function signatureHeader(secret, timestamp, body) {
  return `t=${timestamp},v1=${sign(secret, timestamp, body).toString('hex')}`;
}

// checkSecret refuses a secret the app cannot have been given by Stripe.
function checkSecret(secret) {
  if (typeof secret !== 'string' || secret === '') throw new Error('is empty');
  if (!secret.startsWith('whsec_')) throw new Error('does not start with whsec_ (the endpoint signing secret)');
  return secret;
}

// verify checks one delivery: header is the Stripe-Signature value, body the
// raw Buffer. It returns the signing time or throws a VerificationError.
function verify(secret, header, body, { now = Date.now(), toleranceSeconds = DEFAULT_TOLERANCE_SECONDS } = {}) {
  if (typeof header !== 'string' || header === '') throw new VerificationError('missing Stripe-Signature header');
  let timestamp;
  const candidates = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    const k = item.slice(0, eq).trim();
    const v = item.slice(eq + 1).trim();
    if (k === 't') timestamp = v;
    else if (k === 'v1') candidates.push(v);
  }
  if (timestamp === undefined || !/^[0-9]{1,12}$/.test(timestamp)) {
    throw new VerificationError('Stripe-Signature has no valid timestamp');
  }
  if (candidates.length === 0) throw new VerificationError('Stripe-Signature has no v1 signature');

  const age = Math.floor(now / 1000) - Number(timestamp);
  if (age > toleranceSeconds) throw new VerificationError('timestamp outside the tolerance zone (too old)');
  if (-age > toleranceSeconds) throw new VerificationError('timestamp outside the tolerance zone (in the future)');

  const expected = sign(secret, timestamp, body);
  let match = false;
  for (const hex of candidates) {
    if (!/^[0-9a-f]{64}$/i.test(hex)) continue;
    const got = Buffer.from(hex, 'hex');
    // Keep looping after a match: the time taken does not say which entry matched.
    if (crypto.timingSafeEqual(got, expected)) match = true;
  }
  if (!match) throw new VerificationError('no signature matches the expected signature for the payload');
  return Number(timestamp);
}

module.exports = { verify, sign, signatureHeader, checkSecret, VerificationError, DEFAULT_TOLERANCE_SECONDS };
