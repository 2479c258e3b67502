// Command workflowcheck runs a GitHub Actions workflow's job, or a GitLab CI
// job, on this machine the way a hosted runner would, so that a documented
// workflow is a tested one (.ci/workflow-check runs hookcert's examples with it).
//
// GitHub: the job's steps run in order in a workspace that is a copy of the
// working tree (what actions/checkout gives), each `run:` as `bash --noprofile
// --norc -eo pipefail` with the workflow's, the job's and the step's env, plus
// what a runner sets (CI, GITHUB_ACTIONS, GITHUB_WORKSPACE, GITHUB_STEP_SUMMARY,
// GITHUB_PATH, GITHUB_ENV, GITHUB_OUTPUT per step, RUNNER_TEMP, RUNNER_OS,
// RUNNER_ARCH); GITHUB_PATH and GITHUB_ENV lines reach the later steps, a
// step's GITHUB_OUTPUT lines become steps.<id>.outputs, ::add-mask:: hides a
// value from the rest of the log. Expressions (`${{ }}` and if:) are parsed by
// actionlint and evaluated with the contexts a runner gives (github, runner,
// env, steps, inputs); one the check does not fill is an error. A composite
// action runs step by step: `uses: ./dir`, or `uses: OWNER/REPO@REF` mapped to
// a local checkout with -action (laid outside the workspace, as a runner
// downloads it), with its inputs, outputs and `github.action_path`. Known
// third-party actions are emulated by checking what they would receive:
// actions/checkout (the copy), actions/setup-go and actions/setup-node (the
// local toolchain must have the version asked for), actions/cache (a cold
// cache; the key must be whole), actions/upload-artifact (every path exists;
// -want-artifact names the files it must hold) and
// mikepenz/action-junit-report (every report parses as JUnit); their inputs
// are checked against the action's own. Service containers are not started:
// each must be one the caller says is already served here (-service).
// Anything else it cannot run as GitHub would (another action, a matrix) is an
// error, not a skip. Before running, the workflow is linted with actionlint.
//
// GitLab (-gitlab FILE -job NAME): the job's includes (local, or remote under
// -remote-include), extends and variables are resolved, before_script and
// script run in one bash -eo pipefail shell and after_script in another, and
// the artifacts (when: always, every path, reports.junit parsing as JUnit)
// are checked.
//
// Usage:
//
//	workflowcheck -workflow examples/ci/action-go.yml -service postgres=postgres:15 \
//	  -action hookcert/hookcert=. -want-job success
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
	ID               string            `yaml:"id"`
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

// options are the command line: what to run, what the check substitutes, and
// what it expects.
type options struct {
	workflow, gitlab, job  string
	sets, services         multiFlag
	actions, withs         multiFlag
	remoteIncludes         multiFlag
	wantJob, wantSummary   string
	wantExits, wantOutputs multiFlag
	wantArtifacts          multiFlag
	keep                   string
	timeout                time.Duration
	lint                   bool
}

func main() {
	var o options
	flag.StringVar(&o.workflow, "workflow", "", "a GitHub Actions workflow file, relative to the repository root")
	flag.StringVar(&o.gitlab, "gitlab", "", "a GitLab CI file, relative to the repository root (instead of -workflow)")
	flag.StringVar(&o.job, "job", "", "the job to run (default: the only one)")
	flag.Var(&o.sets, "set", "KEY=VALUE on top of every step's env (repeatable): what the check changes, e.g. where the database is")
	flag.Var(&o.services, "service", "NAME=IMAGE: a service container that is already served here (repeatable; every service must be listed)")
	flag.Var(&o.actions, "action", "OWNER/REPO=DIR: run `uses: OWNER/REPO@REF` from this local directory (repeatable)")
	flag.Var(&o.withs, "with", "STEP_ID.INPUT=VALUE: replace an input of the job's step with that id (repeatable)")
	flag.Var(&o.remoteIncludes, "remote-include", "URL_PREFIX=DIR: GitLab remote includes under URL_PREFIX are read from DIR (repeatable)")
	flag.StringVar(&o.wantJob, "want-job", "success", "the job result the check expects: success or failure")
	flag.Var(&o.wantExits, "want-exit", "STEP=CODE: the exit status a step must end with; a composite action's step is ACTION_STEP/STEP (repeatable)")
	flag.Var(&o.wantOutputs, "want-output", "STEP_ID.OUTPUT=VALUE, or STEP_ID.OUTPUT~REGEXP: an output the job's step must have set (repeatable)")
	flag.Var(&o.wantArtifacts, "want-artifact", "NAME=FILE,FILE…: files the artifact NAME must hold, relative to its path (repeatable); for GitLab, files the artifacts must hold")
	flag.StringVar(&o.wantSummary, "want-summary", "", "text the step summary (GitLab: the job log) must contain")
	flag.StringVar(&o.keep, "keep", "", "copy the uploaded artifacts' files into this directory")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole job (the job's timeout-minutes if smaller)")
	flag.BoolVar(&o.lint, "lint", true, "lint the workflow with actionlint before running it")
	flag.Parse()
	var err error
	switch {
	case o.gitlab != "" && o.workflow == "":
		err = runGitLab(o)
	case o.workflow != "" && o.gitlab == "":
		err = run(o)
	default:
		err = fmt.Errorf("give -workflow FILE or -gitlab FILE")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workflowcheck:", err)
		os.Exit(1)
	}
}
