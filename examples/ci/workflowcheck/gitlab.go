package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
	_, _, j, err := loadJob(root, path, jobName)
	if err != nil {
		return err
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
