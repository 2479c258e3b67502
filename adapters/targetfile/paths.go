package targetfile

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Paths in a target file (lifecycle.dir, a program such as ./bin/shop, a
// setup's sql_file) are relative to the file's directory, so a file works the
// same from whatever directory the harness runs in (docs/target.md, "Paths").

// WithBaseDir resolves the file's relative paths against dir, the target file's
// directory. Load sets it; Parse without it leaves relative paths as written,
// and they resolve against the harness's working directory when used.
func WithBaseDir(dir string) Option {
	return func(o *options) { o.baseDir = dir }
}

// BaseDir returns the absolute directory of a target file, what Load passes to
// WithBaseDir.
func BaseDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("target file %s: %w", path, err)
	}
	return filepath.Dir(abs), nil
}

// resolvePath makes a relative path relative to the base directory.
func (v *validator) resolvePath(p string) string {
	if p == "" || v.opts.baseDir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(v.opts.baseDir, p)
}

// ResolveProgram makes a command's program relative to dir when it is a
// relative path with a slash (./bin/shop, bin/shop); a bare name (python3) is
// looked up in PATH as usual, and an absolute path is left alone.
func ResolveProgram(dir, program string) string {
	if dir == "" || filepath.IsAbs(program) || !strings.ContainsRune(program, '/') {
		return program
	}
	return filepath.Join(dir, program)
}
