//go:build unix

package pgprovision

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment of the child process that provisions a cluster and is then killed.
const (
	envKilledRun     = "HOOKCERT_PG_KILLED_RUN"
	envNoDeathSignal = "HOOKCERT_PG_NO_DEATH_SIGNAL"
	childBackends    = 3
)

func TestMain(m *testing.M) {
	if os.Getenv(envKilledRun) != "" {
		os.Exit(killedRunChild())
	}
	os.Exit(m.Run())
}

// killedRunChild provisions a local cluster, holds sessions open on it (so
// that it has backends, as a real run does), reports
// "READY <data dir> <postmaster pid> <backend pids>" and waits to be killed.
func killedRunChild() int {
	if os.Getenv(envNoDeathSignal) != "" {
		deathSignal = 0
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	db, _, err := Provision(ctx, Options{DisableDocker: true, Logger: log, StartTimeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "provision:", err)
		return 1
	}
	m := dataDirRE.FindStringSubmatch(db.Server)
	if m == nil {
		fmt.Fprintln(os.Stderr, "no data dir in", db.Server)
		return 1
	}
	var backends []string
	var conns []*pgx.Conn
	for range childBackends {
		conn, err := pgx.Connect(ctx, db.URL)
		if err != nil {
			fmt.Fprintln(os.Stderr, "connect:", err)
			return 1
		}
		var pid int
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			fmt.Fprintln(os.Stderr, "backend pid:", err)
			return 1
		}
		backends = append(backends, strconv.Itoa(pid))
		conns = append(conns, conn)
	}
	fmt.Printf("READY %s %d %s\n", m[1], lockFilePID(m[1]), strings.Join(backends, ","))
	time.Sleep(time.Hour)
	// Unreachable in practice; keeps the sessions from being collected (and
	// their sockets closed) while the child waits to be killed.
	runtime.KeepAlive(conns)
	return 0
}

// killedRun is what the child reported before it was SIGKILLed.
type killedRun struct {
	dir        string // the cluster's temp dir
	postmaster int
	backends   []int
}

// sweepRoot is a temp directory of the test's own, traversable by the
// unprivileged cluster user, so that no other process sweeps it meanwhile.
func sweepRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "hookcert-sweep-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	return root
}

