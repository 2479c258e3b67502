package targetfile

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// FieldError is one error of a target file: the field path, the rule, and the line
// of the field (or of its closest present parent) when known.
type FieldError struct {
	Path string
	Rule string
	Line int
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Rule)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Rule)
}

// maxReported caps the errors one file reports; a file with more is not a target
// file with mistakes but something else.
const maxReported = 500

// joinSorted joins errors in line order (the way the file reads; errors without a
// line, 0, first), at most maxReported of them.
func joinSorted(errs []*FieldError) error {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	out := make([]error, 0, min(len(errs), maxReported)+1)
	for _, e := range errs[:min(len(errs), maxReported)] {
		out = append(out, e)
	}
	if len(errs) > maxReported {
		out = append(out, fmt.Errorf("… and %d more errors", len(errs)-maxReported))
	}
	return errors.Join(out...)
}

// userinfoRE finds the password of a URL anywhere in a text: scheme://user:password@.
var userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@"]*):[^\s@/"]*@`)

// redactText hides passwords in an error message that may quote a rendered
// template: the database URL given to the harness (whole, or its bare password if
// a template function changed the rest), any URL's userinfo password and any
// password=... setting.
func redactText(s, dbURL string) string {
	if dbURL != "" {
		if r := redactURL(dbURL); r != dbURL {
			s = strings.ReplaceAll(s, dbURL, r)
		}
		if pw := urlPassword(dbURL); len(pw) >= 3 {
			s = strings.ReplaceAll(s, pw, "xxxxx")
		}
	}
	s = userinfoRE.ReplaceAllString(s, "${1}:xxxxx@")
	return passwordKVRE.ReplaceAllString(s, "${1}xxxxx")
}

// passwordKVRE finds a libpq password=value setting, quoted or not.
var passwordKVRE = regexp.MustCompile(`(?i)\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'"]+)`)

// urlPassword returns the password of a URL or key=value connection string, "" if
// it has none.
func urlPassword(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		return u.Query().Get("password")
	}
	for _, f := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// redactURL hides a password in a URL or key=value connection string.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	if strings.Contains(s, "password=") {
		var parts []string
		for _, f := range strings.Fields(s) {
			if strings.HasPrefix(f, "password=") {
				f = "password=xxxxx"
			}
			parts = append(parts, f)
		}
		return strings.Join(parts, " ")
	}
	return s
}
