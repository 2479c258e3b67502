package reports

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret value in rendered output.
const Redacted = "[REDACTED]"

// Patterns scrubbed from every string even when nobody listed the value as a secret.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Standard Webhooks / Svix / Stripe signing secrets are "whsec_" + base64 or
	// alphanumerics; asymmetric Standard Webhooks secret keys are "whsk_" + base64
	// (../shared/providers.yaml, standard-webhooks.secret_format). The prefix stays
	// so a reader still sees which kind of value was there.
	{regexp.MustCompile(`(whsec_|whsk_)[A-Za-z0-9+/=_\-]{4,}`), "${1}" + Redacted},
	// The password in a URL's userinfo: postgres://user:password@host/db.
	{regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):[^\s@/]*@`), "${1}:" + Redacted + "@"},
	// The password in a libpq keyword/value connection string: password=... or password='...'.
	{regexp.MustCompile(`(?i)\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']+)`), "${1}" + Redacted},
}

// scrubber replaces listed secrets and well-known secret patterns in strings.
type scrubber struct {
	secrets []string // longest first, so a secret containing another is removed whole
}

func newScrubber(secrets []string) *scrubber {
	s := &scrubber{}
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			s.secrets = append(s.secrets, v)
		}
	}
	for _, v := range secrets {
		add(v)
		// Standard Webhooks libraries also accept the secret without its prefix
		// (../shared/providers.yaml, standard-webhooks test vector note), so the bare
		// base64 part may show up in a receiver's error text too.
		if rest, ok := strings.CutPrefix(v, "whsec_"); ok && len(rest) >= 8 {
			add(rest)
		}
	}
	sort.SliceStable(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
	return s
}

func (s *scrubber) scrub(v string) string {
	for _, sec := range s.secrets {
		if strings.Contains(v, sec) {
			v = strings.ReplaceAll(v, sec, Redacted)
		}
	}
	// Each pattern needs a marker substring; most strings have none, and a
	// substring test is far cheaper than a regular expression over every string.
	if !strings.Contains(v, "whsec_") && !strings.Contains(v, "whsk_") && !strings.Contains(v, "://") && !containsFold(v, "password") {
		return v
	}
	for _, p := range secretPatterns {
		v = p.re.ReplaceAllString(v, p.repl)
	}
	return v
}

// containsFold reports whether s contains the lower-case ASCII word, in any case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if c := s[i] | 0x20; c == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// Redact returns a deep copy of r in which every string (map keys included) has the
// given secrets replaced by [REDACTED], as have well-known secret patterns (whsec_…
// signing secrets, passwords in URLs and connection strings). r is not modified.
func Redact(r *Results, secrets []string) *Results {
	if r == nil {
		return nil
	}
	s := newScrubber(secrets)
	out := s.copyValue(reflect.ValueOf(r).Elem())
	res := out.Interface().(Results)
	return &res
}

// copyValue deep-copies v, scrubbing every string on the way. Walking by reflection
// means a field added to the model later is scrubbed without anyone remembering to.
func (s *scrubber) copyValue(v reflect.Value) reflect.Value {
	t := v.Type()
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(t).Elem()
		out.SetString(s.scrub(v.String()))
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v) // keeps unexported state such as time.Time's
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				out.Field(i).Set(s.copyValue(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(s.copyValue(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(s.copyValue(it.Key()), s.copyValue(it.Value()))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(s.copyValue(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		out := reflect.New(t).Elem()
		out.Set(s.copyValue(v.Elem()))
		return out
	}
	return v
}
