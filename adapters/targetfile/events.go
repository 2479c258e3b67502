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
	// Effect, Lifecycle and Ordered take one role (a mapping) or several (a
	// list of mappings).
	Effect    *rawRoles[rawEffect]         `yaml:"effect"`
	Lifecycle *rawRoles[rawEventLifecycle] `yaml:"lifecycle"`
	Ordered   *rawRoles[rawOrdered]        `yaml:"ordered"`
	Unhandled *rawRole                     `yaml:"unhandled"`
}

type rawRole struct {
	Type     string `yaml:"type"`
	IDPrefix string `yaml:"id_prefix"`
	Object   string `yaml:"object"`
}

type rawEffect struct {
	Name        string           `yaml:"name"`
	Type        string           `yaml:"type"`
	IDPrefix    string           `yaml:"id_prefix"`
	Object      string           `yaml:"object"`
	Effects     string           `yaml:"effects"`
	EffectsKind string           `yaml:"effects_kind"`
	Witness     string           `yaml:"witness"`
	Create      *rawEffectCreate `yaml:"create"`
	Table       string           `yaml:"table"`
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
	Table       string          `yaml:"table"`
	Parent      *rawParent      `yaml:"parent"`
}

// rawParent relates a lifecycle object to the one it belongs to (a refund to
// its charge).
type rawParent struct {
	Object  string `yaml:"object"`
	State   string `yaml:"state"`
	Created bool   `yaml:"created"`
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
	Name     string            `yaml:"name"`
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
	Table    string `yaml:"table"`
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
// → object_effects, ordered.state → object. The first role of each kind fills
// the slots; the others' queries take the slot's name and the role's label
// (payment:refund, Queries.Roles).
func (v *validator) events(t *Target, rt *rawTarget) {
	re := rt.Events
	if re == nil {
		return
	}
	base := []any{"target", "events"}
	voc := &vocab.Vocabulary{Declared: true}
	if re.Effect.Len() == 0 && re.Lifecycle.Len() == 0 && re.Ordered.Len() == 0 && re.Unhandled == nil {
		v.fail(base, "declare at least one of effect, lifecycle, ordered, unhandled (or remove events: the built-in vocabulary then applies)")
	}
	rs := &roles{q: &t.Store.Queries, fixtures: rt.Fixtures, types: map[string]string{}, labels: map[string]string{}}
	if st := rt.store(); st != nil {
		rs.rq, rs.kind = st.Queries, st.kind
	}
	// In this order: of two roles that name one event type, the later is
	// reported.
	if re.Effect != nil {
		for i, r := range re.Effect.Items {
			if r == nil {
				v.fail(re.Effect.path(at(base, "effect"), i), "must be a mapping (a role), got nothing")
				continue
			}
			role := v.effectRole(rs, re.Effect.path(at(base, "effect"), i), r, i)
			voc.Effects = append(voc.Effects, role)
		}
	}
	if re.Lifecycle != nil {
		for i, rl := range re.Lifecycle.Items {
			if rl == nil {
				v.fail(re.Lifecycle.path(at(base, "lifecycle"), i), "must be a mapping (a role), got nothing")
				continue
			}
			voc.Lifecycles = append(voc.Lifecycles, v.lifecycleRole(rs, re.Lifecycle.path(at(base, "lifecycle"), i), rl, i))
		}
		v.relations(voc.Lifecycles, re.Lifecycle, at(base, "lifecycle"))
	}
	if re.Ordered != nil {
		for i, ro := range re.Ordered.Items {
			if ro == nil {
				v.fail(re.Ordered.path(at(base, "ordered"), i), "must be a mapping (a role), got nothing")
				continue
			}
			voc.OrderedRoles = append(voc.OrderedRoles, v.orderedRole(rs, re.Ordered.path(at(base, "ordered"), i), ro, i))
		}
	}
	if len(voc.Effects) > 0 {
		voc.Effect = voc.Effects[0]
	}
	if len(voc.Lifecycles) > 0 {
		voc.Lifecycle = voc.Lifecycles[0]
	}
	if len(voc.OrderedRoles) > 0 {
		voc.Ordered = voc.OrderedRoles[0]
	}
	if r := re.Unhandled; r != nil {
		voc.Unhandled = v.unhandledRole(rs, at(base, "unhandled"), r)
	}
	t.Events = voc
}

// label checks the label of the i-th role of a kind: the first has none (its
// queries fill the observer's slots), the others are named by it in their
// queries' names and in reports, once each per kind.
func (v *validator) label(rs *roles, segs []any, kind, s string, i int) string {
	if i == 0 {
		return ""
	}
	switch {
	case strings.TrimSpace(s) == "":
		v.fail(segs, "required when several roles of events.%s are declared (names the role in its queries and reports)", kind)
	case !labelRE.MatchString(s):
		v.fail(segs, "must be letters, digits, _ . or - (got %q)", s)
	default:
		if other, dup := rs.labels[kind+"/"+s]; dup {
			v.fail(segs, "%q is also %s: each role of events.%s needs its own", s, other, kind)
		}
		rs.labels[kind+"/"+s] = pathString(segs)
	}
	return s
}

// labelRE: a role's label, which becomes part of its queries' names.
var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// roleQuery puts the query of a role after the first in Queries.Roles under
// its role name (payment:refund).
func (rs *roles) roleQuery(name, label, sql string, segs []any) {
	if rs.q.Roles == nil {
		rs.q.Roles = map[string]string{}
	}
	qn := vocab.QueryName(name, label)
	rs.q.Roles[qn] = sql
	rs.from(qn, segs)
}

// table checks a role's own table (optional: the observer's tables apply).
func (v *validator) table(segs []any, s string) string {
	if s != "" && !tableNameOK(s) {
		v.fail(segs, "must be a table name or schema.table of letters, digits and _ (got %q)", s)
		return ""
	}
	return s
}

// relations checks each lifecycle's parent: a declared object other than
// itself, a state that object can reach, no cycle.
func (v *validator) relations(ls []*vocab.Lifecycle, raw *rawRoles[rawEventLifecycle], base []any) {
	byObject := map[string]*vocab.Lifecycle{}
	for _, l := range ls {
		byObject[l.Object] = l
	}
	for i, l := range ls {
		if l.Parent == nil {
			continue
		}
		p := at(raw.path(base, i), "parent")
		parent := byObject[l.Parent.Object]
		switch {
		case strings.TrimSpace(l.Parent.Object) == "":
			v.fail(at(p, "object"), "required (the object of another events.lifecycle this one belongs to)")
			continue
		case l.Parent.Object == l.Object:
			v.fail(at(p, "object"), "must name another lifecycle object, not %q itself", l.Object)
			continue
		case parent == nil:
			v.fail(at(p, "object"), "%q is not the object of any events.lifecycle (declared: %s)", l.Parent.Object, strings.Join(objectNames(ls), ", "))
			continue
		}
		switch {
		case strings.TrimSpace(l.Parent.State) == "":
			v.fail(at(p, "state"), "required (the state %s must be in before a %s exists)", parent.Object, l.Object)
		case !contains(parent.States(), l.Parent.State):
			v.fail(at(p, "state"), "%q is not a state %s can reach (%s)", l.Parent.State, parent.Object, strings.Join(parent.States(), ", "))
		case l.Parent.Created && l.Parent.State == parent.Initial:
			v.fail(at(p, "created"), "a %s is created by the transition into %s, and no transition leads into the initial state %q", l.Object, parent.Object, parent.Initial)
		}
		// A cycle: following parents comes back to l.
		seen := map[string]bool{l.Object: true}
		for cur := parent; cur != nil && cur.Parent != nil; cur = byObject[cur.Parent.Object] {
			if seen[cur.Parent.Object] {
				v.fail(at(p, "object"), "relations form a cycle through %s: a parent must exist before its child", cur.Parent.Object)
				break
			}
			seen[cur.Parent.Object] = true
		}
	}
}

func objectNames(ls []*vocab.Lifecycle) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Object)
	}
	return out
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
	// labels maps kind/label to the field that named it.
	labels map[string]string
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

