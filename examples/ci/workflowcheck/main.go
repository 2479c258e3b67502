// Command workflowcheck runs a GitHub Actions workflow's steps on this machine, the
// way a GitHub-hosted runner would, so that a documented workflow is a tested one
// (.ci/workflow-check runs examples/ci/github-actions.yml with it).
//
// The job's steps run in order in a workspace that is a copy of the working tree
// (what actions/checkout gives), each `run:` as `bash --noprofile --norc -eo
// pipefail` with the workflow's, the job's and the step's env, plus what a runner
// sets (CI, GITHUB_ACTIONS, GITHUB_WORKSPACE, GITHUB_STEP_SUMMARY, GITHUB_PATH,
// GITHUB_ENV, GITHUB_OUTPUT, RUNNER_TEMP); GITHUB_PATH and GITHUB_ENV lines reach
// the later steps. After a failed step only `if: always()` and `if: failure()`
// steps run. Known actions are emulated: actions/checkout (the copy),
// actions/setup-go (the local Go must have the requested version) and
// actions/upload-artifact (every listed path must exist and not be empty).
// Service containers are not started: each must be one the caller says is
// already served here (-service), e.g. a PostgreSQL server on its mapped port.
// Anything the check cannot run faithfully (an expression `${{ }}` in a run step
// or an env value, another action, a matrix, an if it cannot evaluate) is an
// error, not a skip.
//
// Usage:
//
//	workflowcheck -workflow examples/ci/github-actions.yml -service postgres=postgres:15 \
//	  -set 'HOOKCERT_INSTALL=go install ./cmd/hookcert' -want-job success
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

