//go:build !unix

package process

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// canTerminate: there is no SIGTERM to send, so Stop ends the receiver at once
// (Exit.Forced) instead of granting it a grace period.
const canTerminate = false

// KillSupported reports whether Kill can crash the receiver: not here. Terminating
// the leader alone would leave the processes it spawned running and the port
// bound, which is not the crash the crash scenarios simulate.
func KillSupported() error {
	return fmt.Errorf("%w on %s", ErrKillUnsupported, runtime.GOOS)
}

// signalGroup ends p whatever sig is: the platform has no process groups to
// signal, so Stop and the cleanup after a failed start terminate the leader only.
func signalGroup(p *os.Process, _ syscall.Signal) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
