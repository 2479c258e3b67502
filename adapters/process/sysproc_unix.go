//go:build unix && !linux

package process

import "syscall"

// sysProcAttr puts the receiver in its own process group. Only Linux has a
// parent-death signal: elsewhere a receiver outlives a harness killed by SIGKILL
// (Stop, Kill and a normal exit still end it).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
