package reports

import (
	"reflect"

	"github.com/hookcert/hookcert/adapters/scrub"
)

// Redacted replaces every secret value in rendered output.
const Redacted = scrub.Redacted

// scrubber walks the results; the scrubbing itself is adapters/scrub's, the one
// implementation every output path of hookcert shares.
type scrubber struct {
	s *scrub.Scrubber
	// fn, when set, replaces the scrubbing (see visibleControls).
	fn func(string) string
}

func newScrubber(secrets []string) *scrubber { return &scrubber{s: scrub.New(secrets...)} }

func (s *scrubber) scrub(v string) string {
	if s.fn != nil {
		return s.fn(v)
	}
	return s.s.String(v)
}

// visibleControls returns a deep copy of r whose strings show control, bidi and
// zero-width characters as visible escapes (newlines and tabs kept): html/template
// escapes markup, not these, and a receiver's answer may carry any of them.
func visibleControls(r *Results) *Results {
	s := &scrubber{fn: func(v string) string { return escapeControls(v, true) }}
	out := s.copyValue(reflect.ValueOf(r).Elem())
	res := out.Interface().(Results)
	return &res
}

// Redact returns a deep copy of r in which every string (map keys included) has the
// given secrets replaced by [REDACTED], as have well-known secret patterns (whsec_…
// signing secrets, API keys, passwords in URLs and connection strings). r is not modified.
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
