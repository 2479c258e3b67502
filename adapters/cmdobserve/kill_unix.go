//go:build unix

package cmdobserve

import (
	"os"
	"syscall"
)

// killGroup SIGKILLs the process group p leads; a group already gone is fine.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
