package simulator

import "fmt"

// MaxCopies bounds the copies of one barrier release (one connection each).
const MaxCopies = 1024

// MaxPadBytes bounds Step.PadTo and Faults.OversizeBytes.
const MaxPadBytes = 256 << 20

// Shape is how one delivery is sent: the options Step, SendOptions and
// Delivery share. The engine takes a delivery's Shape as it is, so an option
// added here reaches every way of sending at once instead of being copied
// field by field at each boundary.
//
// Step and SendOptions keep these fields as their own (see Step.Shape and
// SendOptions.Shape) because callers outside the package build them as
// composite literals, which promoted fields would break. The tags are Step's,
// so Step can embed Shape (yaml ",inline"; JSON flattens embedded structs)
// without changing the plan format once those callers move to Delivery.
type Shape struct {
	// Attempt is the provider's attempt number of this delivery (default 1): a
	// redelivery of an event already sent is attempt 2 or later.
	Attempt int    `yaml:"attempt,omitempty" json:"attempt,omitempty"`
	Faults  Faults `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Timeout overrides the per-attempt response timeout (real time; default:
	// the plan's, then the profile's, then DefaultTimeout).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// PadTo pads the valid, correctly signed JSON body to exactly this many
	// bytes with JSON whitespace (see Step.PadTo); 0: no padding.
	PadTo int `yaml:"pad_to,omitempty" json:"pad_to,omitempty"`
}

// Shape returns the step's sending options.
func (s Step) Shape() Shape {
	return Shape{Attempt: s.Attempt, Faults: s.Faults, Timeout: s.Timeout, PadTo: s.PadTo}
}

// Shape returns the options' sending shape (DeliveryID, SignedAt, Step and
// Copy are the single-attempt API's own).
func (o SendOptions) Shape() Shape {
	return Shape{Attempt: o.Attempt, Faults: o.Faults, Timeout: Duration(o.Timeout), PadTo: o.PadTo}
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
