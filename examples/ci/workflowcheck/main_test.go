package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func testCtx(failed bool) *exprCtx {
	return &exprCtx{
		contexts: map[string]any{
			"inputs": map[string]any{"version": "", "junit": "annotate", "name": "hookcert"},
			"steps": map[string]any{
				"certify": map[string]any{"outputs": map[string]any{"junit": "true", "exit-code": "1"}, "outcome": "failure"},
			},
			"github": map[string]any{"action_path": "/a", "workspace": "/w"},
			"env":    map[string]any{"HOME": "/root"},
		},
		strict: map[string]bool{"github": true},
		failed: failed,
	}
}

func TestCond(t *testing.T) {
	for _, c := range []struct {
		cond   string
		failed bool
		want   bool
	}{
		{"", false, true}, {"", true, false},
		{"always()", true, true}, {"${{ always() }}", true, true},
		{"success()", true, false}, {"failure()", true, true}, {"failure()", false, false},
		{"cancelled()", true, false},
		// No status function: success() && (…), so nothing runs after a failure.
		{"inputs.version == ''", false, true}, {"inputs.version == ''", true, false},
		{"inputs.version != ''", false, false},
		{"always() && steps.certify.outputs.junit == 'true' && inputs.junit != 'false'", true, true},
		{"always() && steps.certify.outputs.junit == 'TRUE'", true, true}, // strings compare without case
		{"always() && steps.missing.outputs.junit == 'true'", true, false},
		{"steps.certify.outputs.exit-code == 1", false, true}, // a string and a number compare as numbers
		{"!startsWith(inputs.name, 'hook') || failure()", false, false},
	} {
		got, err := testCtx(c.failed).cond(c.cond)
		if err != nil || got != c.want {
			t.Errorf("cond(%q, failed=%v) = %v, %v; want %v", c.cond, c.failed, got, err, c.want)
		}
	}
	// A context or a property the check does not fill stops it: it is not guessed.
	for _, cond := range []string{"secrets.TOKEN != ''", "github.event.pull_request.number == 1", "inputs.version =="} {
		if _, err := testCtx(false).cond(cond); err == nil {
			t.Errorf("cond(%q) was evaluated", cond)
		}
	}
}

func TestInterpolate(t *testing.T) {
	for in, want := range map[string]string{
		"no expression":                           "no expression",
		"${{ github.action_path }}/go.mod":        "/a/go.mod",
		"${{ inputs.junit != 'check' }}":          "true",
		"x-${{ steps.certify.outputs.junit }}-y":  "x-true-y",
		"${{ format('{0}/{1}', 'a', 1) }}":        "a/1",
		"${{ steps.certify.outputs.nothing }}":    "",
		"${{ inputs.version || 'from source' }}":  "from source",
		"${{ inputs.junit && inputs.name }}":      "hookcert",
		"${{ env.HOME }} and ${{ inputs.junit }}": "/root and annotate",
	} {
		got, err := testCtx(false).interpolate(in)
		if err != nil || got != want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := testCtx(false).interpolate("${{ github.sha }}"); err == nil {
		t.Error("github.sha was interpolated; the check does not emulate it")
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
		"macos runner":       {strings.Replace(jobYAML, "ubuntu-latest", "macos-latest", 1), "postgres=postgres:15", "only ubuntu"},
		"powershell":         {strings.Replace(jobYAML, "- run: echo hi", "- {run: echo hi, shell: pwsh}", 1), "postgres=postgres:15", "only bash"},
	} {
		err := checkJob(parse(c.yaml), multiFlag{c.service})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: checkJob = %v, want an error with %q", name, err, c.want)
		}
	}
}

