package scenarios

import (
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

func (s *session) voc() *vocab.Vocabulary { return s.env.vocabulary() }

// effectRole is the role every event-count check sends; a target that declares
// a vocabulary without one makes those checks not applicable.
func (s *session) effectRole() *vocab.EventRole {
	if r := s.voc().Effect; r != nil {
		return r
	}
	s.notApplicable("the target declares no events.effect: no event type applies one countable effect per event")
	return nil
}

// effectEvent is a fresh event of the effect role for ep.
func (s *session) effectEvent(ep Endpoint) profiles.Event { return s.effectEventOf(ep, s.effectRole()) }

// effectEventOf is a fresh event of effect role r for ep; a role whose
// objects a fixture makes has its object made first, with the event's amount.
func (s *session) effectEventOf(ep Endpoint, r *vocab.EventRole) profiles.Event {
	obj := s.newID(prefixOr(r.IDPrefix))
	if r.Fixture == "" {
		return s.event(ep, r.Type, obj)
	}
	s.runFixture(ep, r.Fixture, obj)
	return s.objectEvent(ep, r.Type, obj)
}

// effectRoles are every effect role, in an order drawn from the seed; none
// makes the guarantee not applicable.
func (s *session) effectRoles() []*vocab.EventRole {
	rs := s.voc().AllEffects()
	if len(rs) == 0 {
		s.effectRole()
		return nil
	}
	return seeded(s, rs)
}

// effectTable is the table ev's effect is written to, where the harness
// holds and cuts it: its effect role's own table, else effect_table.
func (s *session) effectTable(ev profiles.Event) string {
	if r := s.voc().EffectRoleOf(ev.Type); r != nil {
		return roleTable(r.Table, s.env.EffectTable)
	}
	return s.env.EffectTable
}

// lifecycle is the target's lifecycle object (the built-in payment needs the
// state-machine capability, which the guarantee's Needs check).
func (s *session) lifecycle() *vocab.Lifecycle {
	if l := s.voc().Lifecycle; l != nil {
		s.common(func(c *commonFacts) { c.Object = l.Object })
		return l
	}
	s.notApplicable("the target declares no events.lifecycle: no object with states moved by events")
	return nil
}

// lifecycles are every lifecycle object the target declares, in an order
// drawn from the seed (one object draws nothing, so single-object targets
// replay as before); none makes the guarantee not applicable.
func (s *session) lifecycles() []*vocab.Lifecycle {
	ls := s.voc().AllLifecycles()
	if len(ls) == 0 {
		s.lifecycle()
		return nil
	}
	out := seeded(s, ls)
	s.common(func(c *commonFacts) { c.Object = s.voc().AllLifecycles()[0].Object })
	return out
}

// orderedRoles are every ordered role, in an order drawn from the seed.
func (s *session) orderedRoles() []*vocab.Ordered {
	os := s.voc().AllOrdered()
	if len(os) == 0 {
		s.orderedRole()
		return nil
	}
	return seeded(s, os)
}

// seeded is xs shuffled by the scenario's seed.
func seeded[T any](s *session, xs []T) []T {
	out := append([]T(nil), xs...)
	s.mu.Lock()
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	s.mu.Unlock()
	return out
}

// roleTable is the table a role's racers are held at: its own, else the
// target's def (event_table or effect_table).
func roleTable(own, def string) string {
	if own != "" {
		return own
	}
	return def
}

// roleName names a role in notes: its label, else what the first role is.
func roleName(label, first string) string {
	if label != "" {
		return label
	}
	return first
}

func (s *session) orderedRole() *vocab.Ordered {
	if o := s.voc().Ordered; o != nil {
		return o
	}
	s.notApplicable("the target declares no events.ordered: no updates carrying an ordering key")
	return nil
}

func (s *session) unhandledRole() *vocab.EventRole {
	if r := s.voc().Unhandled; r != nil {
		return r
	}
	s.notApplicable("the target declares no events.unhandled: no valid event type the receiver ignores")
	return nil
}

// render fills ev's declared business object from its role's template, from
// ev's fields as they are when it is sent (scenarios adjust amounts, versions
// and times after building an event). A declared role without a template gets
// a plain object in the provider's shape, with no field the provider does not
// send (the built-in fields carry a version real objects lack).
func (s *session) render(ep Endpoint, ev profiles.Event) profiles.Event {
	tpl, state := s.voc().Template(ev.Type)
	if tpl == nil && s.voc().Declared && ep.Profile.Facts().DeclaredObjectJSONPath != "" {
		tpl = defaultObject(ep.Profile.ID())
	}
	if tpl == nil {
		return ev
	}
	obj, err := tpl.Render(vocab.ObjectData{EventID: ev.ID, Type: ev.Type, ObjectID: ev.ObjectID, Source: ev.Source, Account: ev.Account,
		Currency: ev.Currency, State: state, Amount: ev.Amount, Created: ev.Created.Unix(), Key: ev.Version, Tag: ev.Status,
		Parent: s.parentID(s.voc().LifecycleOfType(ev.Type), ev.ObjectID)})
	if err != nil {
		s.abort("rendering the declared object of %s: %v", ev.Type, err)
	}
	ev.Object = obj
	return ev
}

// defaultObject is the object a declared role without a template sends: the
// object's ID, amount and currency, and for Stripe its resource name and empty
// metadata, as Stripe's objects have.
func defaultObject(profile string) *vocab.ObjectTemplate {
	src := `{"id": "{{.ObjectID}}", "amount": {{.Amount}}, "currency": "{{.Currency}}"}`
	if profile == "stripe" {
		src = `{"id": "{{.ObjectID}}", "object": "{{stripeObject .Type}}", "amount": {{.Amount}}, "currency": "{{.Currency}}", "metadata": {}}`
	}
	t, err := vocab.ParseObjectTemplate(src)
	if err != nil {
		panic(err) // a constant template
	}
	return t
}

// objectEvent is an event about lifecycle object obj: every event about one
// object carries the same amount, as a provider's do.
func (s *session) objectEvent(ep Endpoint, typ, obj string) profiles.Event {
	ev := s.event(ep, typ, obj)
	s.mu.Lock()
	if s.amounts == nil {
		s.amounts = map[string]int64{}
	}
	if a, ok := s.amounts[obj]; ok {
		ev.Amount = a
	} else {
		s.amounts[obj] = ev.Amount
	}
	s.mu.Unlock()
	return ev
}

// newObject names a fresh lifecycle object; a child's ID derives from a fresh
// parent's (vocab.Lifecycle.ChildID), so its events name their parent.
func (s *session) newObject(l *vocab.Lifecycle) string {
	if p := s.parentOf(l); p != nil {
		return l.ChildID(s.newObject(p))
	}
	return s.newID(prefixOr(l.IDPrefix))
}

// parentOf is l's parent lifecycle; nil for an object that stands alone.
func (s *session) parentOf(l *vocab.Lifecycle) *vocab.Lifecycle {
	if l == nil || l.Parent == nil {
		return nil
	}
	return s.voc().LifecycleOf(l.Parent.Object)
}

// parentID is the parent's ID of child object obj of l ("" without a parent).
func (s *session) parentID(l *vocab.Lifecycle, obj string) string {
	if p := s.parentOf(l); p != nil {
		return vocab.Ref(prefixOr(p.IDPrefix), obj)
	}
	return ""
}

// create makes obj exist the way the target declares: its creating event, or
// its fixture (the receiver's own application writing the row). A child
// object's parent is created first and driven to the state the child needs;
// where the parent's transition into it creates the child, that is all. It
// returns the setup events' attempts (the parent's too), none for a fixture.
func (s *session) create(ep Endpoint, l *vocab.Lifecycle, obj string) []history.Attempt {
	var as []history.Attempt
	if p := s.parentOf(l); p != nil {
		pid := s.parentID(l, obj)
		path, ok := p.Path(l.Parent.State)
		if !ok {
			s.abort("%s %s: its parent %s cannot reach %q", l.Object, obj, p.Object, l.Parent.State)
		}
		as = append(as, s.create(ep, p, pid)...)
		as = append(as, s.drive(ep, pid, path)...)
		s.note("%s %s brought to %s for its %s %s", p.Object, pid, l.Parent.State, l.Object, obj)
		if l.Parent.Created {
			return as
		}
	}
	if l.Create != nil {
		a := s.send(ep, s.objectEvent(ep, l.Create.Type, obj), roleSetup, simulator.Shape{})
		s.settledNow()
		return append(as, a)
	}
	s.fixtureFor(ep, l.Fixture, obj, s.parentID(l, obj))
	return as
}

// runFixture runs the named fixture for obj; one that fails leaves nothing to
// judge.
func (s *session) runFixture(ep Endpoint, name, obj string) { s.fixtureFor(ep, name, obj, "") }

// fixtureFor runs the named fixture for obj, whose parent is parent ("" when
// it has none).
func (s *session) fixtureFor(ep Endpoint, name, obj, parent string) {
	if s.env.Fixtures == nil {
		s.abort("fixture %q is declared but the harness has no fixture runner", name)
	}
	ev := s.objectEvent(ep, "", obj)
	t0 := time.Now()
	if err := s.env.Fixtures.Create(s.ctx, name, vocab.ObjectData{ObjectID: obj, Source: ep.source(), Account: ep.Account,
		Amount: ev.Amount, Currency: ev.Currency, Parent: parent}); err != nil {
		s.abort("fixture %q for %s: %v", name, obj, err)
	}
	s.note("fixture %s created %s in %s", name, obj, time.Since(t0).Round(time.Millisecond))
}

// drive sends the transitions of path for obj one after another, each once the
// previous has settled, so no event of the setup arrives before its
// precondition.
func (s *session) drive(ep Endpoint, obj string, path []vocab.Transition) []history.Attempt {
	var out []history.Attempt
	for _, t := range path {
		out = append(out, s.send(ep, s.objectEvent(ep, t.Type, obj), roleSetup, simulator.Shape{}))
		s.settledNow()
	}
	return out
}
