package targetfile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	// slugRE: profile names and capabilities are lower-case slugs.
	slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	// envNameRE: POSIX environment variable names.
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// identRE: one PostgreSQL identifier part of event_table (quoted verbatim later).
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)
)

// validator checks a decoded file and builds its Target in the same pass,
// recording every broken rule (fail) rather than stopping at the first.
type validator struct {
	root *yaml.Node
	vars Vars
	errs []*FieldError
	// bad are the paths the shape check found unusable (see shapeChecker).
	bad  map[string]bool
	opts options
	// used are the template variables the file's templates reference.
	used map[string]bool
	// envValues are the values {{env}} read (see Target.EnvSecrets).
	envValues []string
	// store is the observer section once read: the form its queries take.
	store *Store
	// target is the model being built: {{publicKey}} reads its endpoints.
	target *Target
}

// fail records a FieldError at path segs, unless the shape check already reported
// that field or one above it. The rule may quote a rendered template, so
// passwords are taken out of it.
func (v *validator) fail(segs []any, format string, args ...any) {
	if v.broken(segs) {
		return
	}
	rule := redactText(fmt.Sprintf(format, args...), v.vars.DatabaseURL)
	v.errs = append(v.errs, &FieldError{Path: pathString(segs), Rule: rule, Line: lineOf(v.root, segs)})
}

// broken reports whether the value at segs, or one of its parents, had the wrong
// shape.
func (v *validator) broken(segs []any) bool {
	if len(v.bad) == 0 {
		return false
	}
	for i := len(segs); i >= 0; i-- {
		p := pathString(segs[:i])
		if p == "" {
			p = "(top level)"
		}
		if v.bad[p] {
			return true
		}
	}
	return false
}

// brokenPath is broken for a dotted path such as "target.observe.postgres.queries.object".
func (v *validator) brokenPath(p string) bool {
	var segs []any
	for _, s := range strings.Split(p, ".") {
		segs = append(segs, s)
	}
	return v.broken(segs)
}

// brokenUnder reports whether the shape check refused anything at or below segs.
func (v *validator) brokenUnder(segs []any) bool {
	p := pathString(segs)
	for b := range v.bad {
		if b == p || strings.HasPrefix(b, p+".") || strings.HasPrefix(b, p+"[") {
			return true
		}
	}
	return v.broken(segs)
}

func pathString(segs []any) string {
	return joinPath(segs, func(i int) string { return "[" + strconv.Itoa(i) + "]" })
}

// joinPath renders a field path: names joined by dots, list indexes as index
// renders them.
func joinPath(segs []any, index func(int) string) string {
	var b strings.Builder
	for i, s := range segs {
		switch k := s.(type) {
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		case int:
			b.WriteString(index(k))
		}
	}
	return b.String()
}

func at(base []any, more ...any) []any {
	out := make([]any, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func (v *validator) duration(segs []any, s string, def time.Duration, allowZero bool) time.Duration {
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		v.fail(segs, "must be a duration like 30s or 1m (got %q)", s)
		return def
	}
	if d < 0 || (d == 0 && !allowZero) {
		v.fail(segs, "must be positive (got %s)", s)
	}
	return d
}

// boundedDuration is a positive duration of whole milliseconds (PostgreSQL's
// unit for timeouts) up to MaxObserveTimeout.
func (v *validator) boundedDuration(segs []any, s string, def time.Duration) time.Duration {
	d := v.duration(segs, s, def, false)
	switch {
	case d <= 0:
		return def
	case d > MaxObserveTimeout:
		v.fail(segs, "must be at most %s (got %s)", MaxObserveTimeout, s)
		return def
	case d%time.Millisecond != 0:
		v.fail(segs, "must be whole milliseconds (got %s)", s)
		return def
	}
	return d
}

// path checks a URL path field: starts with "/", no query or fragment.
func (v *validator) path(segs []any, s string, required bool) string {
	if s == "" {
		if required {
			v.fail(segs, "required")
		}
		return ""
	}
	r, ok := v.render(segs, s)
	if !ok {
		return ""
	}
	if !strings.HasPrefix(r, "/") {
		v.fail(segs, "must start with \"/\" (got %q)", r)
	} else if strings.ContainsAny(r, "?# \t") {
		v.fail(segs, "must be a plain path without query, fragment or spaces (got %q)", r)
	}
	return r
}

// tableNameOK reports whether name is a table or schema.table of identifier
// parts, safe to quote verbatim.
func tableNameOK(name string) bool {
	parts := strings.Split(name, ".")
	ok := len(parts) <= 2
	for _, p := range parts {
		ok = ok && identRE.MatchString(p)
	}
	return ok
}
