'use strict';

// The sync: each event upserts the object it carries, in one transaction,
// guarded by the event's created time against the row's last_synced_at. There
// is no event ledger: an event no newer than the row is simply not applied
// (a redelivery, a late older update), and an event with the same created
// second as the row is applied (last wins: Stripe's created is whole seconds,
// so two events of one object in one second are common).
//
// The planted defects (LEDGERLESS_DEFECT), each a bug found in real sync code:
//   hard-delete         a deletion removes the row: a late older update
//                       recreates the deleted subscription
//   same-second-drop    the guard is strict (<): the second of two events in
//                       the same second is acknowledged and dropped
//   unguarded-children  subscription items are upserted without the guard: a
//                       late older update rewrites the current items

// Two more live in the HTTP side (app.js):
//   unsigned            the Stripe-Signature is not checked: anyone who knows
//                       the URL can write any subscription
//   ack-before-commit   the 200 is sent before the upserts commit: a crash or
//                       a lost connection after it loses an event Stripe
//                       will not send again
//   reject-unknown-types an event type it does not sync is answered 400:
//                       Stripe retries it for days and may disable the endpoint

const DEFECTS = ['hard-delete', 'same-second-drop', 'unguarded-children', 'unsigned', 'ack-before-commit', 'reject-unknown-types'];

class BadEvent extends Error {}

function createSync(defect = '') {
  // Of two events with one created second, the later delivered wins.
  const guard = defect === 'same-second-drop' ? '<' : '<=';

  async function upsertCustomer(db, c, created) {
    await db.query(
      `INSERT INTO customers (id, email, name, metadata, last_synced_at)
       VALUES ($1, $2, $3, $4::jsonb, to_timestamp($5))
       ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name,
         metadata = EXCLUDED.metadata, last_synced_at = EXCLUDED.last_synced_at
       WHERE NOT customers.deleted AND customers.last_synced_at ${guard} EXCLUDED.last_synced_at`,
      [c.id, c.email ?? null, c.name ?? null, JSON.stringify(c.metadata ?? {}), created],
    );
  }

  async function deleteCustomer(db, c, created) {
    await db.query(
      `INSERT INTO customers (id, deleted, last_synced_at) VALUES ($1, true, to_timestamp($2))
       ON CONFLICT (id) DO UPDATE SET deleted = true, last_synced_at = EXCLUDED.last_synced_at
       WHERE customers.last_synced_at <= EXCLUDED.last_synced_at`,
      [c.id, created],
    );
  }

  // items upserts a subscription's items by their IDs, and removes the ones it
  // no longer has, each only where it is no newer than the event.
  async function items(db, s, created, guarded) {
    const list = (s.items && Array.isArray(s.items.data) ? s.items.data : []).filter((it) => it && typeof it.id === 'string');
    const where = guarded ? `WHERE subscription_items.last_synced_at ${guard} EXCLUDED.last_synced_at` : '';
    for (const it of list) {
      await db.query(
        `INSERT INTO subscription_items (id, subscription, price, quantity, last_synced_at)
         VALUES ($1, $2, $3, $4, to_timestamp($5))
         ON CONFLICT (id) DO UPDATE SET subscription = EXCLUDED.subscription, price = EXCLUDED.price,
           quantity = EXCLUDED.quantity, last_synced_at = EXCLUDED.last_synced_at ${where}`,
        [it.id, s.id, it.price && typeof it.price === 'object' ? it.price.id ?? null : it.price ?? null,
          Number.isInteger(it.quantity) ? it.quantity : null, created],
      );
    }
    const ids = list.map((it) => it.id);
    if (guarded) {
      await db.query(
        `DELETE FROM subscription_items WHERE subscription = $1 AND NOT (id = ANY($2::text[]))
           AND last_synced_at <= to_timestamp($3)`,
        [s.id, ids, created],
      );
    } else {
      await db.query('DELETE FROM subscription_items WHERE subscription = $1 AND NOT (id = ANY($2::text[]))', [s.id, ids]);
    }
  }

  async function upsertSubscription(db, s, created) {
    const r = await db.query(
      `INSERT INTO subscriptions (id, customer, status, metadata, last_synced_at)
       VALUES ($1, $2, $3, $4::jsonb, to_timestamp($5))
       ON CONFLICT (id) DO UPDATE SET customer = EXCLUDED.customer, status = EXCLUDED.status,
         metadata = EXCLUDED.metadata, last_synced_at = EXCLUDED.last_synced_at
       WHERE NOT subscriptions.deleted AND subscriptions.last_synced_at ${guard} EXCLUDED.last_synced_at`,
      [s.id, typeof s.customer === 'string' ? s.customer : null, s.status ?? null, JSON.stringify(s.metadata ?? {}), created],
    );
    if (defect === 'unguarded-children') {
      await items(db, s, created, false);
    } else if (r.rowCount === 1) {
      await items(db, s, created, true);
    }
  }

  async function deleteSubscription(db, s, created) {
    if (defect === 'hard-delete') {
      await db.query('DELETE FROM subscription_items WHERE subscription = $1', [s.id]);
      await db.query('DELETE FROM subscriptions WHERE id = $1', [s.id]);
      return;
    }
    // A tombstone carrying the deletion's time: older updates stay refused.
    await db.query(
      `INSERT INTO subscriptions (id, customer, status, deleted, last_synced_at)
       VALUES ($1, $2, 'canceled', true, to_timestamp($3))
       ON CONFLICT (id) DO UPDATE SET status = 'canceled', deleted = true, last_synced_at = EXCLUDED.last_synced_at
       WHERE subscriptions.last_synced_at <= EXCLUDED.last_synced_at`,
      [s.id, typeof s.customer === 'string' ? s.customer : null, created],
    );
  }

  const handlers = {
    'customer.created': upsertCustomer,
    'customer.updated': upsertCustomer,
    'customer.deleted': deleteCustomer,
    'customer.subscription.created': upsertSubscription,
    'customer.subscription.updated': upsertSubscription,
    'customer.subscription.paused': upsertSubscription,
    'customer.subscription.resumed': upsertSubscription,
    'customer.subscription.deleted': deleteSubscription,
  };

  return {
    handles: (type) => Object.prototype.hasOwnProperty.call(handlers, type),
    // apply runs the event's handler on db (a client inside a transaction).
    apply: (db, ev) => {
      const obj = ev.data.object;
      if (obj === null || typeof obj !== 'object' || typeof obj.id !== 'string' || obj.id === '') {
        throw new BadEvent('data.object.id is missing');
      }
      return handlers[ev.type](db, obj, ev.created);
    },
  };
}

module.exports = { createSync, BadEvent, DEFECTS };
