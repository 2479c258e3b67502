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
	if v.objectVersion() {
		// No rows or effects to count: the object holds the update (whether
		// once cannot show, onceUnjudged).
		v.objectStored(code, phase, 1, what)
		return
	}
	v.count(code, queryEventRows, phase, 1, what)
	v.once(code, phase, what)
}

// blindTo records a check for a second application that the effects reads
// could not make, when they could not.
func (v *view) blindTo(what string) {
	if v.common.EffectsBlind != "" {
		v.blindPart(v.common.EffectsBlind, what)
	}
}

// blindPart records that, for reason, a second application what could not
// be shown.
func (v *view) blindPart(reason, what string) {
	for i := range v.blind {
		if v.blind[i].reason == reason {
			if !slices.Contains(v.blind[i].whats, what) {
				v.blind[i].whats = append(v.blind[i].whats, what)
			}
			return
		}
	}
	v.blind = append(v.blind, blindCheck{reason, []string{what}})
}

// blindCheck is the checks one reason kept from showing a second application.
type blindCheck struct {
	reason string
	whats  []string
}

// blindReason is why the scenario's verdict cannot be a pass: the checks for
// a second application it could not make.
func (v *view) blindReason() string {
	var parts []string
	for _, b := range v.blind {
		parts = append(parts, fmt.Sprintf("%s, so a second application %s cannot be shown", b.reason, strings.Join(b.whats, "; ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "; declare a witness (a count of the applications the receiver records: an audit row, a counter) to judge it"
}

// objectBlindReason is why object effects reads cannot show an effect
// applied twice.
const objectBlindReason = "the lifecycle's effects query reads a state (events.lifecycle.effects_kind: state) and the target declares no witness (events.lifecycle.witness): an effect applied twice leaves that state as one application does"

// objectEffectsOnce is objectEffects where the check looks for a second
// application: with object effects read as a state and no witness, what it
// could not show keeps the verdict from being a pass.
func (v *view) objectEffectsOnce(code Code, phase string, want map[string]int64, def int64, what string) {
	v.objectEffects(code, phase, want, def, what)
	if v.common.ObjectEffectsBlind != "" {
		v.blindPart(v.common.ObjectEffectsBlind, what)
	}
}
