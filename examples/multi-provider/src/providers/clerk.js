'use strict';

// Clerk delivers through Svix: svix-id, svix-timestamp and svix-signature (a
// space-delimited list of "v1,<base64 HMAC-SHA256>" over
// "{svix-id}.{svix-timestamp}.{raw body}", keyed with the base64 decoding of
// the whsec_ secret), timestamps more than 5 minutes away either way refused
// (https://clerk.com/docs/guides/development/webhooks/overview,
// https://docs.svix.com/receiving/verifying-payloads/how-manual). Verified
// with standardwebhooks, the library Svix's own package wraps (the svix
// package needs Node 22): it reads the same scheme under webhook-* names.

const { Webhook, WebhookVerificationError } = require('standardwebhooks');
const { Refused, header, parseObject, isObject, text } = require('../refuse');

// verifier checks the secret's shape once, at startup.
function verifier(secret) {
  if (typeof secret !== 'string' || !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) {
    throw new Error('must be the endpoint signing secret: whsec_ then base64');
  }
  return new Webhook(secret);
}

// verify throws a Refused (401) unless the svix headers sign the body within
// the tolerance; it returns the svix-id, Clerk's event identity.
function verify(webhook, req, body) {
  const id = header(req, 'svix-id');
  try {
    webhook.verify(
      body,
      {
        'webhook-id': id,
        'webhook-timestamp': header(req, 'svix-timestamp'),
        'webhook-signature': header(req, 'svix-signature'),
      },
      { jsonParse: false },
    );
  } catch (err) {
    if (err instanceof WebhookVerificationError) throw new Refused(401, err.message);
    throw err;
  }
  return id;
}

// endpoint receives one Clerk instance's events ({type, data, ...}); the
// svix-id is the same in every retry of a message, and is what the app
// deduplicates on, as Clerk's docs advise.
function endpoint({ account, webhook }) {
  return {
    source: 'clerk',
    account,
    async receive(req, body) {
      const id = verify(webhook, req, body);
      const msg = parseObject(body);
      const type = text(msg.type, 'type');
      if (!isObject(msg.data)) throw new Refused(400, 'missing data');
      return { event: { id, type, subject: msg.data.id } };
    },
    ok: (out) => [200, 'application/json', JSON.stringify(out)],
  };
}

module.exports = { verifier, verify, endpoint };
