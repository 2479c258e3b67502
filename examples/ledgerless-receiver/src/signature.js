'use strict';

// Stripe's signature: Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…], each
// v1 an HMAC-SHA256 over "<t>.<raw body>" keyed with the whole whsec_ secret.

const crypto = require('node:crypto');

const TOLERANCE_SECONDS = 300;

class VerificationError extends Error {
  constructor(message) {
    super(message);
    this.status = 400;
  }
}

function verify(secret, header, body, now = Date.now()) {
  if (typeof header !== 'string' || header === '') throw new VerificationError('missing Stripe-Signature');
  let t;
  const sigs = [];
  for (const part of header.split(',')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't') t = v;
    else if (k === 'v1') sigs.push(v);
  }
  if (!/^\d+$/.test(t || '') || sigs.length === 0) throw new VerificationError('malformed Stripe-Signature');
  if (Math.abs(now / 1000 - Number(t)) > TOLERANCE_SECONDS) throw new VerificationError('timestamp outside the tolerance');
  const want = crypto.createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  for (const s of sigs) {
    const got = Buffer.from(s, 'hex');
    if (got.length === want.length && crypto.timingSafeEqual(got, want)) return;
  }
  throw new VerificationError('no valid signature');
}

module.exports = { verify, VerificationError };
