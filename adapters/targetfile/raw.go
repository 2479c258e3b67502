package targetfile

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// The raw* types mirror the file one to one; the decoder rejects unknown fields.
type rawDoc struct {
	Target *rawTarget `yaml:"target"`
	// Profiles are the providers the file declares (profiles.go).
	Profiles []profiles.Contract `yaml:"profiles"`
}

type rawTarget struct {
	Name         string         `yaml:"name"`
	BaseURL      string         `yaml:"base_url"`
	Endpoints    []rawEndpoint  `yaml:"endpoints"`
	Lifecycle    *rawLifecycle  `yaml:"lifecycle"`
	Observe      *rawObserve    `yaml:"observe"`
	Failpoints   *rawFailpoints `yaml:"failpoints"`
	Capabilities []string       `yaml:"capabilities"`
	Limits       *rawLimits     `yaml:"limits"`
	Retention    *rawRetention  `yaml:"retention"`
	// The declared event vocabulary (events.go), its fixtures (fixtures.go) and
	// how the receiver acknowledges (acceptance.go).
	Events     *rawEvents            `yaml:"events"`
	Fixtures   map[string]rawFixture `yaml:"fixtures"`
	Acceptance *rawAcceptance        `yaml:"acceptance"`
	// Idempotency is how the receiver makes a redelivery harmless
	// (idempotency.go).
	Idempotency string `yaml:"idempotency"`
	// Setup prepares the receiver's database before it starts (setup.go).
	Setup *rawSetup `yaml:"setup"`
	// Inbox and Outbox declare the receiver's asynchronous work (queue.go).
	Inbox  *rawInbox  `yaml:"inbox"`
	Outbox *rawOutbox `yaml:"outbox"`
	// ProviderAPI is the harness's provider API the receiver may call
	// (providerapi.go).
	ProviderAPI *rawProviderAPI `yaml:"provider_api"`
}

type rawLimits struct {
	MaxBodyBytes int `yaml:"max_body_bytes"`
}

type rawEndpoint struct {
	Profile   string `yaml:"profile"`
	Source    string `yaml:"source"`
	Account   string `yaml:"account"`
	Path      string `yaml:"path"`
	Secret    string `yaml:"secret"`
	SecretEnv string `yaml:"secret_env"`
	// KeyTTL and PayloadTTL override target.retention's for this endpoint.
	KeyTTL     string `yaml:"key_ttl"`
	PayloadTTL string `yaml:"payload_ttl"`
	// AckTimeout is the acknowledgement timeout ACK-2 holds this endpoint to.
	AckTimeout string `yaml:"ack_timeout"`
}

type rawLifecycle struct {
	Command   []string          `yaml:"command"`
	Env       map[string]string `yaml:"env"`
	Dir       string            `yaml:"dir"`
	Ready     *rawReady         `yaml:"ready"`
	StopGrace string            `yaml:"stop_grace"`
	Worker    *rawWorker        `yaml:"worker"`
}

type rawWorker struct {
	Command   []string          `yaml:"command"`
	Env       map[string]string `yaml:"env"`
	Dir       string            `yaml:"dir"`
	Processes *int              `yaml:"processes"`
}

type rawReady struct {
	HTTP    string `yaml:"http"`
	Timeout string `yaml:"timeout"`
}

type rawObserve struct {
	Postgres *rawPostgres        `yaml:"postgres"`
	MySQL    *rawPostgres        `yaml:"mysql"`
	Redis    *rawRedis           `yaml:"redis"`
	Command  *rawCommandObserver `yaml:"command"`
	HTTP     *rawHTTPObserver    `yaml:"http"`
}

type rawRedis struct {
	URL              string      `yaml:"url"`
	URLEnv           string      `yaml:"url_env"`
	Queries          *rawQueries `yaml:"queries"`
	ConnectTimeout   string      `yaml:"connect_timeout"`
	StatementTimeout string      `yaml:"statement_timeout"`
}

