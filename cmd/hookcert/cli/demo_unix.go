//go:build unix

package cli

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ownedByOther reports whether another user owns the file: their demo
// directories are theirs to clean.
func ownedByOther(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Getuid()
}

// processGone reports whether no process has this pid (signal 0 probes it).
func processGone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
