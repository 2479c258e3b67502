'use strict';

// Twilio: X-Twilio-Signature is the base64 HMAC-SHA1, keyed with the
// account's Auth Token, of the full URL Twilio requested (scheme, host, path
// and query) followed by every POST parameter sorted by name, each written as
// name then value with no separator
// (https://www.twilio.com/docs/usage/webhooks/webhooks-security). The
// twilio package's validateRequest does this, but it brings an HTTP client,
// JWT and XML libraries with it; the algorithm is a few lines of node:crypto.

const crypto = require('node:crypto');
const { Refused, header } = require('../refuse');

// signature computes what Twilio sends for url and the form params
// (URLSearchParams). A repeated parameter is written once per value, its
// values sorted, as Twilio's own validators do.
function signature(authToken, url, params) {
  const names = [...new Set(params.keys())].sort();
  const mac = crypto.createHmac('sha1', authToken).update(url, 'utf8');
  for (const name of names) {
    for (const value of params.getAll(name).sort()) mac.update(name + value, 'utf8');
  }
  return mac.digest('base64');
}

// urlVariants are the spellings Twilio may have signed: its validators try
// the URL with and without the scheme's default port.
function urlVariants(url) {
  const m = /^(https?):\/\/([^/?#:]+)(?::(\d+))?(.*)$/s.exec(url);
  if (!m) return [url];
  const [, scheme, host, port, rest] = m;
  const def = scheme === 'https' ? '443' : '80';
  if (port === undefined) return [url, `${scheme}://${host}:${def}${rest}`];
  if (port === def) return [url, `${scheme}://${host}${rest}`];
  return [url];
}

// verify checks X-Twilio-Signature for a form post to url; it throws a
// Refused (401) when no spelling of the URL matches. The header is compared
// as sent, in constant time: decoding it first would let stray characters
// through.
function verify(authToken, req, url, params) {
  const got = Buffer.from(header(req, 'x-twilio-signature'), 'utf8');
  if (got.length === 0) throw new Refused(401, 'missing X-Twilio-Signature');
  let match = false;
  for (const candidate of urlVariants(url)) {
    const want = Buffer.from(signature(authToken, candidate, params), 'utf8');
    // timingSafeEqual needs equal lengths; a digest's length is no secret.
    if (got.length === want.length && crypto.timingSafeEqual(got, want)) match = true;
  }
  if (!match) throw new Refused(401, 'X-Twilio-Signature does not match');
}

// requestURL is the URL Twilio requested: the public base URL the app is
// reached at (behind a proxy, the one configured in Twilio's console), else
// http:// and the Host the request came with, then the path and query as
// requested. pathOnly drops the query (the planted defect).
function requestURL(req, publicBaseURL, pathOnly) {
  const base = publicBaseURL || `http://${req.headers.host || ''}`;
  const target = req.url || '/';
  return base + (pathOnly ? target.split('?')[0] : target);
}

const TWIML_EMPTY = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

// endpoint receives Twilio's message status callbacks for one account.
// Twilio sends no event ID; its retries carry the same
// I-Twilio-Idempotency-Token, which is what the app deduplicates on.
function endpoint({ account, authToken, publicBaseURL, pathOnly = false }) {
  return {
    source: 'twilio',
    account,
    async receive(req, body) {
      const params = new URLSearchParams(body.toString('utf8'));
      verify(authToken, req, requestURL(req, publicBaseURL, pathOnly), params);
      const id = header(req, 'i-twilio-idempotency-token');
      if (!id) throw new Refused(400, 'missing I-Twilio-Idempotency-Token');
      if (!params.get('MessageStatus')) throw new Refused(400, 'missing MessageStatus');
      return {
        event: { id, type: params.get('MessageStatus'), subject: params.get('MessageSid') || '' },
      };
    },
    // Twilio reads TwiML back; an empty Response does nothing more.
    ok: () => [200, 'text/xml', TWIML_EMPTY],
  };
}

module.exports = { signature, urlVariants, verify, requestURL, endpoint };
