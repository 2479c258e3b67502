package simulator

import "fmt"

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
