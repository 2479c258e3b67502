package cmdobserve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// Defaults of the command and HTTP observers (target.observe.command.timeout,
// max_output_bytes; target.observe.http.timeout, max_body_bytes).
const (
	DefaultTimeout   = 5 * time.Second
	DefaultMaxOutput = 64 << 10
	// stderrKept bounds what is kept of a program's stderr; errors show its
	// last stderrLines lines.
	stderrKept  = 8 << 10
	stderrLines = 10
)

// CommandConfig is target.observe.command, rendered.
type CommandConfig struct {
	// Dir is where the programs run and where a relative program with a slash
	// (./observe.py) is found ("" for the harness's working directory).
	Dir string
	// Env is added to the harness's environment, overriding same-named variables.
	Env map[string]string
	// Timeout bounds one call (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxOutput bounds one call's stdout in bytes (DefaultMaxOutput when zero).
	MaxOutput int
	// Capabilities is a command line printing {"queries": [names]} ("" for none).
	Capabilities string
	// Queries are the command lines by query name.
	Queries map[string]string
	// FieldPath names a query's field in the target file (nil:
	// target.observe.command.queries.<name>).
	FieldPath func(name string) string
	// Secrets are scrubbed from every error, beside the patterns adapters/scrub knows.
	Secrets []string
}

const commandField = "target.observe.command"

// Command answers queries by running programs. It is safe for concurrent use.
type Command struct {
	cfg         CommandConfig
	queries     map[string]*cmdQuery
	unsupported map[string]string
	env         []string
	scrub       *scrub.Scrubber
}

type cmdQuery struct {
	name, field string
	line        commandLine
	program     string // the first word, resolved at open
}

var _ observe.Reader = (*Command)(nil)

// OpenCommand checks every query (its parameters, that its program exists)
// and runs the capabilities command if there is one. Errors name the field
// and wrap observe.ErrInvalidQuery (a query written wrong) or
// observe.ErrUnreachable (a program missing, a capabilities command failing)
// or observe.ErrTimeout.
func OpenCommand(ctx context.Context, cfg CommandConfig) (*Command, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.FieldPath == nil {
		cfg.FieldPath = func(name string) string { return commandField + ".queries." + name }
	}
	c := &Command{cfg: cfg, queries: map[string]*cmdQuery{}, unsupported: map[string]string{},
		env: mergeEnv(os.Environ(), cfg.Env), scrub: scrub.New(cfg.Secrets...)}
	var errs []error
	for _, name := range sortedNames(cfg.Queries) {
		q, err := c.parse(name, cfg.FieldPath(name), cfg.Queries[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.queries[name] = q
	}
	var capq *cmdQuery
	if strings.TrimSpace(cfg.Capabilities) != "" {
		q, err := c.parse("capabilities", commandField+".capabilities", cfg.Capabilities)
		if err != nil {
			errs = append(errs, err)
		}
		capq = q
	}
	if err := errors.Join(errs...); err != nil {
		return nil, c.scrub.Error(err)
	}
	if capq != nil {
		out, err := c.run(ctx, capq, observe.Key{})
		if err != nil {
			return nil, err
		}
		listed, err := capabilities(out)
		if err != nil {
			return nil, c.scrub.Error(classed(fmt.Sprintf("observe: %s: %v", capq.field, err), observe.ErrInvalidQuery))
		}
		for name := range c.queries {
			if !listed[name] {
				c.unsupported[name] = c.scrub.String(fmt.Sprintf("the command observer's capabilities (%s) do not list %s", strings.Join(capq.line.words, " "), name))
			}
		}
	}
	return c, nil
}

func (c *Command) parse(name, field, line string) (*cmdQuery, error) {
	cl, err := parseCommandLine(line)
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: %v", field, err), observe.ErrInvalidQuery)
	}
	prog, err := lookProgram(c.cfg.Dir, cl.words[0], c.cfg.Env)
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: %v", field, err), observe.ErrUnreachable, err)
	}
	return &cmdQuery{name: name, field: field, line: cl, program: prog}, nil
}

// lookProgram finds a query's program the way the child would: a path with a
// slash relative to dir, a bare name in PATH (env's PATH when it sets one).
// The result is absolute or a PATH hit, so the child's own chdir into dir
// cannot change which file runs.
func lookProgram(dir, prog string, env map[string]string) (string, error) {
	if strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator) {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("program %s: %w", prog, err)
		}
		if _, err := exec.LookPath(abs); err != nil {
			err = unwrapExec(err)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return "", fmt.Errorf("program %s: no such file (looked for %s)", prog, abs)
			case errors.Is(err, fs.ErrPermission):
				return "", fmt.Errorf("program %s: %s is not executable (chmod +x, or name its interpreter first)", prog, abs)
			}
			return "", fmt.Errorf("program %s cannot be run: %w", prog, err)
		}
		return abs, nil
	}
	path, set := env["PATH"]
	if !set {
		p, err := exec.LookPath(prog)
		if err != nil {
			return "", fmt.Errorf("program %s: not found in PATH", prog)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue // as exec.LookPath: a relative PATH entry would depend on the directory
		}
		if p, err := exec.LookPath(filepath.Join(d, prog)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %s: not found in the PATH target.observe.command.env sets", prog)
}

// unwrapExec drops exec.Error's repetition of the path.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// capabilities reads {"queries": [names]}.
func capabilities(out []byte) (map[string]bool, error) {
	const rule = `the capabilities command answers {"queries": [query names]}`
	v, err := decodeOne(out)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("answered %s (%s)", describe(v), rule)
	}
	list, ok := m["queries"].([]any)
	if !ok {
		return nil, fmt.Errorf("no \"queries\" array (%s)", rule)
	}
	listed := map[string]bool{}
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("\"queries\" holds %s (%s)", describe(e), rule)
		}
		listed[s] = true
	}
	return listed, nil
}