// provisionAndKill runs killedRunChild with TMPDIR=root, waits for READY and
// SIGKILLs it, so that no cleanup of the child's runs.
func provisionAndKill(t *testing.T, root string, deathSignal bool) killedRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKilledRun+"=1", "TMPDIR="+root)
	if !deathSignal {
		cmd.Env = append(cmd.Env, envNoDeathSignal+"=1")
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") {
				lines <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child never provisioned; stderr:\n%s", stderr.String())
	}
	f := strings.Fields(line)
	if len(f) != 4 {
		t.Fatalf("child said %q", line)
	}
	run := killedRun{dir: filepath.Dir(f[1])}
	run.postmaster, _ = strconv.Atoi(f[2])
	for _, b := range strings.Split(f[3], ",") {
		pid, _ := strconv.Atoi(b)
		run.backends = append(run.backends, pid)
	}
	if run.postmaster <= 0 || len(run.backends) != childBackends {
		t.Fatalf("child said %q", line)
	}
	// Whatever the test finds, it must not leave the cluster running.
	t.Cleanup(func() {
		if alive(run.postmaster, 0) && commandMentions(run.postmaster, filepath.Join(run.dir, "data")) {
			_ = syscall.Kill(-run.postmaster, syscall.SIGKILL)
		}
	})
	for _, pid := range append([]int{run.postmaster}, run.backends...) {
		if !alive(pid, 0) {
			st, start, ok := procState(pid)
			t.Fatalf("process %d of the child's cluster (%q) is not running before the kill (state %c start %d %v); stderr:\n%s", pid, line, st, start, ok, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return run
}

// waitAllGone waits up to limit for every pid to be gone and returns how long
// that took, or the pids still there.
func waitAllGone(pids []int, limit time.Duration) (time.Duration, []int) {
	start := time.Now()
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid, 0) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Since(start) > limit {
			return time.Since(start), left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// provisionAfterKill is the next run: it uses the shared test server by URL,
// so the only local cluster involved is the killed run's.
func provisionAfterKill(t *testing.T, root string) *Database {
	t.Helper()
	t.Setenv("TMPDIR", root)
	log, buf := captureLogger()
	db, cleanup, err := Provision(context.Background(), Options{URL: testServerURL(), Logger: log})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() { _ = cleanup(context.Background()) })
	want := "removed 1 stale PostgreSQL cluster left by a killed run"
	if len(db.Notices) != 1 || !strings.Contains(db.Notices[0], want) {
		t.Errorf("notices = %q, want one containing %q", db.Notices, want)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), want) {
		t.Errorf("the sweep was not logged as a warning; log:\n%s", buf.String())
	}
	return db
}

// TestKilledRunClusterDies: SIGKILL of the run that started a local cluster
// takes the postmaster and its backends down with it (the death signal), even
// though the cluster runs as another user when we are root; the next run then
// removes the dir left behind.
func TestKilledRunClusterDies(t *testing.T) {
	requireBinaries(t)
	root := sweepRoot(t)
	run := provisionAndKill(t, root, true)
	took, left := waitAllGone(append([]int{run.postmaster}, run.backends...), 10*time.Second)
	if len(left) > 0 {
		t.Fatalf("postmaster %d / backends %v of the killed run: %v still running after %s", run.postmaster, run.backends, left, took)
	}
	t.Logf("postmaster and %d backends gone %s after the kill", len(run.backends), took.Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(run.dir, markerName)); err != nil {
		t.Fatalf("the killed run's dir is not marked: %v", err)
	}

	provisionAfterKill(t, root)
	if _, err := os.Stat(run.dir); !os.IsNotExist(err) {
		t.Errorf("stale dir %s still present after the next run (stat: %v)", run.dir, err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left in the temp dir: %v", entries)
	}
}

// TestSweepStopsOrphanedCluster: where the death signal did not arrive (here:
// switched off), the cluster outlives the killed run; the next run stops its
// postmaster, which takes the backends with it, and removes the dir. A marked
// dir of a live run in the same place is left alone.
func TestSweepStopsOrphanedCluster(t *testing.T) {
	requireBinaries(t)
	root := sweepRoot(t)
	live := filepath.Join(root, clusterDirPrefix+"live")
	if err := os.Mkdir(live, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(live, marker{ownerPID: os.Getpid(), ownerStart: procStart(os.Getpid())}); err != nil {
		t.Fatal(err)
	}

	run := provisionAndKill(t, root, false)
	time.Sleep(time.Second)
	if !alive(run.postmaster, 0) {
		t.Fatalf("without the death signal the postmaster %d should outlive the killed run; the test proves nothing", run.postmaster)
	}

	start := time.Now()
	provisionAfterKill(t, root)
	t.Logf("next run's provisioning (sweep included) took %s", time.Since(start).Round(time.Millisecond))
	if took, left := waitAllGone(append([]int{run.postmaster}, run.backends...), 5*time.Second); len(left) > 0 {
		t.Fatalf("after the sweep, %v of postmaster %d / backends %v still running (%s)", left, run.postmaster, run.backends, took)
	}
	if _, err := os.Stat(run.dir); !os.IsNotExist(err) {
		t.Errorf("stale dir %s still present after the sweep (stat: %v)", run.dir, err)
	}
	if _, err := os.Stat(filepath.Join(live, markerName)); err != nil {
		t.Errorf("the live run's dir was touched: %v", err)
	}
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestSweepStaleMarkers covers which dirs a sweep touches, without PostgreSQL.
func TestSweepStaleMarkers(t *testing.T) {
	root := sweepRoot(t)
	dead := deadPID(t)
	self, selfStart := os.Getpid(), procStart(os.Getpid())
	mk := func(name string, m *marker) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if m != nil {
			if err := writeMarker(dir, *m); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	gone := map[string]string{ // dirs the sweep must remove, and why
		mk(clusterDirPrefix+"dead", &marker{ownerPID: dead}): "owner exited",
	}
	stay := map[string]string{
		mk(clusterDirPrefix+"live", &marker{ownerPID: self, ownerStart: selfStart}): "owner alive",
		mk(clusterDirPrefix+"nomarker", nil):                                        "not marked",
		mk("other-prefix", &marker{ownerPID: dead}):                                 "not a cluster dir",
	}
	if procAvailable() {
		gone[mk(clusterDirPrefix+"reused", &marker{ownerPID: self, ownerStart: selfStart + 1})] = "owner pid reused by another process"
	}
	// A sweep killed halfway leaves its claimed dir to the next one; a live
	// sweep's claim is respected.
	gone[mk(fmt.Sprintf("%s%d-0-0a0b", claimPrefix, dead), &marker{ownerPID: dead})] = "claimed by a sweep that died"
	stay[mk(fmt.Sprintf("%s%d-%d-0a0b", claimPrefix, self, selfStart), &marker{ownerPID: dead})] = "claimed by a live sweep"
	garbled := mk(clusterDirPrefix+"garbled", nil)
	if err := os.WriteFile(filepath.Join(garbled, markerName), []byte("owner_pid=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stay[garbled] = "marker without the magic line"
	if os.Geteuid() == 0 {
		foreign := mk(clusterDirPrefix+"foreign", &marker{ownerPID: dead})
		if err := os.Lchown(filepath.Join(foreign, markerName), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		stay[foreign] = "marker owned by another user"
	}
	kept := mk(clusterDirPrefix+"kept", &marker{ownerPID: dead, keep: true})

	// Sweeps racing each other remove each dir once.
	var wg sync.WaitGroup
	results := make([]staleResult, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = sweepStale(root, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
	}
	wg.Wait()
	var removed, stopped []string
	for _, r := range results {
		removed = append(removed, r.removed...)
		stopped = append(stopped, r.stopped...)
	}
	if len(removed) != len(gone) {
		t.Errorf("removed %q, want each of %v once", removed, gone)
	}
	for dir, why := range gone {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s (%s) not removed: %v", filepath.Base(dir), why, err)
		}
	}
	for dir, why := range stay {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s (%s) touched: %v", filepath.Base(dir), why, err)
		}
	}
	if len(stopped) != 1 || stopped[0] != kept {
		t.Errorf("stopped %q, want [%s]", stopped, kept)
	}
	if _, err := os.Stat(filepath.Join(kept, "data")); err != nil {
		t.Errorf("kept data removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, markerName)); !os.IsNotExist(err) {
		t.Errorf("kept dir still marked, so it would be looked at by every run: %v", err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != len(stay)+1 {
		t.Errorf("left in root: %v", entries)
	}
	if again := sweepStale(root, slog.New(slog.NewTextHandler(io.Discard, nil))); again.notice() != "" {
		t.Errorf("second sweep did something: %s", again.notice())
	}
	n := len(gone)
	want := fmt.Sprintf("removed %d stale PostgreSQL cluster%s left by a killed run (", n, plural(n))
	if msg := (staleResult{removed: removed}).notice(); !strings.HasPrefix(msg, want) {
		t.Errorf("notice = %q, want prefix %q", msg, want)
	}
}

func TestParseMarkerRoundTrip(t *testing.T) {
	m := marker{ownerPID: 12, ownerStart: 34, postmasterPID: 56, postmasterStart: 78, keep: true}
	got, err := parseMarker(m.encode())
	if err != nil || got != m {
		t.Fatalf("parseMarker(encode(%+v)) = %+v, %v", m, got, err)
	}
	for _, bad := range []string{"", "owner_pid=1\n", markerMagic + "\n", markerMagic + "\nowner_pid=x\n", markerMagic + "\nowner_pid\n"} {
		if _, err := parseMarker([]byte(bad)); err == nil {
			t.Errorf("parseMarker(%q) accepted", bad)
		}
	}
}
