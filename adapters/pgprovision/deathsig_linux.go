package pgprovision

import "syscall"

// deathSignal is what the kernel sends a cluster process when hookcert dies:
// SIGQUIT is PostgreSQL's immediate shutdown. A variable so that tests can
// leave a cluster behind on purpose (0 sends nothing).
var deathSignal = syscall.SIGQUIT

// setDeathSignal asks the kernel to send sig to the child when its parent
// dies. Go sets it after switching to the child's Credential, so it survives
// the change of user.
func setDeathSignal(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
