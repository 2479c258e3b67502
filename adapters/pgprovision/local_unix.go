//go:build unix

package pgprovision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// stopGrace is how long a fast shutdown (SIGINT) may take before SIGKILL.
var stopGrace = 10 * time.Second

// bindAttempts bounds retries when another process takes the chosen port
// between our probe and the server's bind.
const bindAttempts = 3

// logTailLines is how much of the server log a start failure quotes.
const logTailLines = 8

// unprivilegedUsers are tried in order when running as root, because initdb and
// postgres refuse to run as root.
var unprivilegedUsers = []string{"nobody", "postgres"}

// runAs is the user the cluster runs as: nil credential means "as ourselves".
type runAs struct {
	name string
	cred *syscall.Credential
}

func unprivileged() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{}, nil
	}
	var errs []string
	for _, name := range unprivilegedUsers {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			errs = append(errs, fmt.Sprintf("user %s has unusable uid %q gid %q", name, u.Uid, u.Gid))
			continue
		}
		// Empty Groups drops root's supplementary groups in the child.
		return runAs{name: name, cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}, nil
	}
	return runAs{}, fmt.Errorf("running as root, and initdb refuses root, but no unprivileged user was found (%s)", strings.Join(errs, "; "))
}

// checkReachable makes sure the unprivileged user can traverse every ancestor of
// dir; otherwise initdb fails later with a less obvious message.
func checkReachable(dir string, as runAs) error {
	if as.cred == nil {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok && st.Mode().Perm()&0o001 == 0 && sys.Uid != as.cred.Uid {
			return fmt.Errorf("temp dir %s is not reachable by user %s: %s has mode %o; set TMPDIR to a directory that user can traverse", dir, as.name, p, st.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// localCluster is a running throwaway PostgreSQL cluster.
type localCluster struct {
	bins    pgBinaries
	as      runAs
	dir     string // temp root: data/, sock/, postgres.log
	dataDir string
	sockDir string
	logPath string
	port    int
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the postmaster has been reaped
	waitErr error         // valid after exited is closed
	marker  marker        // what the dir's marker says; see sweepStale
}

func startLocal(ctx context.Context, opt Options) (*server, error) {
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	as, err := unprivileged()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", clusterDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	c := &localCluster{
		bins:    bins,
		as:      as,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		sockDir: filepath.Join(dir, "sock"),
		logPath: filepath.Join(dir, "postgres.log"),
		marker:  marker{ownerPID: os.Getpid(), ownerStart: procStart(os.Getpid()), keep: opt.KeepDatabase},
	}
	fail := func(err error) (*server, error) {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := c.prepareDir(); err != nil {
		return fail(err)
	}
	// After prepareDir, so that the marker stays ours and not the cluster user's.
	if err := writeMarker(dir, c.marker); err != nil {
		return fail(err)
	}
	sctx, cancel := context.WithTimeout(ctx, opt.StartTimeout)
	defer cancel()

	opt.Logger.Info("postgres: starting local cluster", "bin", bins.dir, "dir", dir, "user", as.label())
	if err := c.initdb(sctx); err != nil {
		return fail(err)
	}
	for attempt := 1; ; attempt++ {
		err = c.start(sctx)
		if err == nil {
			break
		}
		if errors.Is(err, errPortTaken) && attempt < bindAttempts && sctx.Err() == nil {
			opt.Logger.Debug("postgres: port taken, retrying", "port", c.port)
			continue
		}
		return fail(err)
	}

	desc := fmt.Sprintf("local cluster %s at 127.0.0.1:%d (data dir %s)", bins.dir, c.port, c.dataDir)
	return &server{
		adminURL: c.adminURL(),
		method:   MethodLocal,
		desc:     desc,
		stop: func(ctx context.Context, keep bool) error {
			return c.stop(ctx, keep, opt)
		},
		keepNote: func() string {
			return fmt.Sprintf("the server is stopped; its data directory %s is kept (owner %s); restart it with: %s -D %s -p %d -k %s",
				c.dataDir, as.label(), bins.postgres, c.dataDir, c.port, c.sockDir)
		},
	}, nil
}

func (a runAs) label() string {
	if a.cred == nil {
		return "current user"
	}
	return a.name
}

func (c *localCluster) adminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

func (c *localCluster) prepareDir() error {
	if err := os.Mkdir(c.sockDir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if c.as.cred == nil {
		return nil
	}
	if err := checkReachable(c.dir, c.as); err != nil {
		return err
	}
	uid, gid := int(c.as.cred.Uid), int(c.as.cred.Gid)
	return filepath.WalkDir(c.dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("chown %s to %s: %w", p, c.as.name, err)
		}
		return nil
	})
}

func (c *localCluster) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	// The unprivileged user may not be able to enter our working directory.
	cmd.Dir = c.dir
	// C locale: predictable server messages (we look for bind failures) and no
	// dependency on locales installed on the machine.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	// Own process group: a terminal Ctrl-C does not reach the server directly
	// (cleanup shuts it down in order), and SIGKILL can reach every backend.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.as.cred}
	// If we are killed before cleanup, the kernel tells the child (Linux).
	// Immediate shutdown: the data is thrown away, so nothing is worth waiting for.
	setDeathSignal(cmd.SysProcAttr, deathSignal)
	return cmd
}

func (c *localCluster) initdb(ctx context.Context) error {
	// --no-sync: a throwaway cluster need not survive a machine crash.
	cmd := c.command(ctx, c.bins.initdb,
		"-D", c.dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("initdb (%s) did not finish in time: %w", c.bins.initdb, ctx.Err())
		}
		return fmt.Errorf("initdb (%s) failed: %w: %s", c.bins.initdb, err, lastLines(out, logTailLines))
	}
	return nil
}

var errPortTaken = errors.New("port already in use")

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start launches the postmaster on a free port and waits until it accepts a
// connection. On failure the process is gone when start returns.
func (c *localCluster) start(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.port = port
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	defer logf.Close() // the child keeps its own descriptor
	offset, _ := logf.Seek(0, 2)

	// Background, not ctx: the server must outlive the start context. Durability
	// is switched off because the cluster is thrown away at cleanup.
	cmd := c.command(context.Background(), c.bins.postgres,
		"-D", c.dataDir,
		"-p", strconv.Itoa(port),
		"-h", "127.0.0.1",
		"-k", c.sockDir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	c.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// The death signal fires when the thread that started the child ends,
		// not the process (go.dev/issue/27505). Locked, this goroutine keeps its
		// thread to itself until the postmaster has been reaped; returning
		// locked then ends the thread, which no longer matters.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start %s: %w", c.bins.postgres, err)
	}
	c.cmd = cmd
	c.marker.postmasterPID, c.marker.postmasterStart = cmd.Process.Pid, procStart(cmd.Process.Pid)
	if err := writeMarker(c.dir, c.marker); err != nil {
		c.kill()
		return err
	}

	err = c.waitReady(ctx)
	if err == nil {
		return nil
	}
	c.kill()
	tail := c.logTail(offset)
	if strings.Contains(tail, "could not bind") || strings.Contains(tail, "already in use") {
		return fmt.Errorf("%w: 127.0.0.1:%d: %s", errPortTaken, port, tail)
	}
	return fmt.Errorf("%w; server log: %s", err, tail)
}

func (c *localCluster) waitReady(ctx context.Context) error {
	url := c.adminURL()
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(actx, url)
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited before accepting connections (%v)", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("postgres not accepting connections on 127.0.0.1:%d in time (last: %s): %w", c.port, oneLine(err.Error()), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *localCluster) logTail(offset int64) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(server log unreadable: " + err.Error() + ")"
	}
	if offset > 0 && offset <= int64(len(b)) {
		b = b[offset:]
	}
	return lastLines(b, logTailLines)
}

