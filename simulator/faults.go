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
	// Alter names one of the profile's inputs (profiles.InputLister) to change
	// after the delivery is signed, keeping its format: a header's or a JSON
	// value's last letter or digit, a form field's value, an extra query
	// parameter on the URL, one byte of the body, or for "key" a signature
	// made with another key of the right shape. A receiver that checks what
	// the signature covers refuses it.
	Alter string `yaml:"alter,omitempty" json:"alter,omitempty"`
	// Signature changes the signature header after signing: "prefix" changes
	// its format prefix ("v1=" becomes "v0="), "truncate" cuts the signature
	// to half its length, "all-invalid" sends two signatures made with keys
	// the receiver does not hold, and "valid-among-invalid" sends a valid one
	// after an invalid one (a legitimate delivery during a secret roll, for
	// profiles that send several signatures).
	Signature string `yaml:"signature,omitempty" json:"signature,omitempty"`
}

// Signature faults (Faults.Signature).
const (
	SignaturePrefix            = "prefix"
	SignatureTruncate          = "truncate"
	SignatureAllInvalid        = "all-invalid"
	SignatureValidAmongInvalid = "valid-among-invalid"
)

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
	if f.Alter != "" {
		out = append(out, "alter:"+f.Alter)
	}
	if f.Signature != "" {
		out = append(out, "signature:"+f.Signature)
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
	switch f.Signature {
	case "", SignaturePrefix, SignatureTruncate, SignatureAllInvalid, SignatureValidAmongInvalid:
	default:
		return fmt.Errorf("%s.signature must be one of %q, %q, %q, %q or empty, got %q", field,
			SignaturePrefix, SignatureTruncate, SignatureAllInvalid, SignatureValidAmongInvalid, f.Signature)
	}
	// Each changes what was signed or the signature itself: together the
	// receiver's answer would not say which one it caught.
	if n := btoi(f.Alter != "") + btoi(f.Signature != "") + btoi(f.Tamper) + btoi(f.WrongSecret) + btoi(f.MissingSignature); n > 1 && (f.Alter != "" || f.Signature != "") {
		return fmt.Errorf("%s: alter and signature must each be the only signature fault (tamper, wrong_secret, missing_signature, alter, signature)", field)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
