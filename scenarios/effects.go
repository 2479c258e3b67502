package scenarios

import (
	"fmt"
	"slices"
	"strings"
)

// State effects: an effect role whose effects query reads a state (a flag, a
// status) shows whether an event applied, never how often. The checks that
// look for a second application are then made only where the target declares
// a witness (a count of the applications the receiver records); without one
// they are not made, and a guarantee that would otherwise pass is not
// applicable, with the reason: a check that cannot fail is never a pass.

// doubleBlindReason is why effects reads cannot show a double application.
const doubleBlindReason = "the effect role's effects query reads a state (events.effect.effects_kind: state) and the target declares no witness (events.effect.witness): an event applied twice leaves that state as one application does"

// once checks, per event read in phase, that its effect applied exactly once,
// where the check looks for a second application: with effects read as a
// state and no witness it judges only that the effect applied, and records
// the part it could not judge.
func (v *view) once(code Code, phase, what string) {
	if v.common.EffectsBlind == "" {
		v.count(code, queryEffects, phase, 1, what)
		return
	}
	rs := v.reads(queryEffects, phase)
	if len(rs) == 0 {
		v.fail("history: %s has no %s read in phase %q", v.sc.Name, queryEffects, phase)
		return
	}
	for _, o := range rs {
		if o.Count == 0 {
			v.deviate(code, "%s: %s for %s: the effect's state is not set (0), want it set", what, queryEffects, paramsText(o.Params))
		}
	}
	v.blindTo(what)
}

// stateOnce is state for a phase where the effect must have applied exactly
// once: its rows counted, its effects held to once.
func (v *view) stateOnce(code Code, phase, what string) {
	v.count(code, queryEventRows, phase, 1, what)
	v.once(code, phase, what)
}

// blindTo records a check for a second application that the effects reads
// could not make, when they could not.
func (v *view) blindTo(what string) {
	if v.common.EffectsBlind != "" && !slices.Contains(v.blind, what) {
		v.blind = append(v.blind, what)
	}
}

// blindReason is why the scenario's verdict cannot be a pass: the checks for
// a second application it could not make.
func (v *view) blindReason() string {
	if len(v.blind) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, so a second application %s cannot be shown; declare events.effect.witness (a count of the applications the receiver records: an audit row, a counter) to judge it",
		v.common.EffectsBlind, strings.Join(v.blind, "; "))
}
