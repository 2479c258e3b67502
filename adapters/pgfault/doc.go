// Package pgfault injects PostgreSQL faults into a receiver under test: a lock gate
// on the receiver's event table that holds every concurrent delivery at the same
// point until the harness releases them together (turning a probabilistic race
// into a deterministic one), and termination of the receiver's backends in the
// middle of a transaction (connection loss).
//
// The harness's own sessions carry application_name "hookcert-harness" (see
// Connect) so that termination never hits them.
package pgfault
