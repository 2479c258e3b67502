package process

import "syscall"

// sysProcAttr puts the receiver in its own process group and has the kernel
// SIGKILL it when the harness dies, even by SIGKILL, so no receiver outlives a
// killed hookcert. Pdeathsig fires when the thread that forked the child exits;
// Go retires a thread only when a goroutine locked to it ends, and Start never
// locks one, so it means the process. It reaches the group leader only: a
// receiver that is a shell must pass it on (exec replaces the shell, so
// `exec ./receiver` does).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