type workflow struct {
	Name string            `yaml:"name"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]job    `yaml:"jobs"`
}

type job struct {
	RunsOn         string             `yaml:"runs-on"`
	TimeoutMinutes float64            `yaml:"timeout-minutes"`
	Env            map[string]string  `yaml:"env"`
	Services       map[string]service `yaml:"services"`
	Strategy       yaml.Node          `yaml:"strategy"`
	Steps          []step             `yaml:"steps"`
}

type service struct {
	Image   string   `yaml:"image"`
	Ports   []string `yaml:"ports"`
	Options string   `yaml:"options"`
}

type step struct {
	Name             string            `yaml:"name"`
	Uses             string            `yaml:"uses"`
	Run              string            `yaml:"run"`
	If               string            `yaml:"if"`
	Shell            string            `yaml:"shell"`
	WorkingDirectory string            `yaml:"working-directory"`
	Env              map[string]string `yaml:"env"`
	With             map[string]string `yaml:"with"`
	ContinueOnError  bool              `yaml:"continue-on-error"`
	TimeoutMinutes   float64           `yaml:"timeout-minutes"`
}

func (s step) label(i int) string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Uses != "":
		return s.Uses
	}
	first, _, _ := strings.Cut(strings.TrimSpace(s.Run), "\n")
	return fmt.Sprintf("step %d (%s)", i+1, first)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var (
		path, jobName, wantJob, wantSummary, keep string
		sets, services, wantExits                 multiFlag
		timeout                                   time.Duration
	)
	flag.StringVar(&path, "workflow", "examples/ci/github-actions.yml", "the workflow file, relative to the repository root")
	flag.StringVar(&jobName, "job", "", "the job to run (default: the only one)")
	flag.Var(&sets, "set", "KEY=VALUE on top of every step's env (repeatable): what the check changes, e.g. how hookcert is installed")
	flag.Var(&services, "service", "NAME=IMAGE: a service container that is already served here (repeatable; every service must be listed)")
	flag.StringVar(&wantJob, "want-job", "success", "the job result the check expects: success or failure")
	flag.Var(&wantExits, "want-exit", "STEP=CODE: the exit status a step's run must end with (repeatable)")
	flag.StringVar(&wantSummary, "want-summary", "", "text the step summary must contain")
	flag.StringVar(&keep, "keep", "", "copy the workspace's files listed by upload-artifact steps into this directory")
	flag.DurationVar(&timeout, "timeout", 5*time.Minute, "bound on the whole job (the job's timeout-minutes if smaller)")
	sameAs := flag.String("same-commands", "", "instead of running: check that this GitLab CI file's job runs the workflow's commands")
	flag.Parse()
	if *sameAs != "" {
		if err := sameCommands(path, jobName, *sameAs); err != nil {
			fmt.Fprintln(os.Stderr, "workflowcheck:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(path, jobName, sets, services, wantJob, wantExits, wantSummary, keep, timeout); err != nil {
		fmt.Fprintln(os.Stderr, "workflowcheck:", err)
		os.Exit(1)
	}
}

func run(path, jobName string, sets, services multiFlag, wantJob string, wantExits multiFlag, wantSummary, keep string, timeout time.Duration) error {
	if wantJob != "success" && wantJob != "failure" {
		return fmt.Errorf("-want-job %q: success or failure", wantJob)
	}
	root, err := gitRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	name, j, err := pickJob(wf, jobName)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkJob(j, services); err != nil {
		return fmt.Errorf("%s: job %s: %w", path, name, err)
	}
	exits := map[string]int{}
	for _, w := range wantExits {
		k, v, ok := strings.Cut(w, "=")
		code, err := strconv.Atoi(v)
		if !ok || err != nil {
			return fmt.Errorf("-want-exit %q: STEP=CODE", w)
		}
		exits[k] = code
	}
	overrides := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("-set %q: KEY=VALUE", s)
		}
		overrides[k] = v
	}

	tmp, err := os.MkdirTemp("", "workflowcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "workspace")
	if err := copyTree(root, ws); err != nil {
		return fmt.Errorf("laying the workspace: %w", err)
	}
	runnerTemp := filepath.Join(tmp, "runner-temp")
	if err := os.MkdirAll(runnerTemp, 0o755); err != nil {
		return err
	}
	files := map[string]string{}
	for _, k := range []string{"GITHUB_STEP_SUMMARY", "GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT"} {
		files[k] = filepath.Join(runnerTemp, strings.ToLower(k))
	}

	if j.TimeoutMinutes > 0 && time.Duration(j.TimeoutMinutes*float64(time.Minute)) < timeout {
		timeout = time.Duration(j.TimeoutMinutes * float64(time.Minute))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	base := envMap(os.Environ())
	for k, v := range map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": ws, "RUNNER_TEMP": runnerTemp,
		"RUNNER_OS": "Linux",
	} {
		base[k] = v
	}
	for k, v := range files {
		base[k] = v
	}
	var extraPath []string // GITHUB_PATH lines, newest first
	added := map[string]string{}
	failed := false
	start := time.Now()
	fmt.Printf("workflowcheck: %s, job %s (%d steps) in %s\n", path, name, len(j.Steps), ws)
	for i, s := range j.Steps {
		label := s.label(i)
		runIt, err := shouldRun(s.If, failed)
		if err != nil {
			return fmt.Errorf("step %q: %w", label, err)
		}
		if !runIt {
			fmt.Printf("-- skipped: %s (if: %s)\n", label, orDefault(s.If, "success()"))
			continue
		}
		env := copyMap(base)
		for _, m := range []map[string]string{wf.Env, j.Env, added, s.Env} {
			for k, v := range m {
				env[k] = v
			}
		}
		for k, v := range overrides {
			env[k] = v
		}
		if len(extraPath) > 0 {
			env["PATH"] = strings.Join(extraPath, string(os.PathListSeparator)) + string(os.PathListSeparator) + env["PATH"]
		}
		fmt.Printf("-- step %d: %s\n", i+1, label)
		t0 := time.Now()
		code, err := runStep(ctx, s, i, ws, env, files, keep)
		if err != nil {
			return fmt.Errorf("step %q: %w", label, err)
		}
		fmt.Printf("-- step %d: %s: exit %d (%s)\n", i+1, label, code, time.Since(t0).Round(100*time.Millisecond))
		if want, ok := exits[label]; ok {
			if code != want {
				return fmt.Errorf("step %q exited %d, want %d", label, code, want)
			}
			delete(exits, label)
		}
		if code != 0 && !s.ContinueOnError {
			failed = true
		}
		// What the step appended to GITHUB_PATH and GITHUB_ENV reaches the later steps.
		if extraPath, err = readPath(files["GITHUB_PATH"]); err != nil {
			return err
		}
		if added, err = readEnvFile(files["GITHUB_ENV"]); err != nil {
			return err
		}
	}
	if len(exits) > 0 {
		var names []string
		for k := range exits {
			names = append(names, k)
		}
		sort.Strings(names)
		return fmt.Errorf("-want-exit names steps that did not run: %s", strings.Join(names, ", "))
	}
	result := "success"
	if failed {
		result = "failure"
	}
	summary, _ := os.ReadFile(files["GITHUB_STEP_SUMMARY"])
	fmt.Printf("workflowcheck: job %s: %s in %s; step summary %d bytes, starting:\n", name, result, time.Since(start).Round(100*time.Millisecond), len(summary))
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

type gitlabJob struct {
	Image        string            `yaml:"image"`
	Services     []gitlabService   `yaml:"services"`
	Variables    map[string]string `yaml:"variables"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
	Artifacts    struct {
		When    string `yaml:"when"`
		Reports struct {
			JUnit string `yaml:"junit"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

type gitlabService struct {
	Name string `yaml:"name"`
}

// sameCommands checks that the GitLab snippet cannot drift from the workflow the
// check runs: every command of its job is a line of the workflow's run steps, the
// workflow's install, build and certify lines are all in it, it uses the
// workflow's service images, and it keeps the JUnit report even when the job fails.
func sameCommands(path, jobName, gitlabPath string) error {
	root, err := gitRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, j, err := pickJob(wf, jobName)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ghLines := map[string]bool{}
	var key []string // the lines that do the work
	for _, s := range j.Steps {
		for _, l := range strings.Split(s.Run, "\n") {
			l = strings.Join(strings.Fields(l), " ")
			if l == "" {
				continue
			}
			ghLines[l] = true
			if strings.Contains(l, "go install") || strings.HasPrefix(l, "go build") || strings.HasPrefix(l, "hookcert ") {
				key = append(key, l)
			}
		}
	}
	gdata, err := os.ReadFile(filepath.Join(root, gitlabPath))
	if err != nil {
		return err
	}
	var jobs map[string]gitlabJob
	if err := yaml.Unmarshal(gdata, &jobs); err != nil {
		return fmt.Errorf("%s: %w", gitlabPath, err)
	}
	var gl *gitlabJob
	for _, gj := range jobs {
		if len(gj.Script) > 0 {
			if gl != nil {
				return fmt.Errorf("%s: more than one job with a script", gitlabPath)
			}
			gj := gj
			gl = &gj
		}
	}
	if gl == nil {
		return fmt.Errorf("%s: no job with a script", gitlabPath)
	}
	glLines := map[string]bool{}
	for _, l := range append(append([]string{}, gl.BeforeScript...), gl.Script...) {
		l = strings.Join(strings.Fields(l), " ")
		glLines[l] = true
		if !ghLines[l] {
			return fmt.Errorf("%s: %q is not a command of %s", gitlabPath, l, path)
		}
	}
	for _, l := range key {
		if !glLines[l] {
			return fmt.Errorf("%s: does not run %q (%s does)", gitlabPath, l, path)
		}
	}
	images := map[string]bool{}
	for _, s := range gl.Services {
		images[s.Name] = true
	}
	for name, svc := range j.Services {
		if !images[svc.Image] {
			return fmt.Errorf("%s: no service %s (the workflow's %s)", gitlabPath, svc.Image, name)
		}
	}
	if gl.Artifacts.When != "always" || gl.Artifacts.Reports.JUnit != "hookcert-report/junit.xml" {
		return fmt.Errorf("%s: artifacts must be kept when: always, with reports.junit hookcert-report/junit.xml", gitlabPath)
	}
	fmt.Printf("workflowcheck: %s runs the %d commands of %s that do the work\n", gitlabPath, len(key), path)
	return nil
}

func pickJob(wf workflow, name string) (string, job, error) {
	if name != "" {
		j, ok := wf.Jobs[name]
		if !ok {
			return "", job{}, fmt.Errorf("no job %q", name)
		}
		return name, j, nil
	}
	if len(wf.Jobs) != 1 {
		return "", job{}, fmt.Errorf("%d jobs: name one with -job", len(wf.Jobs))
	}
	for k, j := range wf.Jobs {
		return k, j, nil
	}
	panic("unreachable")
}

// checkJob refuses what the check would not run as GitHub does.
func checkJob(j job, services multiFlag) error {
	if !strings.HasPrefix(j.RunsOn, "ubuntu-") {
		return fmt.Errorf("runs-on %q: only ubuntu runners are emulated", j.RunsOn)
	}
	if !j.Strategy.IsZero() {
		return errors.New("strategy (a matrix) is not emulated")
	}
	served := map[string]string{}
	for _, s := range services {
		k, v, _ := strings.Cut(s, "=")
		served[k] = v
	}
	for name, svc := range j.Services {
		img, ok := served[name]
		if !ok {
			return fmt.Errorf("service %s (%s) is not served here: pass -service %s=%s once it is", name, svc.Image, name, svc.Image)
		}
		if img != svc.Image {
			return fmt.Errorf("service %s: the workflow uses %s, this machine serves %s", name, svc.Image, img)
		}
		// A service without a health check lets the first step start before it answers.
		if !strings.Contains(svc.Options, "--health-cmd") {
			return fmt.Errorf("service %s: options has no --health-cmd", name)
		}
	}
	for k, v := range j.Env {
		if strings.Contains(v, "${{") {
			return fmt.Errorf("env %s: expressions are not emulated (%s)", k, v)
		}
	}
	for i, s := range j.Steps {
		if (s.Run == "") == (s.Uses == "") {
			return fmt.Errorf("step %d: exactly one of run and uses", i+1)
		}
		if strings.Contains(s.Run, "${{") {
			return fmt.Errorf("step %q: run has an expression; pass values through env", s.label(i))
		}
		for k, v := range s.Env {
			if strings.Contains(v, "${{") {
				return fmt.Errorf("step %q: env %s: expressions are not emulated", s.label(i), k)
			}
		}
		if s.Shell != "" && s.Shell != "bash" {
			return fmt.Errorf("step %q: shell %q: only bash is emulated", s.label(i), s.Shell)
		}
	}
	return nil
}

var ifRe = regexp.MustCompile(`^\s*(\$\{\{\s*)?(always|success|failure|cancelled)\(\)(\s*\}\})?\s*$`)

// shouldRun evaluates the status functions an if can be; anything else is refused.
func shouldRun(cond string, failed bool) (bool, error) {
	if strings.TrimSpace(cond) == "" {
		return !failed, nil
	}
	m := ifRe.FindStringSubmatch(cond)
	if m == nil {
		return false, fmt.Errorf("if %q: only always(), success(), failure() and cancelled() are emulated", cond)
	}
	switch m[2] {
	case "always":
		return true, nil
	case "success":
		return !failed, nil
	case "failure":
		return failed, nil
	}
	return false, nil // the check never cancels a job
}

// runStep runs one step and returns its exit status; an error is the check's own.
func runStep(ctx context.Context, s step, i int, ws string, env, files map[string]string, keep string) (int, error) {
	if s.Uses != "" {
		return useAction(s, ws, keep)
	}
	if s.TimeoutMinutes > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.TimeoutMinutes*float64(time.Minute)))
		defer cancel()
	}
	script := filepath.Join(filepath.Dir(files["GITHUB_PATH"]), fmt.Sprintf("step-%d.sh", i+1))
	if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
		return 0, err
	}
	dir := ws
	if s.WorkingDirectory != "" {
		dir = filepath.Join(ws, s.WorkingDirectory)
	}
	// GitHub's default shell for run steps on Linux.
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = dir
	cmd.Env = envList(env)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
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

// useAction emulates the actions the check knows; 1 is a failed step.
func useAction(s step, ws, keep string) (int, error) {
	action, _, _ := strings.Cut(s.Uses, "@")
	switch action {
	case "actions/checkout":
		fmt.Println("   (the workspace is a copy of the working tree)")
		return 0, nil
	case "actions/setup-go":
		want := s.With["go-version"]
		if want == "" {
			return 0, errors.New("actions/setup-go: the check needs with.go-version")
		}
		out, err := exec.Command("go", "env", "GOVERSION").Output()
		if err != nil {
			return 0, fmt.Errorf("go env GOVERSION: %w", err)
		}
		have := strings.TrimSpace(string(out))
		if have != "go"+want && !strings.HasPrefix(have, "go"+want+".") {
			fmt.Printf("   setup-go wants Go %s, this machine has %s\n", want, have)
			return 1, nil
		}
		fmt.Printf("   Go %s wanted, %s here\n", want, have)
		return 0, nil
	case "actions/upload-artifact":
		var missing []string
		for _, p := range strings.Fields(s.With["path"]) {
			st, err := os.Stat(filepath.Join(ws, p))
			if err != nil || st.Size() == 0 {
				missing = append(missing, p)
				continue
			}
			fmt.Printf("   artifact %s: %s (%d bytes)\n", s.With["name"], p, st.Size())
			if keep != "" {
				if err := copyFile(filepath.Join(ws, p), filepath.Join(keep, p), 0o644); err != nil {
					return 0, err
				}
			}
		}
		if len(missing) > 0 && s.With["if-no-files-found"] == "error" {
			fmt.Printf("   upload-artifact: no file at %s\n", strings.Join(missing, ", "))
			return 1, nil
		}
		if len(missing) > 0 {
			return 0, fmt.Errorf("upload-artifact: no file at %s (and if-no-files-found is not error, so GitHub would not say)", strings.Join(missing, ", "))
		}
		return 0, nil
	}
	return 0, fmt.Errorf("uses %s: the check does not emulate this action", s.Uses)
}

func gitRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in a git checkout: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// copyTree copies the working tree's files (tracked and untracked, not ignored;
// as they are now, edits included) from root to dst.
func copyTree(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" {
			continue
		}
		src := filepath.Join(root, rel)
		st, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		} else if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, rel), st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// readPath returns the directories appended to GITHUB_PATH, the last first (each
// is prepended to PATH in turn).
func readPath(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var dirs []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			dirs = append([]string{l}, dirs...)
		}
	}
	return dirs, nil
}

// readEnvFile parses GITHUB_ENV: NAME=value lines and NAME<<DELIMITER blocks.
func readEnvFile(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(k, "=") {
			var val []string
			for sc.Scan() && sc.Text() != delim {
				val = append(val, sc.Text())
			}
			env[k] = strings.Join(val, "\n")
		} else if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}

func envMap(kvs []string) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
