'use strict';

// The Stripe events the app handles, and what each does to its state.

class BadEvent extends Error {}

// RetryLater is answered with its status and nothing kept: Stripe redelivers.
class RetryLater extends Error {
  constructor(message) {
    super(message);
    this.status = 409;
  }
}

// A PaymentIntent as the app follows it: checkout writes it "processing";
// Stripe's events move it.
const TRANSITIONS = {
  'payment_intent.succeeded': { from: ['processing'], to: 'succeeded', effect: true },
  'payment_intent.payment_failed': { from: ['processing'], to: 'failed', effect: false },
  'charge.refunded': { from: ['succeeded'], to: 'refunded', effect: true },
};

// reachableFrom lists the states from which `to` can still be reached by some
// run of transitions: an event for `to` that comes in one of them came before
// its precondition (premature); in any other it is late (past).
function reachableFrom(to) {
  const states = new Set(['processing']);
  for (const t of Object.values(TRANSITIONS)) {
    t.from.forEach((s) => states.add(s));
    states.add(t.to);
  }
  const out = [];
  for (const start of states) {
    const seen = new Set([start]);
    const queue = [start];
    while (queue.length > 0) {
      const s = queue.shift();
      for (const t of Object.values(TRANSITIONS)) {
        if (t.from.includes(s) && !seen.has(t.to)) {
          seen.add(t.to);
          queue.push(t.to);
        }
      }
    }
    if (start !== to && seen.has(to)) out.push(start);
  }
  return out.sort();
}

for (const t of Object.values(TRANSITIONS)) t.reachableFrom = reachableFrom(t.to);

const ID_RE = /^[^\s]{1,255}$/;

function id(v, what) {
  if (typeof v !== 'string' || !ID_RE.test(v)) throw new BadEvent(`missing or invalid ${what}`);
  return v;
}

const HANDLED = new Set(['charge.succeeded', 'customer.updated', 'customer.deleted', ...Object.keys(TRANSITIONS)]);

function handles(type) {
  return HANDLED.has(type);
}

// apply runs the event's script and returns its outcome; an event that must
// wait throws RetryLater.
async function apply(store, ev) {
  const obj = ev.data.object;
  switch (ev.type) {
    case 'charge.succeeded':
      return store.effect(ev.id, id(obj.id, 'data.object.id'));
    case 'customer.updated':
    case 'customer.deleted': {
      if (!Number.isSafeInteger(ev.created) || ev.created < 0) throw new BadEvent('missing or invalid created');
      const kind = ev.type === 'customer.deleted' ? 'delete' : 'update';
      const email = typeof obj.email === 'string' ? obj.email : '';
      return store.ordered(ev.id, id(obj.id, 'data.object.id'), ev.created, kind, email);
    }
    default: {
      const t = TRANSITIONS[ev.type];
      // A refund's object is the charge; the payment is its payment_intent.
      const pi = ev.type === 'charge.refunded' ? id(obj.payment_intent, 'data.object.payment_intent') : id(obj.id, 'data.object.id');
      const outcome = await store.transition(ev.id, pi, t);
      if (outcome === 'missing') throw new RetryLater(`payment ${pi} does not exist yet`);
      if (outcome === 'premature') throw new RetryLater(`payment ${pi} is not ready for ${ev.type}`);
      return outcome;
    }
  }
}

module.exports = { apply, handles, BadEvent, RetryLater, TRANSITIONS, reachableFrom };
