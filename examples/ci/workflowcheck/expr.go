package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rhysd/actionlint"
)

// exprCtx evaluates GitHub Actions expressions (`${{ }}`) the way a runner
// does: actionlint parses them, this file gives the values. The contexts are
// maps of maps; a context the check does not fill (secrets, vars, matrix…) is
// an error, not an empty value, so a workflow cannot pass here on a value it
// would not get on GitHub.
type exprCtx struct {
	contexts map[string]any
	// strict names the contexts whose missing properties are errors: the
	// check fills github and runner with what it emulates and nothing more.
	strict map[string]bool
	// failed is the status the status functions see.
	failed bool
}

// interpolate replaces every ${{ … }} in s by its value as a string.
func (c *exprCtx) interpolate(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		node, end, err := parseExpr(s[i+3:])
		if err != nil {
			return "", err
		}
		v, err := c.eval(node)
		if err != nil {
			return "", fmt.Errorf("${{%s: %w", s[i+3:i+3+end], err)
		}
		str, err := toString(v)
		if err != nil {
			return "", err
		}
		b.WriteString(str)
		s = s[i+3+end:]
	}
}

// cond evaluates an if: condition. As on GitHub, the ${{ }} around it is
// optional, and a condition that calls no status function means
// success() && (condition).
func (c *exprCtx) cond(s string) (bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return !c.failed, nil
	}
	if strings.HasPrefix(s, "${{") && strings.HasSuffix(s, "}}") {
		s = strings.TrimSpace(s[3 : len(s)-2])
	}
	node, _, err := parseExpr(s + " }}")
	if err != nil {
		return false, fmt.Errorf("if %q: %w", s, err)
	}
	status := false
	actionlint.VisitExprNode(node, func(n, _ actionlint.ExprNode, entering bool) {
		if f, ok := n.(*actionlint.FuncCallNode); ok && entering {
			switch strings.ToLower(f.Callee) {
			case "always", "success", "failure", "cancelled":
				status = true
			}
		}
	})
	if !status && c.failed {
		return false, nil
	}
	v, err := c.eval(node)
	if err != nil {
		return false, fmt.Errorf("if %q: %w", s, err)
	}
	return truthy(v), nil
}

// parseExpr parses src, the text after "${{", up to and including its "}}";
// end is the offset just past the "}}".
func parseExpr(src string) (actionlint.ExprNode, int, error) {
	l := actionlint.NewExprLexer(src)
	node, perr := actionlint.NewExprParser().Parse(l)
	if perr != nil {
		return nil, 0, fmt.Errorf("expression %q: %s", strings.TrimSpace(firstLine(src)), perr.Message)
	}
	return node, l.Offset(), nil
}

func (c *exprCtx) eval(n actionlint.ExprNode) (any, error) {
	switch n := n.(type) {
	case *actionlint.NullNode:
		return nil, nil
	case *actionlint.BoolNode:
		return n.Value, nil
	case *actionlint.IntNode:
		return float64(n.Value), nil
	case *actionlint.FloatNode:
		return n.Value, nil
	case *actionlint.StringNode:
		return n.Value, nil
	case *actionlint.VariableNode:
		v, ok := c.contexts[strings.ToLower(n.Name)]
		if !ok {
			return nil, fmt.Errorf("the %s context is not emulated", n.Name)
		}
		return v, nil
	case *actionlint.ObjectDerefNode:
		return c.deref(n)
	case *actionlint.IndexAccessNode:
		recv, err := c.eval(n.Operand)
		if err != nil {
			return nil, err
		}
		idx, err := c.eval(n.Index)
		if err != nil {
			return nil, err
		}
		key, err := toString(idx)
		if err != nil {
			return nil, err
		}
		m, _ := recv.(map[string]any)
		return m[strings.ToLower(key)], nil
	case *actionlint.NotOpNode:
		v, err := c.eval(n.Operand)
		return !truthy(v), err
	case *actionlint.CompareOpNode:
		return c.compare(n)
	case *actionlint.LogicalOpNode:
		l, err := c.eval(n.Left)
		if err != nil {
			return nil, err
		}
		// Like the runner: the operand that decided, not a boolean.
		if (n.Kind == actionlint.LogicalOpNodeKindAnd) != truthy(l) {
			return l, nil
		}
		return c.eval(n.Right)
	case *actionlint.FuncCallNode:
		return c.call(n)
	}
	return nil, fmt.Errorf("%T is not emulated", n)
}

