package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rhysd/actionlint"
)

// emulator stands in for a third-party action: it checks what the action
// would receive and does what the job relies on.
type emulator func(r *runner, with map[string]string) (int, map[string]string, error)

var emulators = map[string]emulator{
	"actions/checkout@v4": func(*runner, map[string]string) (int, map[string]string, error) {
		fmt.Println("   (the workspace is a copy of the working tree)")
		return 0, nil, nil
	},
	"actions/setup-go@v5":             setupGo,
	"actions/setup-node@v4":           setupNode,
	"actions/cache@v4":                cacheAction,
	"actions/upload-artifact@v4":      (*runner).uploadArtifact,
	"mikepenz/action-junit-report@v5": (*runner).junitReport,
}

// junitReportInputs are mikepenz/action-junit-report's inputs (its action.yml);
// actionlint's list of popular actions does not hold it.
var junitReportInputs = []string{
	"token", "github_token", "report_paths", "test_files_prefix", "exclude_sources", "suite_regex",
	"annotate_only", "update_check", "check_name", "commit", "fail_on_failure", "require_tests",
	"include_passed", "check_title_template", "summary", "check_retries", "transformers",
	"job_summary", "detailed_summary", "annotate_notice", "follow_symlink", "job_name",
}

// emulate runs the emulator for uses after checking with against the
// action's inputs: an input it does not have, or a required one missing,
// is the workflow's mistake.
func (r *runner) emulate(uses string, with map[string]string) (int, map[string]string, error) {
	em, ok := emulators[uses]
	if !ok {
		return 0, nil, fmt.Errorf("uses %s: the check does not emulate this action", uses)
	}
	known := map[string]bool{}
	if meta, ok := actionlint.PopularActions[uses]; ok {
		for k, in := range meta.Inputs {
			known[k] = true
			if _, given := with[k]; in.Required && !given {
				return 0, nil, fmt.Errorf("uses %s: input %s is required", uses, k)
			}
		}
	} else {
		for _, k := range junitReportInputs {
			known[k] = true
		}
	}
	for k := range with {
		if !known[strings.ToLower(k)] {
			return 0, nil, fmt.Errorf("uses %s: the action has no input %q", uses, k)
		}
	}
	return em(r, with)
}

var goLineRe = regexp.MustCompile(`(?m)^(go|toolchain)\s+(go)?([0-9][0-9.]*)\s*$`)

// setupGo checks that the local Go is the one asked for (same minor version).
func setupGo(r *runner, with map[string]string) (int, map[string]string, error) {
	want := with["go-version"]
	if file := with["go-version-file"]; want == "" && file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(r.ws, file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Printf("   setup-go: go-version-file: %v\n", err)
			return 1, nil, nil
		}
		// setup-go takes the toolchain line over the go line.
		for _, m := range goLineRe.FindAllStringSubmatch(string(data), -1) {
			if want == "" || m[1] == "toolchain" {
				want = m[3]
			}
		}
	}
	if want == "" {
		return 0, nil, errors.New("actions/setup-go: the check needs go-version or go-version-file")
	}
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return 0, nil, fmt.Errorf("go env GOVERSION: %w", err)
	}
	have := strings.TrimPrefix(strings.TrimSpace(string(out)), "go")
	if minor(have) != minor(want) {
		fmt.Printf("   setup-go wants Go %s, this machine has %s\n", want, have)
		return 1, nil, nil
	}
	fmt.Printf("   Go %s wanted, %s here (same minor version)\n", want, have)
	if with["cache"] != "false" {
		fmt.Println("   setup-go's cache is not emulated: a cold cache, as on a first run")
	}
	return 0, map[string]string{"go-version": have, "cache-hit": "false"}, nil
}

// setupNode checks that the local Node.js has the major version asked for.
func setupNode(_ *runner, with map[string]string) (int, map[string]string, error) {
	want := strings.TrimSuffix(with["node-version"], ".x")
	if want == "" {
		return 0, nil, errors.New("actions/setup-node: the check needs node-version")
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		fmt.Printf("   setup-node wants Node.js %s; node: %v\n", want, err)
		return 1, nil, nil
	}
	have := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(have, ".")
	wantMajor, _, _ := strings.Cut(want, ".")
	if major != wantMajor {
		fmt.Printf("   setup-node wants Node.js %s, this machine has %s\n", want, have)
		return 1, nil, nil
	}
	fmt.Printf("   Node.js %s wanted, %s here\n", want, have)
	if with["cache"] != "" {
		fmt.Println("   setup-node's cache is not emulated: a cold cache, as on a first run")
	}
	return 0, map[string]string{"node-version": "v" + have, "cache-hit": "false"}, nil
}

