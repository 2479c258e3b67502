package target

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

var errIOEOF = io.EOF

// The raw* types mirror the file one to one; the decoder rejects unknown fields.
type rawDoc struct {
	Target *rawTarget `yaml:"target"`
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
}

type rawLifecycle struct {
	Command   []string          `yaml:"command"`
	Env       map[string]string `yaml:"env"`
	Dir       string            `yaml:"dir"`
	Ready     *rawReady         `yaml:"ready"`
	StopGrace string            `yaml:"stop_grace"`
}

type rawReady struct {
	HTTP    string `yaml:"http"`
	Timeout string `yaml:"timeout"`
}

type rawObserve struct {
	Postgres *rawPostgres `yaml:"postgres"`
}

type rawPostgres struct {
	URL         string      `yaml:"url"`
	URLEnv      string      `yaml:"url_env"`
	EventTable  string      `yaml:"event_table"`
	EffectTable string      `yaml:"effect_table"`
	Queries     *rawQueries `yaml:"queries"`
}

type rawQueries struct {
	EventRows      string `yaml:"event_rows"`
	Effects        string `yaml:"effects"`
	ObjectEffects  string `yaml:"object_effects"`
	Object         string `yaml:"object"`
	Payment        string `yaml:"payment"`
	PayloadPresent string `yaml:"payload_present"`
}

type rawFailpoints struct {
	Path string `yaml:"path"`
}

// rawPaths names each raw type's place in the file, for unknown-field errors.
var rawPaths = map[string]reflect.Type{
	"(top level)":                     reflect.TypeOf(rawDoc{}),
	"target":                          reflect.TypeOf(rawTarget{}),
	"target.endpoints[]":              reflect.TypeOf(rawEndpoint{}),
	"target.lifecycle":                reflect.TypeOf(rawLifecycle{}),
	"target.lifecycle.ready":          reflect.TypeOf(rawReady{}),
	"target.observe":                  reflect.TypeOf(rawObserve{}),
	"target.observe.postgres":         reflect.TypeOf(rawPostgres{}),
	"target.observe.postgres.queries": reflect.TypeOf(rawQueries{}),
	"target.failpoints":               reflect.TypeOf(rawFailpoints{}),
	"target.retention":                reflect.TypeOf(rawRetention{}),
	"target.retention.purge":          reflect.TypeOf(rawPurge{}),
	"target.retention.purge.http":     reflect.TypeOf(rawPurgeHTTP{}),
}

var unknownFieldRE = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)

// explainYAML turns the decoder's errors into ones naming the section and the
// valid fields.
func explainYAML(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("invalid YAML: %w", err)
	}
	var errs []error
	for _, msg := range te.Errors {
		m := unknownFieldRE.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, errors.New(msg))
			continue
		}
		section, valid := "", []string(nil)
		for p, t := range rawPaths {
			if "target."+t.Name() == m[3] {
				section, valid = p, yamlFields(t)
			}
		}
		errs = append(errs, fmt.Errorf("line %s: unknown field %q in %s (valid: %s)",
			m[1], m[2], section, strings.Join(valid, ", ")))
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
