package scenarios

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// ErrNoEffectRole: the target declares a vocabulary without events.effect, so
// no event type applies one countable effect per event.
var ErrNoEffectRole = errors.New("the target declares no events.effect: no event type applies one countable effect per event")

// EffectEvent builds a fresh event of the target's effect role for ep, its
// declared business object rendered as the suite renders it, for traffic sent
// outside a scenario (hookcert soak). tag makes the IDs unique within the run
// (the run's namespace is added); rnd picks the amount.
func EffectEvent(env *Env, ep Endpoint, tag string, rnd uint32) (profiles.Event, profiles.Key, error) {
	voc := env.vocabulary()
	r := voc.Effect
	if r == nil {
		return profiles.Event{}, profiles.Key{}, ErrNoEffectRole
	}
	id := Namespace(env.RunID) + tag
	ev := profiles.Event{
		Source: ep.source(), Account: ep.Account, Type: r.Type, ObjectID: prefixOr(r.IDPrefix) + "_" + id,
		Amount: 1000 + int64(rnd%9000), Currency: "usd", Created: time.Now().UTC().Truncate(time.Second),
	}
	if ep.Profile.Facts().EventIDRule == "" {
		ev.ID = "evt_" + id
	}
	// As session.render, without a session to abort.
	tpl, state := voc.Template(ev.Type)
	if tpl == nil && voc.Declared && ep.Profile.Facts().DeclaredObjectJSONPath != "" {
		tpl = defaultObject(ep.Profile.ID())
	}
	if tpl != nil {
		obj, err := tpl.Render(vocab.ObjectData{EventID: ev.ID, Type: ev.Type, ObjectID: ev.ObjectID, Source: ev.Source, Account: ev.Account,
			Currency: ev.Currency, State: state, Amount: ev.Amount, Created: ev.Created.Unix(), Key: ev.Version})
		if err != nil {
			return profiles.Event{}, profiles.Key{}, fmt.Errorf("rendering the declared object of %s: %w", ev.Type, err)
		}
		ev.Object = obj
	}
	// A refetching receiver finds the object in the provider API.
	tellAPI(env.ProviderAPI, voc, "", ev)
	return ev, profiles.EventKey(ep.Profile, ev), nil
}
