package targetfile

import (
	"sort"
)

// lifecycle checks target.lifecycle: how the harness starts, readies and
// stops the receiver (and its worker).
func (v *validator) lifecycle(t *Target, rl *rawLifecycle) {
	if rl == nil {
		return
	}
	base := []any{"target", "lifecycle"}
	l := &Lifecycle{Env: Env{}}
	if len(rl.Command) == 0 {
		v.fail(at(base, "command"), "required (the program and its arguments)")
	}
	l.Command = v.command(base, rl.Command)
	v.env(base, rl.Env, l.Env)
	// The working directory defaults to the file's; a relative one is under it.
	l.Dir = v.opts.baseDir
	if rl.Dir != "" {
		if d, ok := v.render(at(base, "dir"), rl.Dir); ok {
			l.Dir = v.resolvePath(d)
		}
	}
	if rl.Ready == nil {
		v.fail(at(base, "ready"), "required (ready.http: the path that answers 2xx once the receiver is ready)")
	} else {
		l.ReadyPath = v.path(at(base, "ready", "http"), rl.Ready.HTTP, true)
		l.ReadyTimeout = v.duration(at(base, "ready", "timeout"), rl.Ready.Timeout, DefaultReadyTimeout, false)
	}
	l.StopGrace = v.duration(at(base, "stop_grace"), rl.StopGrace, DefaultStopGrace, true)
	l.Worker = v.worker(l, rl.Worker)
	t.Lifecycle = l
}

// command renders base.command: each element a template, the program resolved
// against the file's directory.
func (v *validator) command(base []any, raw []string) []string {
	var out []string
	for i, a := range raw {
		if i == 0 && a == "" {
			v.fail(at(base, "command", 0), "the program must not be empty")
		}
		r, _ := v.render(at(base, "command", i), a)
		if i == 0 {
			r = ResolveProgram(v.opts.baseDir, r)
		}
		out = append(out, r)
	}
	return out
}

// env renders base.env into dst, in name order so errors come sorted.
func (v *validator) env(base []any, raw map[string]string, dst Env) {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !envNameRE.MatchString(k) {
			v.fail(at(base, "env", k), "must be an environment variable name")
			continue
		}
		r, _ := v.renderEnv(at(base, "env", k), raw[k])
		dst[k] = r
	}
}

// worker validates lifecycle.worker: its command and env render like the
// receiver's, its env goes over the receiver's, and its directory defaults to
// the receiver's.
func (v *validator) worker(l *Lifecycle, rw *rawWorker) *Worker {
	if rw == nil {
		return nil
	}
	base := []any{"target", "lifecycle", "worker"}
	w := &Worker{Env: Env{}, Dir: l.Dir, Processes: 1}
	if len(rw.Command) == 0 {
		v.fail(at(base, "command"), "required (the worker program and its arguments)")
	}
	w.Command = v.command(base, rw.Command)
	for k, val := range l.Env {
		w.Env[k] = val
	}
	v.env(base, rw.Env, w.Env)
	if rw.Dir != "" {
		if d, ok := v.render(at(base, "dir"), rw.Dir); ok {
			w.Dir = v.resolvePath(d)
		}
	}
	if rw.Processes != nil {
		if n := *rw.Processes; n < 1 || n > MaxWorkerProcesses {
			v.fail(at(base, "processes"), "must be between 1 and %d, got %d", MaxWorkerProcesses, n)
		} else {
			w.Processes = n
		}
	}
	return w
}
