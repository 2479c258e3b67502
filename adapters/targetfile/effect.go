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
	if c := r.Create; c != nil {
		if strings.TrimSpace(c.Fixture) == "" {
			v.fail(at(p, "create", "fixture"), "required with create (the fixture that makes each event's object)")
		} else {
			v.fixtureExists(at(p, "create", "fixture"), c.Fixture, rs.fixtures)
			role.Fixture = c.Fixture
		}
	}
}
