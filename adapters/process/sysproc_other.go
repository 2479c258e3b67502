//go:build !unix

package process

import "syscall"

// sysProcAttr is the default here: process groups and parent-death signals are
// Unix notions, so the receiver is an ordinary child (signal_other.go says what
// Kill and Stop can do with it).
func sysProcAttr() *syscall.SysProcAttr { return nil }
