//go:build unix

package process

import (
	"errors"
	"os"
	"syscall"
)

// canTerminate: a group can be sent SIGTERM, so Stop grants its grace period.
const canTerminate = true

// KillSupported reports whether Kill can crash the receiver (SIGKILL to its process
// group): nil here.
func KillSupported() error { return nil }

// signalGroup sends sig to the process group p leads (sysProcAttr made it the
// leader). A group that is already gone is not an error.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