// Kind is "command".
func (c *Command) Kind() string { return "command" }

// Has reports whether the query is configured and the capabilities command,
// if any, lists it.
func (c *Command) Has(name string) bool {
	_, ok := c.queries[name]
	return ok && c.unsupported[name] == ""
}

// Unsupported says, by query name, why a configured query is not answered:
// the capabilities command did not list it.
func (c *Command) Unsupported() map[string]string {
	out := make(map[string]string, len(c.unsupported))
	for k, v := range c.unsupported {
		out[k] = v
	}
	return out
}

// Describe is the query's command line as configured.
func (c *Command) Describe(name string) string {
	if q, ok := c.queries[name]; ok {
		return c.scrub.String(strings.Join(q.line.words, " "))
	}
	return ""
}

// Params are the parameters the query uses, in order of first use.
func (c *Command) Params(name string) []int {
	if q, ok := c.queries[name]; ok {
		return append([]int(nil), q.line.params...)
	}
	return nil
}

// Close releases nothing: every call's process ends within the call.
func (c *Command) Close() {}

// Read runs the query's program for k and reads its answer as rows.
func (c *Command) Read(ctx context.Context, name string, k observe.Key) (sqlstore.Rows, error) {
	q, ok := c.queries[name]
	if !ok {
		return sqlstore.Rows{}, fmt.Errorf("observe: query %s: %w", name, observe.ErrNotConfigured)
	}
	if why := c.unsupported[name]; why != "" {
		return sqlstore.Rows{}, fmt.Errorf("observe: query %s: %s: %w", name, why, observe.ErrNotConfigured)
	}
	out, err := c.run(ctx, q, k)
	if err != nil {
		return sqlstore.Rows{}, err
	}
	rows, err := decodeRows(name, out)
	if err != nil {
		return sqlstore.Rows{}, c.scrub.Error(classed(fmt.Sprintf("observe: %s: %v", q.field, err), observe.ErrInvalidQuery))
	}
	return rows, nil
}

// run runs q's program for k, bounded by the timeout and the output limit,
// and returns its stdout. Its errors are scrubbed.
func (c *Command) run(ctx context.Context, q *cmdQuery, k observe.Key) ([]byte, error) {
	out, err := c.runRaw(ctx, q, k)
	return out, c.scrub.Error(err)
}

func (c *Command) runRaw(ctx context.Context, q *cmdQuery, k observe.Key) ([]byte, error) {
	args := q.line.args(k)
	shown := strings.Join(args, " ")
	cmd := exec.Command(q.program, args[1:]...)
	cmd.Args[0] = args[0] // the program sees its name as written
	cmd.Dir = c.cfg.Dir
	cmd.Env = c.env
	cmd.Stdin = bytes.NewReader(request(q.name, k))
	overflow := make(chan struct{})
	var once sync.Once
	stdout := &capped{limit: c.cfg.MaxOutput, over: func() { once.Do(func() { close(overflow) }) }}
	stderr := &tail{limit: stderrKept}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Own process group: a timeout kills whatever the program started.
	cmd.SysProcAttr = sysProcAttr()
	// Bounds the wait for a grandchild outside the group that keeps a pipe open.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: cannot run %s: %v", q.field, args[0], unwrapExec(err)), observe.ErrUnreachable, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(c.cfg.Timeout)
	defer timer.Stop()
	var werr error
	select {
	case werr = <-done:
	case <-timer.C:
		killGroup(cmd.Process)
		<-done
		return nil, classed(fmt.Sprintf("observe: %s: %s gave no answer within %s (%s.timeout); its process group was killed%s",
			q.field, shown, c.cfg.Timeout, commandField, stderrNote(stderr)), observe.ErrTimeout)
	case <-overflow:
		killGroup(cmd.Process)
		<-done
		return nil, classed(fmt.Sprintf("observe: %s: %s printed more than %d bytes (%s.max_output_bytes); it was killed",
			q.field, shown, c.cfg.MaxOutput, commandField), observe.ErrInvalidQuery)
	case <-ctx.Done():
		killGroup(cmd.Process)
		<-done
		return nil, fmt.Errorf("observe: %s: %s: %w", q.field, shown, ctx.Err())
	}
	// The program is gone; anything it left running in its group goes too.
	killGroup(cmd.Process)
	body, over := stdout.result()
	if over {
		return nil, classed(fmt.Sprintf("observe: %s: %s printed more than %d bytes (%s.max_output_bytes)",
			q.field, shown, c.cfg.MaxOutput, commandField), observe.ErrInvalidQuery)
	}
	if werr != nil {
		how := werr.Error()
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			how = exitText(ee)
		}
		return nil, classed(fmt.Sprintf("observe: %s: %s %s (a query program exits 0 after printing its answer)%s",
			q.field, shown, how, stderrNote(stderr)), observe.ErrUnreachable)
	}
	return body, nil
}

func exitText(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with status %d", ee.ExitCode())
}

func stderrNote(t *tail) string {
	if s := t.lines(stderrLines); s != "" {
		return "; its stderr ends:\n" + s
	}
	return ""
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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
	for _, k := range sortedNames(extra) {
		out = append(out, k+"="+extra[k])
	}
	return out
}
