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
	"flag"
	"fmt"
	"os"
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
