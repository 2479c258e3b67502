// Package process controls a receiver process for crash scenarios: it starts the
// target's command in its own process group, keeps the last bytes of its output for
// the report, waits until it answers its readiness URL, and kills it the way a real
// crash does (SIGKILL to the whole group), stops it gracefully (SIGTERM, then
// SIGKILL after a grace period) or restarts it with the same specification.
//
// On Linux the receiver dies with the harness (a parent-death SIGKILL), so a
// harness killed by SIGKILL leaves no receiver behind. Windows has no process
// groups to SIGKILL: there Kill returns ErrKillUnsupported (the crash scenarios are
// not applicable) and Stop terminates the receiver at once. Everything a Process
// returns (output, tails, error text) is scrubbed of its Spec's secrets and of
// well-known secret formats (adapters/scrub).
package process
