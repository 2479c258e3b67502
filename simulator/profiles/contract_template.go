package profiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// The templates of a contract are text/template strings. Their functions
// derive values the way the built-in profiles do (escaping, time formats,
// IDs hookcert makes up where a provider sends one of its own), so a data
// file can say exactly what a Go profile renders.

// templateFuncs are the functions every contract template may call. The
// ones that need a request (header) or a secret (hmacHex, hmacB64) are
// placeholders here, bound per execution; calling them where they are not
// bound is an error.
var templateFuncs = template.FuncMap{
	"json":          jsonValue,
	"unix":          func(t time.Time) int64 { return t.Unix() },
	"unixms":        func(t time.Time) int64 { return t.UnixMilli() },
	"usec":          func(t time.Time) int { return t.Nanosecond() / 1000 },
	"rfc3339":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"rfc3339nano":   func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"trimLast":      trimLast,
	"lastPart":      lastPart,
	"stableNumber":  func(parts ...any) int64 { return stableNumber(joinParts(parts)) },
	"stableUpper36": func(parts ...any) string { return string(appendSlackID(nil, "", "", joinParts(parts))) },
	"hash36":        hash36,
	"hashUUID":      hashUUID,
	"oneOf":         oneOf,
	"fail":          failTemplate,
	"upper":         strings.ToUpper,
	"lower":         strings.ToLower,
	"header":        unbound("header"),
	"hmacHex":       unbound("hmacHex"),
	"hmacB64":       unbound("hmacB64"),
}

func unbound(name string) func(string) (string, error) {
	return func(string) (string, error) {
		return "", fmt.Errorf("%s is not available in this template", name)
	}
}

// jsonValue writes v as JSON the way encoding/json does (HTML-escaped), so
// an envelope renders byte for byte what a Go profile's json.Marshal did.
func jsonValue(v any) (string, error) {
	if s, ok := v.(string); ok {
		return string(appendJSONString(nil, s)), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("json: %w", err)
	}
	return string(b), nil
}

// trimLast is s up to its last sep when that is not at the start, else s
// (GitHub's event name: "issues.closed" → "issues").
func trimLast(sep, s string) string {
	if i := strings.LastIndex(s, sep); i > 0 {
		return s[:i]
	}
	return s
}

// lastPart is s after its last sep, or s without one (GitHub's action).
func lastPart(sep, s string) string {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return s
}

func joinParts(parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case int:
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// hash36 is the first n characters of SHA-256(parts) in base 36: a stable
// stand-in for an ID the provider derives (Paddle's notification_id).
func hash36(n int, parts ...any) (string, error) {
	if n < 1 || n > 50 {
		return "", fmt.Errorf("hash36: length %d is not between 1 and 50", n)
	}
	sum := sha256.Sum256([]byte(joinParts(parts)))
	return string(appendBase36(nil, &sum, n)), nil
}

// hashUUID is a version-4-shaped UUID from SHA-256(parts).
func hashUUID(parts ...any) string {
	sum := sha256.Sum256([]byte(joinParts(parts)))
	return formatUUID(sum[:16])
}

func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

// templateFailure is the error a template raises with fail: its message is
// the data file's, returned as is.
type templateFailure struct{ msg string }

func (e *templateFailure) Error() string { return e.msg }

func failTemplate(msg string) (string, error) { return "", &templateFailure{msg: msg} }

// parseTemplate parses one contract template with the contract functions.
func parseTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, errors.New(cleanTemplateError(err))
	}
	return t, nil
}

// execTemplate renders t with data; a fail call comes back as its own
// message, other errors without text/template's position noise.
func execTemplate(t *template.Template, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		var f *templateFailure
		if errors.As(err, &f) {
			return nil, f
		}
		return nil, errors.New(cleanTemplateError(err))
	}
	return b.Bytes(), nil
}

var unknownField = regexp.MustCompile(`can't evaluate field (\w+) in type [\w.*]+`)

// cleanTemplateError drops text/template's "template: name:1:2: " prefix,
// which names our internal template, not the data file's field, and the Go
// type names a data file's author never sees.
func cleanTemplateError(err error) string {
	s := unknownField.ReplaceAllString(err.Error(), "{{.$1}} is not a field here")
	if rest, ok := strings.CutPrefix(s, "template: "); ok {
		// "name:line:col: executing \"name\" at <.X>: msg" or "name:line: msg"
		if i := strings.Index(rest, ": "); i >= 0 {
			rest = rest[i+2:]
		}
		if strings.HasPrefix(rest, "executing ") {
			if i := strings.Index(rest, ": "); i >= 0 {
				rest = rest[i+2:]
			}
		}
		return rest
	}
	return s
}

// templateRefs is what a template reads: the top-level fields of its data
// ({{.Body}} → "Body") and the functions it calls, with the constant
// arguments of header calls.
type templateRefs struct {
	fields  map[string]bool
	funcs   map[string]bool
	headers []string
	// bad lists header calls whose argument is not a quoted name.
	bad []string
}

func refsOf(t *template.Template) templateRefs {
	r := templateRefs{fields: map[string]bool{}, funcs: map[string]bool{}}
	if t == nil || t.Tree == nil {
		return r
	}
	r.walk(t.Tree.Root)
	return r
}

func (r *templateRefs) walk(n parse.Node) {
	switch n := n.(type) {
	case nil:
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			r.walk(c)
		}
	case *parse.ActionNode:
		r.walk(n.Pipe)
	case *parse.IfNode:
		r.branch(&n.BranchNode)
	case *parse.RangeNode:
		r.branch(&n.BranchNode)
	case *parse.WithNode:
		r.branch(&n.BranchNode)
	case *parse.TemplateNode:
		r.walk(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			r.walk(c)
		}
	case *parse.CommandNode:
		if len(n.Args) > 0 {
			if id, ok := n.Args[0].(*parse.IdentifierNode); ok && id.Ident == "header" {
				if len(n.Args) == 2 {
					if s, ok := n.Args[1].(*parse.StringNode); ok {
						r.headers = append(r.headers, s.Text)
					} else {
						r.bad = append(r.bad, n.String())
					}
				} else {
					r.bad = append(r.bad, n.String())
				}
			}
		}
		for _, a := range n.Args {
			r.walk(a)
		}
	case *parse.FieldNode:
		if len(n.Ident) > 0 {
			r.fields[n.Ident[0]] = true
		}
	case *parse.ChainNode:
		r.walk(n.Node)
	case *parse.IdentifierNode:
		r.funcs[n.Ident] = true
	}
}

func (r *templateRefs) branch(b *parse.BranchNode) {
	r.walk(b.Pipe)
	r.walk(b.List)
	if b.ElseList != nil {
		r.walk(b.ElseList)
	}
}
