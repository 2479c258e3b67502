'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { verify, signatureHeader, checkSecret, VerificationError } = require('../src/signature');

// A Stripe vector computed independently of this code (hookcert's
// simulator/profiles/vectors_test.go, TestVectorStripeDerived).
const VECTOR = {
  secret: 'whsec_test_secret',
  timestamp: 1700000000,
  body: '{"id":"evt_test_webhook","object":"event"}',
  header: 't=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990',
};
const body = Buffer.from(VECTOR.body);
const at = (offsetSeconds) => ({ now: (VECTOR.timestamp + offsetSeconds) * 1000 });

function rejects(fn, pattern) {
  assert.throws(fn, (err) => err instanceof VerificationError && err.status === 400 && pattern.test(err.message));
}

test('the vector verifies, and signatureHeader reproduces it', () => {
  assert.equal(signatureHeader(VECTOR.secret, VECTOR.timestamp, body), VECTOR.header);
  assert.equal(verify(VECTOR.secret, VECTOR.header, body, at(0)), VECTOR.timestamp);
});

test('any v1 of the header may match (a rolled secret); other schemes are skipped', () => {
  const other = signatureHeader('whsec_old_secret', VECTOR.timestamp, body).split(',')[1];
  verify(VECTOR.secret, `t=${VECTOR.timestamp},${other},v0=abc,${VECTOR.header.split(',')[1]}`, body, at(0));
  rejects(() => verify(VECTOR.secret, `t=${VECTOR.timestamp},v0=${VECTOR.header.split('v1=')[1]}`, body, at(0)), /no v1/);
});

test('a wrong signature, body or secret is refused with 400', () => {
  rejects(() => verify(VECTOR.secret, VECTOR.header.replace(/0$/, '1'), body, at(0)), /no signature matches/);
  rejects(() => verify(VECTOR.secret, VECTOR.header, Buffer.from(VECTOR.body + ' '), at(0)), /no signature matches/);
  rejects(() => verify('whsec_another', VECTOR.header, body, at(0)), /no signature matches/);
  rejects(() => verify(VECTOR.secret, `t=${VECTOR.timestamp},v1=zz`, body, at(0)), /no signature matches/);
  // The signature covers the timestamp: another t with the same v1 fails.
  rejects(() => verify(VECTOR.secret, VECTOR.header.replace('t=1700000000', 't=1700000001'), body, at(0)), /no signature matches/);
});

test('timestamps are accepted up to five minutes away, both ways', () => {
  verify(VECTOR.secret, VECTOR.header, body, at(300));
  verify(VECTOR.secret, VECTOR.header, body, at(-300));
  rejects(() => verify(VECTOR.secret, VECTOR.header, body, at(301)), /too old/);
  rejects(() => verify(VECTOR.secret, VECTOR.header, body, at(-301)), /future/);
});

test('a missing or malformed header is refused', () => {
  rejects(() => verify(VECTOR.secret, undefined, body, at(0)), /missing/);
  rejects(() => verify(VECTOR.secret, '', body, at(0)), /missing/);
  rejects(() => verify(VECTOR.secret, VECTOR.header.split(',')[1], body, at(0)), /timestamp/);
  rejects(() => verify(VECTOR.secret, 't=1700000000.5,v1=00', body, at(0)), /timestamp/);
  rejects(() => verify(VECTOR.secret, 't=1700000000', body, at(0)), /no v1/);
});

test('a secret that is not whsec_... is refused at startup', () => {
  assert.throws(() => checkSecret(''), /empty/);
  assert.throws(() => checkSecret(undefined), /empty/);
  assert.throws(() => checkSecret('sk_test_123'), /whsec_/);
  assert.equal(checkSecret('whsec_abc'), 'whsec_abc');
});