// testRunner is a runner on a workspace of its own, as run lays one.
func testRunner(t *testing.T) *runner {
	t.Helper()
	tmp := t.TempDir()
	r := &runner{ctx: context.Background(), ws: filepath.Join(tmp, "workspace"), runnerTemp: filepath.Join(tmp, "runner-temp"),
		files: map[string]string{}, uploaded: map[string]bool{}, added: map[string]string{}, masks: &masks{},
		exits: map[string]int{}, artifacts: map[string][]string{}, jobName: "test"}
	for _, d := range []string{r.ws, r.runnerTemp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"GITHUB_STEP_SUMMARY", "GITHUB_PATH", "GITHUB_ENV"} {
		r.files[k] = filepath.Join(r.runnerTemp, strings.ToLower(k))
	}
	r.base = runnerEnv(r.ws, r.runnerTemp, r.files)
	return r
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const compositeYAML = `
name: demo
inputs:
  word: {required: true}
  fail: {default: "no"}
outputs:
  said: {value: "${{ steps.say.outputs.said }}"}
  where: {value: "${{ steps.say.outputs.where }}"}
runs:
  using: composite
  steps:
    - id: say
      name: say
      shell: bash
      env: {WORD: "${{ inputs.word }}"}
      run: |
        echo "said=$WORD" >> "$GITHUB_OUTPUT"
        echo "where=$GITHUB_ACTION_PATH" >> "$GITHUB_OUTPUT"
        [ "${{ inputs.fail }}" != yes ] || exit 3
    - name: after a failure
      shell: bash
      run: echo "skipped" >> "$GITHUB_STEP_SUMMARY"
    - name: always
      if: always()
      shell: bash
      run: echo "always ran" >> "$GITHUB_STEP_SUMMARY"
`

// A composite action runs step by step: inputs with their defaults, step
// outputs into the action's outputs, a failed step skipping the next unless
// if: always(), and the action's exit status its first failure's.
func TestCompositeAction(t *testing.T) {
	for _, fail := range []string{"no", "yes"} {
		r := testRunner(t)
		writeFile(t, filepath.Join(r.ws, "act", "action.yml"), compositeYAML)
		r.exits = map[string]int{"demo/say": 0}
		if fail == "yes" {
			r.exits = map[string]int{"demo/say": 3}
		}
		job := &scope{steps: map[string]any{}}
		err := r.runSteps(job, []step{
			{ID: "demo", Name: "demo", Uses: "./act", With: map[string]string{"word": "hello", "fail": fail}},
			{Name: "echo", Run: `echo "${{ steps.demo.outputs.said }} ${{ steps.demo.outcome }}" >> "$GITHUB_STEP_SUMMARY"`, If: "always()"},
		})
		if err != nil {
			t.Fatalf("fail=%s: %v", fail, err)
		}
		if len(r.exits) != 0 {
			t.Errorf("fail=%s: steps that did not run as wanted: %v", fail, r.exits)
		}
		summary, _ := os.ReadFile(r.files["GITHUB_STEP_SUMMARY"])
		want := "skipped\nalways ran\nhello success\n"
		if fail == "yes" {
			want = "always ran\nhello failure\n"
		}
		if string(summary) != want || job.failed != (fail == "yes") {
			t.Errorf("fail=%s: summary %q, job failed %v; want %q", fail, summary, job.failed, want)
		}
		st := job.steps["demo"].(map[string]any)
		if where := st["outputs"].(map[string]any)["where"]; where == filepath.Join(r.ws, "act") {
			continue
		}
		t.Errorf("fail=%s: GITHUB_ACTION_PATH in the action was %v", fail, st["outputs"])
	}
}

func TestCompositeActionRefusesBadUse(t *testing.T) {
	for name, c := range map[string]struct {
		action string
		with   map[string]string
		want   string
	}{
		"unknown input":  {compositeYAML, map[string]string{"word": "x", "wrod": "y"}, `no input "wrod"`},
		"required input": {compositeYAML, map[string]string{"fail": "no"}, "input word is required"},
		"no shell":       {strings.Replace(compositeYAML, "      shell: bash\n      env:", "      env:", 1), map[string]string{"word": "x"}, "must name its shell"},
		"javascript":     {"name: js\nruns: {using: node20, main: index.js}\n", nil, "only composite"},
	} {
		r := testRunner(t)
		writeFile(t, filepath.Join(r.ws, "act", "action.yml"), c.action)
		err := r.runSteps(&scope{steps: map[string]any{}}, []step{{Uses: "./act", With: c.with}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

// ::add-mask:: hides the value from every later line, and is not shown.
func TestMasks(t *testing.T) {
	var out bytes.Buffer
	w := (&masks{}).writer(&out)
	_, _ = w.Write([]byte("before s3cret\n::add-mask::s3cret\nafter s3cret"))
	w.flush()
	if got := out.String(); got != "before s3cret\nafter ***\n" {
		t.Errorf("masked output %q", got)
	}
}

func TestUploadArtifact(t *testing.T) {
	r := testRunner(t)
	for _, f := range []string{"report/results.json", "report/junit.xml", "report/.hidden", "report/sub/worker-1.log"} {
		writeFile(t, filepath.Join(r.ws, f), "x")
	}
	r.artifacts = map[string][]string{"rep": {"results.json", "sub/worker-1.log"}}
	code, out, err := r.uploadArtifact(map[string]string{"name": "rep", "path": filepath.Join(r.ws, "report")})
	if err != nil || code != 0 || out["artifact-url"] != "file://"+filepath.Join(r.ws, "report") {
		t.Fatalf("upload = %d, %v, %v", code, out, err)
	}
	// One name per job.
	if code, _, _ := r.uploadArtifact(map[string]string{"name": "rep", "path": "report"}); code != 1 {
		t.Errorf("a second artifact rep: exit %d, want 1", code)
	}
	r.artifacts["other"] = []string{"summary.md"}
	if _, _, err := r.uploadArtifact(map[string]string{"name": "other", "path": "report"}); err == nil {
		t.Error("an artifact without a file it must hold passed")
	}
	if code, _, err := r.uploadArtifact(map[string]string{"name": "none", "path": "missing", "if-no-files-found": "error"}); code != 1 || err != nil {
		t.Errorf("no files, if-no-files-found error: %d, %v; want exit 1", code, err)
	}
	files, _, _ := artifactFiles(r.ws, "report/junit.xml\nreport/results.json", false)
	if !reflect.DeepEqual(files, map[string]int64{"junit.xml": 1, "results.json": 1}) {
		t.Errorf("two files are named from their common parent: %v", files)
	}
}

func TestEmulatedActionsCheckTheirInputs(t *testing.T) {
	r := testRunner(t)
	for uses, with := range map[string]map[string]string{
		"actions/upload-artifact@v4":      {"name": "x", "paths": "a"}, // path, not paths
		"mikepenz/action-junit-report@v5": {"reports_path": "a"},
		"actions/cache@v4":                {"path": "a", "key": "hookcert-go-Linux-"}, // an empty hash
		"actions/setup-go@v5":             {"go-version": "1.26", "cache-path": "x"},
		"someone/else@v1":                 {},
	} {
		if _, _, err := r.emulate(uses, with); err == nil {
			t.Errorf("%s with %v was accepted", uses, with)
		}
	}
}

func TestParseJUnit(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		xml  string
		want junitCounts
		err  bool
	}{
		"ok": {`<testsuites><testsuite name="hookcert"><testcase name="A"/><testcase name="B"><failure message="x"/></testcase>` +
			`<testcase name="C"><skipped/></testcase></testsuite></testsuites>`, junitCounts{3, 1, 1}, false},
		"not xml":     {`{"json": true}`, junitCounts{}, true},
		"other root":  {`<results><testcase/></results>`, junitCounts{}, true},
		"no testcase": {`<testsuites><testsuite/></testsuites>`, junitCounts{}, true},
	} {
		p := filepath.Join(dir, name+".xml")
		writeFile(t, p, c.xml)
		got, err := parseJUnit(p)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
}

// A GitLab job's includes and extends are resolved as GitLab does: the
// template's hashes merged under the job's, its arrays replaced.
func TestGitLabIncludesAndExtends(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "tmpl", "t.yml"), `
.base:
  image: golang:1.26
  variables: {A: from-template, B: "b-$A"}
  script: [run it]
  artifacts: {when: always, paths: [out/]}
`)
	writeFile(t, filepath.Join(root, "ci.yml"), `
include:
  - remote: https://example.invalid/repo/main/tmpl/t.yml
job:
  extends: .base
  variables: {A: from-job}
  before_script: [build it]
`)
	doc, err := loadGitLab(root, "ci.yml", map[string]string{"https://example.invalid/repo/main/": "."}, 0)
	if err != nil {
		t.Fatal(err)
	}
	name, j, err := gitlabJob(doc, "")
	if err != nil || name != "job" {
		t.Fatalf("job %q: %v", name, err)
	}
	if !reflect.DeepEqual(j.Script, []string{"run it"}) || !reflect.DeepEqual(j.BeforeScript, []string{"build it"}) || j.Artifacts.When != "always" {
		t.Errorf("resolved job %+v", j)
	}
	env, err := gitlabEnv(doc, j, root, name, nil)
	if err != nil || env["A"] != "from-job" || env["B"] != "b-from-job" {
		t.Errorf("variables A=%q B=%q (%v)", env["A"], env["B"], err)
	}
	if _, err := loadGitLab(root, "ci.yml", nil, 0); err == nil {
		t.Error("a remote include outside every -remote-include was read")
	}
}
