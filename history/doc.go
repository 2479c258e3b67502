// Package history is the one record of a run and its codec: every delivery
// attempt, barrier release, lock gate, read of the receiver's state, downstream call and
// scenario, in the versioned JSON Lines format `hookcert.history/v1`
// (docs/history.md). The simulator writes attempts and releases into it, the
// suite adds scenarios, observations and sink calls, and the checker stage
// judges from it alone, so a stored run can be judged again offline
// (`hookcert check --from DIR`). It imports nothing of the harness but the
// event key.
package history
