package main

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"sort"
	"strings"
)

// readPath returns the directories appended to GITHUB_PATH, the last first (each
// is prepended to PATH in turn).
func readPath(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var dirs []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			dirs = append([]string{l}, dirs...)
		}
	}
	return dirs, nil
}

// readEnvFile parses GITHUB_ENV: NAME=value lines and NAME<<DELIMITER blocks.
func readEnvFile(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(k, "=") {
			var val []string
			for sc.Scan() && sc.Text() != delim {
				val = append(val, sc.Text())
			}
			env[k] = strings.Join(val, "\n")
		} else if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}

func envMap(kvs []string) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// runnerEnv is this process's environment plus what a runner sets for every step.
func runnerEnv(ws, runnerTemp string, files map[string]string) map[string]string {
	base := envMap(os.Environ())
	for k, v := range map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": ws, "RUNNER_TEMP": runnerTemp,
		"RUNNER_OS": "Linux", "RUNNER_ARCH": map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH],
	} {
		base[k] = v
	}
	for k, v := range files {
		base[k] = v
	}
	return base
}

// stepProcessEnv is what a step's process gets: the runner's environment,
// the step's env on top, and GITHUB_PATH's directories before PATH.
func stepProcessEnv(base, env map[string]string, extraPath []string) map[string]string {
	out := copyMap(base)
	for k, v := range env {
		out[k] = v
	}
	if len(extraPath) > 0 {
		out["PATH"] = strings.Join(extraPath, string(os.PathListSeparator)) + string(os.PathListSeparator) + out["PATH"]
	}
	return out
}