func (c *exprCtx) deref(n *actionlint.ObjectDerefNode) (any, error) {
	recv, err := c.eval(n.Receiver)
	if err != nil {
		return nil, err
	}
	m, ok := recv.(map[string]any)
	if !ok {
		return nil, nil // a property of null or of a string is null
	}
	// Property names are case-insensitive (actionlint hands them lowercased).
	v, ok := m[n.Property]
	for k, kv := range m {
		if !ok && strings.EqualFold(k, n.Property) {
			v, ok = kv, true
		}
	}
	if vn, isVar := n.Receiver.(*actionlint.VariableNode); !ok && isVar && c.strict[strings.ToLower(vn.Name)] {
		return nil, fmt.Errorf("%s.%s is not emulated", vn.Name, n.Property)
	}
	return v, nil
}

func (c *exprCtx) compare(n *actionlint.CompareOpNode) (any, error) {
	l, err := c.eval(n.Left)
	if err != nil {
		return nil, err
	}
	r, err := c.eval(n.Right)
	if err != nil {
		return nil, err
	}
	var cmp int
	ls, lok := l.(string)
	rs, rok := r.(string)
	if lok && rok {
		// Strings compare without regard to case.
		cmp = strings.Compare(strings.ToLower(ls), strings.ToLower(rs))
	} else {
		// Values of different types compare as numbers (NaN equals nothing).
		a, b := toNumber(l), toNumber(r)
		if math.IsNaN(a) || math.IsNaN(b) {
			return n.Kind == actionlint.CompareOpNodeKindNotEq, nil
		}
		switch {
		case a < b:
			cmp = -1
		case a > b:
			cmp = 1
		}
	}
	switch n.Kind {
	case actionlint.CompareOpNodeKindEq:
		return cmp == 0, nil
	case actionlint.CompareOpNodeKindNotEq:
		return cmp != 0, nil
	case actionlint.CompareOpNodeKindLess:
		return cmp < 0, nil
	case actionlint.CompareOpNodeKindLessEq:
		return cmp <= 0, nil
	case actionlint.CompareOpNodeKindGreater:
		return cmp > 0, nil
	case actionlint.CompareOpNodeKindGreaterEq:
		return cmp >= 0, nil
	}
	return nil, fmt.Errorf("operator %s is not emulated", n.Kind)
}

func (c *exprCtx) call(n *actionlint.FuncCallNode) (any, error) {
	name := strings.ToLower(n.Callee)
	switch name {
	case "always":
		return true, nil
	case "success":
		return !c.failed, nil
	case "failure":
		return c.failed, nil
	case "cancelled":
		return false, nil // the check never cancels a job
	}
	args := make([]any, len(n.Args))
	for i, a := range n.Args {
		v, err := c.eval(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	str := func(i int) string { s, _ := toString(args[i]); return strings.ToLower(s) }
	switch {
	case name == "contains" && len(args) == 2:
		return strings.Contains(str(0), str(1)), nil
	case name == "startswith" && len(args) == 2:
		return strings.HasPrefix(str(0), str(1)), nil
	case name == "endswith" && len(args) == 2:
		return strings.HasSuffix(str(0), str(1)), nil
	case name == "format" && len(args) >= 1:
		f, _ := toString(args[0])
		for i := 1; i < len(args); i++ {
			s, err := toString(args[i])
			if err != nil {
				return nil, err
			}
			f = strings.ReplaceAll(f, "{"+strconv.Itoa(i-1)+"}", s)
		}
		return f, nil
	case name == "tojson" && len(args) == 1:
		b, err := json.MarshalIndent(args[0], "", "  ")
		return string(b), err
	}
	return nil, fmt.Errorf("function %s with %d arguments is not emulated", n.Callee, len(args))
}

// truthy is the runner's coercion to a boolean.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// toNumber is the runner's coercion to a number.
func toNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return 0
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

// toString is how a value is written into a string (a run script, an input).
func toString(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("an object cannot be written as a string (use toJSON)")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
