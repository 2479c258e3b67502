'use strict';

// Stripe signature rules, without a server.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { verify, sign, VerificationError } = require('../src/signature');

const SECRET = 'whsec_test_secret';
const BODY = Buffer.from('{"id":"evt_1","object":"event"}');
const NOW = 1_700_000_000_000;
const T = NOW / 1000;

function header(...parts) {
  return { 'stripe-signature': parts.join(',') };
}

const v1 = (secret = SECRET, t = T, body = BODY) => `v1=${sign(secret, t, body).toString('hex')}`;

function refused(headers, body = BODY, now = NOW) {
  assert.throws(() => verify(SECRET, headers, body, { now }), (err) => err instanceof VerificationError && err.status === 400);
}

test('the key is the whole whsec_ string as UTF-8, over "t.body"', () => {
  const want = crypto.createHmac('sha256', 'whsec_test_secret').update(`${T}.${BODY}`).digest('hex');
  assert.equal(v1(), `v1=${want}`);
  assert.equal(verify(SECRET, header(`t=${T}`, v1()), BODY, { now: NOW }), T);
});

test('any v1 of several may match (a secret being rolled); v0 and junk are ignored', () => {
  verify(SECRET, header(`t=${T}`, v1('whsec_old'), v1(), 'v0=abcd'), BODY, { now: NOW });
  verify(SECRET, header(`t=${T}`, 'v1=nothex', v1()), BODY, { now: NOW });
  refused(header(`t=${T}`, v1('whsec_other')));
  refused(header(`t=${T}`, 'v0=' + sign(SECRET, T, BODY).toString('hex')));
});

test('a changed body, timestamp or secret does not verify', () => {
  refused(header(`t=${T}`, v1()), Buffer.from('{"id":"evt_2","object":"event"}'));
  refused(header(`t=${T + 1}`, v1()));
  refused(header(`t=${T}`, v1(SECRET + 'x')));
});

test('the tolerance is five minutes, both ways', () => {
  for (const skew of [-300, -150, 60, 300]) {
    verify(SECRET, header(`t=${T + skew}`, v1(SECRET, T + skew)), BODY, { now: NOW });
  }
  for (const skew of [-301, 301, -86400]) {
    refused(header(`t=${T + skew}`, v1(SECRET, T + skew)));
  }
});

test('missing or malformed headers', () => {
  refused({});
  refused(header(v1()));
  refused(header(`t=${T}`));
  refused(header('t=abc', v1()));
});