type rawCommandObserver struct {
	Dir            string            `yaml:"dir"`
	Env            map[string]string `yaml:"env"`
	Timeout        string            `yaml:"timeout"`
	MaxOutputBytes *int              `yaml:"max_output_bytes"`
	Capabilities   string            `yaml:"capabilities"`
	Queries        *rawQueries       `yaml:"queries"`
}

type rawHTTPObserver struct {
	BaseURL      string      `yaml:"base_url"`
	Timeout      string      `yaml:"timeout"`
	MaxBodyBytes *int        `yaml:"max_body_bytes"`
	Capabilities string      `yaml:"capabilities"`
	Queries      *rawQueries `yaml:"queries"`
}

type rawPostgres struct {
	URL         string      `yaml:"url"`
	URLEnv      string      `yaml:"url_env"`
	EventTable  string      `yaml:"event_table"`
	EffectTable string      `yaml:"effect_table"`
	Queries     *rawQueries `yaml:"queries"`
	// Bounds on the observer's connection attempts and statements.
	ConnectTimeout   string `yaml:"connect_timeout"`
	StatementTimeout string `yaml:"statement_timeout"`
	LockTimeout      string `yaml:"lock_timeout"`
}

type rawQueries struct {
	EventRows      string `yaml:"event_rows"`
	Effects        string `yaml:"effects"`
	ObjectEffects  string `yaml:"object_effects"`
	Object         string `yaml:"object"`
	Payment        string `yaml:"payment"`
	PayloadPresent string `yaml:"payload_present"`
	KeyTTL         string `yaml:"key_ttl"`
}

type rawFailpoints struct {
	Path string `yaml:"path"`
}

// The shape check walks the YAML node tree against the raw types before anything
// is decoded, so that a value of the wrong type, an unknown field or a repeated key
// is reported with its field path, its line and a rule in the file's own terms,
// and the other fields are still validated.

type shapeChecker struct {
	errs []*FieldError
	// bad holds the paths whose value is unusable; validation skips them and
	// everything below them, so one mistake is not reported twice.
	bad map[string]bool
	// seen memoizes alias targets already checked as a type: an alias repeats a
	// node, and walking it again for every use could take exponential time.
	seen map[shapeKey]bool
}

type shapeKey struct {
	n *yaml.Node
	t reflect.Type
}

func newShapeChecker() *shapeChecker {
	return &shapeChecker{bad: map[string]bool{}, seen: map[shapeKey]bool{}}
}

func (c *shapeChecker) fail(segs []any, n *yaml.Node, format string, args ...any) {
	p := pathString(segs)
	if p == "" {
		p = "(top level)"
	}
	c.bad[p] = true
	c.errs = append(c.errs, &FieldError{Path: p, Rule: fmt.Sprintf(format, args...), Line: n.Line})
}

// describe names a node's kind the way the file's author sees it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing (null)"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "true or false"
		}
		return "a string"
	}
	return "an alias"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// section names the part of the file a struct type sits at, for unknown fields:
// "target.endpoints[]" for any endpoint.
func section(segs []any) string {
	if len(segs) == 0 {
		return "(top level)"
	}
	return joinPath(segs, func(int) string { return "[]" })
}

