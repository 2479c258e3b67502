package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

// actionMeta is an action's action.yml, as much of it as a composite action needs.
type actionMeta struct {
	Name   string `yaml:"name"`
	Inputs map[string]struct {
		Required bool    `yaml:"required"`
		Default  *string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

func loadAction(dir string) (*actionMeta, error) {
	var data []byte
	var err error
	for _, name := range []string{"action.yml", "action.yaml"} {
		if data, err = os.ReadFile(filepath.Join(dir, name)); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("no action.yml in %s", dir)
	}
	var m actionMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s/action.yml: %w", dir, err)
	}
	if m.Runs.Using != "composite" {
		return nil, fmt.Errorf("%s/action.yml: runs.using %q: only composite actions are run", dir, m.Runs.Using)
	}
	return &m, nil
}

// useAction runs a uses: step: a composite action from a local directory, or
// one of the emulated actions; 1 is a failed step.
func (r *runner) useAction(sc *scope, s step, label string, env map[string]string) (int, map[string]string, error) {
	with := map[string]string{}
	for k, v := range s.With {
		ev, err := r.exprs(sc, env).interpolate(v)
		if err != nil {
			return 0, nil, fmt.Errorf("with %s: %w", k, err)
		}
		with[k] = ev
	}
	if sc.label == "" && s.ID != "" {
		for k, v := range r.withs[s.ID] {
			fmt.Printf("   with %s replaced by the check: %s\n", k, v)
			with[k] = v
		}
	}
	spec, ref, _ := strings.Cut(s.Uses, "@")
	switch {
	case strings.HasPrefix(s.Uses, "./"):
		return r.runComposite(sc, label, filepath.Join(r.ws, s.Uses), "", with, s.Env, env)
	case r.actions[spec] != "":
		// Where a runner downloads an action: outside the workspace.
		dir := filepath.Join(filepath.Dir(r.runnerTemp), "_actions", spec, ref)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := copyTree(r.actions[spec], dir); err != nil {
				return 0, nil, err
			}
		}
		fmt.Printf("   %s is the checkout at %s\n", s.Uses, r.actions[spec])
		return r.runComposite(sc, label, dir, ref, with, s.Env, env)
	}
	return r.emulate(s.Uses, with)
}

// runComposite runs a composite action's steps as the step label: its
// inputs from with and their defaults, its outputs from its steps'. Its exit
// status is its first failed step's.
func (r *runner) runComposite(outer *scope, label, dir, ref string, with, stepEnv, env map[string]string) (int, map[string]string, error) {
	meta, err := loadAction(dir)
	if err != nil {
		return 0, nil, err
	}
	sub := &scope{label: label, steps: map[string]any{}, inputs: map[string]any{}, actionPath: dir, actionRef: ref, failed: outer.failed}
	for k := range with {
		if _, ok := meta.Inputs[k]; !ok {
			return 0, nil, fmt.Errorf("%s has no input %q (GitHub would only warn, and ignore it)", meta.Name, k)
		}
	}
	for name, in := range meta.Inputs {
		v, given := with[name]
		switch {
		case !given && in.Default != nil:
			if v, err = r.exprs(sub, env).interpolate(*in.Default); err != nil {
				return 0, nil, fmt.Errorf("input %s default: %w", name, err)
			}
		case !given && in.Required:
			return 0, nil, fmt.Errorf("%s: input %s is required", meta.Name, name)
		}
		sub.inputs[strings.ToLower(name)] = v
	}
	own, err := r.evalEnv(outer, stepEnv, env)
	if err != nil {
		return 0, nil, err
	}
	sub.env = append(append([]map[string]string{}, outer.env...), own)
	if err := r.runSteps(sub, meta.Runs.Steps); err != nil {
		return 0, nil, err
	}
	outputs := map[string]string{}
	names := make([]string, 0, len(meta.Outputs))
	for k := range meta.Outputs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, err := r.exprs(sub, nil).interpolate(meta.Outputs[k].Value)
		if err != nil {
			return 0, nil, fmt.Errorf("output %s: %w", k, err)
		}
		outputs[k] = v
	}
	return sub.firstFailure, outputs, nil
}

// lintWorkflow runs actionlint on the workflow: what it finds would be wrong
// on GitHub too, whatever the run here shows.
func lintWorkflow(root, path string) error {
	proj, err := actionlint.NewProject(root)
	if err != nil {
		return err
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		return err
	}
	full := filepath.Join(root, path)
	data, err := os.ReadFile(full)
	if err != nil {
		return err
	}
	errs, err := l.Lint(full, data, proj)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("actionlint:\n  %s", strings.Join(msgs, "\n  "))
	}
	fmt.Printf("workflowcheck: %s: actionlint finds nothing\n", path)
	return nil
}
