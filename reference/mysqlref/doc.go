// Package mysqlref is hookcert's second reference receiver: the simplest correct
// Stripe webhook receiver on MySQL 8 or MariaDB 10.6+, beside the PostgreSQL
// reference (package reference), to show what a receiver on another SQL store
// must do and to let the harness certify itself against one.
//
// Each delivery is verified (endpoint, body size, Stripe signature and signed
// timestamp, JSON, event ID and type, the business object) before anything is
// written. Then ONE InnoDB transaction inserts the event key (source, account,
// event_id) under a UNIQUE key and applies the event's one business effect: a
// ledger row for charge.succeeded, or a subscription row guarded by its version
// for customer.subscription.updated and .deleted (a deletion leaves a tombstone).
// The 2xx is written only after COMMIT; a copy whose INSERT hits the unique key
// (ER_DUP_ENTRY) rolls back and gets a 2xx too; a deadlock (ER_LOCK_DEADLOCK,
// which rolls the whole transaction back) is retried from the start.
//
// It can be started with named defects (Defects), each a real-world mistake the
// harness must catch. It imports nothing of the harness: the harness reaches it
// over HTTP and SQL like any other receiver.
package mysqlref
