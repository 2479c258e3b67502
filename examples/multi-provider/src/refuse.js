'use strict';

// Refused is a delivery the receiver answers with a 4xx and does not store:
// a bad signature (401), a malformed event (400).
class Refused extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// header reads one request header (Node lower-cases names; a repeated header
// arrives joined with ", ", which then fails the checks that follow).
function header(req, name) {
  const v = req.headers[name];
  return typeof v === 'string' ? v.trim() : '';
}

// parseObject reads a JSON object body; anything else is a 400.
function parseObject(body) {
  let v;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Refused(400, 'malformed JSON');
  }
  if (!isObject(v)) throw new Refused(400, 'body is not a JSON object');
  return v;
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// text reads a required string field.
function text(v, what) {
  if (typeof v !== 'string' || v === '') throw new Refused(400, `missing ${what}`);
  return v;
}

module.exports = { Refused, header, parseObject, isObject, text };