// check walks n, the value at segs, against type t.
func (c *shapeChecker) check(n *yaml.Node, t reflect.Type, segs []any) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		k := shapeKey{n, t}
		if c.seen[k] {
			return
		}
		c.seen[k] = true
	}
	if isNull(n) {
		return // absent: the validator says whether it is required
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if rs, ok := reflect.New(t).Interface().(roleShape); ok {
		c.checkRoles(n, rs.roleElem(), segs)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			c.fail(segs, n, "must be a mapping with the fields %s, got %s", strings.Join(yamlFields(t), ", "), describe(n))
			return
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			fields[strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]] = t.Field(i).Type
		}
		c.mapping(n, segs, func(key string, kn, vn *yaml.Node) {
			ft, ok := fields[key]
			if !ok {
				c.fail(at(segs, key), kn, "unknown field in %s (valid: %s)", section(segs), strings.Join(yamlFields(t), ", "))
				return
			}
			c.check(vn, ft, at(segs, key))
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			what := "strings"
			if t.Elem().Kind() == reflect.Struct {
				what = "mappings"
			}
			c.fail(segs, n, "must be a mapping of names to %s, got %s", what, describe(n))
			return
		}
		c.mapping(n, segs, func(key string, _, vn *yaml.Node) { c.check(vn, t.Elem(), at(segs, key)) })
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			what := "strings"
			if t.Elem().Kind() == reflect.Struct {
				what = "mappings"
			}
			c.fail(segs, n, "must be a list of %s, got %s", what, describe(n))
			return
		}
		for i, e := range n.Content {
			c.check(e, t.Elem(), at(segs, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			c.fail(segs, n, "must be a string, got %s", describe(n))
		}
	case reflect.Bool:
		switch {
		case n.Kind != yaml.ScalarNode:
			c.fail(segs, n, "must be true or false, got %s", describe(n))
		case n.ShortTag() != "!!bool":
			c.fail(segs, n, "must be true or false, got %q", n.Value)
		}
	case reflect.Int:
		var v int
		if n.Kind != yaml.ScalarNode {
			c.fail(segs, n, "must be an integer, got %s", describe(n))
		} else if err := n.Decode(&v); err != nil {
			c.fail(segs, n, "must be an integer, got %q", n.Value)
		}
	}
}

// mapping calls f for each key of n, merged keys ("<<: *anchor") included, and
// reports keys that are not plain names or that repeat.
func (c *shapeChecker) mapping(n *yaml.Node, segs []any, f func(key string, kn, vn *yaml.Node)) {
	lines := map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		if kn.Kind != yaml.ScalarNode {
			c.fail(segs, kn, "keys must be plain names, got %s", describe(kn))
			continue
		}
		if l, dup := lines[kn.Value]; dup {
			c.fail(at(segs, kn.Value), kn, "repeated key (first at line %d)", l)
			continue
		}
		lines[kn.Value] = kn.Line
		f(kn.Value, kn, vn)
	}
	// Merged keys count only where the mapping does not set them itself.
	for _, m := range merges {
		for m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			for src.Kind == yaml.AliasNode && src.Alias != nil {
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				c.fail(segs, src, "<< must merge a mapping, got %s", describe(src))
				continue
			}
			if c.seen[shapeKey{src, nil}] {
				continue
			}
			c.seen[shapeKey{src, nil}] = true
			for i := 0; i+1 < len(src.Content); i += 2 {
				kn := src.Content[i]
				if kn.Kind != yaml.ScalarNode || kn.ShortTag() == "!!merge" {
					continue
				}
				if _, set := lines[kn.Value]; !set {
					lines[kn.Value] = kn.Line
					f(kn.Value, kn, src.Content[i+1])
				}
			}
		}
	}
}

// explainYAML turns a decoder error the shape check did not foresee into a
// message (a safety net: the shape check reports type errors with their paths).
func explainYAML(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("invalid YAML: %w", err)
	}
	var errs []error
	for _, msg := range te.Errors {
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

func yamlFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		out = append(out, strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0])
	}
	sort.Strings(out)
	return out
}

// lineOf finds the line of a field path in the node tree (string segments are
// mapping keys, int segments sequence indexes), falling back to the deepest
// present parent.
func lineOf(root *yaml.Node, segs []any) int {
	n := root
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, s := range segs {
		var next *yaml.Node
		switch k := s.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return line
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					line = n.Content[i].Line
					next = n.Content[i+1]
				}
			}
		case int:
			if n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return line
			}
			next = n.Content[k]
			line = next.Line
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}
