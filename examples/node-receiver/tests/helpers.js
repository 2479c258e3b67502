'use strict';

// Test helpers: a throwaway database on the real server, and signed requests.

const crypto = require('node:crypto');
const { Client } = require('pg');
const { sign, decodeSecret } = require('../src/signature');

// The server the tests create their databases on.
const SERVER_URL = process.env.NODE_RECEIVER_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

// A test secret (whsec_ + base64 of 32 bytes), made per run.
const SECRET = `whsec_${crypto.randomBytes(32).toString('base64')}`;
const KEY = decodeSecret(SECRET);

function databaseURL(name) {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin(sql) {
  const c = new Client({ connectionString: SERVER_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

// createDatabase makes an empty database and returns {name, url, drop}.
async function createDatabase() {
  const name = `node_receiver_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  return {
    name,
    url: databaseURL(name),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

let seq = 0;
function newId(prefix) {
  seq += 1;
  return `${prefix}_${process.pid}_${seq}_${crypto.randomBytes(3).toString('hex')}`;
}

// signedRequest builds the headers and body of a Standard Webhooks delivery.
// opts: id, timestamp (Unix seconds), key (HMAC key), body (override).
function signedRequest(type, data, opts = {}) {
  const id = opts.id || newId('msg');
  const ts = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const body = opts.body ?? JSON.stringify({ type, timestamp: new Date().toISOString(), data });
  const sig = sign(opts.key || KEY, id, ts, Buffer.from(body));
  return {
    id,
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': ts,
      'webhook-signature': `v1,${sig.toString('base64')}`,
    },
  };
}

async function post(baseURL, req) {
  const res = await fetch(`${baseURL}/webhooks`, { method: 'POST', headers: req.headers, body: req.body });
  return { status: res.status, body: await res.text() };
}

module.exports = { SERVER_URL, SECRET, KEY, createDatabase, newId, signedRequest, post };
