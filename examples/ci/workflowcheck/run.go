package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// runner is one GitHub job being run: its workspace, the runner's files and
// environment, and what the check substitutes and expects.
type runner struct {
	ctx                  context.Context
	root, ws, runnerTemp string
	files                map[string]string // GITHUB_STEP_SUMMARY, GITHUB_PATH, GITHUB_ENV
	base                 map[string]string // the runner's own environment
	jobEnv               []map[string]string
	overrides            map[string]string            // -set
	withs                map[string]map[string]string // -with, by step id
	actions              map[string]string            // -action OWNER/REPO → directory
	artifacts            map[string][]string          // -want-artifact
	uploaded             map[string]bool
	exits                map[string]int // -want-exit still unmet
	keep, jobName        string
	added                map[string]string // GITHUB_ENV so far
	extraPath            []string          // GITHUB_PATH so far, newest first
	masks                *masks
	nFiles               int
}

// scope is a list of steps being run: the job's, or a composite action's.
type scope struct {
	label                 string         // "" for the job; the action step's label
	steps                 map[string]any // the steps context
	inputs                map[string]any // a composite action's inputs
	actionPath, actionRef string
	env                   []map[string]string // env of the enclosing action step
	failed                bool
	firstFailure          int
}

func run(o options) error {
	if o.wantJob != "success" && o.wantJob != "failure" {
		return fmt.Errorf("-want-job %q: success or failure", o.wantJob)
	}
	root, err := gitRoot()
	if err != nil {
		return err
	}
	wf, name, j, err := loadJob(root, o.workflow, o.job)
	if err != nil {
		return err
	}
	if err := checkJob(j, o.services); err != nil {
		return fmt.Errorf("%s: job %s: %w", o.workflow, name, err)
	}
	if o.lint {
		if err := lintWorkflow(root, o.workflow); err != nil {
			return err
		}
	}
	r := &runner{root: root, keep: o.keep, jobName: name, uploaded: map[string]bool{}, added: map[string]string{}, masks: &masks{}}
	if err := r.parseFlags(o); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "workflowcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if r.ws, r.runnerTemp, r.files, err = layWorkspace(root, tmp); err != nil {
		return err
	}
	timeout := o.timeout
	if j.TimeoutMinutes > 0 && time.Duration(j.TimeoutMinutes*float64(time.Minute)) < timeout {
		timeout = time.Duration(j.TimeoutMinutes * float64(time.Minute))
	}
	var cancel context.CancelFunc
	r.ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r.base = runnerEnv(r.ws, r.runnerTemp, r.files)

	job := &scope{steps: map[string]any{}}
	for _, layer := range []map[string]string{wf.Env, j.Env} {
		ev, err := r.evalEnv(job, layer, nil)
		if err != nil {
			return err
		}
		r.jobEnv = append(r.jobEnv, ev)
	}
	start := time.Now()
	fmt.Printf("workflowcheck: %s, job %s (%d steps) in %s\n", o.workflow, name, len(j.Steps), r.ws)
	if err := r.runSteps(job, j.Steps); err != nil {
		return err
	}
	if err := r.checkWants(job, o.wantOutputs); err != nil {
		return err
	}
	return checkResult(name, job.failed, time.Since(start), r.files["GITHUB_STEP_SUMMARY"], o.wantJob, o.wantSummary)
}

// parseFlags reads the substitutions and expectations of the command line.
func (r *runner) parseFlags(o options) error {
	var err error
	if r.exits, err = parseWantExits(o.wantExits); err != nil {
		return err
	}
	if r.overrides, err = parsePairs("-set", o.sets); err != nil {
		return err
	}
	if r.actions, err = parsePairs("-action", o.actions); err != nil {
		return err
	}
	for k, dir := range r.actions {
		if r.actions[k], err = filepath.Abs(dir); err != nil {
			return err
		}
	}
	withs, err := parsePairs("-with", o.withs)
	if err != nil {
		return err
	}
	r.withs = map[string]map[string]string{}
	for k, v := range withs {
		id, input, ok := strings.Cut(k, ".")
		if !ok {
			return fmt.Errorf("-with %s: STEP_ID.INPUT=VALUE", k)
		}
		if r.withs[id] == nil {
			r.withs[id] = map[string]string{}
		}
		r.withs[id][input] = v
	}
	arts, err := parsePairs("-want-artifact", o.wantArtifacts)
	if err != nil {
		return err
	}
	r.artifacts = map[string][]string{}
	for k, v := range arts {
		r.artifacts[k] = strings.Split(v, ",")
	}
	return nil
}

