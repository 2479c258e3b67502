'use strict';

// The business rules of each Stripe event type the shop subscribes to. Every
// handler takes `db` (a connection inside the delivery's transaction), the
// event's key {source, eventId} and the parsed Stripe event, and either
// returns what it did or throws a RetryLater when the event cannot be applied
// yet (Stripe will redeliver it).

class RetryLater extends Error {
  constructor(message) {
    super(message);
    this.status = 409;
  }
}

class BadEvent extends Error {
  constructor(message) {
    super(message);
    this.status = 400;
  }
}

// The order lifecycle, driven by its PaymentIntent:
// awaiting_payment → paid → refunded, or awaiting_payment → canceled.
const ORDER_NEXT = {
  awaiting_payment: ['paid', 'canceled'],
  paid: ['refunded'],
  canceled: [],
  refunded: [],
};

// Each order event moves the order from one of `from` to `to`; `ledger`
// names the ledger entry it writes, if any.
const ORDER_EVENTS = {
  'payment_intent.succeeded': { from: ['awaiting_payment'], to: 'paid', ledger: 'payment', sign: 1 },
  'payment_intent.canceled': { from: ['awaiting_payment'], to: 'canceled' },
  'charge.refunded': { from: ['paid'], to: 'refunded', ledger: 'refund', sign: -1 },
};

// canReach reports whether an order in state `from` may still get to `to`.
function canReach(from, to) {
  const seen = new Set([from]);
  const queue = [from];
  while (queue.length > 0) {
    const s = queue.shift();
    if (s === to) return true;
    for (const n of ORDER_NEXT[s] || []) {
      if (!seen.has(n)) {
        seen.add(n);
        queue.push(n);
      }
    }
  }
  return false;
}

function isText(v) {
  return typeof v === 'string' && v !== '' && v.length <= 255;
}

function optText(v, max = 255) {
  return typeof v === 'string' ? v.slice(0, max) : null;
}

function optInt(v) {
  return Number.isSafeInteger(v) ? v : 0;
}

// The PaymentIntent an order event is about: the object itself, or the
// refunded charge's payment_intent.
function paymentIntentOf(type, obj) {
  return type === 'charge.refunded' ? obj.payment_intent : obj.id;
}

// validate checks what a handler needs before any database work, so a
// malformed event is refused with nothing stored.
function validate(ev) {
  const obj = ev.data.object;
  switch (ev.type) {
    case 'invoice.paid':
      if (!isText(obj.id)) throw new BadEvent('invoice.paid: data.object.id must be a non-empty string');
      return;
    case 'customer.updated':
    case 'customer.deleted':
      if (!isText(obj.id)) throw new BadEvent(`${ev.type}: data.object.id must be a non-empty string`);
      if (!Number.isSafeInteger(ev.created)) throw new BadEvent(`${ev.type}: created must be an integer`);
      return;
    default:
      if (!isText(paymentIntentOf(ev.type, obj))) {
        throw new BadEvent(`${ev.type}: the event names no PaymentIntent`);
      }
  }
}

// invoice.paid: a subscription invoice paid, one ledger credit per event.
async function invoicePaid(db, key, ev) {
  const inv = ev.data.object;
  await db.execute(
    `INSERT INTO ledger_entries (source, event_id, kind, invoice_id, amount, currency)
     VALUES (?, ?, 'invoice', ?, ?, ?)`,
    [key.source, key.eventId, inv.id, optInt(inv.amount_paid), optText(inv.currency, 3)],
  );
  return 'invoice credited';
}

