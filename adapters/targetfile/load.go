package targetfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes caps the size of a target file: 1 MiB, hundreds of times a real
// one, so a wrong path (a log, a database dump) fails at once instead of being
// parsed into memory.
const MaxFileBytes = 1 << 20

// ErrTooLarge is wrapped by the error for a file larger than MaxFileBytes.
var ErrTooLarge = errors.New("target file too large")

// Option tunes Parse, Load and Validate.
type Option func(*options)

type options struct {
	profiles []string
	// placeholders: the template variables hold stand-ins, not the run's values.
	placeholders bool
	// baseDir: relative paths are resolved against it (WithBaseDir).
	baseDir string
	// hooks: parts a Go test supplies as functions (WithGoHooks).
	hooks GoHooks
}

// GoHooks says which parts of a target a Go test supplies as functions
// instead of the file's own (library mode, hookcerttest): each satisfies the
// rule that would otherwise need the file's section.
type GoHooks struct {
	// Controller: Kill and Restart functions take the place of
	// target.lifecycle for capability crash.
	Controller bool
	// Purge: a purge function takes the place of target.retention.purge.
	Purge bool
	// Fixtures are fixture names the test creates in Go, which events may name
	// beside target.fixtures.
	Fixtures []string
}

// WithGoHooks checks the target with the parts h says a Go test supplies.
func WithGoHooks(h GoHooks) Option { return func(o *options) { o.hooks = h } }

// WithProfiles checks every endpoint's profile against known (the simulator's
// profile registry, which this package does not import), beside the other rules
// and with its line. An empty list checks nothing.
func WithProfiles(known []string) Option {
	return func(o *options) { o.profiles = known }
}

// PlaceholderVars are the stand-in template values Validate renders with: any
// check they pass, the harness's real values pass too.
var PlaceholderVars = Vars{
	DatabaseURL: "postgres://hookcert@127.0.0.1:5432/hookcert",
	ListenAddr:  "127.0.0.1:65535",
	SinkURL:     "http://127.0.0.1:65534",
	Port:        "65535",
	// The provider API's stand-in, beside the sink's.
	ProviderAPIURL: "http://127.0.0.1:65533",
}

// Inspect checks a whole target file as Validate does and returns it rendered
// with PlaceholderVars, to learn what the run must provide (Uses) before
// anything is provisioned. Its URLs and commands are stand-ins: Parse the file
// with the run's values to use it.
func Inspect(data []byte, knownProfiles []string, opts ...Option) (*Target, error) {
	o := options{profiles: knownProfiles}
	for _, f := range opts {
		f(&o)
	}
	o.placeholders = true
	return parse(data, PlaceholderVars, o)
}

// Validate checks a whole target file before anything is provisioned: template
// variables are rendered with PlaceholderVars, so every rule is checked except
// what only the run's real values could break (a duplicate endpoint path is
// reported only when the two templates are identical). Environment variables
// (secret_env, url_env) are read as Parse reads them. knownProfiles may be nil.
// The errors are those of Parse.
func Validate(data []byte, knownProfiles []string, opts ...Option) error {
	_, err := Inspect(data, knownProfiles, opts...)
	return err
}

// ReadFile reads a target file, refusing one larger than MaxFileBytes with an
// error naming the file, its size and the limit.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("target file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("target file %s: %w: %d bytes, limit %d bytes (1 MiB)", path, ErrTooLarge, fi.Size(), MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("target file %s: %w: more than %d bytes (1 MiB)", path, ErrTooLarge, MaxFileBytes)
	}
	return data, nil
}

// Load reads and validates a target file (see ReadFile and Parse). Its
// relative paths are resolved against the file's directory.
func Load(path string, vars Vars, opts ...Option) (*Target, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	dir, err := BaseDir(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data, vars, append([]Option{WithBaseDir(dir)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	t.Source = path
	return t, nil
}

// Parse decodes and validates a target file's content. All errors are returned
// together (errors.Join), in line order; each is a *FieldError naming the field
// path, its line and the rule: values of the wrong type, unknown fields and
// repeated keys as well as the validation rules. Content larger than
// MaxFileBytes, or with more than one YAML document, is refused.
func Parse(data []byte, vars Vars, opts ...Option) (*Target, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return parse(data, vars, o)
}

// decodeFirst bounds data and decodes its first YAML document into root;
// empty reports a file with no document at all. dec reads on from there.
func decodeFirst(data []byte) (dec *yaml.Decoder, root yaml.Node, empty bool, err error) {
	if len(data) > MaxFileBytes {
		return nil, root, false, fmt.Errorf("%w: %d bytes, limit %d bytes (1 MiB)", ErrTooLarge, len(data), MaxFileBytes)
	}
	dec = yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return dec, root, true, nil
		}
		return nil, root, false, fmt.Errorf("invalid YAML: %w", err)
	}
	return dec, root, false, nil
}

func parse(data []byte, vars Vars, o options) (*Target, error) {
	dec, root, empty, err := decodeFirst(data)
	if err != nil {
		return nil, err
	}
	if empty {
		return nil, &FieldError{Path: "target", Rule: "required (the file is empty)"}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("invalid YAML: %w", err)
	case !emptyDocument(&next):
		return nil, &FieldError{Path: "(file)", Line: next.Line,
			Rule: "a second YAML document starts here; a target file holds one (remove the --- line and what follows, or split the file)"}
	}
	sc := newShapeChecker()
	sc.check(&root, reflect.TypeOf(rawDoc{}), nil)
	var doc rawDoc
	// Decoding goes on past values of the wrong type, leaving them zero; the
	// shape check has reported them with their paths.
	if err := root.Decode(&doc); err != nil {
		var te *yaml.TypeError
		switch {
		case len(sc.errs) > 0 && !errors.As(err, &te):
			// The decoder gave up (e.g. on a bad merge): the shape errors say why.
			return nil, joinSorted(sc.errs)
		case len(sc.errs) == 0:
			return nil, explainYAML(err)
		}
	}
	v := &validator{root: &root, vars: vars, bad: sc.bad, opts: o}
	t := v.build(&doc)
	if t != nil {
		t.vars, t.envValues, t.Dir = v.used, v.envValues, o.baseDir
	}
	errs := make([]*FieldError, 0, len(sc.errs)+len(v.errs))
	errs = append(append(errs, sc.errs...), v.errs...)
	if len(errs) == 0 {
		return t, nil
	}
	return nil, joinSorted(errs)
}

// emptyDocument reports whether a document holds nothing (a trailing "---").
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		c := n.Content[0]
		return c.Kind == yaml.ScalarNode && c.ShortTag() == "!!null" && c.Value == ""
	}
	return len(n.Content) == 0
}
