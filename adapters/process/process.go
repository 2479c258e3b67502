package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// Defaults for Spec fields left zero.
const (
	DefaultReadyTimeout = 30 * time.Second
	DefaultOutputLimit  = 64 << 10
	// tailLines is how many output lines an error carries.
	tailLines = 20
	pollEvery = 50 * time.Millisecond
)

// ErrNotRunning is returned by Kill and Stop when the process is not running.
var ErrNotRunning = errors.New("process: not running")

// ErrKillUnsupported is returned by Kill (and KillSupported) where the platform
// cannot SIGKILL a process group (Windows): a crash there cannot be simulated the
// way the crash scenarios need, so they are not applicable.
var ErrKillUnsupported = errors.New("process: SIGKILL of a process group is not supported")

// Spec says how to run the receiver.
type Spec struct {
	// Command is the program and its arguments.
	Command []string
	// Env is added to the harness's environment, overriding same-named variables.
	Env map[string]string
	// Dir is the working directory ("" for the harness's).
	Dir string
	// ReadyURL is polled with GET until it answers 2xx; "" means ready once started.
	ReadyURL string
	// ReadyTimeout bounds the wait for readiness (DefaultReadyTimeout when zero).
	ReadyTimeout time.Duration
	// OutputLimit is how many bytes of combined stdout/stderr are kept
	// (DefaultOutputLimit when zero).
	OutputLimit int
	// Secrets are removed from everything the Process returns (Output, Tail and
	// every error's text), as are passwords in URLs and well-known secret formats
	// (adapters/scrub): a receiver may echo its configuration when it fails.
	Secrets []string
}

// SpecFor builds the Spec of a target's lifecycle section.
func SpecFor(t *targetfile.Target) (Spec, error) {
	if t.Lifecycle == nil {
		return Spec{}, errors.New("process: target has no lifecycle section")
	}
	l := t.Lifecycle
	return Spec{Command: l.Command, Env: l.Env, Dir: l.Dir, ReadyURL: t.URL(l.ReadyPath), ReadyTimeout: l.ReadyTimeout,
		Secrets: targetSecrets(t)}, nil
}

// WorkerSpecs builds one Spec per worker process of lifecycle.worker (none
// when the receiver's workers run inside it). A worker answers no HTTP, so it
// is ready once started.
func WorkerSpecs(t *targetfile.Target) []Spec {
	if t.Lifecycle == nil || t.Lifecycle.Worker == nil {
		return nil
	}
	w := t.Lifecycle.Worker
	secrets := targetSecrets(t)
	specs := make([]Spec, w.Processes)
	for i := range specs {
		specs[i] = Spec{Command: w.Command, Env: w.Env, Dir: w.Dir, Secrets: secrets}
	}
	return specs
}

// targetSecrets are the values of t a receiver could print: its endpoints' signing
// secrets, the database password, the values {{env}} passed, and lifecycle.env
// values that carry a password or whose name says they are secret. Other env values (a port, "debug") are left
// alone: scrubbing them would blank ordinary words out of the output.
func targetSecrets(t *targetfile.Target) []string {
	var out []string
	for _, ep := range t.Endpoints {
		out = append(out, ep.Secret.Reveal())
	}
	out = append(out, scrub.Password(t.Store.URL.Reveal()))
	// What {{env}} passed from the harness's environment is secret by intent.
	out = append(out, t.EnvSecrets()...)
	if t.Lifecycle != nil {
		env := maps.Clone(t.Lifecycle.Env)
		if w := t.Lifecycle.Worker; w != nil {
			maps.Copy(env, w.Env)
		}
		for k, v := range env {
			if pw := scrub.Password(v); pw != "" {
				out = append(out, pw)
				continue
			}
			name := strings.ToUpper(k)
			for _, w := range []string{"SECRET", "PASSWORD", "PASSWD", "TOKEN", "KEY", "CREDENTIAL"} {
				if strings.Contains(name, w) && len(v) >= 4 {
					out = append(out, v)
					break
				}
			}
		}
	}
	return out
}

// Exit describes how a run of the process ended.
type Exit struct {
	PID int `json:"pid"`
	// Code is the exit status, -1 when a signal ended the process.
	Code int `json:"code"`
	// Signal names the signal that ended it ("" for a normal exit).
	Signal string `json:"signal,omitempty"`
	// Forced is true when the harness had to SIGKILL it (Kill, or Stop after grace).
	Forced bool `json:"forced"`
}