// runSteps runs steps in order in sc, as a runner does: after a failed step
// only those whose if: says so.
func (r *runner) runSteps(sc *scope, steps []step) error {
	for i, s := range steps {
		label := r.stepLabel(sc, s, i)
		env, err := r.stepEnv(sc, s)
		if err != nil {
			return fmt.Errorf("step %q: %w", label, err)
		}
		ok, err := r.exprs(sc, env).cond(s.If)
		if err != nil {
			return fmt.Errorf("step %q: %w", label, err)
		}
		if !ok {
			fmt.Printf("-- skipped: %s (if: %s)\n", label, orDefault(s.If, "success()"))
			sc.record(s.ID, nil, "skipped", false)
			continue
		}
		fmt.Printf("-- step: %s\n", label)
		t0 := time.Now()
		code, outputs, err := r.runStep(sc, s, i, label, env)
		if err != nil {
			return fmt.Errorf("step %q: %w", label, err)
		}
		fmt.Printf("-- step: %s: exit %d (%s)\n", label, code, time.Since(t0).Round(100*time.Millisecond))
		if want, ok := r.exits[label]; ok {
			if code != want {
				return fmt.Errorf("step %q exited %d, want %d", label, code, want)
			}
			delete(r.exits, label)
		}
		outcome := "success"
		if code != 0 {
			outcome = "failure"
			if !s.ContinueOnError && !sc.failed {
				sc.failed, sc.firstFailure = true, code
			}
		}
		sc.record(s.ID, outputs, outcome, s.ContinueOnError)
		// What the step appended to GITHUB_PATH and GITHUB_ENV reaches the later steps.
		if r.extraPath, err = readPath(r.files["GITHUB_PATH"]); err != nil {
			return err
		}
		if r.added, err = readEnvFile(r.files["GITHUB_ENV"]); err != nil {
			return err
		}
	}
	return nil
}

// record puts a step's result into the steps context.
func (sc *scope) record(id string, outputs map[string]string, outcome string, continueOnError bool) {
	if id == "" {
		return
	}
	out := map[string]any{}
	for k, v := range outputs {
		out[strings.ToLower(k)] = v
	}
	conclusion := outcome
	if outcome == "failure" && continueOnError {
		conclusion = "success"
	}
	sc.steps[strings.ToLower(id)] = map[string]any{"outputs": out, "outcome": outcome, "conclusion": conclusion}
}

func (r *runner) stepLabel(sc *scope, s step, i int) string {
	label := s.label(i)
	if v, err := r.exprs(sc, nil).interpolate(label); err == nil {
		label = v
	}
	if sc.label != "" {
		return sc.label + "/" + label
	}
	return label
}

// stepEnv is one step's environment: the job's layers, what earlier steps
// added to GITHUB_ENV, the enclosing action step's env, the step's own (its
// expressions evaluated), then the check's -set overrides.
func (r *runner) stepEnv(sc *scope, s step) (map[string]string, error) {
	env := map[string]string{}
	for _, layer := range append(append(append([]map[string]string{}, r.jobEnv...), r.added), sc.env...) {
		for k, v := range layer {
			env[k] = v
		}
	}
	own, err := r.evalEnv(sc, s.Env, env)
	if err != nil {
		return nil, err
	}
	for k, v := range own {
		env[k] = v
	}
	for k, v := range r.overrides {
		env[k] = v
	}
	return env, nil
}

func (r *runner) evalEnv(sc *scope, layer, env map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range layer {
		ev, err := r.exprs(sc, env).interpolate(v)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		out[k] = ev
	}
	return out, nil
}

// exprs gives the contexts a runner gives a step of sc.
func (r *runner) exprs(sc *scope, env map[string]string) *exprCtx {
	envCtx := map[string]any{}
	for k, v := range env {
		envCtx[k] = v
	}
	arch := map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH]
	c := &exprCtx{
		contexts: map[string]any{
			"github": map[string]any{
				"workspace": r.ws, "job": r.jobName, "event_name": "push",
				"action_path": sc.actionPath, "action_ref": sc.actionRef,
			},
			"runner": map[string]any{"os": "Linux", "arch": arch, "temp": r.runnerTemp},
			"env":    envCtx,
			"steps":  sc.steps,
		},
		strict: map[string]bool{"github": true, "runner": true},
		failed: sc.failed,
	}
	if sc.inputs != nil {
		c.contexts["inputs"] = sc.inputs
	}
	return c
}

