//go:build unix

package soak

import "syscall"

// PauseGroup returns a pause hook that stops and continues the process group
// pid() names (the receiver and whatever it spawned).
func PauseGroup(pid func() int) func(stop bool) error {
	return func(stop bool) error {
		p := pid()
		if p <= 0 {
			return syscall.ESRCH
		}
		sig := syscall.SIGCONT
		if stop {
			sig = syscall.SIGSTOP
		}
		return syscall.Kill(-p, sig)
	}
}
