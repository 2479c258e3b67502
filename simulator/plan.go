package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// EventSpec describes one logical event of a plan. Empty ID means "generate from
// the seed"; empty Account means the target's account.
type EventSpec struct {
	Name string `yaml:"name" json:"name"`
	ID   string `yaml:"id,omitempty" json:"id,omitempty"`
	// Source is the event key's source the receiver derives (default: the
	// profile ID; a target may name its endpoints' sources otherwise).
	Source   string `yaml:"source,omitempty" json:"source,omitempty"`
	Account  string `yaml:"account,omitempty" json:"account,omitempty"`
	Type     string `yaml:"type" json:"type"`
	ObjectID string `yaml:"object_id,omitempty" json:"object_id,omitempty"`
	Version  int64  `yaml:"version,omitempty" json:"version,omitempty"`
	Amount   int64  `yaml:"amount,omitempty" json:"amount,omitempty"`
	Currency string `yaml:"currency,omitempty" json:"currency,omitempty"`
	Status   string `yaml:"status,omitempty" json:"status,omitempty"`
	// Object is the target's own business object for this event, a JSON
	// object the profile places verbatim where its envelope carries the object
	// (profiles.Event.Object, Facts.DeclaredObjectJSONPath) instead of the
	// fields above. In YAML it is either a string holding the JSON (kept byte
	// for byte) or a mapping (converted to compact JSON with its keys sorted,
	// as encoding/json writes a map). In JSON it is the object itself; a JSON
	// round trip keeps the value, not the whitespace.
	Object json.RawMessage `yaml:"-" json:"object,omitempty"`
	// Created is the event's creation time rendered into the envelope (RFC
	// 3339); zero means the run's start, truncated to the second.
	Created time.Time `yaml:"-" json:"created,omitzero"`
}

// eventSpecPlain is EventSpec without its YAML methods.
type eventSpecPlain EventSpec

// eventSpecYAML is EventSpec as YAML reads and writes it: the object is a
// mapping or a JSON string.
type eventSpecYAML struct {
	eventSpecPlain `yaml:",inline"`
	Object         yamlJSONObject `yaml:"object,omitempty"`
	Created        yamlTime       `yaml:"created,omitempty"`
}

// UnmarshalYAML reads an event, its object as a mapping or a JSON string. It
// takes the decoding function (not a node) so that the plan decoder's
// unknown-field check still applies to the event's fields.
func (e *EventSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var s eventSpecYAML
	if err := unmarshal(&s); err != nil {
		return err
	}
	*e = EventSpec(s.eventSpecPlain)
	e.Object, e.Created = nil, time.Time(s.Created)
	if s.Object != nil {
		e.Object = json.RawMessage(s.Object)
	}
	return nil
}

// MarshalYAML writes the object as a JSON string, so it reads back byte for byte.
func (e EventSpec) MarshalYAML() (any, error) {
	return eventSpecYAML{eventSpecPlain: eventSpecPlain(e), Object: yamlJSONObject(e.Object), Created: yamlTime(e.Created)}, nil
}

// yamlTime is an RFC 3339 time in YAML, quoted or not.
type yamlTime time.Time

func (t *yamlTime) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.Parse(time.RFC3339Nano, n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return fmt.Errorf("line %d: created must be an RFC 3339 time like 2025-06-01T12:30:00Z, got %q", n.Line, n.Value)
	}
	*t = yamlTime(v)
	return nil
}

func (t yamlTime) MarshalYAML() (any, error) { return time.Time(t).Format(time.RFC3339Nano), nil }

// IsZero lets omitempty leave out an unset time.
func (t yamlTime) IsZero() bool { return time.Time(t).IsZero() }

// yamlJSONObject is a JSON object written in YAML as a mapping or a string.
type yamlJSONObject []byte

func (o *yamlJSONObject) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		if err := profiles.CheckObject([]byte(n.Value)); err != nil {
			return fmt.Errorf("line %d: object: the string %w", n.Line, err)
		}
		*o = yamlJSONObject(n.Value)
		return nil
	case n.Kind == yaml.MappingNode:
		var v map[string]any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: object: %w", n.Line, err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("line %d: object: not representable as JSON (keys must be strings, numbers finite): %w", n.Line, err)
		}
		*o = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		return nil
	}
	return fmt.Errorf("line %d: object must be a mapping or a string holding a JSON object", n.Line)
}

func (o yamlJSONObject) MarshalYAML() (any, error) { return string(o), nil }

// Replay makes a step resend an earlier step's delivery.
type Replay struct {
	// Of is the name of the earlier step whose event is resent.
	Of string `yaml:"of" json:"of"`
	// OriginalTimestamp resends with the original signed timestamp (stale by now);
	// false re-signs with the current time (fresh).
	OriginalTimestamp bool `yaml:"original_timestamp,omitempty" json:"original_timestamp,omitempty"`
}

