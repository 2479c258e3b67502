'use strict';

// The receiver's verifiers, and the test signers, against the providers'
// published test vectors (and derived ones where none is published), as
// /work/shared/providers.yaml and hookcert's contracts record them.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const twilio = require('../src/providers/twilio');
const zoom = require('../src/providers/zoom');
const discord = require('../src/providers/discord');
const clerk = require('../src/providers/clerk');
const h = require('./helpers');

// fakeReq is the part of a request the verifiers read.
function fakeReq(headers) {
  return { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) };
}

const TWILIO_URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const TWILIO_PARAMS = 'CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212';

test('twilio: the published vectors (twilio-python test_request_validator)', () => {
  const params = new URLSearchParams(TWILIO_PARAMS);
  const cases = [
    [TWILIO_URL, params, 'RSOYDt4T1cUTdK1PDd93/VVr8B8='],
    [TWILIO_URL, new URLSearchParams('Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234'), 'IK+Dwps556ElfBT0I3Rgjkr1wJU='],
    ['http://mycompany.com:1234/myapp.php?foo=1&bar=2', params, 'Zmvh+3yNM1Phv2jhDCwEM3q5ebU='],
    ['https://mycompany.com:443/myapp.php?foo=1&bar=2', params, 'kvajT1Ptam85bY51eRf/AJRuM3w='],
    ['http://mycompany.com:80/myapp.php?foo=1&bar=2', params, '0ZXoZLH/DfblKGATFgpif+LLRf4='],
  ];
  for (const [url, p, want] of cases) {
    assert.equal(twilio.signature('12345', url, p), want, url);
    assert.equal(h.twilioSignature('12345', url, p), want, `test signer: ${url}`);
  }
  // Twilio's validators accept the URL signed with or without the default port.
  twilio.verify('12345', fakeReq({ 'X-Twilio-Signature': 'kvajT1Ptam85bY51eRf/AJRuM3w=' }), TWILIO_URL, params);
  twilio.verify('12345', fakeReq({ 'X-Twilio-Signature': 'RSOYDt4T1cUTdK1PDd93/VVr8B8=' }), 'https://mycompany.com:443/myapp.php?foo=1&bar=2', params);
});

test('twilio: what the signature covers', () => {
  const params = new URLSearchParams(TWILIO_PARAMS);
  const ok = fakeReq({ 'X-Twilio-Signature': 'RSOYDt4T1cUTdK1PDd93/VVr8B8=' });
  const refused = (fn) => assert.throws(fn, (e) => e.status === 401);
  refused(() => twilio.verify('12346', ok, TWILIO_URL, params));
  refused(() => twilio.verify('12345', ok, `${TWILIO_URL}&x=1`, params));
  refused(() => twilio.verify('12345', ok, 'https://mycompany.com/myapp.php', params));
  refused(() => twilio.verify('12345', ok, 'https://other.example/myapp.php?foo=1&bar=2', params));
  const changed = new URLSearchParams(params);
  changed.set('Digits', '1235');
  refused(() => twilio.verify('12345', ok, TWILIO_URL, changed));
  const added = new URLSearchParams(params);
  added.append('Extra', '1');
  refused(() => twilio.verify('12345', ok, TWILIO_URL, added));
  // The header as sent: a truncated or padded signature is not the signature.
  refused(() => twilio.verify('12345', fakeReq({ 'X-Twilio-Signature': 'RSOYDt4T1cUTdK1PDd93' }), TWILIO_URL, params));
  refused(() => twilio.verify('12345', fakeReq({ 'X-Twilio-Signature': 'RSOYDt4T1cUTdK1PDd93/VVr8B8=!' }), TWILIO_URL, params));
  refused(() => twilio.verify('12345', fakeReq({}), TWILIO_URL, params));
});

test('twilio: the URL the receiver reconstructs', () => {
  const req = { headers: { host: '127.0.0.1:8080' }, url: '/webhooks/twilio?tenant=a' };
  assert.equal(twilio.requestURL(req, ''), 'http://127.0.0.1:8080/webhooks/twilio?tenant=a');
  assert.equal(twilio.requestURL(req, 'https://hooks.example.com'), 'https://hooks.example.com/webhooks/twilio?tenant=a');
  // The planted defect drops the query.
  assert.equal(twilio.requestURL(req, '', true), 'http://127.0.0.1:8080/webhooks/twilio');
});

