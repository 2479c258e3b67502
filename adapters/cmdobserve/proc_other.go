//go:build !unix

package cmdobserve

import (
	"os"
	"syscall"
)

// Process groups are a Unix notion: elsewhere the program alone is killed.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(p *os.Process) { _ = p.Kill() }