// effectRole checks events.effect (its i-th role): the event type each of
// whose events applies one countable effect.
func (v *validator) effectRole(rs *roles, p []any, r *rawEffect, i int) *vocab.EventRole {
	role := &vocab.EventRole{Type: v.eventType(at(p, "type"), r.Type, rs.types), IDPrefix: v.idPrefix(at(p, "id_prefix"), r.IDPrefix),
		Object: v.objectTemplate(at(p, "object"), r.Object), Label: v.label(rs, at(p, "name"), "effect", r.Name, i),
		Table: v.table(at(p, "table"), r.Table)}
	if sql := v.declaredQuery(at(p, "effects"), r.Effects, false, 3, 4); sql != "" {
		if i > 0 {
			// Absent, the role's effects are read by the observer's effects
			// query, by event ID.
			rs.roleQuery(QueryEffects, role.Label, sql, at(p, "effects"))
			return role
		}
		// It replaces observe.postgres.queries.effects, which may then be absent.
		rs.q.Effects = sql
		rs.from(QueryEffects, at(p, "effects"))
	}
	v.effectExtras(rs, p, r, role)
	return role
}

// lifecycleRole checks events.lifecycle (its i-th object): a business object
// with states that events move.
func (v *validator) lifecycleRole(rs *roles, p []any, rl *rawEventLifecycle, i int) *vocab.Lifecycle {
	l := &vocab.Lifecycle{Object: rl.Object, IDPrefix: v.idPrefix(at(p, "id_prefix"), rl.IDPrefix), Initial: rl.Initial,
		Table: v.table(at(p, "table"), rl.Table)}
	if l.Object == "" {
		l.Object = "object"
		if i > 0 {
			v.fail(at(p, "object"), "required when several lifecycle objects are declared (names the object in its queries and reports)")
		}
	}
	if i > 0 && rl.Object != "" {
		l.Label = v.label(rs, at(p, "object"), "lifecycle", rl.Object, i)
	} else if i == 0 && rl.Object != "" {
		rs.labels["lifecycle/"+rl.Object] = pathString(at(p, "object"))
	}
	if strings.TrimSpace(rl.Initial) == "" {
		v.fail(at(p, "initial"), "required (the state of a freshly created object, as the state query reads it)")
	}
	if rp := rl.Parent; rp != nil {
		l.Parent = &vocab.Relation{Object: rp.Object, State: rp.State, Created: rp.Created}
	}
	v.lifecycleCreate(rs, p, rl.Create, l)
	l.Missing = v.missing(at(p, "missing"), rl.Missing, vocab.MissingRetry)
	l.Transitions = v.transitions(rs, p, rl, l.IDPrefix)
	if sql := v.declaredQuery(at(p, "state"), rl.State, true, 4); sql != "" {
		if i > 0 {
			rs.roleQuery(QueryPayment, l.Label, sql, at(p, "state"))
		} else {
			rs.q.Payment = sql
			rs.from(QueryPayment, at(p, "state"))
		}
	}
	if i == 0 {
		v.conflict(rs, QueryPayment, at(p, "state"))
	}
	if sql := v.declaredQuery(at(p, "effects"), rl.Effects, false, 4); sql != "" {
		if i > 0 {
			rs.roleQuery(QueryObjectEffects, l.Label, sql, at(p, "effects"))
		} else {
			rs.q.ObjectEffects = sql
			rs.from(QueryObjectEffects, at(p, "effects"))
		}
		l.CountsEffects = true
	}
	if i == 0 {
		v.conflict(rs, QueryObjectEffects, at(p, "effects"))
	}
	v.lifecycleEffectKind(rs, p, rl, l)
	return l
}

