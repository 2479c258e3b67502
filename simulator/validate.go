package simulator

import (
	"encoding/json"
	"fmt"

	"github.com/hookcert/hookcert/simulator/profiles"
)

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
		if err := validateEvent(f, e.Type, e.Version, e.Object); err != nil {
			return err
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
		if err := validateCopies(f, s.Copies); err != nil {
			return err
		}
		if s.Wait < 0 {
			return fmt.Errorf("%s.wait must not be negative", f)
		}
		if s.WithPrevious && i == 0 {
			return fmt.Errorf("%s.with_previous needs a step before it", f)
		}
		if s.WithPrevious && s.Wait > 0 {
			return fmt.Errorf("%s.wait must be 0 when with_previous is set: the step starts with the previous one", f)
		}
		if err := s.Shape.validate(f); err != nil {
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

// validateEvent checks what every delivered event needs, a plan's or
// Deliver's; errors name field.
func validateEvent(field, typ string, version int64, object json.RawMessage) error {
	if typ == "" {
		return fmt.Errorf("%s.type is required", field)
	}
	if version < 0 {
		return fmt.Errorf("%s.version must not be negative", field)
	}
	if object != nil {
		if err := profiles.CheckObject(object); err != nil {
			return fmt.Errorf("%s.object: %w", field, err)
		}
	}
	return nil
}

// validateCopies checks a delivery's copy count (0 means 1).
func validateCopies(field string, n int) error {
	if n < 0 || n > MaxCopies {
		return fmt.Errorf("%s.copies must be between 1 and %d (0 means 1)", field, MaxCopies)
	}
	return nil
}
