package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A contract names places in a JSON body with a small JSON path: "$" (the
// whole body), then ".name" or "[index]" steps ("$.data.object",
// "$.notificationItems[0].NotificationRequestItem"). Names run to the next
// '.' or '['. That is all a delivery contract needs, and working on the
// raw bytes keeps a body byte for byte what the envelope rendered.

type pathStep struct {
	name  string
	index int // -1 for a name step
}

// parseJSONPath splits a path into steps; the error says which rule failed.
func parseJSONPath(p string) ([]pathStep, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, errors.New("must start with $")
	}
	rest := p[1:]
	var steps []pathStep
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, errors.New("has an empty name after '.'")
			}
			steps = append(steps, pathStep{name: rest[:end], index: -1})
			rest = rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, errors.New("has a '[' without ']'")
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("has [%s], not a non-negative index", rest[1:end])
			}
			steps = append(steps, pathStep{name: "", index: n})
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("has %q where '.' or '[' must follow", rest[:1])
		}
	}
	return steps, nil
}

// jsonSpan finds the value at steps in doc: its start and end offsets.
func jsonSpan(doc []byte, steps []pathStep) (start, end int, err error) {
	s := &scanner{b: doc}
	s.space()
	for _, st := range steps {
		if s.i >= len(s.b) {
			return 0, 0, errors.New("not found")
		}
		found := false
		if st.index < 0 {
			if s.b[s.i] != '{' {
				return 0, 0, fmt.Errorf("%q: not inside an object", st.name)
			}
			s.i++
			for {
				s.space()
				if s.peek() == '}' {
					break
				}
				ks := s.i
				if err := s.skipValue(); err != nil {
					return 0, 0, err
				}
				var key string
				if err := json.Unmarshal(s.b[ks:s.i], &key); err != nil {
					return 0, 0, errors.New("invalid JSON object key")
				}
				s.space()
				if s.peek() != ':' {
					return 0, 0, errors.New("invalid JSON: ':' expected")
				}
				s.i++
				s.space()
				if key == st.name {
					found = true
					break
				}
				if err := s.skipValue(); err != nil {
					return 0, 0, err
				}
				s.space()
				if s.peek() == ',' {
					s.i++
				}
			}
			if !found {
				return 0, 0, fmt.Errorf("%q: no such field", st.name)
			}
			continue
		}
		if s.b[s.i] != '[' {
			return 0, 0, fmt.Errorf("[%d]: not inside an array", st.index)
		}
		s.i++
		for k := 0; ; k++ {
			s.space()
			if s.peek() == ']' {
				break
			}
			if k == st.index {
				found = true
				break
			}
			if err := s.skipValue(); err != nil {
				return 0, 0, err
			}
			s.space()
			if s.peek() == ',' {
				s.i++
			}
		}
		if !found {
			return 0, 0, fmt.Errorf("[%d]: no such element", st.index)
		}
	}
	start = s.i
	if err := s.skipValue(); err != nil {
		return 0, 0, err
	}
	return start, s.i, nil
}

// jsonAtPath returns the raw value at path.
func jsonAtPath(doc []byte, path string) ([]byte, error) {
	steps, err := parseJSONPath(path)
	if err != nil {
		return nil, err
	}
	a, b, err := jsonSpan(doc, steps)
	if err != nil {
		return nil, err
	}
	return doc[a:b], nil
}

// jsonText is a value as a receiver reads it for signing: a string's
// content, any other value's JSON text.
func jsonText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// replaceAtPath returns doc with the value at path replaced by value.
func replaceAtPath(doc []byte, path string, value []byte) ([]byte, error) {
	steps, err := parseJSONPath(path)
	if err != nil {
		return nil, err
	}
	a, b, err := jsonSpan(doc, steps)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return append([]byte(nil), value...), nil
	}
	out := make([]byte, 0, len(doc)-(b-a)+len(value))
	out = append(out, doc[:a]...)
	out = append(out, value...)
	return append(out, doc[b:]...), nil
}

// scanner skips JSON values; it checks only what finding a path needs, the
// caller validates the whole document where that matters.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) skipValue() error {
	s.space()
	if s.i >= len(s.b) {
		return errors.New("invalid JSON: value expected")
	}
	switch c := s.b[s.i]; c {
	case '"':
		s.i++
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '\\':
				s.i += 2
				continue
			case '"':
				s.i++
				return nil
			}
			s.i++
		}
		return errors.New("invalid JSON: unterminated string")
	case '{', '[':
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		s.i++
		for {
			s.space()
			if s.peek() == close {
				s.i++
				return nil
			}
			if err := s.skipValue(); err != nil {
				return err
			}
			s.space()
			switch s.peek() {
			case ',', ':':
				s.i++
			case close:
			default:
				return errors.New("invalid JSON: ',' expected")
			}
		}
	default:
		start := s.i
		for s.i < len(s.b) && !strings.ContainsRune(" \t\r\n,}]:", rune(s.b[s.i])) {
			s.i++
		}
		if s.i == start {
			return fmt.Errorf("invalid JSON: unexpected %q", s.b[start:start+1])
		}
		return nil
	}
}
