package targetfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	tparse "text/template/parse"
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

// envFunc is the template function name that reads the harness's environment.
const envFunc = "env"

// minScrubbedEnv is the shortest value passed with {{env}} that is scrubbed
// from outputs: shorter ones ("1", "on") would blank ordinary text.
const minScrubbedEnv = 4

// usesFunc reports whether a template's parse tree calls the function name.
func usesFunc(n tparse.Node, name string) bool {
	found := false
	var walk func(tparse.Node)
	walk = func(n tparse.Node) {
		if found || n == nil {
			return
		}
		switch n := n.(type) {
		case *tparse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *tparse.ActionNode:
			walk(n.Pipe)
		case *tparse.PipeNode:
			if n != nil {
				for _, c := range n.Cmds {
					walk(c)
				}
			}
		case *tparse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *tparse.IdentifierNode:
			found = n.Ident == name
		case *tparse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *tparse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *tparse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *tparse.TemplateNode:
			walk(n.Pipe)
		}
	}
	walk(n)
	return found
}

// UsesEnv reports whether a template calls {{env}}; a template that does not
// parse does not (its own parse reports it).
func UsesEnv(src string) bool {
	if !strings.Contains(src, envFunc) {
		return false
	}
	t, err := template.New("").Funcs(template.FuncMap{envFunc: func(string) string { return "" },
		"ref": func(string) string { return "" }}).Parse(src)
	return err == nil && usesFunc(t.Tree.Root, envFunc)
}

// envRefusal is the rule broken by {{env}} outside lifecycle.env values.
func envRefusal(path string) string {
	if strings.Contains(path, ".command[") {
		return "{{env}} is not allowed in a command's arguments: every user of the machine can read them (ps). " +
			"Pass the variable through target.lifecycle.env, whose values may use {{env \"NAME\"}}"
	}
	return "{{env}} may be used only in target.lifecycle.env values"
}

// lookupEnv is {{env "NAME"}}: the harness's variable NAME, an error naming it
// when it is unset.
func lookupEnv(name string) (string, error) {
	if !envNameRE.MatchString(name) {
		return "", fmt.Errorf("{{env %q}}: not an environment variable name", name)
	}
	val, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("{{env %q}}: environment variable %s is not set in the harness's environment", name, name)
	}
	return val, nil
}

// EnvSecrets are the values {{env}} passed from the harness's environment into
// lifecycle.env (at least 4 characters long): the harness scrubs them from
// everything it prints or writes, as it does the endpoints' secrets.
func (t *Target) EnvSecrets() []string { return append([]string(nil), t.envValues...) }
