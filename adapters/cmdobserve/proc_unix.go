//go:build unix && !linux

package cmdobserve

import "syscall"

// sysProcAttr puts the query's program in its own process group, so a timeout
// kills whatever it started.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
