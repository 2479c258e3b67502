//go:build unix && !linux

package pgprovision

import "syscall"

// deathSignal is unused where the kernel cannot signal a child on its
// parent's death; the next run's sweep for stale clusters is all there is.
var deathSignal = syscall.SIGQUIT

func setDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
