package cmdobserve

import "syscall"

// sysProcAttr puts the query's program in its own process group, so a timeout
// kills whatever it started, and has the kernel kill it if hookcert dies (as
// adapters/process runs a receiver).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