// Step is one delivery of an event: Copies copies released together, with faults,
// optionally followed through the provider's retry schedule. Steps run in order;
// a step starts after Wait (provider time) once the previous step's first attempt
// ended; retries run in the background so later steps interleave with them.
type Step struct {
	Name  string `yaml:"name,omitempty" json:"name,omitempty"`
	Event string `yaml:"event" json:"event"`
	// Wait is the provider-time pause before this step (compressed by TimeScale).
	Wait   Duration `yaml:"wait,omitempty" json:"wait,omitempty"`
	Copies int      `yaml:"copies,omitempty" json:"copies,omitempty"`
	// Shape is how the step is sent: attempt, faults, timeout and pad_to, at
	// the step's level in a plan. Faults apply to the first attempt only
	// (retries are clean); the timeout overrides the plan's per-attempt one;
	// PadTo is for boundary tests of a receiver's size limit, not a fault: the
	// delivery stays legitimate, and its retries are padded alike.
	Shape `yaml:",inline"`
	// Retry follows the profile's schedule until acknowledgement, a stop verdict or
	// exhaustion.
	Retry  bool    `yaml:"retry,omitempty" json:"retry,omitempty"`
	Replay *Replay `yaml:"replay,omitempty" json:"replay,omitempty"`
	// WithPrevious starts the step together with the one before it instead of
	// after it: consecutive such steps deliver distinct events at the same time.
	WithPrevious bool `yaml:"with_previous,omitempty" json:"with_previous,omitempty"`
}

// stepWire is Step as plans are written: its fields and Shape's in the order
// plans have always had, which embedding Shape would change (YAML and JSON
// write an embedded struct's fields where it is embedded). Reading needs no
// such thing: field order does not matter there.
type stepWire struct {
	Name         string   `yaml:"name,omitempty" json:"name,omitempty"`
	Event        string   `yaml:"event" json:"event"`
	Wait         Duration `yaml:"wait,omitempty" json:"wait,omitempty"`
	Copies       int      `yaml:"copies,omitempty" json:"copies,omitempty"`
	Faults       Faults   `yaml:"faults,omitempty" json:"faults,omitempty"`
	Retry        bool     `yaml:"retry,omitempty" json:"retry,omitempty"`
	Timeout      Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	Replay       *Replay  `yaml:"replay,omitempty" json:"replay,omitempty"`
	Attempt      int      `yaml:"attempt,omitempty" json:"attempt,omitempty"`
	WithPrevious bool     `yaml:"with_previous,omitempty" json:"with_previous,omitempty"`
	PadTo        int      `yaml:"pad_to,omitempty" json:"pad_to,omitempty"`
}

func (s Step) wire() stepWire {
	return stepWire{Name: s.Name, Event: s.Event, Wait: s.Wait, Copies: s.Copies, Faults: s.Faults, Retry: s.Retry,
		Timeout: s.Timeout, Replay: s.Replay, Attempt: s.Attempt, WithPrevious: s.WithPrevious, PadTo: s.PadTo}
}

// MarshalYAML writes the step's fields in the plan format's order.
func (s Step) MarshalYAML() (any, error) { return s.wire(), nil }

// MarshalJSON writes the step's fields in the plan format's order. HTML
// characters are left to the caller's encoder to escape or not, as they were
// before Step had this method.
func (s Step) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.wire()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Plan is what the simulator will do. Load one from YAML with ParsePlan or
// LoadPlanFile, or build it in Go.
type Plan struct {
	Name   string      `yaml:"name,omitempty" json:"name,omitempty"`
	Seed   int64       `yaml:"seed" json:"seed"`
	Events []EventSpec `yaml:"events" json:"events"`
	Steps  []Step      `yaml:"steps" json:"steps"`
	// TimeScale is provider seconds per real second for waits (0 or 1: real time).
	TimeScale float64 `yaml:"time_scale,omitempty" json:"time_scale,omitempty"`
	// Timeout overrides the profile's per-attempt timeout for every step.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// RetryDelays replaces the profile's retry delays; required in effect where the
	// profile publishes none, otherwise DefaultRetryDelays is used.
	RetryDelays []Duration `yaml:"retry_delays,omitempty" json:"retry_delays,omitempty"`
	// MaxAttempts caps attempts per delivery (first attempt included); 0 = schedule.
	MaxAttempts int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty"`
	// Jitter spreads each retry delay uniformly by ±Jitter (0 ≤ Jitter < 1), seeded.
	Jitter float64 `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// HonourRetryAfter overrides whether a Retry-After response header sets the
	// next wait; nil follows the profile (see RetryAfterHonourer).
	HonourRetryAfter *bool `yaml:"honour_retry_after,omitempty" json:"honour_retry_after,omitempty"`
}

// ParsePlan reads a YAML plan; unknown fields are errors.
func ParsePlan(b []byte) (*Plan, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("parse plan: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// LoadPlanFile reads and validates a YAML plan file.
func LoadPlanFile(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load plan: %w", err)
	}
	p, err := ParsePlan(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