// runStep runs one step and returns its exit status and outputs; an error is
// the check's own.
func (r *runner) runStep(sc *scope, s step, i int, label string, env map[string]string) (int, map[string]string, error) {
	if s.Uses != "" {
		return r.useAction(sc, s, label, env)
	}
	if sc.label != "" && s.Shell == "" {
		return 0, nil, errors.New("a composite action's run step must name its shell")
	}
	script, err := r.exprs(sc, env).interpolate(s.Run)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.ctx
	if s.TimeoutMinutes > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.TimeoutMinutes*float64(time.Minute)))
		defer cancel()
	}
	r.nFiles++
	file := filepath.Join(r.runnerTemp, fmt.Sprintf("step-%d", r.nFiles))
	if err := os.WriteFile(file+".sh", []byte(script), 0o644); err != nil {
		return 0, nil, err
	}
	if err := os.WriteFile(file+".output", nil, 0o644); err != nil {
		return 0, nil, err
	}
	env["GITHUB_OUTPUT"] = file + ".output"
	if sc.actionPath != "" {
		env["GITHUB_ACTION_PATH"] = sc.actionPath
	}
	dir := r.ws
	if s.WorkingDirectory != "" {
		wd, err := r.exprs(sc, env).interpolate(s.WorkingDirectory)
		if err != nil {
			return 0, nil, err
		}
		dir = filepath.Join(r.ws, wd)
	}
	stdout, stderr := r.masks.writer(os.Stdout), r.masks.writer(os.Stderr)
	code, err := runBash(ctx, file+".sh", dir, stepProcessEnv(r.base, env, r.extraPath), stdout, stderr)
	stdout.flush()
	stderr.flush()
	if err != nil {
		return 0, nil, err
	}
	outputs, err := readEnvFile(file + ".output")
	return code, outputs, err
}

// runBash runs a script as GitHub runs a run step on Linux (and what shell:
// bash means), and as GitLab's runner runs a job's script, and returns its
// exit status; an error is the check's own.
func runBash(ctx context.Context, script, dir string, env map[string]string, stdout, stderr io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = dir
	cmd.Env = envList(env)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return 0, fmt.Errorf("timed out: %w", ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// parseWantExits reads the -want-exit STEP=CODE flags.
func parseWantExits(wantExits multiFlag) (map[string]int, error) {
	exits := map[string]int{}
	for _, w := range wantExits {
		k, v, ok := strings.Cut(w, "=")
		code, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, fmt.Errorf("-want-exit %q: STEP=CODE", w)
		}
		exits[k] = code
	}
	return exits, nil
}

// parsePairs reads KEY=VALUE flags.
func parsePairs(flagName string, pairs multiFlag) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range pairs {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: KEY=VALUE", flagName, s)
		}
		out[k] = v
	}
	return out, nil
}

// checkWants checks that every -want-exit step ran and every -want-output
// has the value wanted.
func (r *runner) checkWants(job *scope, wantOutputs multiFlag) error {
	if len(r.exits) > 0 {
		var names []string
		for k := range r.exits {
			names = append(names, k)
		}
		sort.Strings(names)
		return fmt.Errorf("-want-exit names steps that did not run: %s", strings.Join(names, ", "))
	}
	for _, w := range wantOutputs {
		sep := strings.IndexAny(w, "=~")
		if sep < 0 {
			return fmt.Errorf("-want-output %q: STEP_ID.OUTPUT=VALUE or STEP_ID.OUTPUT~REGEXP", w)
		}
		id, name, _ := strings.Cut(w[:sep], ".")
		st, _ := job.steps[strings.ToLower(id)].(map[string]any)
		outs, _ := st["outputs"].(map[string]any)
		got, _ := outs[strings.ToLower(name)].(string)
		fmt.Printf("workflowcheck: output %s.%s = %q\n", id, name, got)
		if w[sep] == '=' && got != w[sep+1:] {
			return fmt.Errorf("output %s.%s is %q, want %q", id, name, got, w[sep+1:])
		}
		if w[sep] == '~' {
			re, err := regexp.Compile(w[sep+1:])
			if err != nil {
				return fmt.Errorf("-want-output %q: %w", w, err)
			}
			if !re.MatchString(got) {
				return fmt.Errorf("output %s.%s is %q, want a match of %s", id, name, got, re)
			}
		}
	}
	return nil
}

// checkResult prints how the job ended and the start of its step summary, and
// says whether that is what the check wants.
func checkResult(name string, failed bool, took time.Duration, summaryFile, wantJob, wantSummary string) error {
	result := "success"
	if failed {
		result = "failure"
	}
	summary, _ := os.ReadFile(summaryFile)
	fmt.Printf("workflowcheck: job %s: %s in %s; step summary %d bytes, starting:\n", name, result, took.Round(100*time.Millisecond), len(summary))
	for _, l := range firstLines(string(summary), 3) {
		fmt.Println("  | " + l)
	}
	if result != wantJob {
		return fmt.Errorf("job %s ended in %s, want %s", name, result, wantJob)
	}
	if wantSummary != "" && !strings.Contains(string(summary), wantSummary) {
		return fmt.Errorf("the step summary does not contain %q", wantSummary)
	}
	return nil
}

func orDefault(s, d string) string {
	if strings.TrimSpace(s) == "" {
		return d
	}
	return s
}

func firstLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return lines
}
