package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func gitRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in a git checkout: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// copyTree copies the working tree's files (tracked and untracked, not ignored;
// as they are now, edits included) from root to dst.
func copyTree(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" {
			continue
		}
		src := filepath.Join(root, rel)
		st, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		} else if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, rel), st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// layWorkspace lays out tmp as a runner does: the workspace, a copy of the
// working tree at root, and the runner's temporary directory with the files
// the steps append to (GITHUB_STEP_SUMMARY, GITHUB_PATH, GITHUB_ENV,
// GITHUB_OUTPUT), by name.
func layWorkspace(root, tmp string) (ws, runnerTemp string, files map[string]string, err error) {
	ws = filepath.Join(tmp, "workspace")
	if err := copyTree(root, ws); err != nil {
		return "", "", nil, fmt.Errorf("laying the workspace: %w", err)
	}
	runnerTemp = filepath.Join(tmp, "runner-temp")
	if err := os.MkdirAll(runnerTemp, 0o755); err != nil {
		return "", "", nil, err
	}
	files = map[string]string{}
	for _, k := range []string{"GITHUB_STEP_SUMMARY", "GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT"} {
		files[k] = filepath.Join(runnerTemp, strings.ToLower(k))
	}
	return ws, runnerTemp, files, nil
}