// lifecycleCreate checks events.lifecycle.create: a fixture or an event makes
// the object, exactly one of them.
func (v *validator) lifecycleCreate(rs *roles, p []any, c *rawCreate, l *vocab.Lifecycle) {
	switch {
	case l.Parent != nil && l.Parent.Created:
		if c != nil {
			v.fail(at(p, "create"), "must be absent with parent.created (the parent's transition into %q creates the object)", l.Parent.State)
		}
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

// orderedRole checks events.ordered (its i-th role): updates that carry the
// provider's ordering key, and the deletion ordered by the same key.
func (v *validator) orderedRole(rs *roles, p []any, ro *rawOrdered, i int) *vocab.Ordered {
	o := &vocab.Ordered{EventRole: vocab.EventRole{Type: v.eventType(at(p, "type"), ro.Type, rs.types),
		IDPrefix: v.idPrefix(at(p, "id_prefix"), ro.IDPrefix), Object: v.objectTemplate(at(p, "object"), ro.Object),
		Label: v.label(rs, at(p, "name"), "ordered", ro.Name, i), Table: v.table(at(p, "table"), ro.Table)}, Key: ro.Key}
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
		if i > 0 {
			rs.roleQuery(QueryObject, o.Label, sql, at(p, "state"))
		} else {
			rs.q.Object = sql
			rs.from(QueryObject, at(p, "state"))
		}
	}
	if i == 0 {
		v.conflict(rs, QueryObject, at(p, "state"))
	}
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