// Order events lock the order row, then decide from its status:
//   - no such order: checkout has not committed it yet → retry;
//   - status allowed: move it (and write the ledger entry);
//   - already in the target status: another event for the same change → ignored;
//   - the order can still reach an allowed status (refunded while awaiting
//     payment) → retry, the earlier event is on its way;
//   - the order is past the event (a late cancellation after the payment) →
//     acknowledged and ignored.
async function orderEvent(db, key, ev) {
  const rule = ORDER_EVENTS[ev.type];
  const pi = paymentIntentOf(ev.type, ev.data.object);
  const [rows] = await db.execute('SELECT id, status, amount, currency FROM orders WHERE payment_intent_id = ? FOR UPDATE', [pi]);
  if (rows.length === 0) throw new RetryLater(`no order for PaymentIntent ${pi} yet`);
  const order = rows[0];
  if (rule.from.includes(order.status)) {
    await db.execute(
      'UPDATE orders SET status = ?, version = version + 1, updated_at = CURRENT_TIMESTAMP(6) WHERE id = ?',
      [rule.to, order.id],
    );
    if (rule.ledger) {
      await db.execute(
        `INSERT INTO ledger_entries (source, event_id, kind, payment_intent_id, amount, currency)
         VALUES (?, ?, ?, ?, ?, ?)`,
        [key.source, key.eventId, rule.ledger, pi, rule.sign * Number(order.amount), order.currency],
      );
    }
    return `order ${rule.to}`;
  }
  if (order.status === rule.to) return `ignored: order is already ${order.status}`;
  if (rule.from.some((f) => canReach(order.status, f))) {
    throw new RetryLater(`order is ${order.status}: ${ev.type} arrived before its precondition`);
  }
  return `ignored: order is already ${order.status}`;
}

// customer.updated: applied only when the event is newer than the one applied
// last, and never to a deleted customer. The first update creates the row.
async function customerUpdated(db, key, ev) {
  const c = ev.data.object;
  const [upd] = await db.execute(
    `UPDATE customers SET email = ?, name = ?, last_event_created = ?, updated_at = CURRENT_TIMESTAMP(6)
     WHERE id = ? AND last_event_created < ? AND deleted_at IS NULL`,
    [optText(c.email), optText(c.name), ev.created, c.id, ev.created],
  );
  if (upd.affectedRows === 1) return 'customer updated';
  try {
    await db.execute('INSERT INTO customers (id, email, name, last_event_created) VALUES (?, ?, ?, ?)', [
      c.id,
      optText(c.email),
      optText(c.name),
      ev.created,
    ]);
    return 'customer created';
  } catch (err) {
    // The row exists: this update is older than it, or the customer is deleted.
    if (err.code === 'ER_DUP_ENTRY') return 'ignored: stale update or deleted customer';
    throw err;
  }
}

// customer.deleted leaves a tombstone holding the deletion's created time,
// personal fields cleared; a deletion older than the row is ignored.
async function customerDeleted(db, key, ev) {
  const c = ev.data.object;
  const [upd] = await db.execute(
    `UPDATE customers SET email = NULL, name = NULL, last_event_created = ?,
       deleted_at = CURRENT_TIMESTAMP(6), updated_at = CURRENT_TIMESTAMP(6)
     WHERE id = ? AND last_event_created < ?`,
    [ev.created, c.id, ev.created],
  );
  if (upd.affectedRows === 1) return 'customer deleted';
  try {
    await db.execute(
      'INSERT INTO customers (id, last_event_created, deleted_at) VALUES (?, ?, CURRENT_TIMESTAMP(6))',
      [c.id, ev.created],
    );
    return 'customer deleted';
  } catch (err) {
    if (err.code === 'ER_DUP_ENTRY') return 'ignored: stale deletion';
    throw err;
  }
}

const HANDLERS = {
  'invoice.paid': invoicePaid,
  'customer.updated': customerUpdated,
  'customer.deleted': customerDeleted,
};
for (const type of Object.keys(ORDER_EVENTS)) HANDLERS[type] = orderEvent;

function handles(type) {
  return Object.prototype.hasOwnProperty.call(HANDLERS, type);
}

function apply(db, key, ev) {
  return HANDLERS[ev.type](db, key, ev);
}

module.exports = { handles, validate, apply, canReach, RetryLater, BadEvent, ORDER_EVENTS };
