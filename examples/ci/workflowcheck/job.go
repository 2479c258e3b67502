package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadJob reads the workflow at path (relative to root) and picks its job.
func loadJob(root, path, jobName string) (workflow, string, job, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return workflow{}, "", job{}, err
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		return workflow{}, "", job{}, fmt.Errorf("%s: %w", path, err)
	}
	name, j, err := pickJob(wf, jobName)
	if err != nil {
		return workflow{}, "", job{}, fmt.Errorf("%s: %w", path, err)
	}
	return wf, name, j, nil
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
	for i, s := range j.Steps {
		if (s.Run == "") == (s.Uses == "") {
			return fmt.Errorf("step %d: exactly one of run and uses", i+1)
		}
		if s.Shell != "" && s.Shell != "bash" {
			return fmt.Errorf("step %q: shell %q: only bash is emulated", s.label(i), s.Shell)
		}
	}
	return nil
}
