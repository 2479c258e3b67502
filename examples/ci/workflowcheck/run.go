package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func run(path, jobName string, sets, services multiFlag, wantJob string, wantExits multiFlag, wantSummary, keep string, timeout time.Duration) error {
	if wantJob != "success" && wantJob != "failure" {
		return fmt.Errorf("-want-job %q: success or failure", wantJob)
	}
	root, err := gitRoot()
	if err != nil {
		return err
	}
	wf, name, j, err := loadJob(root, path, jobName)
	if err != nil {
		return err
	}
	if err := checkJob(j, services); err != nil {
		return fmt.Errorf("%s: job %s: %w", path, name, err)
	}
	exits, err := parseWantExits(wantExits)
	if err != nil {
		return err
	}
	overrides, err := parseSets(sets)
	if err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "workflowcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws, runnerTemp, files, err := layWorkspace(root, tmp)
	if err != nil {
		return err
	}

	if j.TimeoutMinutes > 0 && time.Duration(j.TimeoutMinutes*float64(time.Minute)) < timeout {
		timeout = time.Duration(j.TimeoutMinutes * float64(time.Minute))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	base := runnerEnv(ws, runnerTemp, files)
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
		env := stepEnv(base, []map[string]string{wf.Env, j.Env, added, s.Env}, overrides, extraPath)
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
	return checkResult(name, failed, time.Since(start), files["GITHUB_STEP_SUMMARY"], wantJob, wantSummary)
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

// parseSets reads the -set KEY=VALUE flags.
func parseSets(sets multiFlag) (map[string]string, error) {
	overrides := map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-set %q: KEY=VALUE", s)
		}
		overrides[k] = v
	}
	return overrides, nil
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
