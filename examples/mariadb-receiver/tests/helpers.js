'use strict';

// Test helpers: a throwaway database on the real MariaDB server, and signed
// Stripe deliveries.

const crypto = require('node:crypto');
const mysql = require('mysql2/promise');
const { signatureHeader } = require('../src/signature');

// The server the tests create their databases on.
const SERVER_URL = process.env.MARIADB_RECEIVER_TEST_DATABASE_URL || 'mysql://root@127.0.0.1:3306/';

// Test secrets, made per run.
const SECRET = `whsec_${crypto.randomBytes(24).toString('hex')}`;
const TEST_SECRET = `whsec_${crypto.randomBytes(24).toString('hex')}`;

function databaseURL(name) {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin(sql) {
  const c = await mysql.createConnection({ uri: SERVER_URL });
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

// serverAnswers says why the server cannot be used, or '' when it can.
async function serverAnswers() {
  try {
    await admin('SELECT 1');
    return '';
  } catch (err) {
    return `MariaDB at ${new URL(SERVER_URL).host} does not answer (${err.code || err.message}); set MARIADB_RECEIVER_TEST_DATABASE_URL`;
  }
}

// createDatabase makes an empty database and returns {name, url, drop}.
async function createDatabase() {
  const name = `mariadb_receiver_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  return { name, url: databaseURL(name), drop: () => admin(`DROP DATABASE IF EXISTS ${name}`) };
}

let seq = 0;
function newId(prefix) {
  seq += 1;
  return `${prefix}_${process.pid}_${seq}_${crypto.randomBytes(3).toString('hex')}`;
}

// signedEvent builds a Stripe delivery: headers and body of an Event whose
// data.object is obj. opts: id, created, timestamp (signing time, Unix
// seconds), secret, body (override).
function signedEvent(type, obj, opts = {}) {
  const id = opts.id || newId('evt');
  const ts = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const body =
    opts.body ??
    JSON.stringify({ id, object: 'event', api_version: '2026-03-25.dahlia', created: opts.created ?? ts, data: { object: obj }, livemode: false, type });
  return {
    id,
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': signatureHeader(opts.secret || SECRET, ts, Buffer.from(body)) },
  };
}

async function post(baseURL, req, path = '/webhooks/stripe') {
  const res = await fetch(`${baseURL}${path}`, { method: 'POST', headers: req.headers, body: req.body });
  return { status: res.status, body: await res.text() };
}

module.exports = { SERVER_URL, SECRET, TEST_SECRET, serverAnswers, createDatabase, newId, signedEvent, post };
