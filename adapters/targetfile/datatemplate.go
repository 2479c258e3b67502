package targetfile

import (
	"fmt"
	"strings"
	"text/template"

	"github.com/hookcert/hookcert/vocab"
)

// Object and fixture templates are Go text/templates over vocab.ObjectData,
// parsed and rendered once with sample data at load so a mistake is refused there.

// DataTemplate is a fixture's command argument, request path or body: a Go
// text/template over vocab.ObjectData, with ref "prefix" like object
// templates. It is safe for concurrent use.
type DataTemplate struct {
	src string
	t   *template.Template
}

// sampleData renders templates once at load, as vocab.ParseObjectTemplate does.
var sampleData = vocab.ObjectData{EventID: "evt_sample", Type: "sample.type", ObjectID: "obj_sample", Source: "src",
	Account: "acct", Currency: "usd", State: "state", Amount: 1234, Created: 1700000000, Key: 1}

// dataVars are the template variables of object and fixture templates.
const dataVars = ".EventID .Type .ObjectID .Source .Account .Currency .State .Amount .Created .Key"

// ParseDataTemplate parses src and renders it once with sample values, so an
// unknown variable is refused at load.
func ParseDataTemplate(src string) (*DataTemplate, error) {
	t, err := template.New("fixture").Option("missingkey=error").Funcs(template.FuncMap{
		"ref": func(string) string { return "" },
	}).Parse(src)
	if err != nil {
		return nil, err
	}
	dt := &DataTemplate{src: src, t: t}
	if _, err := dt.Render(sampleData); err != nil {
		return nil, err
	}
	return dt, nil
}

// Render renders the template for d.
func (dt *DataTemplate) Render(d vocab.ObjectData) (string, error) {
	// ref reads the data being rendered: a clone per call keeps Render safe for
	// concurrent use.
	t, err := dt.t.Clone()
	if err != nil {
		return "", err
	}
	t.Funcs(template.FuncMap{"ref": func(prefix string) string { return vocab.Ref(prefix, d.ObjectID) }})
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Source returns the template text.
func (dt *DataTemplate) Source() string { return dt.src }

// templateError explains a template that does not parse or render.
func templateError(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "can't evaluate field") || strings.Contains(msg, "not defined") {
		return fmt.Sprintf("bad template: %s (variables: %s; function: ref \"prefix\")", msg, dataVars)
	}
	return "bad template: " + msg
}

// objectTemplate parses an optional object template.
func (v *validator) objectTemplate(segs []any, src string) *vocab.ObjectTemplate {
	if strings.TrimSpace(src) == "" {
		return nil
	}
	ot, err := vocab.ParseObjectTemplate(src)
	if err != nil {
		v.fail(segs, "%s", templateError(err))
		return nil
	}
	return ot
}

// usesVar reports whether a template refers to {{.<name>}}.
func usesVar(src, name string) bool {
	t, err := template.New("k").Funcs(template.FuncMap{"ref": func(string) string { return "" }, "stripeObject": func(string) string { return "" }}).Parse(src)
	if err != nil {
		return false
	}
	vars := map[string]bool{}
	templateVars(t.Tree.Root, vars)
	return vars[name]
}

// usesKey reports whether a template refers to {{.Key}}.
func usesKey(src string) bool {
	t, err := template.New("k").Funcs(template.FuncMap{"ref": func(string) string { return "" }}).Parse(src)
	if err != nil {
		return false
	}
	vars := map[string]bool{}
	templateVars(t.Tree.Root, vars)
	return vars["Key"]
}
