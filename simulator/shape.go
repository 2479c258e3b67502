package simulator

import "fmt"

// MaxCopies bounds the copies of one barrier release (one connection each).
const MaxCopies = 1024

// MaxPadBytes bounds Shape.PadTo and Faults.OversizeBytes.
const MaxPadBytes = 256 << 20

// Shape is how one delivery is sent: the options Step, SendOptions and
// Delivery share by embedding it. The engine takes a delivery's Shape as it
// is, so an option added here reaches every way of sending at once instead of
// being copied field by field at each boundary. The tags are the plan
// format's: Step embeds Shape inline, so a plan step carries attempt, faults,
// timeout and pad_to at its own level (see Step.MarshalYAML for the order
// they are written in).
type Shape struct {
	// Attempt is the provider's attempt number of this delivery (default 1): a
	// redelivery of an event already sent is attempt 2 or later.
	Attempt int    `yaml:"attempt,omitempty" json:"attempt,omitempty"`
	Faults  Faults `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Timeout overrides the per-attempt response timeout (real time; default:
	// the plan's, then the profile's, then DefaultTimeout).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// PadTo pads the valid, correctly signed JSON body to exactly this many
	// bytes with JSON whitespace (the JSON value is unchanged), for boundary
	// tests of a receiver's size limit. Not a fault: the delivery stays
	// legitimate, and a step's retries are padded alike. 0: no padding.
	PadTo int `yaml:"pad_to,omitempty" json:"pad_to,omitempty"`
}

// validate checks the shape; errors name field, as plan validation does.
func (s Shape) validate(field string) error {
	if s.Timeout < 0 {
		return fmt.Errorf("%s.timeout must not be negative", field)
	}
	if s.Attempt < 0 {
		return fmt.Errorf("%s.attempt must not be negative (0 means 1)", field)
	}
	if err := s.Faults.validate(field + ".faults"); err != nil {
		return err
	}
	return validatePad(field+".pad_to", s.PadTo, s.Faults)
}

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
