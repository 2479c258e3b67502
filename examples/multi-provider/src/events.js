'use strict';

// What the app does with each event type it subscribes to. The community
// earns points for activity on every channel it runs: a member signing up
// (Clerk's and Zoom's user.created, Discord's APPLICATION_AUTHORIZED), a
// meeting held (Zoom's meeting.ended), a text message received (Twilio's
// MessageStatus "received"). Every handled event adds one row to the points
// ledger; the providers' type names do not clash, so handlers are looked up
// by type alone, whichever endpoint the event came to.

const RULES = {
  'user.created': { points: 10, reason: 'member joined' },
  APPLICATION_AUTHORIZED: { points: 10, reason: 'member authorized the app' },
  'meeting.ended': { points: 5, reason: 'meeting held' },
  received: { points: 1, reason: 'message received' },
};

class BadEvent extends Error {
  constructor(message) {
    super(message);
    this.status = 400;
  }
}

function handles(type) {
  return Object.prototype.hasOwnProperty.call(RULES, type);
}

// validate checks what apply needs before any database work, so a malformed
// event is refused with nothing stored.
function validate(ev) {
  if (typeof ev.subject !== 'string' || ev.subject === '' || ev.subject.length > 255) {
    throw new BadEvent(`${ev.type}: the object's id must be a non-empty string of at most 255 characters`);
  }
}

// apply writes the event's ledger row with db, a client inside the
// delivery's transaction.
async function apply(db, ev) {
  const rule = RULES[ev.type];
  await db.query(
    `INSERT INTO points (source, account, event_id, subject, points, reason)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [ev.source, ev.account, ev.id, ev.subject, rule.points, rule.reason],
  );
  return { points: rule.points, reason: rule.reason };
}

module.exports = { handles, validate, apply, BadEvent, RULES };
