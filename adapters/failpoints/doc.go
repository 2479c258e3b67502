// Package failpoints is the harness's client for the failpoint protocol
// (docs/failpoints.md): it arms a point of a receiver under test to crash or fail
// while handling one event, lists the armed points and disarms them all.
package failpoints