test('zoom: the derived vector and the URL validation answer', () => {
  const body = Buffer.from('{"id":"evt_test_webhook","object":"event"}');
  const want = 'v0=aef3b4e8257e374e4f5895139019798c3495ed5569e4dd38b921af630f5c9b01';
  assert.equal(zoom.signature('zoom_secret_token', '1700000000', body), want);
  assert.equal(h.zoomSign('zoom_secret_token', '1700000000', body.toString()), want);
  zoom.verify('zoom_secret_token', fakeReq({ 'x-zm-request-timestamp': '1700000000', 'x-zm-signature': want }), body);
  const refused = (hdrs, b = body) => assert.throws(() => zoom.verify('zoom_secret_token', fakeReq(hdrs), b), (e) => e.status === 401);
  refused({ 'x-zm-request-timestamp': '1700000001', 'x-zm-signature': want });
  refused({ 'x-zm-request-timestamp': '1700000000', 'x-zm-signature': want.replace('v0=', 'v1=') });
  refused({ 'x-zm-request-timestamp': '1700000000', 'x-zm-signature': want.slice(0, 40) });
  refused({ 'x-zm-request-timestamp': '1700000000', 'x-zm-signature': want }, Buffer.from('{"id":"evt_test_webhooK","object":"event"}'));
  refused({ 'x-zm-signature': want });
  // encryptedToken = hex HMAC-SHA256(secret token, plainToken), computed apart.
  const plain = 'qgg8vlvZRS6UYooatFL8Aw';
  assert.deepEqual(zoom.urlValidation('zoom_secret_token', plain), {
    plainToken: plain,
    encryptedToken: crypto.createHmac('sha256', Buffer.from('zoom_secret_token')).update(Buffer.from(plain)).digest('hex'),
  });
});

test('discord: the RFC 8032 key signs the derived vector; verifyKey checks it', async () => {
  const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
  const privateKey = crypto.createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const pub = discord.publicKeyFrom('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
  const body = '{"id":"evt_test_webhook","object":"event"}';
  const want =
    'e77cc398c1cc282835f9ca5889bb6ad0360faacc09cc5fd73dd8dd371bb92a5f2b43551b149b2cd5ba21c2f7782ad955fa08ae363d6b1ddf53a0d50347692d0d';
  assert.equal(h.discordSign(privateKey, '1700000000', body), want);
  const req = (ts, sig) => fakeReq({ 'X-Signature-Timestamp': ts, 'X-Signature-Ed25519': sig });
  await discord.verify(pub, req('1700000000', want), Buffer.from(body));
  await discord.verify(pub, req('1700000000', want.toUpperCase()), Buffer.from(body));
  const refused = (r, b = body) => assert.rejects(discord.verify(pub, r, Buffer.from(b)), (e) => e.status === 401);
  await refused(req('1700000001', want));
  await refused(req('1700000000', want), body.replace('evt_', 'evu_'));
  await refused(req('1700000000', want.slice(0, 64)));
  await refused(req('1700000000', `${want.slice(0, 126)}zz`));
  await refused(req('', want));
  assert.throws(() => discord.publicKeyFrom('d75a98'), /64 hex digits/);
});

test('clerk: the Standard Webhooks vector, the tolerance both ways, secret rolls', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const body = '{"test": 2432232314}';
  assert.equal(h.clerkSign(secret, id, '1614265330', body), 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  const wh = clerk.verifier(secret);
  const now = h.nowSeconds();
  const req = (ts, sig, msgId = id) => fakeReq({ 'svix-id': msgId, 'svix-timestamp': String(ts), 'svix-signature': sig });
  const at = (ts) => h.clerkSign(secret, id, ts, body);
  assert.equal(clerk.verify(wh, req(now, at(now)), Buffer.from(body)), id);
  assert.equal(clerk.verify(wh, req(now - 290, at(now - 290)), Buffer.from(body)), id);
  assert.equal(clerk.verify(wh, req(now + 290, at(now + 290)), Buffer.from(body)), id);
  // During a secret roll Svix sends one signature per secret.
  const other = h.clerkSign(`whsec_${crypto.randomBytes(24).toString('base64')}`, id, now, body);
  assert.equal(clerk.verify(wh, req(now, `${other} ${at(now)}`), Buffer.from(body)), id);
  const refused = (r, b = body) => assert.throws(() => clerk.verify(wh, r, Buffer.from(b)), (e) => e.status === 401);
  refused(req(now - 310, at(now - 310)));
  refused(req(now + 310, at(now + 310)));
  refused(req(now, other));
  refused(req(now, at(now)), '{"test": 2432232315}');
  refused(req(now, at(now), 'msg_p5jXN8AQM9LWM0D4loKWxJeK'));
  refused(req(now, at(now).replace('v1,', 'v2,')));
  refused(req(now, at(now).slice(0, 20)));
  assert.throws(() => clerk.verifier('not-a-secret'), /whsec_/);
});
