package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// demoDirPrefix names the demo's temporary directories, demoPIDFile the file in
// each that says which process owns it.
const (
	demoDirPrefix = "hookcert-demo-"
	demoPIDFile   = "owner.pid"
	// A directory without a pid file is being created right now, or was left by
	// a hookcert that wrote none; after this long it is the latter.
	demoOrphanAge = 10 * time.Minute
)

// newDemoDir creates the demo's private directory (0700) and records the owner in
// it: the pid and, where /proc tells it, the process's start time, so a pid
// reused by another process does not keep a dead run's directory alive.
func newDemoDir() (string, error) {
	dir, err := os.MkdirTemp("", demoDirPrefix)
	if err != nil {
		return "", err
	}
	owner := strconv.Itoa(os.Getpid()) + " " + procStartTime(os.Getpid()) + "\n"
	if err := os.WriteFile(filepath.Join(dir, demoPIDFile), []byte(owner), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// removeStaleDemoDirs removes the demo directories in tmp whose owner is no longer
// running (a demo killed by SIGKILL cannot remove its own) and returns how many.
// Directories of other users and of live runs are left alone.
func removeStaleDemoDirs(tmp string) int {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), demoDirPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		info, err := e.Info()
		if err != nil {
			continue
		}
		if ownedByOther(info) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, demoPIDFile))
		if errors.Is(err, os.ErrNotExist) {
			if time.Since(info.ModTime()) < demoOrphanAge {
				continue
			}
		} else if err != nil {
			continue
		} else if ownerAlive(b) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			n++
		}
	}
	return n
}

// ownerAlive reads a pid file ("PID STARTTIME") and reports whether that process
// still runs. An unreadable file counts as alive: only a known-dead owner's
// directory is removed.
func ownerAlive(pidFile []byte) bool {
	f := strings.Fields(string(pidFile))
	if len(f) == 0 {
		return true
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return true
	}
	if processGone(pid) {
		return false
	}
	if len(f) > 1 {
		if now := procStartTime(pid); now != "" && now != f[1] {
			return false // the pid now belongs to another process
		}
	}
	return !procZombie(pid)
}

// procStartTime is the process's start time in clock ticks since boot
// (/proc/PID/stat field 22), "" where /proc does not say.
func procStartTime(pid int) string {
	f := procStatFields(pid)
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields after "(comm)": state is [0], starttime (22nd overall) is [19]
}

// procZombie reports whether pid has exited and waits for its parent to reap it
// (a killed demo's parent may never do so).
func procZombie(pid int) bool {
	f := procStatFields(pid)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// procStatFields are the fields of /proc/PID/stat after the command name, which
// may hold spaces and parentheses; nil without /proc.
func procStatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}
