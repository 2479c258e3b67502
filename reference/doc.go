// Package reference is hookcert's reference webhook receiver: the design a user
// should copy, and the anchor of the suite's self-test.
//
// Each delivery is verified (endpoint, body size, signature and timestamp, JSON,
// event ID) before anything is written. Then ONE PostgreSQL transaction records the
// event key (source, account, event_id) with INSERT ... ON CONFLICT DO NOTHING
// RETURNING on a unique index, applies the business change only if the key was new,
// and commits; the 2xx is written only after the commit, and a duplicate also gets a
// 2xx. The conformance domain it implements is docs/conformance-domain.md; the
// design, config format, schema and defects are documented in docs/reference.md.
//
// In inbox mode (Options.Mode = ModeInbox) the transaction records the key with the
// stored event as pending work and the answer is 202; workers (Workers, in-process
// or "hookcert reference worker") claim events with FOR UPDATE SKIP LOCKED and a
// lease, and apply each and mark it done in one transaction conditional on the
// claim, with retries, dead-lettering and re-offered expired leases.
//
// The receiver can be started with named defects (see Defects), each a faithful copy
// of a real-world mistake, so that the harness can prove each of its checks fails.
//
// The package stands alone: it imports nothing from the simulator or the adapters,
// and the harness judges it over HTTP and SQL like any other receiver.
package reference
