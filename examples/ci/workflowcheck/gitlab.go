package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// glJob is a GitLab CI job once its includes and extends are resolved.
type glJob struct {
	Image        yaml.Node            `yaml:"image"`
	Services     []yaml.Node          `yaml:"services"`
	Variables    map[string]yaml.Node `yaml:"variables"`
	BeforeScript []string             `yaml:"before_script"`
	Script       []string             `yaml:"script"`
	AfterScript  []string             `yaml:"after_script"`
	Artifacts    struct {
		When    string   `yaml:"when"`
		Paths   []string `yaml:"paths"`
		Reports struct {
			JUnit yaml.Node `yaml:"junit"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

// runGitLab runs one job of a GitLab CI file here, as a runner with the
// Docker executor would run it in its image, and checks its artifacts.
func runGitLab(o options) error {
	root, err := gitRoot()
	if err != nil {
		return err
	}
	remotes, err := parsePairs("-remote-include", o.remoteIncludes)
	if err != nil {
		return err
	}
	doc, err := loadGitLab(root, o.gitlab, remotes, 0)
	if err != nil {
		return err
	}
	name, j, err := gitlabJob(doc, o.job)
	if err != nil {
		return fmt.Errorf("%s: %w", o.gitlab, err)
	}
	if err := checkGitLabJob(j, o.services); err != nil {
		return fmt.Errorf("%s: job %s: %w", o.gitlab, name, err)
	}
	exits, err := parseWantExits(o.wantExits)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "workflowcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws, runnerTemp, _, err := layWorkspace(root, tmp)
	if err != nil {
		return err
	}
	env, err := gitlabEnv(doc, j, ws, name, o.sets)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	fmt.Printf("workflowcheck: %s, job %s in %s\n", o.gitlab, name, ws)
	var log lockedLog
	start := time.Now()
	code, err := gitlabScript(ctx, filepath.Join(runnerTemp, "script.sh"), ws, env, append(append([]string{}, j.BeforeScript...), j.Script...), &log)
	if err != nil {
		return err
	}
	fmt.Printf("-- script: exit %d (%s)\n", code, time.Since(start).Round(100*time.Millisecond))
	if want, ok := exits["script"]; ok && code != want {
		return fmt.Errorf("the script exited %d, want %d", code, want)
	}
	status := "success"
	if code != 0 {
		status = "failed"
	}
	if len(j.AfterScript) > 0 {
		// after_script runs whatever the script did, in a shell of its own;
		// its failure does not fail the job.
		env["CI_JOB_STATUS"] = status
		ac, err := gitlabScript(ctx, filepath.Join(runnerTemp, "after.sh"), ws, env, j.AfterScript, &log)
		if err != nil {
			return err
		}
		fmt.Printf("-- after_script: exit %d\n", ac)
	}
	if err := checkGitLabArtifacts(j, ws, env, status, o.wantArtifacts); err != nil {
		return fmt.Errorf("job %s: %w", name, err)
	}
	result := map[string]string{"success": "success", "failed": "failure"}[status]
	fmt.Printf("workflowcheck: job %s: %s in %s\n", name, result, time.Since(start).Round(100*time.Millisecond))
	if result != o.wantJob {
		return fmt.Errorf("job %s ended in %s, want %s", name, result, o.wantJob)
	}
	if o.wantSummary != "" && !strings.Contains(log.String(), o.wantSummary) {
		return fmt.Errorf("the job's log does not contain %q", o.wantSummary)
	}
	return nil
}

// loadGitLab reads a GitLab CI file with its includes merged in: what the
// file says wins over what it includes, hashes merged key by key.
func loadGitLab(root, path string, remotes map[string]string, depth int) (map[string]any, error) {
	if depth > 10 {
		return nil, fmt.Errorf("%s: includes nested too deep", path)
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := doc["default"]; ok {
		return nil, fmt.Errorf("%s: default: is not emulated", path)
	}
	merged := map[string]any{}
	incs, _ := doc["include"].([]any)
	if inc, ok := doc["include"].(map[string]any); ok {
		incs = []any{inc}
	}
	for _, inc := range incs {
		m, ok := inc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: include %v: only local: and remote: are emulated", path, inc)
		}
		file, err := includePath(m, remotes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sub, err := loadGitLab(root, file, remotes, depth+1)
		if err != nil {
			return nil, err
		}
		deepMerge(merged, sub)
	}
	delete(doc, "include")
	deepMerge(merged, doc)
	return merged, nil
}

func includePath(m map[string]any, remotes map[string]string) (string, error) {
	if local, ok := m["local"].(string); ok {
		return strings.TrimPrefix(local, "/"), nil
	}
	if remote, ok := m["remote"].(string); ok {
		for prefix, dir := range remotes {
			if rest, ok := strings.CutPrefix(remote, prefix); ok {
				fmt.Printf("   include %s is %s\n", remote, filepath.Join(dir, rest))
				return filepath.Join(dir, rest), nil
			}
		}
		return "", fmt.Errorf("include remote %s: not under any -remote-include", remote)
	}
	return "", fmt.Errorf("include %v: only local: and remote: are emulated", m)
}

func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				deepMerge(dm, sm)
				continue
			}
			cp := map[string]any{}
			deepMerge(cp, sm)
			v = cp
		}
		dst[k] = v
	}
}

// gitlabJob picks the job (the only visible one with a script by default) and
// resolves its extends, parents first.
func gitlabJob(doc map[string]any, name string) (string, glJob, error) {
	if name == "" {
		var names []string
		for k, v := range doc {
			if m, ok := v.(map[string]any); ok && !strings.HasPrefix(k, ".") && (m["script"] != nil || m["extends"] != nil) {
				names = append(names, k)
			}
		}
		if len(names) != 1 {
			return "", glJob{}, fmt.Errorf("%d jobs: name one with -job", len(names))
		}
		name = names[0]
	}
	resolved, err := resolveExtends(doc, name, 0)
	if err != nil {
		return "", glJob{}, err
	}
	data, err := yaml.Marshal(resolved)
	if err != nil {
		return "", glJob{}, err
	}
	var j glJob
	if err := yaml.Unmarshal(data, &j); err != nil {
		return "", glJob{}, fmt.Errorf("job %s: %w", name, err)
	}
	if len(j.Script) == 0 {
		return "", glJob{}, fmt.Errorf("job %s has no script", name)
	}
	return name, j, nil
}

func resolveExtends(doc map[string]any, name string, depth int) (map[string]any, error) {
	j, ok := doc[name].(map[string]any)
	if !ok || depth > 10 {
		return nil, fmt.Errorf("no job %s (or extends nested too deep)", name)
	}
	var parents []string
	switch e := j["extends"].(type) {
	case string:
		parents = []string{e}
	case []any:
		for _, p := range e {
			parents = append(parents, fmt.Sprint(p))
		}
	}
	out := map[string]any{}
	for _, p := range parents {
		pm, err := resolveExtends(doc, p, depth+1)
		if err != nil {
			return nil, err
		}
		deepMerge(out, pm)
	}
	deepMerge(out, j)
	delete(out, "extends")
	return out, nil
}

// nodeField is a scalar, or the key field of a mapping (image: {name: …}).
func nodeField(n yaml.Node, key string) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var m map[string]string
	_ = n.Decode(&m)
	return m[key]
}

// checkGitLabJob checks the image against the local toolchain and that every
// service is served here.
func checkGitLabJob(j glJob, services multiFlag) error {
	image := nodeField(j.Image, "name")
	repo, tag, _ := strings.Cut(image, ":")
	switch repo {
	case "golang":
		out, err := exec.Command("go", "env", "GOVERSION").Output()
		if err != nil {
			return err
		}
		have := strings.TrimPrefix(strings.TrimSpace(string(out)), "go")
		if minor(have) != minor(tag) {
			return fmt.Errorf("image %s: this machine has Go %s", image, have)
		}
		fmt.Printf("   image %s: Go %s here\n", image, have)
	default:
		return fmt.Errorf("image %q: only golang images are emulated", image)
	}
	served := map[string]string{}
	for _, s := range services {
		k, v, _ := strings.Cut(s, "=")
		served[k] = v
	}
	for _, s := range j.Services {
		img, alias := nodeField(s, "name"), nodeField(s, "alias")
		if served[alias] != img {
			return fmt.Errorf("service %s (alias %q) is not served here: pass -service %s=%s once it is", img, alias, alias, img)
		}
	}
	return nil
}

// gitlabEnv is the job's environment: the machine's, what GitLab sets, the
// global and the job's variables ($VAR references expanded), then -set.
func gitlabEnv(doc map[string]any, j glJob, ws, name string, sets multiFlag) (map[string]string, error) {
	env := envMap(os.Environ())
	for k, v := range map[string]string{"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": ws, "CI_JOB_NAME": name} {
		env[k] = v
	}
	vars := map[string]yaml.Node{}
	if g, ok := doc["variables"]; ok {
		data, _ := yaml.Marshal(g)
		if err := yaml.Unmarshal(data, &vars); err != nil {
			return nil, fmt.Errorf("variables: %w", err)
		}
	}
	for k, v := range j.Variables {
		vars[k] = v
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env[k] = nodeField(vars[k], "value")
	}
	for _, k := range names {
		env[k] = os.Expand(env[k], func(v string) string { return env[v] })
	}
	overrides, err := parsePairs("-set", sets)
	if err != nil {
		return nil, err
	}
	for k, v := range overrides {
		fmt.Printf("   variable %s set by the check\n", k)
		env[k] = v
	}
	return env, nil
}

// gitlabScript runs items as the runner does: one bash -eo pipefail shell,
// each command shown with "$ " before it.
func gitlabScript(ctx context.Context, file, ws string, env map[string]string, items []string, log io.Writer) (int, error) {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "printf '%%s\\n' %s\n%s\n", shellQuote("$ "+firstLine(it)), it)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return 0, err
	}
	return runBash(ctx, file, ws, env, io.MultiWriter(os.Stdout, log), io.MultiWriter(os.Stderr, log))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkGitLabArtifacts checks what the runner would upload: kept when the job
// fails, every path there, every JUnit report parsing, and the files
// -want-artifact PATH=FILE,… names inside PATH.
func checkGitLabArtifacts(j glJob, ws string, env map[string]string, status string, wants multiFlag) error {
	a := j.Artifacts
	if a.When != "always" {
		return fmt.Errorf("artifacts: when is %q: the reports of a failed job would be lost (when: always)", a.When)
	}
	expand := func(p string) string { return filepath.Join(ws, os.Expand(p, func(v string) string { return env[v] })) }
	for _, p := range a.Paths {
		m, _ := filepath.Glob(expand(p))
		if len(m) == 0 {
			return fmt.Errorf("artifacts: nothing at %s", p)
		}
		fmt.Printf("   artifacts: %s (%s job)\n", p, status)
	}
	var junits []string
	if err := a.Reports.JUnit.Decode(&junits); err != nil {
		junits = []string{a.Reports.JUnit.Value}
	}
	for _, p := range junits {
		if p == "" {
			continue
		}
		c, err := parseJUnit(expand(p))
		if err != nil {
			return fmt.Errorf("artifacts: reports: junit: %w", err)
		}
		fmt.Printf("   reports junit %s: %d test cases, %d failed, %d skipped\n", p, c.total, c.failed, c.skipped)
	}
	for _, w := range wants {
		dir, files, _ := strings.Cut(w, "=")
		for _, f := range strings.Split(files, ",") {
			st, err := os.Stat(filepath.Join(expand(dir), f))
			if err != nil || st.Size() == 0 {
				return fmt.Errorf("artifacts: no %s in %s, or it is empty", f, dir)
			}
		}
	}
	return nil
}

// lockedLog keeps a job's output for the checks on it.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
