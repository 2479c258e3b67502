//go:build !unix

package cli

import (
	"io/fs"
	"os"
)

// ownedByOther: file ownership is not read here; the temp directory is the
// user's own.
func ownedByOther(fs.FileInfo) bool { return false }

// processGone reports whether no process has this pid: FindProcess opens the
// process on Windows and fails when there is none.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	_ = p.Release()
	return false
}
