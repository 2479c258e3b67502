'use strict';

// The business rules of each event type the app subscribes to. Every function
// takes `db` (a client inside the delivery's transaction) and the parsed
// envelope, and either returns what it did or throws a RetryLater when the
// event cannot be applied yet (the sender will redeliver it).

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

// The order lifecycle: pending → shipped → delivered, or pending → cancelled.
const ORDER_NEXT = {
  pending: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: [],
};

// Each order event moves the order from one of `from` to `to`.
const ORDER_EVENTS = {
  'order.shipped': { from: ['pending'], to: 'shipped' },
  'order.delivered': { from: ['shipped'], to: 'delivered' },
  'order.cancelled': { from: ['pending'], to: 'cancelled' },
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

function optText(v) {
  return typeof v === 'string' ? v : null;
}

function optInt(v) {
  return Number.isSafeInteger(v) ? v : null;
}

// validate checks what a handler needs before any database work, so a
// malformed event is refused with nothing stored.
const VALIDATORS = {
  'invoice.paid': (data) => {
    if (!isText(data.id)) throw new BadEvent('invoice.paid: data.id must be a non-empty string');
  },
};
for (const type of ['customer.updated', 'customer.deleted']) {
  VALIDATORS[type] = (data) => {
    if (!isText(data.id)) throw new BadEvent(`${type}: data.id must be a non-empty string`);
    if (!Number.isSafeInteger(data.version)) throw new BadEvent(`${type}: data.version must be an integer`);
  };
}
for (const type of Object.keys(ORDER_EVENTS)) {
  VALIDATORS[type] = (data) => {
    if (!isText(data.id)) throw new BadEvent(`${type}: data.id must be a non-empty string`);
  };
}

// One payment row per invoice.paid event. An invoice may legitimately be paid
// by more than one event (instalments), so the event key is what deduplicates.
async function invoicePaid(db, eventId, data) {
  await db.query(
    `INSERT INTO payments (invoice_id, event_id, customer_id, amount, currency)
     VALUES ($1, $2, $3, $4, $5)`,
    [data.id, eventId, optText(data.customer), optInt(data.amount_paid), optText(data.currency)],
  );
  return 'payment recorded';
}

// Order events: a conditional UPDATE moves the order only from an allowed
// state. When it matches nothing the current state says why:
//   - no such order: the app's checkout has not committed it yet → retry;
//   - the order can still reach an allowed state (delivered while pending) →
//     retry, the earlier event is on its way;
//   - the order is past the event (a late shipped after delivered, a second
//     event for the same change) → acknowledged and ignored.
async function orderEvent(db, eventId, type, data) {
  const { from, to } = ORDER_EVENTS[type];
  const moved = await db.query(
    `UPDATE orders SET status = $2, updated_at = now()
     WHERE id = $1 AND status = ANY($3::text[]) RETURNING id`,
    [data.id, to, from],
  );
  if (moved.rowCount === 1) {
    if (type === 'order.shipped') {
      await db.query(
        `INSERT INTO shipments (order_id, carrier, tracking_number, event_id)
         VALUES ($1, $2, $3, $4)`,
        [data.id, optText(data.carrier), optText(data.tracking_number), eventId],
      );
    }
    return `order ${to}`;
  }
  const cur = await db.query('SELECT status FROM orders WHERE id = $1', [data.id]);
  if (cur.rowCount === 0) throw new RetryLater(`order ${data.id} does not exist yet`);
  const status = cur.rows[0].status;
  if (from.some((f) => canReach(status, f))) {
    throw new RetryLater(`order ${data.id} is ${status}: ${type} arrived before its precondition`);
  }
  return `ignored: order is already ${status}`;
}

// customer.updated carries the customer's version: only a newer one
// overwrites, and never a deleted customer.
async function customerUpdated(db, eventId, data) {
  const r = await db.query(
    `INSERT INTO customers (id, email, name, version) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE
       SET email = EXCLUDED.email, name = EXCLUDED.name, version = EXCLUDED.version, updated_at = now()
       WHERE customers.version < EXCLUDED.version AND customers.deleted_at IS NULL`,
    [data.id, optText(data.email), optText(data.name), data.version],
  );
  return r.rowCount === 1 ? 'customer updated' : 'ignored: stale version or deleted customer';
}

// customer.deleted leaves a tombstone with the deletion's version (personal
// fields cleared); a deletion older than the row's version is ignored.
async function customerDeleted(db, eventId, data) {
  const r = await db.query(
    `INSERT INTO customers (id, version, deleted_at) VALUES ($1, $2, now())
     ON CONFLICT (id) DO UPDATE
       SET email = NULL, name = NULL, version = EXCLUDED.version, deleted_at = now(), updated_at = now()
       WHERE customers.version < EXCLUDED.version`,
    [data.id, data.version],
  );
  return r.rowCount === 1 ? 'customer deleted' : 'ignored: stale version';
}

const HANDLERS = {
  'invoice.paid': invoicePaid,
  'customer.updated': customerUpdated,
  'customer.deleted': customerDeleted,
};
for (const type of Object.keys(ORDER_EVENTS)) {
  HANDLERS[type] = (db, eventId, data) => orderEvent(db, eventId, type, data);
}

function handles(type) {
  return Object.prototype.hasOwnProperty.call(HANDLERS, type);
}

function validate(type, data) {
  VALIDATORS[type](data);
}

function apply(db, eventId, type, data) {
  return HANDLERS[type](db, eventId, data);
}

module.exports = { handles, validate, apply, canReach, RetryLater, BadEvent, ORDER_EVENTS };
