package simulator

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// MaxCopies bounds the copies of one barrier release (one connection each).
const MaxCopies = 1024

// Duration is a time.Duration that reads and writes as a Go duration string
// ("5m", "250ms") in YAML and JSON.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML reads a duration string such as "90s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration must be a string like \"5m\": %w", n.Line, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: duration %q: %w", n.Line, s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"5m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// Lost-acknowledgement modes (Faults.LostAck).
const (
	// LostAckClose writes the whole request, then closes the connection without
	// reading the response.
	LostAckClose = "close"
	// LostAckDiscard reads and records the response, then treats it as lost.
	LostAckDiscard = "discard"
)

// Faults are the faults injected into one delivery. The zero value is a clean
// delivery.
type Faults struct {
	// LostAck is "", "close" or "discard"; the outcome is unknown and, with retry,
	// the provider redelivers per its schedule.
	LostAck string `yaml:"lost_ack,omitempty" json:"lost_ack,omitempty"`
	// Tamper sends a body that differs from the signed one.
	Tamper bool `yaml:"tamper,omitempty" json:"tamper,omitempty"`
	// WrongSecret signs with a secret of the same shape that the receiver does not hold.
	WrongSecret bool `yaml:"wrong_secret,omitempty" json:"wrong_secret,omitempty"`
	// MissingSignature drops every header that carries the signature.
	MissingSignature bool `yaml:"missing_signature,omitempty" json:"missing_signature,omitempty"`
	// MissingID drops the event ID (header or body field, per the profile's facts),
	// re-signing the body when the ID lives in it.
	MissingID bool `yaml:"missing_id,omitempty" json:"missing_id,omitempty"`
	// MalformedJSON sends a truncated, correctly signed body.
	MalformedJSON bool `yaml:"malformed_json,omitempty" json:"malformed_json,omitempty"`
	// OversizeBytes pads the (valid, correctly signed) JSON body to this many bytes.
	OversizeBytes int `yaml:"oversize_bytes,omitempty" json:"oversize_bytes,omitempty"`
	// StaleBy signs with a timestamp this far in the past.
	StaleBy Duration `yaml:"stale_by,omitempty" json:"stale_by,omitempty"`
	// AheadBy signs with a timestamp this far in the future (a sender whose
	// clock runs ahead): the counterpart of StaleBy.
	AheadBy Duration `yaml:"ahead_by,omitempty" json:"ahead_by,omitempty"`
}

// List names the faults that are set, for the history.
func (f Faults) List() []string {
	var out []string
	if f.LostAck != "" {
		out = append(out, "lost_ack:"+f.LostAck)
	}
	if f.Tamper {
		out = append(out, "tamper")
	}
	if f.WrongSecret {
		out = append(out, "wrong_secret")
	}
	if f.MissingSignature {
		out = append(out, "missing_signature")
	}
	if f.MissingID {
		out = append(out, "missing_id")
	}
	if f.MalformedJSON {
		out = append(out, "malformed_json")
	}
	if f.OversizeBytes > 0 {
		out = append(out, fmt.Sprintf("oversize:%d", f.OversizeBytes))
	}
	if f.StaleBy > 0 {
		out = append(out, "stale_by:"+f.StaleBy.D().String())
	}
	if f.AheadBy > 0 {
		out = append(out, "ahead_by:"+f.AheadBy.D().String())
	}
	return out
}

func (f Faults) validate(field string) error {
	switch f.LostAck {
	case "", LostAckClose, LostAckDiscard:
	default:
		return fmt.Errorf("%s.lost_ack must be one of \"close\", \"discard\" or empty, got %q", field, f.LostAck)
	}
	if f.OversizeBytes < 0 || f.OversizeBytes > MaxPadBytes {
		return fmt.Errorf("%s.oversize_bytes must be between 0 and %d", field, MaxPadBytes)
	}
	if f.StaleBy < 0 {
		return fmt.Errorf("%s.stale_by must not be negative", field)
	}
	if f.AheadBy < 0 {
		return fmt.Errorf("%s.ahead_by must not be negative", field)
	}
	if f.StaleBy > 0 && f.AheadBy > 0 {
		return fmt.Errorf("%s: stale_by and ahead_by must not both be set (the timestamp is either in the past or in the future)", field)
	}
	return nil
}

// MaxPadBytes bounds Step.PadTo and Faults.OversizeBytes.
const MaxPadBytes = 256 << 20

