package targetfile

import (
	"regexp"
	"strings"

	"github.com/hookcert/hookcert/vocab"
)

// The declared event vocabulary, target.events (docs/target.md, "Declared
// events"): the provider's event types by the role each plays in the
// guarantees. The fixtures its roles name are in fixtures.go, how the
// receiver acknowledges in acceptance.go.

type rawEvents struct {
	Effect    *rawEffect         `yaml:"effect"`
	Lifecycle *rawEventLifecycle `yaml:"lifecycle"`
	Ordered   *rawOrdered        `yaml:"ordered"`
	Unhandled *rawRole           `yaml:"unhandled"`
}

type rawRole struct {
	Type     string `yaml:"type"`
	IDPrefix string `yaml:"id_prefix"`
	Object   string `yaml:"object"`
}

type rawEffect struct {
	Type        string           `yaml:"type"`
	IDPrefix    string           `yaml:"id_prefix"`
	Object      string           `yaml:"object"`
	Effects     string           `yaml:"effects"`
	EffectsKind string           `yaml:"effects_kind"`
	Witness     string           `yaml:"witness"`
	Create      *rawEffectCreate `yaml:"create"`
}

type rawEventLifecycle struct {
	Object      string          `yaml:"object"`
	IDPrefix    string          `yaml:"id_prefix"`
	Initial     string          `yaml:"initial"`
	Create      *rawCreate      `yaml:"create"`
	Missing     string          `yaml:"missing"`
	Transitions []rawTransition `yaml:"transitions"`
	State       string          `yaml:"state"`
	Effects     string          `yaml:"effects"`
	EffectsKind string          `yaml:"effects_kind"`
	Witness     string          `yaml:"witness"`
}

type rawCreate struct {
	Fixture string `yaml:"fixture"`
	Type    string `yaml:"type"`
	Object  string `yaml:"object"`
}

type rawTransition struct {
	Type    string   `yaml:"type"`
	From    []string `yaml:"from"`
	To      string   `yaml:"to"`
	Effect  bool     `yaml:"effect"`
	Missing string   `yaml:"missing"`
	Object  string   `yaml:"object"`
}

type rawOrdered struct {
	Type     string            `yaml:"type"`
	IDPrefix string            `yaml:"id_prefix"`
	Key      string            `yaml:"key"`
	Create   *rawOrderedCreate `yaml:"create"`
	Object   string            `yaml:"object"`
	State    string            `yaml:"state"`
	Delete   *rawOrderedDelete `yaml:"delete"`
	// Ties is the receiver's rule for updates with equal keys; Children reads
	// the key the object's child rows were last written from.
	Ties     string `yaml:"ties"`
	Children string `yaml:"children"`
}

// rawOrderedDelete is the event that deletes an ordered object; it carries the
// ordering key like an update.
type rawOrderedDelete struct {
	Type   string `yaml:"type"`
	Object string `yaml:"object"`
}

// rawOrderedCreate: an ordered object is made by a fixture or by its first
// update, never by an event of its own.
type rawOrderedCreate struct {
	Fixture string `yaml:"fixture"`
}