// kill SIGKILLs the whole process group (postmaster and backends) and reaps the
// postmaster. A postmaster that already exited is not signalled: its pid may have
// been reused, and its backends exit by themselves on postmaster death.
func (c *localCluster) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.exited
}

// stop shuts the server down (SIGINT = fast shutdown: active sessions are
// rolled back and closed), falls back to SIGKILL after stopGrace, then removes
// the temp dir unless keep is set.
func (c *localCluster) stop(ctx context.Context, keep bool, opt Options) error {
	select {
	case <-c.exited:
		opt.Logger.Warn("postgres: local cluster had already exited", "status", fmt.Sprint(c.waitErr))
	default:
		if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			opt.Logger.Warn("postgres: SIGINT failed", "error", err.Error())
		}
		t := time.NewTimer(stopGrace)
		select {
		case <-c.exited:
			t.Stop()
		case <-t.C:
			opt.Logger.Warn("postgres: no fast shutdown in time, killing", "grace", stopGrace.String())
			c.kill()
		case <-ctx.Done():
			t.Stop()
			opt.Logger.Warn("postgres: cleanup context done, killing", "error", ctx.Err().Error())
			c.kill()
		}
	}
	if keep {
		// The kept data must survive the next run's sweep for stale clusters.
		if err := os.Remove(filepath.Join(c.dir, markerName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("unmark kept cluster: %w", err)
		}
		return nil
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove %s: %w", c.dir, err)
	}
	return nil
}
