package pgprovision

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// localBinGlob is where Debian and Ubuntu install versioned PostgreSQL binaries.
// A variable so that tests can point discovery at an empty place.
var localBinGlob = "/usr/lib/postgresql/*/bin"

// pgBinaries are the initdb and postgres executables of one installation.
type pgBinaries struct {
	dir      string
	initdb   string
	postgres string
}

// errNoBinaries is returned by findBinaries when neither place has them.
var errNoBinaries = errors.New("initdb not found")

// findBinaries looks for initdb on PATH (with postgres beside it, following a
// symlink if needed), then under localBinGlob, newest version first.
func findBinaries() (pgBinaries, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if b, ok := binariesIn(filepath.Dir(p)); ok {
			return b, nil
		}
		// PATH often holds symlinks (e.g. /usr/local/bin/initdb); postgres must come
		// from the same installation as initdb, so look where the link points.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if b, ok := binariesIn(filepath.Dir(real)); ok {
				return b, nil
			}
		}
	}
	dirs, _ := filepath.Glob(localBinGlob) // only ErrBadPattern, impossible for a constant
	sort.SliceStable(dirs, func(i, j int) bool {
		return versionLess(versionOf(dirs[j]), versionOf(dirs[i]))
	})
	for _, d := range dirs {
		if b, ok := binariesIn(d); ok {
			return b, nil
		}
	}
	return pgBinaries{}, fmt.Errorf("%w on PATH or under %s", errNoBinaries, localBinGlob)
}

func binariesIn(dir string) (pgBinaries, bool) {
	b := pgBinaries{dir: dir, initdb: filepath.Join(dir, "initdb"), postgres: filepath.Join(dir, "postgres")}
	return b, isExecutable(b.initdb) && isExecutable(b.postgres)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// versionOf extracts the version from .../postgresql/<version>/bin as numbers.
func versionOf(binDir string) []int {
	var v []int
	for _, part := range strings.Split(filepath.Base(filepath.Dir(binDir)), ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return v
		}
		v = append(v, n)
	}
	return v
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// lastLines returns the last n non-empty lines of b joined by " | ", so that a
// start failure can quote the server log in a one-line error.
func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(string(lines[i])); l != "" {
			out = append(out, l)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if len(out) == 0 {
		return "(no output)"
	}
	return strings.Join(out, " | ")
}