func (e Exit) String() string {
	if e.Signal != "" {
		return fmt.Sprintf("pid %d killed by signal %s", e.PID, e.Signal)
	}
	return fmt.Sprintf("pid %d exited with status %d", e.PID, e.Code)
}

// Process is a controlled receiver process. Its methods are safe for concurrent use.
type Process struct {
	spec   Spec
	out    *ring
	client *http.Client
	scrub  *scrub.Scrubber

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current run has been waited for
	forced bool          // the harness sent SIGKILL to the current run
	last   *Exit
}

// Start runs the command and waits until it is ready. On failure the process is
// killed and the error carries its exit status and last output lines.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return nil, errors.New("process: spec.Command: required (the program and its arguments)")
	}
	if spec.ReadyTimeout <= 0 {
		spec.ReadyTimeout = DefaultReadyTimeout
	}
	if spec.OutputLimit <= 0 {
		spec.OutputLimit = DefaultOutputLimit
	}
	p := &Process{
		spec:  spec,
		out:   &ring{limit: spec.OutputLimit},
		scrub: scrub.New(spec.Secrets...),
		// No keep-alive: the readiness probe must leave no idle connection (and
		// goroutine) behind, and must see a dead process as dead.
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second},
	}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// start runs the command once; its error text is scrubbed of the spec's secrets.
func (p *Process) start(ctx context.Context) error {
	return p.scrub.Error(p.startRaw(ctx))
}

func (p *Process) startRaw(ctx context.Context) error {
	cmd := exec.Command(p.spec.Command[0], p.spec.Command[1:]...)
	cmd.Dir = p.spec.Dir
	cmd.Env = mergeEnv(os.Environ(), p.spec.Env)
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	// Own process group (Kill reaches every process the command spawned) and, where
	// the platform can, death with the harness (sysproc_*.go).
	cmd.SysProcAttr = sysProcAttr()
	// Bounds Wait if a grandchild outside the group keeps the output pipe open.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("process: start %s: %w", p.spec.Command[0], err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.forced = cmd, done, false
	p.mu.Unlock()
	fmt.Fprintf(p.out, "[hookcert] started pid %d: %s\n", cmd.Process.Pid, strings.Join(p.spec.Command, " "))
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		e := exitOf(cmd, p.forced)
		p.last = &e
		p.mu.Unlock()
		fmt.Fprintf(p.out, "[hookcert] %s\n", e)
		close(done)
	}()
	if err := p.waitReady(ctx, done); err != nil {
		select {
		case <-done:
		default:
			_, _ = p.signalAndWait(syscall.SIGKILL, 0)
		}
		return fmt.Errorf("%w\n--- last output ---\n%s", err, p.Tail(tailLines))
	}
	return nil
}

func exitOf(cmd *exec.Cmd, forced bool) Exit {
	e := Exit{PID: cmd.Process.Pid, Code: -1, Forced: forced}
	if st := cmd.ProcessState; st != nil {
		e.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	return e
}

func (p *Process) waitReady(ctx context.Context, done <-chan struct{}) error {
	if p.spec.ReadyURL == "" {
		return nil
	}
	deadline := time.NewTimer(p.spec.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	lastErr := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.spec.ReadyURL, nil)
		if err != nil {
			return fmt.Errorf("process: ready URL %q: %w", p.spec.ReadyURL, err)
		}
		resp, err := p.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 300 {
				return nil
			}
			lastErr = "GET " + p.spec.ReadyURL + ": " + resp.Status
		} else {
			lastErr = err.Error()
		}
		select {
		case <-done:
			p.mu.Lock()
			e := *p.last
			p.mu.Unlock()
			return fmt.Errorf("process: %s before it was ready", e)
		case <-deadline.C:
			return fmt.Errorf("process: %s not ready after %s (last probe: %s)", p.spec.Command[0], p.spec.ReadyTimeout, lastErr)
		case <-ctx.Done():
			return fmt.Errorf("process: waiting for %s to be ready: %w", p.spec.Command[0], ctx.Err())
		case <-tick.C:
		}
	}
}

