//go:build unix

package pgprovision

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var dataDirRE = regexp.MustCompile(`\(data dir ([^)]+)\)`)

// postmasterPID reads the first line of postmaster.pid, written by the server itself.
func postmasterPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatalf("read postmaster.pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatalf("parse postmaster.pid: %v", err)
	}
	return pid
}

// processUID reads the real uid of pid from /proc (Linux); -1 if unavailable.
func processUID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
			uid, _ := strconv.Atoi(f[1])
			return uid
		}
	}
	return -1
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := findBinaries(); err != nil {
		t.Skipf("local PostgreSQL binaries: %v", err)
	}
}

// TestProvisionLocal starts a real throwaway cluster: with DisableDocker and no
// URL, discovery must pick the local binaries.
func TestProvisionLocal(t *testing.T) {
	requireBinaries(t)
	ctx := context.Background()
	log, buf := captureLogger()
	start := time.Now()
	db, cleanup, err := Provision(ctx, Options{DisableDocker: true, Logger: log, StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	cleaned := false
	t.Cleanup(func() {
		if !cleaned {
			_ = cleanup(context.Background())
		}
	})
	t.Logf("local cluster ready in %s: %s", time.Since(start).Round(time.Millisecond), db.Server)
	if db.Method != MethodLocal {
		t.Fatalf("method = %s, want local", db.Method)
	}
	m := dataDirRE.FindStringSubmatch(db.Server)
	if m == nil {
		t.Fatalf("server description has no data dir: %s", db.Server)
	}
	dataDir := m[1]
	tempDir := filepath.Dir(dataDir)
	pid := postmasterPID(t, dataDir)

	if os.Geteuid() == 0 {
		u, err := user.Lookup(unprivilegedUsers[0])
		if err != nil {
			t.Fatalf("lookup %s: %v", unprivilegedUsers[0], err)
		}
		if got := strconv.Itoa(processUID(pid)); got != u.Uid {
			t.Fatalf("postmaster %d runs as uid %s, want %s (%s)", pid, got, u.Uid, u.Username)
		}
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tempDir, "sock", ".s.PGSQL."+u.Port())); err != nil {
		t.Errorf("unix socket not in the temp dir: %v", err)
	}

	conn := mustConnect(t, db.URL)
	var current string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&current); err != nil {
		t.Fatal(err)
	}
	if current != db.Name {
		t.Fatalf("connected to %s, want %s", current, db.Name)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2", n, err)
	}

	// The session stays open: cleanup must still drop the database and stop the server.
	stopStart := time.Now()
	cleaned = true
	if err := cleanup(ctx); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	t.Logf("cleanup took %s", time.Since(stopStart).Round(time.Millisecond))
	if !processGone(pid) {
		t.Errorf("postmaster %d still running after cleanup", pid)
	}
	if _, err := os.Stat(tempDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s still present after cleanup (stat: %v)", tempDir, err)
	}
	if strings.Contains(buf.String(), "killing") {
		t.Errorf("server needed SIGKILL; log:\n%s", buf.String())
	}
}

// TestLocalKeepDatabase keeps the data directory of a stopped cluster.
func TestLocalKeepDatabase(t *testing.T) {
	requireBinaries(t)
	ctx := context.Background()
	log, buf := captureLogger()
	db, cleanup, err := Provision(ctx, Options{DisableDocker: true, KeepDatabase: true, Logger: log})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	dataDir := dataDirRE.FindStringSubmatch(db.Server)[1]
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(dataDir)) })
	pid := postmasterPID(t, dataDir)
	if err := cleanup(ctx); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("postmaster %d still running after cleanup", pid)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		t.Errorf("data dir not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dataDir), markerName)); !os.IsNotExist(err) {
		t.Errorf("kept cluster still marked, so the next run would sweep it away (stat: %v)", err)
	}
	if !strings.Contains(buf.String(), "data directory "+dataDir+" is kept") {
		t.Errorf("cleanup did not say where the data is; log:\n%s", buf.String())
	}
}

// TestLocalStartFailureQuotesLog breaks the configuration of an initialised
// cluster and expects the server's own complaint in the error.
func TestLocalStartFailureQuotesLog(t *testing.T) {
	requireBinaries(t)
	bins, _ := findBinaries()
	as, err := unprivileged()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hookcert-pg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &localCluster{bins: bins, as: as, dir: dir, dataDir: filepath.Join(dir, "data"), sockDir: filepath.Join(dir, "sock"), logPath: filepath.Join(dir, "postgres.log")}
	if err := c.prepareDir(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.initdb(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(c.dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("\nshared_buffers = 'not a size'\n")
	f.Close()

	err = c.start(ctx)
	if err == nil {
		c.kill()
		t.Fatal("start succeeded with a broken configuration")
	}
	t.Logf("start error: %v", err)
	if !strings.Contains(err.Error(), "postgres exited before accepting connections") || !strings.Contains(err.Error(), "shared_buffers") {
		t.Fatalf("error does not quote the server log: %v", err)
	}
	if !processGone(c.cmd.Process.Pid) {
		t.Fatalf("failed server %d still running", c.cmd.Process.Pid)
	}
}

// TestFindBinariesGlob: with nothing on PATH, discovery falls back to the newest
// installation under localBinGlob.
func TestFindBinariesGlob(t *testing.T) {
	dirs, _ := filepath.Glob(localBinGlob)
	if len(dirs) == 0 {
		t.Skipf("nothing under %s on this machine", localBinGlob)
	}
	t.Setenv("PATH", t.TempDir())
	b, err := findBinaries()
	if err != nil {
		t.Fatalf("findBinaries: %v", err)
	}
	for _, d := range dirs {
		if _, ok := binariesIn(d); ok && versionLess(versionOf(b.dir), versionOf(d)) {
			t.Fatalf("picked %s although %s is newer", b.dir, d)
		}
	}
	found := false
	for _, d := range dirs {
		found = found || d == b.dir
	}
	if !found {
		t.Fatalf("picked %s, which is not under %s", b.dir, localBinGlob)
	}
	t.Logf("picked %s", b.dir)
}
