package targetfile

import (
	"strings"

	"github.com/hookcert/hookcert/vocab"
)

// The effect role's own fields beyond its event type (docs/target.md,
// "Declared events"): what its effects query reads, the witness that counts
// applications of a state, and the fixture that makes each event's object.

// rawEffectCreate: an effect event's object is made by a fixture, or by
// nobody (the event carries all it needs).
type rawEffectCreate struct {
	Fixture string `yaml:"fixture"`
}

// effectKinds are the values of events.effect.effects_kind.
var effectKinds = []string{vocab.EffectsCount, vocab.EffectsState}

// effectExtras checks events.effect.effects_kind, witness and create, and sets
// them on role. A witness fills the effects slot: it is what counts an event's
// applications, so every "exactly once" check reads it.
func (v *validator) effectExtras(rs *roles, p []any, r *rawEffect, role *vocab.EventRole) {
	switch kind := strings.TrimSpace(r.EffectsKind); kind {
	case "", vocab.EffectsCount:
		role.EffectsKind = vocab.EffectsCount
		if strings.TrimSpace(r.Witness) != "" {
			v.fail(at(p, "witness"), "only with effects_kind: %s (a count of applications already shows a double one)", vocab.EffectsState)
		}
	case vocab.EffectsState:
		role.EffectsKind = vocab.EffectsState
		if sql := v.declaredQuery(at(p, "witness"), r.Witness, false, 3, 4); sql != "" {
			rs.q.Effects = sql
			rs.from(QueryEffects, at(p, "witness"))
			role.Witness = true
		}
	default:
		v.fail(at(p, "effects_kind"), "%q is not one of %s", kind, strings.Join(effectKinds, ", "))
	}
	v.createFixture(rs, p, r.Create, role)
}

// lifecycleEffectKind checks events.lifecycle.effects_kind and witness, as
// effectExtras does the effect role's: a witness fills the object_effects slot.
func (v *validator) lifecycleEffectKind(rs *roles, p []any, rl *rawEventLifecycle, l *vocab.Lifecycle) {
	switch kind := strings.TrimSpace(rl.EffectsKind); kind {
	case "", vocab.EffectsCount:
		l.EffectsKind = vocab.EffectsCount
		if strings.TrimSpace(rl.Witness) != "" {
			v.fail(at(p, "witness"), "only with effects_kind: %s (a count of applications already shows a double one)", vocab.EffectsState)
		}
	case vocab.EffectsState:
		l.EffectsKind = vocab.EffectsState
		if !l.CountsEffects {
			v.fail(at(p, "effects_kind"), "only with lifecycle.effects (the query reading the state)")
		}
		if sql := v.declaredQuery(at(p, "witness"), rl.Witness, false, 4); sql != "" {
			rs.q.ObjectEffects = sql
			rs.from(QueryObjectEffects, at(p, "witness"))
			l.Witness = true
		}
	default:
		v.fail(at(p, "effects_kind"), "%q is not one of %s", kind, strings.Join(effectKinds, ", "))
	}
}

// createFixture checks events.effect.create: the fixture that makes each
// effect event's object.
func (v *validator) createFixture(rs *roles, p []any, c *rawEffectCreate, role *vocab.EventRole) {
	if c != nil {
		if strings.TrimSpace(c.Fixture) == "" {
			v.fail(at(p, "create", "fixture"), "required with create (the fixture that makes each event's object)")
		} else {
			v.fixtureExists(at(p, "create", "fixture"), c.Fixture, rs.fixtures)
			role.Fixture = c.Fixture
		}
	}
}

// stateEffectWarnings: a state effect without a witness cannot show an event
// applied twice; the guarantees that look for one will say so rather than
// pass.
func (t *Target) stateEffectWarnings() []Warning {
	var out []Warning
	if v := t.Events; v != nil && v.Effect.DoubleBlind() {
		out = append(out, Warning{
			Field:     "target.events.effect.effects_kind",
			Guarantee: "DEDUP-1, DEDUP-2, DEDUP-7, ATOMIC-1, ATOMIC-3, ATOMIC-4, ACK-1, RETENTION-1 to -3, INBOX (a second application)",
			Problem: "the effects query reads a state, which one application and two set alike, and no witness counts the applications: " +
				"these guarantees judge only that the effect applied and are reported not applicable unless they fail otherwise.",
			Fix: "declare events.effect.witness: a count of what the receiver records of each application (an audit row, a counter).",
		})
	}
	if v := t.Events; v != nil && v.Lifecycle.DoubleBlind() {
		out = append(out, Warning{
			Field:     "target.events.lifecycle.effects_kind",
			Guarantee: "DEDUP-6 (one business operation, one effect), ORDER-3's effects",
			Problem:   "the object's effects query reads a state, which one application and two set alike, and no witness counts the applications.",
			Fix:       "declare events.lifecycle.witness: a count of the object's effect applications the receiver records.",
		})
	}
	return out
}