// signalAndWait sends sig to the process group; after grace (if > 0) it escalates
// to SIGKILL. It returns how the run ended.
func (p *Process) signalAndWait(sig syscall.Signal, grace time.Duration) (Exit, error) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd == nil || isClosed(done) {
		p.mu.Unlock()
		return Exit{}, ErrNotRunning
	}
	// Where a group cannot be sent SIGTERM (process_other.go), stopping is killing.
	if sig == syscall.SIGKILL || !canTerminate {
		p.forced = true
	}
	pgid := cmd.Process.Pid
	p.mu.Unlock()
	if err := signalGroup(cmd.Process, sig); err != nil {
		return Exit{}, fmt.Errorf("process: signal %s to group %d: %w", sig, pgid, err) // no secret: numbers only
	}
	if sig != syscall.SIGKILL && canTerminate {
		t := time.NewTimer(grace)
		select {
		case <-done:
			t.Stop()
		case <-t.C:
			p.mu.Lock()
			p.forced = true
			p.mu.Unlock()
			fmt.Fprintf(p.out, "[hookcert] still running %s after %s: SIGKILL\n", sig, grace)
			if err := signalGroup(cmd.Process, syscall.SIGKILL); err != nil {
				return Exit{}, fmt.Errorf("process: SIGKILL to group %d: %w", pgid, err)
			}
		}
	}
	<-done
	// The leader is gone; SIGKILL whatever else is left in its group (a shell's
	// children), so nothing keeps the port open.
	_ = signalGroup(cmd.Process, syscall.SIGKILL)
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.last, nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Kill crashes the receiver: SIGKILL to its process group, then wait for it.
// Where the platform cannot do that (KillSupported), it returns an error wrapping
// ErrKillUnsupported and leaves a running receiver running.
func (p *Process) Kill() (Exit, error) {
	if !p.Running() {
		return Exit{}, ErrNotRunning // as on every platform: nothing to crash
	}
	if err := KillSupported(); err != nil {
		return Exit{}, err
	}
	return p.signalAndWait(syscall.SIGKILL, 0)
}

// Stop sends SIGTERM to the process group and SIGKILL after grace if it is still
// running; Exit.Forced tells which happened.
func (p *Process) Stop(grace time.Duration) (Exit, error) {
	return p.signalAndWait(syscall.SIGTERM, grace)
}

// Restart starts the process again with the same spec and waits until it is ready.
// The previous run must have ended (Kill or Stop first).
func (p *Process) Restart(ctx context.Context) error {
	if p.Running() {
		return errors.New("process: restart: still running (Kill or Stop it first)")
	}
	return p.start(ctx)
}

// Running reports whether the current run has not ended.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.done)
}

// PID is the current (or last) run's process ID, also its process group ID.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// LastExit returns how the last finished run ended.
func (p *Process) LastExit() (Exit, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		return Exit{}, false
	}
	return *p.last, true
}

// Output returns the kept output of every run so far (the last OutputLimit bytes),
// with "[hookcert]" lines marking starts and exits, scrubbed of the spec's secrets.
func (p *Process) Output() string { return p.scrub.String(p.out.kept()) }

// Tail returns the last n lines of Output.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Output(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago, for
// {{.ListenAddr}}. Another process may take it before the receiver binds it.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("process: find a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("process: find a free port: %w", err)
	}
	return addr, nil
}

func mergeEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; !over {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// ring keeps the last limit bytes written to it.
type ring struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	lost  int64
}

func (r *ring) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, b...)
	if over := len(r.buf) - r.limit; over > 0 {
		r.lost += int64(over)
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(b), nil
}

// kept is String without the partial line the limit cut at the front: the cut
// can split a secret, and the scrubber would not recognise its tail.
func (r *ring) kept() string {
	r.mu.Lock()
	lost, buf := r.lost, string(r.buf)
	r.mu.Unlock()
	if lost == 0 {
		return buf
	}
	cut := strings.IndexByte(buf, '\n')
	if cut < 0 {
		cut = strings.IndexFunc(buf, func(c rune) bool { return c == ' ' || c == '\t' })
	}
	dropped := cut + 1
	if cut < 0 {
		dropped = len(buf)
	}
	return fmt.Sprintf("[hookcert] ... %d earlier bytes dropped\n", lost+int64(dropped)) + buf[dropped:]
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost > 0 {
		return fmt.Sprintf("[hookcert] ... %d earlier bytes dropped\n", r.lost) + string(r.buf)
	}
	return string(r.buf)
}
