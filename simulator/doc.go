// Package simulator is hookcert's provider simulator: it delivers events to a
// webhook receiver over real HTTP the way a provider does on a bad day, and records
// every attempt in a History (package history).
//
// A Plan (Go value or YAML file) lists events and the deliveries of them: how many
// copies are released together by a barrier over pre-opened connections, which
// faults are injected (lost acknowledgement, provider timeout, tampered body, wrong
// secret, missing headers, malformed JSON, oversized body, stale or fresh replays),
// and whether the provider's retry schedule is followed until acknowledgement. Every
// random choice (event IDs, delivery IDs, shuffles, jitter) comes from the plan's
// seed, so one seed always gives the same plan.
//
// # Time
//
// Retry schedules run on a compressible clock: TimeScale is how many provider
// seconds pass per real second (3600 = one provider hour per real second, so a
// three-day Stripe-like schedule runs in about 72 real seconds). Only the waits
// between attempts are compressed. Signatures always carry the real wall-clock send
// time, because the receiver's clock is real and would reject a compressed
// timestamp; per-attempt response timeouts are real durations too, because they
// bound the receiver's real processing.
//
// # Outcomes
//
// Every attempt ends in one of three outcomes, as in Jepsen histories:
// acknowledged (the provider saw a response it counts as success), failed (the
// provider saw a failure, or the request was never fully written), unknown (the
// request was written in full but the answer was lost or never came: the receiver
// may or may not have processed it).
//
// # Concurrent copies
//
// SendCopies, plan steps and deliveries with copies > 1 open one connection
// per copy first, write every copy's request except its final byte, then
// release: one loop writes the last byte on each connection. A receiver must
// read the whole body before it can verify and process a delivery, so all copies become
// processable within microseconds of each other. The send spread (first to
// last final-byte write) is recorded in the history's Release record (package history); the
// benchmark in simulator/benchmark measures the spread as the receiver sees it.
//
// Holding bytes back is the barrier's doing, not a provider's, so it must not
// cause failures a provider would not (barrier.go): a copy is held only once the
// receiver's kernel acknowledged what was written (on Linux; a connection stuck
// in an overflowing accept queue would answer the final byte with a reset), the
// pre-open phase is bounded so that a receiver serving one connection at a time
// is not deadlocked, and copies the barrier could not hold complete their own
// requests. Release.Released (package history) counts the copies the barrier held and
// released together.
//
// # Wire behaviour
//
// The simulator speaks HTTP/1.1 (TLS for https URLs) over its own connections:
// keep-alive for single attempts, reusing a connection idle for at most a
// second (below common servers' keep-alive timeouts) and only after a liveness
// probe, so a receiver that closed or crashed never turns into a spurious
// "unknown"; a connection refused, never accepted (connect tries have their own
// growing timeout) or reset before the receiver acknowledged any byte of the
// request is opened again for the same attempt, a bounded number of times, and
// an attempt that reached nobody is failed, not unknown; an answer that arrives
// before the request was written in full is no delivery (a 2xx is unknown);
// interim 1xx responses are skipped; no proxy; redirects are never followed (a 3xx is the response, as
// providers treat it); responses are read to at most Options.ResponseReadLimit
// bytes (longer bodies are cut and recorded with error class too_large) and
// every attempt ends by its timeout. A plain response (HTTP/1.1, final status,
// one Content-Length within the limit, no Transfer-Encoding or Connection
// header, well-formed headers all in the first read) is parsed by a small
// allocation-light reader; anything else goes to net/http's parser, so both
// give the same result (hotpath_test.go checks them against each other).
// simulator/benchmark measures throughput against wrk; BenchmarkSend measures
// the cost and allocations of one delivery.
//
// # Plans in YAML
//
//	name: lost-ack-then-replay
//	seed: 42
//	time_scale: 3600          # one provider hour per real second
//	timeout: 10s              # per attempt, real time (default: the profile's)
//	retry_delays: [5s, 5m]    # only where the profile publishes none
//	events:
//	  - {name: pay, type: payment_intent.succeeded, amount: 1000}
//	steps:
//	  - {name: first, event: pay, copies: 16, faults: {lost_ack: close}, retry: true}
//	  - {event: pay, wait: 24h, replay: {of: first, original_timestamp: true}}
//
// Fault fields: lost_ack (close|discard), tamper, wrong_secret,
// missing_signature, missing_id, malformed_json, oversize_bytes, stale_by,
// ahead_by (a timestamp signed in the future).
//
// For boundary tests a target can declare its own business object and the
// event's creation time, and a step can pad its legitimate, correctly signed
// body to an exact size with JSON whitespace (pad_to is not a fault):
//
//	events:
//	  - name: invoice
//	    type: invoice.paid
//	    created: 2025-06-01T12:30:00Z
//	    object: {id: in_1, amount_due: 1999}   # or a JSON string, kept byte for byte
//	steps:
//	  - {event: invoice, pad_to: 1048576}
//	  - {event: invoice, faults: {ahead_by: 10m}}
//
// Runner.Preview renders each step's first request without sending it.
// VersionedStream builds a seeded, shuffled and duplicated stream of versioned
// updates of one object to append to a plan.
//
// Runner executes plans (Run, RunNotify). Runner.Deliver sends events a caller
// built already, without a plan, through the same engine: the same seeded IDs
// and records as the equivalent plan, returned in delivery order, on the
// caller's clock when Options.Origin is its run's start. Runner.Send and
// Runner.SendCopies make single deliveries. How one delivery is sent (attempt
// number, faults, timeout, pad_to) is a Shape, which Step, Delivery and
// SendOptions embed alike: a plan step writes those fields at its own level.
// Histories are written and read as JSON Lines so a stored run can be
// re-checked later.
package simulator
