'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { verify, sign, decodeSecret, VerificationError } = require('../src/signature');

// Published vector of the Standard Webhooks libraries (libraries/go/webhook_test.go,
// libraries/javascript/src/webhook.test.ts).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const key = decodeSecret(VECTOR.secret);

function headers(over = {}) {
  return {
    'webhook-id': VECTOR.id,
    'webhook-timestamp': String(VECTOR.timestamp),
    'webhook-signature': VECTOR.signature,
    ...over,
  };
}

const at = (offsetSeconds) => ({ now: (VECTOR.timestamp + offsetSeconds) * 1000 });

function rejects(fn, status, pattern) {
  assert.throws(fn, (err) => err instanceof VerificationError && err.status === status && pattern.test(err.message));
}

test('the published vector verifies', () => {
  assert.equal(`v1,${sign(key, VECTOR.id, VECTOR.timestamp, Buffer.from(VECTOR.body)).toString('base64')}`, VECTOR.signature);
  assert.deepEqual(verify(key, headers(), Buffer.from(VECTOR.body), at(0)), { id: VECTOR.id, timestamp: VECTOR.timestamp });
  // The secret without its prefix is the same key.
  assert.deepEqual(decodeSecret(VECTOR.secret.slice('whsec_'.length)), key);
});

test('any v1 entry of the list may match; other schemes are skipped', () => {
  const list = `v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= ${VECTOR.signature}`;
  verify(key, headers({ 'webhook-signature': list }), Buffer.from(VECTOR.body), at(0));
});

test('a wrong signature, body, id or secret is refused with 401', () => {
  const body = Buffer.from(VECTOR.body);
  rejects(() => verify(key, headers({ 'webhook-signature': 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=' }), body, at(0)), 401, /no matching/);
  rejects(() => verify(key, headers(), Buffer.from('{"test": 2432232315}'), at(0)), 401, /no matching/);
  rejects(() => verify(key, headers({ 'webhook-id': 'msg_other' }), body, at(0)), 401, /no matching/);
  rejects(() => verify(decodeSecret('whsec_' + Buffer.from('another secret of 24 bytes').toString('base64')), headers(), body, at(0)), 401, /no matching/);
  rejects(() => verify(key, headers({ 'webhook-signature': 'v1,' }), body, at(0)), 401, /no matching/);
  rejects(() => verify(key, headers({ 'webhook-signature': 'g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' }), body, at(0)), 401, /no matching/);
});

test('timestamps are accepted up to five minutes away, both ways', () => {
  const body = Buffer.from(VECTOR.body);
  verify(key, headers(), body, at(300));
  verify(key, headers(), body, at(-300));
  rejects(() => verify(key, headers(), body, at(301)), 401, /too old/);
  rejects(() => verify(key, headers(), body, at(-301)), 401, /too new/);
});

test('missing or malformed headers are refused', () => {
  const body = Buffer.from(VECTOR.body);
  rejects(() => verify(key, headers({ 'webhook-id': undefined }), body, at(0)), 400, /webhook-id/);
  rejects(() => verify(key, headers({ 'webhook-id': 'a.b' }), body, at(0)), 400, /webhook-id/);
  rejects(() => verify(key, headers({ 'webhook-timestamp': undefined }), body, at(0)), 400, /timestamp/);
  rejects(() => verify(key, headers({ 'webhook-timestamp': '1614265330.5' }), body, at(0)), 400, /timestamp/);
  rejects(() => verify(key, headers({ 'webhook-signature': undefined }), body, at(0)), 401, /signature/);
});

test('a secret that is not whsec_<base64> is refused at startup', () => {
  assert.throws(() => decodeSecret(''), /empty/);
  assert.throws(() => decodeSecret('whsec_not base64!'), /base64/);
});
