//go:build unix

package pgprovision

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clusterDirPrefix starts the name of every throwaway cluster's temp dir; the
// sweep looks only at entries with this prefix in the temp directory.
const clusterDirPrefix = "hookcert-pg-"

// markerName is the file in a cluster dir naming the hookcert process that owns
// it and the postmaster it started. A dir without it is never swept.
const markerName = "hookcert-owner"

// markerMagic is the marker's first line, so that a stray file of that name is
// not mistaken for one.
const markerMagic = "hookcert local PostgreSQL cluster v1"

// staleStopGrace bounds the wait for a stale postmaster after SIGQUIT, and
// again after SIGKILL.
var staleStopGrace = 5 * time.Second

// marker is the content of markerName.
type marker struct {
	ownerPID        int
	ownerStart      uint64 // process start time in clock ticks since boot; 0 when unknown
	postmasterPID   int    // 0 before the postmaster started
	postmasterStart uint64
	keep            bool // the run asked to keep its data
}

func (m marker) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nowner_pid=%d\nowner_start=%d\npostmaster_pid=%d\npostmaster_start=%d\nkeep=%t\n",
		markerMagic, m.ownerPID, m.ownerStart, m.postmasterPID, m.postmasterStart, m.keep)
	return b.Bytes()
}

func parseMarker(b []byte) (marker, error) {
	var m marker
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || sc.Text() != markerMagic {
		return m, errors.New("not a hookcert cluster marker")
	}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			return m, fmt.Errorf("marker line %q: want key=value", sc.Text())
		}
		var err error
		switch k {
		case "owner_pid":
			m.ownerPID, err = strconv.Atoi(v)
		case "owner_start":
			m.ownerStart, err = strconv.ParseUint(v, 10, 64)
		case "postmaster_pid":
			m.postmasterPID, err = strconv.Atoi(v)
		case "postmaster_start":
			m.postmasterStart, err = strconv.ParseUint(v, 10, 64)
		case "keep":
			m.keep, err = strconv.ParseBool(v)
		}
		if err != nil {
			return m, fmt.Errorf("marker %s: %w", k, err)
		}
	}
	if m.ownerPID <= 0 {
		return m, errors.New("marker has no owner_pid")
	}
	return m, nil
}

// writeMarker replaces the marker atomically, so that a concurrent sweep never
// reads half of it. The file stays owned by us: a sweep trusts only markers
// owned by its own user.
func writeMarker(dir string, m marker) error {
	tmp := filepath.Join(dir, markerName+".tmp")
	if err := os.WriteFile(tmp, m.encode(), 0o644); err != nil {
		return fmt.Errorf("cluster marker: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, markerName)); err != nil {
		return fmt.Errorf("cluster marker: %w", err)
	}
	return nil
}

// procState returns the state letter and start time (clock ticks since boot)
// of pid from /proc (Linux). ok is false where /proc is unavailable or the
// process does not exist.
func procState(pid int) (state byte, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may contain anything; the fixed
	// fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64) // field 22 of proc(5)
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], start, true
}

// procStart is the start time of pid, 0 when unknown.
func procStart(pid int) uint64 {
	_, start, _ := procState(pid)
	return start
}

// alive reports whether the process that was pid when start was recorded still
// runs. A zombie counts as gone: it holds nothing but its pid. A start time that
// differs means the pid was reused by another process.
func alive(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	state, now, ok := procState(pid)
	if !ok {
		// Without /proc, signal 0 (answered, or refused for lack of permission)
		// is all there is to go on; with it, the process has just exited.
		return !procAvailable()
	}
	if state == 'Z' || state == 'X' {
		return false
	}
	return start == 0 || now == start
}

// staleResult is what one sweep did.
type staleResult struct {
	removed []string // dirs removed
	stopped []string // kept dirs whose server was stopped; the data stays
}

// notice is the one-line message for the caller, "" when the sweep did nothing.
func (r staleResult) notice() string {
	var parts []string
	if n := len(r.removed); n > 0 {
		parts = append(parts, fmt.Sprintf("removed %d stale PostgreSQL cluster%s left by a killed run (%s)", n, plural(n), strings.Join(r.removed, ", ")))
	}
	if n := len(r.stopped); n > 0 {
		parts = append(parts, fmt.Sprintf("stopped %d stale PostgreSQL cluster%s left by a killed run that asked to keep its data; kept: %s", n, plural(n), strings.Join(r.stopped, ", ")))
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sweepStale stops and removes the throwaway clusters under root whose owning
// hookcert process is gone (killed before its cleanup could run). Clusters of
// live runs, dirs without a marker of ours and dirs we may not touch are left
// alone. Problems are logged, never returned: a stale dir must not stop a run.
func sweepStale(root string, log *slog.Logger) staleResult {
	var res staleResult
	entries, err := os.ReadDir(root)
	if err != nil {
		log.Debug("postgres: cannot look for stale clusters", "dir", root, "error", err.Error())
		return res
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), clusterDirPrefix) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if claimedByLiveSweep(e.Name()) {
			continue
		}
		m, ok := readOwnMarker(dir, log)
		if !ok || alive(m.ownerPID, m.ownerStart) {
			continue
		}
		if err := sweepOne(dir, m, log, &res); err != nil {
			log.Warn("postgres: could not clean up a stale cluster", "dir", dir, "error", err.Error())
		}
	}
	if msg := res.notice(); msg != "" {
		log.Warn("postgres: " + msg)
	}
	return res
}