// cacheAction restores nothing and saves nothing (a first run), but checks the
// key: one ending in "-" was built from a hash that came out empty.
func cacheAction(_ *runner, with map[string]string) (int, map[string]string, error) {
	key := with["key"]
	if strings.TrimSpace(with["path"]) == "" || key == "" || strings.HasSuffix(key, "-") || strings.Contains(key, "--") {
		return 0, nil, fmt.Errorf("actions/cache: path %q, key %q: a path and a whole key are needed", with["path"], key)
	}
	for _, p := range strings.Split(strings.TrimSpace(with["path"]), "\n") {
		fmt.Printf("   cache path %s\n", strings.TrimSpace(p))
	}
	fmt.Printf("   cache key %s: not restored, not saved (a cold cache, as on a first run)\n", key)
	return 0, map[string]string{"cache-hit": "false"}, nil
}

func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// uploadArtifact checks every path of with.path and the files -want-artifact
// names for this artifact, as actions/upload-artifact would find them: a
// directory uploads every file below it, named relative to the paths' common
// parent; hidden files are left out unless include-hidden-files is true.
func (r *runner) uploadArtifact(with map[string]string) (int, map[string]string, error) {
	name := orDefault(with["name"], "artifact")
	if r.uploaded[name] {
		fmt.Printf("   upload-artifact: an artifact named %s was already uploaded in this job\n", name)
		return 1, nil, nil
	}
	files, root, err := artifactFiles(r.ws, with["path"], with["include-hidden-files"] == "true")
	if err != nil {
		return 0, nil, fmt.Errorf("actions/upload-artifact: %w", err)
	}
	if len(files) == 0 {
		switch orDefault(with["if-no-files-found"], "warn") {
		case "error":
			fmt.Printf("   upload-artifact: no files found at %s\n", strings.TrimSpace(with["path"]))
			return 1, nil, nil
		case "warn":
			fmt.Printf("   ::warning::upload-artifact: no files found at %s; no artifact uploaded\n", strings.TrimSpace(with["path"]))
		}
		return 0, nil, nil
	}
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		fmt.Printf("   artifact %s: %s (%d bytes)\n", name, rel, files[rel])
		if r.keep != "" {
			if err := copyFile(filepath.Join(root, rel), filepath.Join(r.keep, name, rel), 0o644); err != nil {
				return 0, nil, err
			}
		}
	}
	for _, want := range r.artifacts[name] {
		if size, ok := files[want]; !ok || size == 0 {
			return 0, nil, fmt.Errorf("artifact %s: no %s in it, or it is empty (it has %s)", name, want, strings.Join(rels, ", "))
		}
	}
	r.uploaded[name] = true
	return 0, map[string]string{"artifact-id": fmt.Sprint(len(r.uploaded)), "artifact-url": "file://" + root}, nil
}

// artifactFiles resolves upload-artifact's path input: the files by their
// name in the artifact, with their sizes, and the directory they are named from.
func artifactFiles(ws, paths string, hidden bool) (map[string]int64, string, error) {
	var found []string
	for _, p := range strings.Split(paths, "\n") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if strings.HasPrefix(p, "!") || strings.Contains(p, "**") {
			return nil, "", fmt.Errorf("path %s: exclusions and ** are not emulated", p)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, "", err
		}
		found = append(found, m...)
	}
	if len(found) == 0 {
		return nil, "", nil
	}
	// The common parent of what was found names the files.
	root := found[0]
	if st, err := os.Stat(root); err == nil && !st.IsDir() {
		root = filepath.Dir(root)
	}
	for _, f := range found[1:] {
		for !strings.HasPrefix(f+string(filepath.Separator), root+string(filepath.Separator)) {
			root = filepath.Dir(root)
		}
	}
	files := map[string]int64{}
	for _, f := range found {
		err := filepath.WalkDir(f, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !hidden && strings.HasPrefix(d.Name(), ".") && p != f {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files[rel] = info.Size()
			return nil
		})
		if err != nil {
			return nil, "", err
		}
	}
	return files, root, nil
}