// idPrefixRE: the object IDs' prefix. No "_": ref derives a related ID from
// what follows the first one.
var idPrefixRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,15}$`)

var missingRules = []string{vocab.MissingRetry, vocab.MissingCreate, vocab.MissingIgnore}

var tieRules = []string{vocab.TiesLastWins, vocab.TiesFirstWins, vocab.TiesNone}

// events builds the declared vocabulary and puts its queries in the observer's
// slots: effect.effects → effects, lifecycle.state → payment, lifecycle.effects
// → object_effects, ordered.state → object.
func (v *validator) events(t *Target, rt *rawTarget) {
	re := rt.Events
	if re == nil {
		return
	}
	base := []any{"target", "events"}
	voc := &vocab.Vocabulary{Declared: true}
	if re.Effect == nil && re.Lifecycle == nil && re.Ordered == nil && re.Unhandled == nil {
		v.fail(base, "declare at least one of effect, lifecycle, ordered, unhandled (or remove events: the built-in vocabulary then applies)")
	}
	rs := &roles{q: &t.Store.Queries, fixtures: rt.Fixtures, types: map[string]string{}}
	if st := rt.store(); st != nil {
		rs.rq, rs.kind = st.Queries, st.kind
	}
	// In this order: of two roles that name one event type, the later is
	// reported.
	if r := re.Effect; r != nil {
		voc.Effect = v.effectRole(rs, at(base, "effect"), r)
	}
	if rl := re.Lifecycle; rl != nil {
		voc.Lifecycle = v.lifecycleRole(rs, at(base, "lifecycle"), rl)
	}
	if ro := re.Ordered; ro != nil {
		voc.Ordered = v.orderedRole(rs, at(base, "ordered"), ro)
	}
	if r := re.Unhandled; r != nil {
		voc.Unhandled = v.unhandledRole(rs, at(base, "unhandled"), r)
	}
	t.Events = voc
}

// roles is what the roles of target.events share while they are checked.
type roles struct {
	// q are the observer's query slots the roles' queries fill.
	q *Queries
	// rq are the file's observe.postgres.queries (nil when absent): a slot a
	// role fills must not be given there too.
	rq *rawQueries
	// kind is the observer's kind, naming its section in errors.
	kind string
	// fixtures are target.fixtures, which create.fixture names.
	fixtures map[string]rawFixture
	// types maps each event type to the field that named it: one role each.
	types map[string]string
}

// from records the field a declared query was read from (Queries.From).
func (rs *roles) from(name string, segs []any) {
	if rs.q.From == nil {
		rs.q.From = map[string]string{}
	}
	rs.q.From[name] = pathString(segs)
}

// conflict refuses a built-in query slot the declared role fills itself.
func (v *validator) conflict(rs *roles, name string, declared []any) {
	if rs.rq == nil {
		return
	}
	set := map[string]string{QueryObjectEffects: rs.rq.ObjectEffects, QueryObject: rs.rq.Object, QueryPayment: rs.rq.Payment}[name]
	if strings.TrimSpace(set) != "" {
		v.fail([]any{"target", "observe", rs.kind, "queries", name},
			"must not be set beside %s, which reads the same state (give the query there)", pathString(declared))
	}
}

// effectRole checks events.effect: the event type each of whose events applies
// one countable effect.
func (v *validator) effectRole(rs *roles, p []any, r *rawEffect) *vocab.EventRole {
	role := &vocab.EventRole{Type: v.eventType(at(p, "type"), r.Type, rs.types), IDPrefix: v.idPrefix(at(p, "id_prefix"), r.IDPrefix),
		Object: v.objectTemplate(at(p, "object"), r.Object)}
	if sql := v.declaredQuery(at(p, "effects"), r.Effects, false, 3, 4); sql != "" {
		// It replaces observe.postgres.queries.effects, which may then be absent.
		rs.q.Effects = sql
		rs.from(QueryEffects, at(p, "effects"))
	}
	v.effectExtras(rs, p, r, role)
	return role
}

// lifecycleRole checks events.lifecycle: a business object with states that
// events move.
func (v *validator) lifecycleRole(rs *roles, p []any, rl *rawEventLifecycle) *vocab.Lifecycle {
	l := &vocab.Lifecycle{Object: rl.Object, IDPrefix: v.idPrefix(at(p, "id_prefix"), rl.IDPrefix), Initial: rl.Initial}
	if l.Object == "" {
		l.Object = "object"
	}
	if strings.TrimSpace(rl.Initial) == "" {
		v.fail(at(p, "initial"), "required (the state of a freshly created object, as the state query reads it)")
	}
	v.lifecycleCreate(rs, p, rl.Create, l)
	l.Missing = v.missing(at(p, "missing"), rl.Missing, vocab.MissingRetry)
	l.Transitions = v.transitions(rs, p, rl, l.IDPrefix)
	if sql := v.declaredQuery(at(p, "state"), rl.State, true, 4); sql != "" {
		rs.q.Payment = sql
		rs.from(QueryPayment, at(p, "state"))
	}
	v.conflict(rs, QueryPayment, at(p, "state"))
	if sql := v.declaredQuery(at(p, "effects"), rl.Effects, false, 4); sql != "" {
		rs.q.ObjectEffects = sql
		rs.from(QueryObjectEffects, at(p, "effects"))
		l.CountsEffects = true
	}
	v.conflict(rs, QueryObjectEffects, at(p, "effects"))
	v.lifecycleEffectKind(rs, p, rl, l)
	return l
}

// lifecycleCreate checks events.lifecycle.create: a fixture or an event makes
// the object, exactly one of them.
func (v *validator) lifecycleCreate(rs *roles, p []any, c *rawCreate, l *vocab.Lifecycle) {
	switch {
	case c == nil:
		v.fail(at(p, "create"), "required: one of fixture (a fixture creates the object) and type (an event creates it)")
	case (c.Fixture == "") == (c.Type == ""):
		v.fail(at(p, "create"), "set exactly one of fixture and type")
	case c.Fixture != "":
		if c.Object != "" {
			v.fail(at(p, "create", "object"), "only with create.type (a fixture's object is the fixture's business)")
		}
		v.fixtureExists(at(p, "create", "fixture"), c.Fixture, rs.fixtures)
		l.Fixture = c.Fixture
	default:
		role := &vocab.EventRole{Type: v.eventType(at(p, "create", "type"), c.Type, rs.types), IDPrefix: l.IDPrefix}
		if strings.TrimSpace(c.Object) == "" {
			v.fail(at(p, "create", "object"), "required with create.type (the created object's template)")
		} else {
			role.Object = v.objectTemplate(at(p, "create", "object"), c.Object)
		}
		l.Create = role
	}
}

// transitions checks events.lifecycle.transitions; their objects' IDs take the
// lifecycle's prefix.
func (v *validator) transitions(rs *roles, p []any, rl *rawEventLifecycle, idPrefix string) []vocab.Transition {
	if len(rl.Transitions) == 0 {
		v.fail(at(p, "transitions"), "at least one transition is required")
	}
	var out []vocab.Transition
	for i, rtr := range rl.Transitions {
		tp := at(p, "transitions", i)
		tr := vocab.Transition{
			EventRole: vocab.EventRole{Type: v.eventType(at(tp, "type"), rtr.Type, rs.types), IDPrefix: idPrefix,
				Object: v.objectTemplate(at(tp, "object"), rtr.Object)},
			From: rtr.From, To: rtr.To, Effect: rtr.Effect, Missing: v.missing(at(tp, "missing"), rtr.Missing, ""),
		}
		if strings.TrimSpace(rtr.To) == "" {
			v.fail(at(tp, "to"), "required (the state the transition moves the object to)")
		}
		if len(rtr.From) == 0 {
			v.fail(at(tp, "from"), "at least one state is required (the states the transition is allowed from)")
		}
		out = append(out, tr)
	}
	// Every from state must be one an object can be in.
	known := map[string]bool{rl.Initial: true}
	for _, tr := range rl.Transitions {
		known[tr.To] = true
	}
	for i, tr := range rl.Transitions {
		for j, s := range tr.From {
			if strings.TrimSpace(s) == "" {
				v.fail(at(p, "transitions", i, "from", j), "must not be empty")
			} else if !known[s] && rl.Initial != "" {
				v.fail(at(p, "transitions", i, "from", j), "state %q is neither initial (%q) nor any transition's to", s, rl.Initial)
			}
		}
	}
	return out
}

// orderedRole checks events.ordered: updates that carry the provider's
// ordering key, and the deletion ordered by the same key.
func (v *validator) orderedRole(rs *roles, p []any, ro *rawOrdered) *vocab.Ordered {
	o := &vocab.Ordered{EventRole: vocab.EventRole{Type: v.eventType(at(p, "type"), ro.Type, rs.types),
		IDPrefix: v.idPrefix(at(p, "id_prefix"), ro.IDPrefix), Object: v.objectTemplate(at(p, "object"), ro.Object)}, Key: ro.Key}
	switch ro.Key {
	case vocab.OrderCreated:
	case vocab.OrderField:
		if !usesKey(ro.Object) {
			v.fail(at(p, "object"), "must put {{.Key}} in a field: with key: field the object carries the ordering key")
		}
	case "":
		v.fail(at(p, "key"), "required: created (the event's created time orders updates) or field (the object's {{.Key}} field does)")
	default:
		v.fail(at(p, "key"), "must be created or field (got %q)", ro.Key)
	}
	if ro.Create != nil {
		switch {
		case ro.Create.Fixture == "" && v.brokenUnder(at(p, "create")):
		case ro.Create.Fixture == "":
			v.fail(at(p, "create", "fixture"), "required in create (or remove create: the first update creates the object)")
		default:
			v.fixtureExists(at(p, "create", "fixture"), ro.Create.Fixture, rs.fixtures)
			o.Fixture = ro.Create.Fixture
		}
	}
	if sql := v.declaredQuery(at(p, "state"), ro.State, true, 4); sql != "" {
		rs.q.Object = sql
		rs.from(QueryObject, at(p, "state"))
	}
	v.conflict(rs, QueryObject, at(p, "state"))
	if rd := ro.Delete; rd != nil {
		dp := at(p, "delete")
		o.Delete = &vocab.EventRole{Type: v.eventType(at(dp, "type"), rd.Type, rs.types),
			IDPrefix: o.IDPrefix, Object: v.objectTemplate(at(dp, "object"), rd.Object)}
		if ro.Key == vocab.OrderField && rd.Object != "" && !usesKey(rd.Object) {
			v.fail(at(dp, "object"), "must put {{.Key}} in a field: with key: field the deletion carries the ordering key too")
		}
	}
	v.orderedTies(p, ro, o)
	if sql := v.declaredQuery(at(p, "children"), ro.Children, false, 4); sql != "" {
		rs.q.ObjectChildren = sql
		rs.from(QueryObjectChildren, at(p, "children"))
		o.Children = true
	}
	return o
}

// orderedTies checks events.ordered.ties: the receiver's rule for two updates
// of one object with equal keys. A created key is whole seconds (the
// provider's created field), so two updates in one second tie; none says the
// provider never repeats a key for one object, which only a field key can.
func (v *validator) orderedTies(p []any, ro *rawOrdered, o *vocab.Ordered) {
	o.Tagged = usesVar(ro.Object, "Tag")
	switch {
	case ro.Ties == "":
	case !contains(tieRules, ro.Ties):
		v.fail(at(p, "ties"), "%q is not one of %s", ro.Ties, strings.Join(tieRules, ", "))
	case ro.Ties == vocab.TiesNone && ro.Key == vocab.OrderCreated:
		v.fail(at(p, "ties"), "cannot be none with key: created: created is whole seconds, so two updates of one object in one second have equal keys")
	default:
		o.Ties = ro.Ties
	}
	// A declared rule must be observable: only the update's tag tells two
	// updates with one key apart.
	if o.Ties != "" && o.Ties != vocab.TiesNone && !o.Tagged {
		v.fail(at(p, "object"), "must put {{.Tag}} in a field the state query's second column returns: with ties: %s, it tells apart two updates with equal keys", o.Ties)
	}
}

// unhandledRole checks events.unhandled: a valid event type the receiver does
// not handle.
func (v *validator) unhandledRole(rs *roles, p []any, r *rawRole) *vocab.EventRole {
	return &vocab.EventRole{Type: v.eventType(at(p, "type"), r.Type, rs.types),
		IDPrefix: v.idPrefix(at(p, "id_prefix"), r.IDPrefix), Object: v.objectTemplate(at(p, "object"), r.Object)}
}

// idPrefix checks an optional id_prefix (default "obj").
func (v *validator) idPrefix(segs []any, s string) string {
	if s == "" {
		return "obj"
	}
	if !idPrefixRE.MatchString(s) {
		v.fail(segs, "must be a letter then up to 15 letters or digits, no _ (got %q)", s)
	}
	return s
}

// eventType checks a role's event type and that no other role uses it.
func (v *validator) eventType(segs []any, s string, seen map[string]string) string {
	switch {
	case strings.TrimSpace(s) == "":
		v.fail(segs, "required (the provider's event type)")
	case strings.ContainsAny(s, " \t\n"):
		v.fail(segs, "must not contain whitespace (got %q)", s)
	default:
		if other, dup := seen[s]; dup {
			v.fail(segs, "event type %q is also %s: each event type plays one role", s, other)
		} else {
			seen[s] = pathString(segs)
		}
	}
	return s
}

// missing checks a missing rule; "" gives def.
func (v *validator) missing(segs []any, s, def string) string {
	if s == "" {
		return def
	}
	if !contains(missingRules, s) {
		v.fail(segs, "must be one of %s (got %q)", strings.Join(missingRules, ", "), s)
		return def
	}
	return s
}