// readOwnMarker returns the marker of dir if it is a regular file owned by our
// user with a single link; anything else could have been planted by another
// user to make us signal a process of its choosing.
func readOwnMarker(dir string, log *slog.Logger) (marker, bool) {
	p := filepath.Join(dir, markerName)
	st, err := os.Lstat(p)
	if err != nil {
		return marker{}, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.Mode().IsRegular() || !ok || int(sys.Uid) != os.Geteuid() || sys.Nlink != 1 {
		log.Debug("postgres: ignoring a cluster marker not owned by us", "path", p)
		return marker{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return marker{}, false
	}
	m, err := parseMarker(b)
	if err != nil {
		log.Debug("postgres: ignoring an unreadable cluster marker", "path", p, "error", err.Error())
		return marker{}, false
	}
	return m, true
}

func sweepOne(dir string, m marker, log *slog.Logger, res *staleResult) error {
	dataDir := filepath.Join(dir, "data")
	pid, start := m.postmasterPID, m.postmasterStart
	if pid == 0 {
		// Killed between starting the postmaster and recording it: the server's
		// own lock file names it, trusted only if its command line names this dir.
		pid = lockFilePID(dataDir)
		if pid > 0 && !commandMentions(pid, dataDir) {
			pid = 0
		}
	}
	if m.keep {
		if pid > 0 {
			if err := stopStale(pid, start); err != nil {
				return err
			}
		}
		// Without the marker the kept data is never swept.
		if err := os.Remove(filepath.Join(dir, markerName)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // another sweep got there first
			}
			return err
		}
		res.stopped = append(res.stopped, dir)
		return nil
	}
	// Renaming claims the dir: of several runs sweeping at once exactly one
	// succeeds. The new name names the sweeping process, so that other sweeps
	// leave it alone while that process lives; it keeps the prefix and the
	// marker, so a sweep killed halfway is finished by the next one.
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return err
	}
	self := os.Getpid()
	claimed := filepath.Join(filepath.Dir(dir), fmt.Sprintf("%s%d-%d-%s", claimPrefix, self, procStart(self), hex.EncodeToString(suffix)))
	if err := os.Rename(dir, claimed); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if pid > 0 {
		if err := stopStale(pid, start); err != nil {
			return fmt.Errorf("%w (dir now %s)", err, claimed)
		}
	}
	if err := os.RemoveAll(claimed); err != nil {
		return err
	}
	res.removed = append(res.removed, dir)
	return nil
}

// claimPrefix starts the name of a dir a sweep has claimed:
// <claimPrefix><pid>-<start>-<random>, pid and start naming the sweeping process.
const claimPrefix = clusterDirPrefix + "stale-"

// claimedByLiveSweep reports whether name is a dir claimed by a sweep whose
// process still runs.
func claimedByLiveSweep(name string) bool {
	rest, ok := strings.CutPrefix(name, claimPrefix)
	if !ok {
		return false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return err1 == nil && err2 == nil && pid > 0 && alive(pid, start)
}

// lockFilePID is the pid on the first line of postmaster.pid, 0 if none.
func lockFilePID(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// commandMentions reports whether the command line of pid contains arg; true
// where /proc is unavailable and the process exists.
func commandMentions(pid int, arg string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) && !procAvailable()
	}
	for _, a := range bytes.Split(b, []byte{0}) {
		if string(a) == arg {
			return true
		}
	}
	return false
}

func procAvailable() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// stopStale shuts a stale postmaster down: SIGQUIT (immediate shutdown; the
// data is thrown away), then SIGKILL to its process group, each waited for at
// most staleStopGrace. Its backends exit by themselves once it is gone.
func stopStale(pid int, start uint64) error {
	if !alive(pid, start) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	if waitGone(pid, start, staleStopGrace) {
		return nil
	}
	// The postmaster leads its own process group (Setpgid at start).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitGone(pid, start, staleStopGrace) {
		return nil
	}
	return fmt.Errorf("stale postmaster %d still running after SIGQUIT and SIGKILL", pid)
}

func waitGone(pid int, start uint64, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for alive(pid, start) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
