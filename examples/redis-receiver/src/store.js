'use strict';

// The app's state in Redis, and the one Lua script per kind of event that
// changes it. Redis runs a script whole, with no other command in between, so
// the check for the event's key, the key itself and the business change are
// one step: a crash of this process either finds the script run or not run,
// and concurrent copies of an event find the key set by the first.
//
// Keys (source: the provider's name, "stripe"):
//   seen:<source>:<event id>   "1" with an expiry: the event was processed
//   applied:<event id>         how many times the event's change was applied
//   ledger:<object id>         list of the event IDs that moved money for it
//   payment:<payment intent>   hash: status, amount, currency (checkout writes it)
//   customer:<customer id>     hash: created (of the event applied last), status, email

const DAY_MS = 24 * 60 * 60 * 1000;

// Stripe retries automatically for up to 3 days and lets a person resend an
// event for up to 30 days after its creation (Stripe CLI; the Dashboard 15):
// a redelivery can come that late, and must find the key. A day on top keeps
// the key past the horizon however late in that window the event arrived.
const KEY_TTL_MS = 31 * DAY_MS;

// The planted defect short-ttl: keys for a minute, as a cache would keep them.
const SHORT_TTL_MS = 60 * 1000;

// Shared Lua helpers: csv membership.
const LUA_HELPERS = `
local function member(csv, s)
  for x in string.gmatch(csv, '[^,]+') do
    if x == s then return true end
  end
  return false
end
`;

// effect: one ledger entry per event (charge.succeeded).
// KEYS: seen, applied:<event>, ledger:<object>. ARGV: ttl ms, event ID.
const EFFECT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end
redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('INCR', KEYS[2])
return 'applied'
`;

// The planted defect check-then-set asks Redis whether the key exists, then
// sets it and applies the change in a second step: two copies that ask before
// either sets it both apply.
const EFFECT_UNCHECKED = `
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('INCR', KEYS[2])
return 'applied'
`;

// transition: moves a payment from one of the states in ARGV[3] to ARGV[4].
// KEYS: seen, payment:<pi>, ledger:<pi>, applied:<event>.
// ARGV: ttl ms, event ID, allowed from (csv), to, effect ("1"/"0"),
//       the states from which "to" can still be reached (csv).
// Returns applied, duplicate, unchanged (already in that state), past (the
// payment has moved beyond it: kept as processed, ignored), premature (its
// precondition has not happened yet: not kept, so Stripe redelivers it) or
// missing (checkout has not written the payment yet: not kept either).
const TRANSITION = `${LUA_HELPERS}
if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end
local state = redis.call('HGET', KEYS[2], 'status')
if not state then return 'missing' end
if state == ARGV[4] then
  redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])
  return 'unchanged'
end
if member(ARGV[3], state) then
  redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])
  redis.call('HSET', KEYS[2], 'status', ARGV[4])
  if ARGV[5] == '1' then
    redis.call('RPUSH', KEYS[3], ARGV[2])
    redis.call('INCR', KEYS[4])
  end
  return 'applied'
end
if member(ARGV[6], state) then return 'premature' end
redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])
return 'past'
`;

// ordered: a customer update or deletion, applied only when its event is newer
// than the one applied last (Stripe does not deliver in order). A deletion
// leaves a tombstone (status deleted, no personal fields) so that no older
// update brings the customer back.
// KEYS: seen, customer:<id>. ARGV: ttl ms, created, "update"/"delete", email.
const ORDERED = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end
redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1])
local last = tonumber(redis.call('HGET', KEYS[2], 'created') or '-1')
if tonumber(ARGV[2]) <= last then return 'stale' end
if ARGV[3] == 'delete' then
  redis.call('HDEL', KEYS[2], 'email')
  redis.call('HSET', KEYS[2], 'created', ARGV[2], 'status', 'deleted')
  return 'deleted'
end
if redis.call('HGET', KEYS[2], 'status') == 'deleted' then return 'stale' end
redis.call('HSET', KEYS[2], 'created', ARGV[2], 'status', 'active', 'email', ARGV[4])
return 'applied'
`;

// checkout: what the app's own checkout writes before Stripe sends anything.
// KEYS: payment:<pi>. ARGV: amount, currency. Returns 1 when created.
const CHECKOUT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'status', 'processing', 'amount', ARGV[1], 'currency', ARGV[2])
return 1
`;

function createStore(client, { source = 'stripe', keyTtlMs = KEY_TTL_MS, checkThenSet = false } = {}) {
  const seen = (eventId) => `seen:${source}:${eventId}`;
  const run = (script, keys, args) => client.eval(script, { keys, arguments: args.map(String) });
  return {
    keyTtlMs,
    effect: async (eventId, objectId) => {
      const keys = [seen(eventId), `applied:${eventId}`, `ledger:${objectId}`];
      if (checkThenSet) {
        if (await client.exists(seen(eventId))) return 'duplicate';
        return run(EFFECT_UNCHECKED, keys, [keyTtlMs, eventId]);
      }
      return run(EFFECT, keys, [keyTtlMs, eventId]);
    },
    transition: (eventId, paymentId, t) =>
      run(TRANSITION, [seen(eventId), `payment:${paymentId}`, `ledger:${paymentId}`, `applied:${eventId}`], [
        keyTtlMs, eventId, t.from.join(','), t.to, t.effect ? '1' : '0', t.reachableFrom.join(','),
      ]),
    ordered: (eventId, customerId, created, kind, email) =>
      run(ORDERED, [seen(eventId), `customer:${customerId}`], [keyTtlMs, created, kind, email || '']),
    checkout: (paymentId, amount, currency) => run(CHECKOUT, [`payment:${paymentId}`], [amount, currency]),
  };
}

module.exports = { createStore, KEY_TTL_MS, SHORT_TTL_MS };
