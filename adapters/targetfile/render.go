package targetfile

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"text/template"
	tparse "text/template/parse"
)

// Target file strings are Go templates over the run's Vars; lifecycle.env
// values may also read the harness's environment with {{env "NAME"}}.

// Vars are the template variables available in target file strings.
type Vars struct {
	// DatabaseURL is the database the harness prepared for the receiver.
	DatabaseURL string
	// ListenAddr is host:port the receiver should listen on.
	ListenAddr string
	// Port is ListenAddr's port; derived from ListenAddr when empty.
	Port string
	// BaseURL defaults to the rendered base_url, so lifecycle env can use it.
	BaseURL string
	// SinkURL is the harness's downstream sink (capability outbox).
	SinkURL string
	// ProviderAPIURL is the harness's provider API (capability refetch).
	ProviderAPIURL string
}

// varNames are the template variables, sorted, for error messages.
var varNames = []string{"BaseURL", "DatabaseURL", "ListenAddr", "Port", "ProviderAPIURL", "SinkURL"}

// noEntryRE extracts the variable name from text/template's missingkey error.
var noEntryRE = regexp.MustCompile(`no entry for key "([^"]*)"`)

// render expands template variables in s; ok is false when it recorded an error.
// {{env}} is refused: only lifecycle.env values may read the harness's
// environment (renderEnv).
func (v *validator) render(segs []any, s string) (string, bool) {
	return v.renderTemplate(segs, s, false)
}

// renderEnv is render for a lifecycle.env value, where {{env "NAME"}} passes
// the harness's variable NAME; the values it reads are kept as secrets.
func (v *validator) renderEnv(segs []any, s string) (string, bool) {
	return v.renderTemplate(segs, s, true)
}

func (v *validator) renderTemplate(segs []any, s string, allowEnv bool) (string, bool) {
	if !strings.Contains(s, "{{") {
		return s, true
	}
	// The values {{env}} reads are never quoted: an unset variable is named, a
	// set one only kept to be scrubbed.
	var envErr error
	var read []string
	funcs := template.FuncMap{envFunc: func(name string) (string, error) {
		val, err := lookupEnv(name)
		if err != nil {
			envErr = err
			return "", err
		}
		read = append(read, val)
		return val, nil
	}, publicKeyFunc: func(name string) (string, error) {
		key, err := v.publicKey(name)
		if err != nil {
			envErr = err
		}
		return key, err
	}}
	tpl, err := template.New(pathString(segs)).Option("missingkey=error").Funcs(funcs).Parse(s)
	if err != nil {
		v.fail(segs, "bad template: %v", err)
		return "", false
	}
	if !allowEnv && usesFunc(tpl.Tree.Root, envFunc) {
		v.fail(segs, "%s", envRefusal(pathString(segs)))
		return "", false
	}
	if v.used == nil {
		v.used = map[string]bool{}
	}
	templateVars(tpl.Tree.Root, v.used)
	data := map[string]string{}
	for k, val := range map[string]string{"BaseURL": v.vars.BaseURL, "DatabaseURL": v.vars.DatabaseURL,
		"ListenAddr": v.vars.ListenAddr, "Port": v.vars.Port, "SinkURL": v.vars.SinkURL, "ProviderAPIURL": v.vars.ProviderAPIURL} {
		if val != "" {
			data[k] = val
		}
	}
	var b strings.Builder
	if err := tpl.Execute(&b, data); err != nil {
		m := noEntryRE.FindStringSubmatch(err.Error())
		switch {
		case envErr != nil:
			v.fail(segs, "%v", envErr)
		case m == nil:
			v.fail(segs, "bad template: %v", err)
		case contains(varNames, m[1]):
			v.fail(segs, "template variable {{.%s}} is not set by the harness for this run", m[1])
		default:
			v.fail(segs, "unknown template variable {{.%s}} (valid: %s)", m[1], strings.Join(varNames, ", "))
		}
		return "", false
	}
	for _, val := range read {
		if len(val) >= minScrubbedEnv {
			v.envValues = append(v.envValues, val)
		}
	}
	return b.String(), true
}

// templateVars adds the variables ({{.Name}}) a template's parse tree refers to.
func templateVars(n tparse.Node, into map[string]bool) {
	switch n := n.(type) {
	case *tparse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				templateVars(c, into)
			}
		}
	case *tparse.ActionNode:
		templateVars(n.Pipe, into)
	case *tparse.PipeNode:
		if n != nil {
			for _, c := range n.Cmds {
				templateVars(c, into)
			}
		}
	case *tparse.CommandNode:
		for _, a := range n.Args {
			templateVars(a, into)
		}
	case *tparse.FieldNode:
		if len(n.Ident) > 0 {
			into[n.Ident[0]] = true
		}
	case *tparse.IfNode:
		templateVars(n.Pipe, into)
		templateVars(n.List, into)
		templateVars(n.ElseList, into)
	case *tparse.RangeNode:
		templateVars(n.Pipe, into)
		templateVars(n.List, into)
		templateVars(n.ElseList, into)
	case *tparse.WithNode:
		templateVars(n.Pipe, into)
		templateVars(n.List, into)
		templateVars(n.ElseList, into)
	}
}

// envFunc is the template function name that reads the harness's environment.
const envFunc = "env"

// publicKeyFunc is the template function that gives the public key of an
// endpoint whose provider signs with a private key (publickey.go).
const publicKeyFunc = "publicKey"

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
		"ref": func(string) string { return "" }, publicKeyFunc: func(string) string { return "" }}).Parse(src)
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