// validatePad checks a pad_to value against the step's faults.
func validatePad(field string, padTo int, f Faults) error {
	if padTo < 0 || padTo > MaxPadBytes {
		return fmt.Errorf("%s must be between 0 and %d", field, MaxPadBytes)
	}
	if padTo > 0 && f.OversizeBytes > 0 {
		return fmt.Errorf("%s and faults.oversize_bytes must not both be set (both pad the body)", field)
	}
	return nil
}

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
	Faults Faults   `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Retry follows the profile's schedule until acknowledgement, a stop verdict or
	// exhaustion. Faults apply to the first attempt only; retries are clean.
	Retry bool `yaml:"retry,omitempty" json:"retry,omitempty"`
	// Timeout overrides the per-attempt response timeout (real time).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	Replay  *Replay  `yaml:"replay,omitempty" json:"replay,omitempty"`
	// Attempt is the provider's attempt number of this delivery (default 1): a
	// redelivery of an event already sent is attempt 2 or later.
	Attempt int `yaml:"attempt,omitempty" json:"attempt,omitempty"`
	// WithPrevious starts the step together with the one before it instead of
	// after it: consecutive such steps deliver distinct events at the same time.
	WithPrevious bool `yaml:"with_previous,omitempty" json:"with_previous,omitempty"`
	// PadTo pads the valid, correctly signed JSON body to exactly this many
	// bytes with JSON whitespace (the JSON value is unchanged), for boundary
	// tests of a receiver's size limit. Not a fault: the delivery stays
	// legitimate, and its retries are padded alike. 0: no padding.
	PadTo int `yaml:"pad_to,omitempty" json:"pad_to,omitempty"`
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

// Validate checks the plan; errors name the field and the rule.
func (p *Plan) Validate() error {
	if len(p.Events) == 0 {
		return fmt.Errorf("plan: events must list at least one event")
	}
	if len(p.Steps) == 0 {
		return fmt.Errorf("plan: steps must list at least one step")
	}
	if p.TimeScale < 0 {
		return fmt.Errorf("plan: time_scale must be 0 or positive, got %g", p.TimeScale)
	}
	if p.Timeout < 0 {
		return fmt.Errorf("plan: timeout must not be negative")
	}
	if p.MaxAttempts < 0 {
		return fmt.Errorf("plan: max_attempts must not be negative")
	}
	if p.Jitter < 0 || p.Jitter >= 1 {
		return fmt.Errorf("plan: jitter must be in [0, 1), got %g", p.Jitter)
	}
	for i, d := range p.RetryDelays {
		if d < 0 {
			return fmt.Errorf("plan: retry_delays[%d] must not be negative", i)
		}
	}
	names := map[string]bool{}
	for i, e := range p.Events {
		f := fmt.Sprintf("plan: events[%d]", i)
		if e.Name == "" {
			return fmt.Errorf("%s.name is required", f)
		}
		if names[e.Name] {
			return fmt.Errorf("%s.name %q must be unique", f, e.Name)
		}
		names[e.Name] = true
		if e.Type == "" {
			return fmt.Errorf("%s.type is required", f)
		}
		if e.Version < 0 {
			return fmt.Errorf("%s.version must not be negative", f)
		}
		if e.Object != nil {
			if err := profiles.CheckObject(e.Object); err != nil {
				return fmt.Errorf("%s.object: %w", f, err)
			}
		}
	}
	steps := map[string]int{}
	for i, s := range p.Steps {
		f := fmt.Sprintf("plan: steps[%d]", i)
		if s.Replay == nil && !names[s.Event] {
			return fmt.Errorf("%s.event %q must name an entry of events", f, s.Event)
		}
		if s.Replay != nil {
			j, ok := steps[s.Replay.Of]
			if !ok {
				return fmt.Errorf("%s.replay.of %q must name an earlier step", f, s.Replay.Of)
			}
			if s.Event != "" && s.Event != p.Steps[j].Event {
				return fmt.Errorf("%s.event must be empty or equal to the replayed step's event", f)
			}
		}
		if s.Copies < 0 || s.Copies > MaxCopies {
			return fmt.Errorf("%s.copies must be between 1 and %d (0 means 1)", f, MaxCopies)
		}
		if s.Wait < 0 {
			return fmt.Errorf("%s.wait must not be negative", f)
		}
		if s.Timeout < 0 {
			return fmt.Errorf("%s.timeout must not be negative", f)
		}
		if s.Attempt < 0 {
			return fmt.Errorf("%s.attempt must not be negative (0 means 1)", f)
		}
		if s.WithPrevious && i == 0 {
			return fmt.Errorf("%s.with_previous needs a step before it", f)
		}
		if s.WithPrevious && s.Wait > 0 {
			return fmt.Errorf("%s.wait must be 0 when with_previous is set: the step starts with the previous one", f)
		}
		if err := s.Faults.validate(f + ".faults"); err != nil {
			return err
		}
		if err := validatePad(f+".pad_to", s.PadTo, s.Faults); err != nil {
			return err
		}
		if s.Name != "" {
			if _, dup := steps[s.Name]; dup {
				return fmt.Errorf("%s.name %q must be unique", f, s.Name)
			}
			steps[s.Name] = i
		}
	}
	return nil
}

// seededRand returns a deterministic generator for (seed, stream).
func seededRand(seed int64, stream string) *rand.Rand {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/%s", seed, stream)))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
}

// splitmix is a tiny deterministic RandSource for per-attempt IDs, which are
// made on the hot path (seededRand's SHA-256 and PCG cost more than the rest of
// an ID).
type splitmix uint64

func (s *splitmix) Uint64() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// idHasher is FNV-1a 128 (hash/fnv's New128a, same output) on the stack:
// delivery IDs are made per attempt on the hot path, and hash/fnv's interface
// plus boxing the parts into []any cost several allocations per ID.
type idHasher struct{ hi, lo uint64 }

// FNV-1a 128 parameters (the offset basis and prime of hash/fnv).
const (
	fnv128OffsetHi = 0x6c62272e07bb0142
	fnv128OffsetLo = 0x62b821756295c58d
	fnv128PrimeLo  = 0x13b
	fnv128Shift    = 24 // the prime is 2^88 + 0x13b
)

func newIDHasher(seed int64) idHasher {
	h := idHasher{hi: fnv128OffsetHi, lo: fnv128OffsetLo}
	var b [20]byte
	h.write(strconv.AppendInt(b[:0], seed, 10))
	return h
}

func (h *idHasher) byte(c byte) {
	h.lo ^= uint64(c)
	hi, lo := bits.Mul64(fnv128PrimeLo, h.lo)
	hi += h.lo<<fnv128Shift + fnv128PrimeLo*h.hi
	h.hi, h.lo = hi, lo
}

func (h *idHasher) write(b []byte) {
	for _, c := range b {
		h.byte(c)
	}
}

// str and int add one part: '/' then the part's text.
func (h *idHasher) str(s string) {
	h.byte('/')
	for i := 0; i < len(s); i++ {
		h.byte(s[i])
	}
}

func (h *idHasher) int(v int64) {
	h.byte('/')
	var b [20]byte
	h.write(strconv.AppendInt(b[:0], v, 10))
}

func (h *idHasher) sum() [16]byte {
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], h.hi)
	binary.BigEndian.PutUint64(out[8:], h.lo)
	return out
}

// idHash hashes seed and parts (strings and integers) with FNV-1a 128.
func idHash(seed int64, parts ...any) [16]byte {
	h := newIDHasher(seed)
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			h.str(v)
		case int:
			h.int(int64(v))
		case int64:
			h.int(v)
		default:
			h.str(fmt.Sprint(v))
		}
	}
	return h.sum()
}

// derivedID is a deterministic 96-bit hex ID for (seed, parts).
func derivedID(seed int64, parts ...any) string {
	h := idHash(seed, parts...)
	return hex.EncodeToString(h[:12])
}

// NewEventID returns the seeded event ID for event index i, in the provider's
// format where profiles.NewEventID knows it (evt_… for Stripe, msg_… for
// Standard Webhooks, a GUID for GitHub, …), else evt_ + 24 hex digits.
func NewEventID(seed int64, profileID string, i int) string {
	h := idHash(seed, "event", i)
	sm := splitmix(binary.LittleEndian.Uint64(h[:8]))
	if id, err := profiles.NewEventID(profileID, &sm); err == nil {
		return id
	}
	return "evt_" + derivedID(seed, "event", i)
}

// NewDeliveryID returns the seeded per-attempt delivery ID for the given parts
// (event, step, copy, attempt), in the provider's format where
// profiles.NewDeliveryID knows one, else dlv_ + 24 hex digits.
func NewDeliveryID(seed int64, profileID string, parts ...any) string {
	return deliveryIDFrom(idHash(seed, append([]any{"delivery"}, parts...)...), profileID)
}

// attemptDeliveryID is NewDeliveryID(seed, profileID, source, account, eventID,
// step, copy, attempt) without boxing the parts: the engine makes one per attempt.
func attemptDeliveryID(seed int64, profileID, source, account, eventID string, step, cp, attempt int) string {
	h := newIDHasher(seed)
	h.str("delivery")
	h.str(source)
	h.str(account)
	h.str(eventID)
	h.int(int64(step))
	h.int(int64(cp))
	h.int(int64(attempt))
	return deliveryIDFrom(h.sum(), profileID)
}

func deliveryIDFrom(h [16]byte, profileID string) string {
	if profileID == "shopify" {
		// The one profile with a per-attempt delivery ID of its own shape.
		sm := splitmix(binary.LittleEndian.Uint64(h[:8]))
		if id, err := profiles.NewDeliveryID(profileID, &sm); err == nil {
			return id
		}
	}
	var b [4 + 24]byte
	copy(b[:], "dlv_")
	hex.Encode(b[4:], h[:12])
	return string(b[:])
}

// ResolvedPlan is a plan with every seeded choice made: concrete events.
type ResolvedPlan struct {
	Plan   Plan
	Events map[string]profiles.Event
}

// Resolve fixes the plan's events for a profile and account: generated IDs, the
// created time (the event's own, else the run's start), defaults. Same seed,
// same result.
func (p *Plan) Resolve(profileID, account string, created time.Time) (*ResolvedPlan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rp := &ResolvedPlan{Plan: *p, Events: map[string]profiles.Event{}}
	for i, e := range p.Events {
		ev := profiles.Event{
			Source: cmp.Or(e.Source, profileID), Account: e.Account, ID: e.ID, Type: e.Type,
			ObjectID: e.ObjectID, Version: e.Version, Amount: e.Amount,
			Currency: e.Currency, Status: e.Status, Created: created.UTC().Truncate(time.Second),
			Object: e.Object,
		}
		if !e.Created.IsZero() {
			ev.Created = e.Created.UTC()
		}
		if ev.Account == "" {
			ev.Account = account
		}
		if ev.ID == "" {
			ev.ID = NewEventID(p.Seed, profileID, i)
		}
		if ev.ObjectID == "" {
			if profileID == "adyen" || profileID == "adyen-legacy" {
				// Adyen's object ID is the pspReference (conformance-domain.md).
				ev.ObjectID = profiles.NewAdyenPSPReference(seededRand(p.Seed, fmt.Sprintf("object/%d", i)))
			} else {
				ev.ObjectID = "obj_" + derivedID(p.Seed, "object", i)[:16]
			}
		}
		if ev.Currency == "" && ev.Amount != 0 {
			ev.Currency = "usd"
		}
		rp.Events[e.Name] = ev
	}
	return rp, nil
}

// VersionedStream builds a seeded stream of versioned updates for one object:
// versions 1..n of a customer.subscription.updated event (one event ID each), and
// steps that deliver every version once plus dups extra duplicates of random
// versions, all shuffled. The newest version is n. Append the results to a plan.
func VersionedStream(seed int64, prefix, objectID string, n, dups int) ([]EventSpec, []Step) {
	rng := seededRand(seed, "versioned/"+prefix+"/"+objectID)
	events := make([]EventSpec, n)
	for v := 1; v <= n; v++ {
		events[v-1] = EventSpec{
			Name: fmt.Sprintf("%s-v%d", prefix, v), Type: "customer.subscription.updated", ObjectID: objectID,
			Version: int64(v), Status: "active",
		}
	}
	var steps []Step
	for _, v := range ShuffledVersions(n, 1, dups, rng) {
		steps = append(steps, Step{Event: events[v-1].Name})
	}
	return events, steps
}

// ShuffledVersions is the delivery order of a versioned stream: every version
// 1..n each times, plus extra duplicates of random versions, shuffled by rng.
// The conformance suite and plans share it, so one seed gives one order.
func ShuffledVersions(n, each, extra int, rng *rand.Rand) []int64 {
	var out []int64
	for v := 1; v <= n; v++ {
		for range each {
			out = append(out, int64(v))
		}
	}
	for i := 0; i < extra && n > 0; i++ {
		out = append(out, int64(1+rng.IntN(n)))
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
