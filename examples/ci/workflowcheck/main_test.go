package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestShouldRun(t *testing.T) {
	for _, c := range []struct {
		cond   string
		failed bool
		want   bool
	}{
		{"", false, true}, {"", true, false},
		{"always()", true, true}, {"${{ always() }}", true, true},
		{"success()", true, false}, {"failure()", true, true}, {"failure()", false, false},
		{"cancelled()", true, false},
	} {
		got, err := shouldRun(c.cond, c.failed)
		if err != nil || got != c.want {
			t.Errorf("shouldRun(%q, failed=%v) = %v, %v; want %v", c.cond, c.failed, got, err, c.want)
		}
	}
	// An if the check cannot evaluate must stop it, not be guessed.
	if _, err := shouldRun("github.event_name == 'push'", false); err == nil {
		t.Error("an expression if was accepted")
	}
}

func TestRunnerFiles(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	if err := os.WriteFile(env, []byte("A=1\nB<<EOF\nline 1\nline 2\nEOF\nC=x=y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readEnvFile(env)
	if want := map[string]string{"A": "1", "B": "line 1\nline 2", "C": "x=y"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("readEnvFile = %v, %v; want %v", got, err, want)
	}
	path := filepath.Join(dir, "path")
	if err := os.WriteFile(path, []byte("/first\n/second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The last line added is searched first.
	if got, err := readPath(path); err != nil || !reflect.DeepEqual(got, []string{"/second", "/first"}) {
		t.Errorf("readPath = %v, %v", got, err)
	}
}

const jobYAML = `
runs-on: ubuntu-latest
services:
  postgres:
    image: postgres:15
    options: --health-cmd pg_isready
steps:
  - uses: actions/checkout@v4
  - run: echo hi
`

func TestCheckJobRefusesWhatItCannotRun(t *testing.T) {
	parse := func(s string) job {
		t.Helper()
		var j job
		if err := yaml.Unmarshal([]byte(s), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	if err := checkJob(parse(jobYAML), multiFlag{"postgres=postgres:15"}); err != nil {
		t.Fatalf("a job the check can run: %v", err)
	}
	for name, c := range map[string]struct {
		yaml, service, want string
	}{
		"service not served": {jobYAML, "", "not served here"},
		"other image":        {jobYAML, "postgres=postgres:16", "this machine serves postgres:16"},
		"no health check":    {strings.Replace(jobYAML, "--health-cmd pg_isready", "--rm", 1), "postgres=postgres:15", "--health-cmd"},
		"expression in run":  {strings.Replace(jobYAML, "echo hi", "echo ${{ github.sha }}", 1), "postgres=postgres:15", "expression"},
		"macos runner":       {strings.Replace(jobYAML, "ubuntu-latest", "macos-latest", 1), "postgres=postgres:15", "only ubuntu"},
	} {
		err := checkJob(parse(c.yaml), multiFlag{c.service})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: checkJob = %v, want an error with %q", name, err, c.want)
		}
	}
}
