'use strict';

// Discord: X-Signature-Ed25519 is the hex Ed25519 signature, by the
// application's key, of X-Signature-Timestamp followed by the raw body; the
// receiver holds the application's public key (hex). Requests that fail it
// get 401: Discord itself sends invalid signatures to check that they do. A
// PING (type 1) is answered {"type": 1}.
// (https://discord.com/developers/docs/interactions/overview). Verified with
// discord-interactions' verifyKey, Discord's own package.

const { verifyKey, InteractionType, InteractionResponseType } = require('discord-interactions');
const { Refused, header, parseObject, isObject, text } = require('../refuse');

// publicKeyFrom checks the configured key: 32 bytes as hex.
function publicKeyFrom(hex) {
  if (typeof hex !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new Error('must be the application public key: 64 hex digits');
  }
  return hex.toLowerCase();
}

// verify throws a Refused (401) unless the request is signed by the key.
async function verify(publicKey, req, body) {
  const sig = header(req, 'x-signature-ed25519');
  const ts = header(req, 'x-signature-timestamp');
  if (!sig || !ts) throw new Refused(401, 'missing X-Signature-Ed25519 or X-Signature-Timestamp');
  // verifyKey reads the signature leniently (two characters at a time);
  // Discord sends 128 hex digits, so anything else is refused here.
  if (!/^[0-9a-fA-F]{128}$/.test(sig)) throw new Refused(401, 'invalid request signature');
  if (!(await verifyKey(body, sig, ts, publicKey))) throw new Refused(401, 'invalid request signature');
}

// endpoint receives one Discord application's requests: PINGs, which Discord
// sends to check the endpoint, and events ({id, application_id, event: {type,
// timestamp, data}}). pingFirst answers a PING before checking its signature
// (the planted defect).
function endpoint({ account, publicKey, pingFirst = false }) {
  return {
    source: 'discord',
    account,
    async receive(req, body) {
      if (pingFirst) {
        let msg;
        try {
          msg = JSON.parse(body.toString('utf8'));
        } catch {
          msg = undefined;
        }
        if (isPing(msg)) return { answer: [200, { type: InteractionResponseType.PONG }] };
      }
      await verify(publicKey, req, body);
      const msg = parseObject(body);
      if (isPing(msg)) return { answer: [200, { type: InteractionResponseType.PONG }] };
      if (!isObject(msg.event)) throw new Refused(400, 'missing event');
      const id = text(msg.id, 'id');
      const type = text(msg.event.type, 'event.type');
      if (!isObject(msg.event.data)) throw new Refused(400, 'missing event.data');
      return { event: { id, type, subject: msg.event.data.id } };
    },
    // Discord takes 204 No Content for an event it delivered.
    ok: () => [204, 'text/plain', ''],
  };
}

// isPing: a PING has type 1 and carries no event.
function isPing(msg) {
  return isObject(msg) && msg.type === InteractionType.PING && msg.event === undefined;
}

module.exports = { publicKeyFrom, verify, endpoint };
