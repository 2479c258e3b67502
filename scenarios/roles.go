package scenarios

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Facts every scenario that judges declared expectations records: the checker
// reads what to expect from the history alone.
const (
	// FactAcceptance is "async" when the receiver applies events after its 2xx.
	FactAcceptance = "acceptance"
	// FactWantState prefixes the state an object must be in at the end
	// ("want_state:<object ID>"); FactWantEffects its count of effects.
	FactWantState   = "want_state:"
	FactWantEffects = "want_effects:"
	// FactObject names the lifecycle object in evidence ("payment_intent").
	FactObject = "object"
	// FactEventOf prefixes the event ID sent for an object ("event_of:<object
	// ID>"); FactLateType the type of the late event an object got.
	FactEventOf  = "event_of:"
	FactLateType = "late_type:"
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
func (s *session) effectEvent(ep Endpoint) profiles.Event {
	r := s.effectRole()
	return s.event(ep, r.Type, s.newID(prefixOr(r.IDPrefix)))
}

// lifecycle is the target's lifecycle object (the built-in payment needs the
// state-machine capability, which the guarantee's Needs check).
func (s *session) lifecycle() *vocab.Lifecycle {
	if l := s.voc().Lifecycle; l != nil {
		s.fact(FactObject, l.Object)
		return l
	}
	s.notApplicable("the target declares no events.lifecycle: no object with states moved by events")
	return nil
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
		Currency: ev.Currency, State: state, Amount: ev.Amount, Created: ev.Created.Unix(), Key: ev.Version})
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

// newObject names a fresh lifecycle object.
func (s *session) newObject(l *vocab.Lifecycle) string { return s.newID(prefixOr(l.IDPrefix)) }

// create makes obj exist the way the target declares: its creating event, or
// its fixture (the receiver's own application writing the row).
func (s *session) create(ep Endpoint, l *vocab.Lifecycle, obj string) {
	if l.Create != nil {
		s.send(ep, s.objectEvent(ep, l.Create.Type, obj), RoleSetup, simulator.SendOptions{})
		s.settledNow()
		return
	}
	s.runFixture(ep, l.Fixture, obj)
}

// runFixture runs the named fixture for obj; one that fails leaves nothing to
// judge.
func (s *session) runFixture(ep Endpoint, name, obj string) {
	if s.env.Fixtures == nil {
		s.abort("fixture %q is declared but the harness has no fixture runner", name)
	}
	ev := s.objectEvent(ep, "", obj)
	t0 := time.Now()
	if err := s.env.Fixtures.Create(s.ctx, name, vocab.ObjectData{ObjectID: obj, Source: ep.source(), Account: ep.Account,
		Amount: ev.Amount, Currency: ev.Currency}); err != nil {
		s.abort("fixture %q for %s: %v", name, obj, err)
	}
	s.note("fixture %s created %s in %s", name, obj, time.Since(t0).Round(time.Millisecond))
}

// drive sends the transitions of path for obj one after another, each once the
// previous has settled, so no event of the setup arrives before its
// precondition.
func (s *session) drive(ep Endpoint, obj string, path []vocab.Transition) {
	for _, t := range path {
		s.send(ep, s.objectEvent(ep, t.Type, obj), RoleSetup, simulator.SendOptions{})
		s.settledNow()
	}
}

// async reports whether the receiver applies events after its 2xx, and records
// it for the checker.
func (s *session) async() bool {
	if s.env.Acceptance.Async {
		s.fact(FactAcceptance, "async")
		return true
	}
	return false
}

// settleFor is how long a positive expectation is waited for.
func (s *session) settleFor() time.Duration {
	if d := s.env.Acceptance.Settle; s.env.Acceptance.Async && d > settle {
		return d
	}
	return settle
}

// settled waits, for a receiver that applies events after its 2xx, until the
// work the scenario's deliveries handed it is done: its quiescent query reads
// true, or the declared settle period has passed. Every read of the state
// comes after it, so an absence is never judged on a read made before the
// worker ran. A synchronous receiver is settled when it answers.
func (s *session) settled() {
	if !s.async() {
		return
	}
	s.mu.Lock()
	pending := s.lastSend.After(s.lastSettled)
	s.mu.Unlock()
	if pending {
		s.settledNow()
	}
}

// settledNow waits for the receiver to settle whatever was sent last.
func (s *session) settledNow() {
	a := s.env.Acceptance
	if !s.async() {
		return
	}
	start := time.Now()
	deadline := start.Add(a.Settle)
	if s.env.Quiescent == nil {
		_ = sleepCtx(s.ctx, a.Settle)
	} else {
		for {
			ok, err := s.env.Quiescent(s.ctx)
			if err != nil {
				s.abort("reading whether the receiver is quiescent: %v", err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				s.note("the receiver still had pending work %s after the last delivery (acceptance.settle); reading its state anyway", a.Settle)
				break
			}
			if sleepCtx(s.ctx, 25*time.Millisecond) != nil {
				break
			}
		}
	}
	s.mu.Lock()
	s.lastSettled = start
	s.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endpoints are the endpoints a guarantee runs on when it runs on each.
func (s *session) endpoints() []Endpoint {
	if len(s.env.Endpoints) == 0 {
		s.abort("the target has no endpoints")
	}
	return s.env.Endpoints
}

// name identifies an endpoint in notes and evidence.
func (ep Endpoint) name() string { return ep.source() + "/" + ep.Account }
