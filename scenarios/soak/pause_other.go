//go:build !unix

package soak

// PauseGroup is nil where there is no SIGSTOP: the pause nemesis is then
// unavailable.
func PauseGroup(pid func() int) func(stop bool) error { return nil }
