package process

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OwnerOfLocalPort says which of groups (process group IDs, as the harness
// starts each process in its own group) holds the TCP socket bound to local
// port on this machine: its index, or -1 when none does or the system does not
// tell (no /proc). The harness uses it to find the worker process behind a
// database session, from the client port PostgreSQL reports for the session.
func OwnerOfLocalPort(port int, groups []int) int {
	inodes := socketInodes(port)
	if len(inodes) == 0 {
		return -1
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		i := groupIndex(pid, groups)
		if i < 0 {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err == nil && inodes[link] {
				return i
			}
		}
	}
	return -1
}

// socketInodes are the "socket:[N]" names of the TCP sockets whose local port
// is port (/proc/net/tcp and tcp6: "sl local rem st ... uid timeout inode").
func socketInodes(port int) map[string]bool {
	want := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(want) < 4 {
		want = "0" + want
	}
	out := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			if _, p, ok := strings.Cut(fields[1], ":"); ok && p == want {
				out["socket:["+fields[9]+"]"] = true
			}
		}
		fh.Close()
	}
	return out
}

// groupIndex is the index in groups of pid's process group, or -1.
func groupIndex(pid int, groups []int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
	s := string(b)
	j := strings.LastIndexByte(s, ')')
	if j < 0 {
		return -1
	}
	f := strings.Fields(s[j+1:])
	if len(f) < 3 {
		return -1
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	for i, g := range groups {
		if g == pgrp {
			return i
		}
	}
	return -1
}
