package vocab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/template"
	"time"
)

// Vocabulary is the receiver's own event vocabulary: which of its event types
// play the roles the guarantees need, how their bodies look, and what each must
// do. A target that declares none gets the built-in conformance domain
// (BuiltinVocabulary), so existing target files keep their meaning. A role that
// is nil makes the guarantees needing it not applicable, with the reason.
type Vocabulary struct {
	// Declared is false for the built-in conformance domain: its N/A reasons then
	// name the capability a target declares to take part.
	Declared bool
	// Effect events each apply one countable effect per distinct event.
	Effect *EventRole
	// Lifecycle is a business object with states moved by events.
	Lifecycle *Lifecycle
	// Ordered updates carry the provider's ordering key; only a newer one may
	// overwrite the object.
	Ordered *Ordered
	// Unhandled is a valid event type the receiver does not handle.
	Unhandled *EventRole

	// Effects, Lifecycles and OrderedRoles hold every declared role of each
	// kind, in the file's order; the first is also Effect, Lifecycle, Ordered.
	// Empty (as in BuiltinVocabulary and hand-built vocabularies) means the
	// singular field alone: read them through AllEffects, AllLifecycles and
	// AllOrdered.
	Effects      []*EventRole
	Lifecycles   []*Lifecycle
	OrderedRoles []*Ordered
}

// AllEffects lists every effect role, the first declared first.
func (v *Vocabulary) AllEffects() []*EventRole {
	if len(v.Effects) > 0 {
		return v.Effects
	}
	if v.Effect != nil {
		return []*EventRole{v.Effect}
	}
	return nil
}

// AllLifecycles lists every lifecycle object, the first declared first.
func (v *Vocabulary) AllLifecycles() []*Lifecycle {
	if len(v.Lifecycles) > 0 {
		return v.Lifecycles
	}
	if v.Lifecycle != nil {
		return []*Lifecycle{v.Lifecycle}
	}
	return nil
}

// AllOrdered lists every ordered role, the first declared first.
func (v *Vocabulary) AllOrdered() []*Ordered {
	if len(v.OrderedRoles) > 0 {
		return v.OrderedRoles
	}
	if v.Ordered != nil {
		return []*Ordered{v.Ordered}
	}
	return nil
}

// EffectRoleOf is the effect role of event type t; nil when t is none's.
func (v *Vocabulary) EffectRoleOf(t string) *EventRole {
	for _, r := range v.AllEffects() {
		if r.Type == t {
			return r
		}
	}
	return nil
}

// LifecycleOf is the lifecycle object named object; nil when none is.
func (v *Vocabulary) LifecycleOf(object string) *Lifecycle {
	for _, l := range v.AllLifecycles() {
		if l.Object == object {
			return l
		}
	}
	return nil
}

// QueryName is the name of a role's query: the observer's query name for the
// first role of its kind (label ""), "name:label" for the others, so every
// read in a history says which role it read.
func QueryName(name, label string) string {
	if label == "" {
		return name
	}
	return name + ":" + label
}

// BaseQuery is the observer's query name a role's query name stands for
// ("state:refund" → "state").
func BaseQuery(name string) string {
	base, _, _ := strings.Cut(name, ":")
	return base
}

// QueryLabel is the role label of a query name ("" for the first role).
func QueryLabel(name string) string {
	_, label, _ := strings.Cut(name, ":")
	return label
}

// EventRole is one event type in a role, and how its business object renders.
type EventRole struct {
	Type string
	// IDPrefix starts the object IDs the harness makes for this role ("pi" for
	// "pi_…"); "obj" when empty.
	IDPrefix string
	// Object renders the business object placed in the profile's envelope (a
	// Stripe data.object, a GitHub payload); nil renders the built-in fields.
	Object *ObjectTemplate
	// EffectsKind is how the effect role's effects query reads an event's
	// effect: EffectsCount (default, "" too) counts its applications;
	// EffectsState reads a state it sets (a flag, a status): 1 once set,
	// and still 1 after a second application.
	EffectsKind string
	// Witness is true when the effects query of a state effect is the
	// target's witness: a count of the applications the receiver records
	// (an audit row, a counter), so a double application shows.
	Witness bool
	// Fixture creates each event's object before the event is sent; "" when
	// the event needs no object of the receiver's own.
	Fixture string
	// Label names an effect or ordered role in its queries' names
	// (QueryName) and in reports; "" for the first role of its kind.
	Label string
	// Table is the table the role's events write, where the harness holds
	// racers (lock gate) and cuts sessions; "" uses the observer's
	// event_table (or effect_table, where the guarantee reads the effect).
	Table string
}

// How an effect role's effects query reads an event's effect.
const (
	EffectsCount = "count"
	EffectsState = "state"
)

// DoubleBlind reports whether the role's effects query cannot show an event
// applied twice: a state without a witness reads the same after one
// application and after two.
func (r *EventRole) DoubleBlind() bool {
	return r != nil && r.EffectsKind == EffectsState && !r.Witness
}

// What an event for an object that does not exist (yet) must get.
const (
	// MissingRetry: a non-2xx answer, so the provider redelivers once the object
	// exists (or the receiver keeps the event and applies it then).
	MissingRetry = "retry"
	// MissingCreate: the event creates the object.
	MissingCreate = "create"
	// MissingIgnore: acknowledged and ignored, by the receiver's declared choice.
	MissingIgnore = "ignore"
)

// Lifecycle is a business object whose state events move.
type Lifecycle struct {
	// Object names the object in reports ("payment_intent").
	Object   string
	IDPrefix string
	// Initial is the state of a freshly created object, as the state query reads it.
	Initial string
	// Create is the event that creates an object; nil when a fixture does
	// (Fixture), as for rows the receiver's application writes before any event.
	Create  *EventRole
	Fixture string
	// Transitions move an object from any of From to To.
	Transitions []Transition
	// Missing is what an event for an object that does not exist must get,
	// unless its transition says otherwise.
	Missing string
	// CountsEffects is true when the target can count an object's effects
	// (observe object_effects).
	CountsEffects bool
	// EffectsKind and Witness are the object effects query's, as an effect
	// role's are: a state (EffectsState) shows an effect applied, never
	// applied twice, unless the query is the target's witness.
	EffectsKind string
	Witness     bool
	// Label names the object in its queries' names (QueryName: "state:refund");
	// "" for the first lifecycle declared.
	Label string
	// Table is the table the object's events write, for the lock gate and the
	// crash checks; "" uses the observer's event_table or effect_table.
	Table string
	// Parent is the object this one belongs to (a refund to its charge); nil
	// when it stands alone.
	Parent *Relation
}

// DoubleBlind reports whether the lifecycle's effects query cannot show an
// effect applied twice.
func (l *Lifecycle) DoubleBlind() bool {
	return l != nil && l.CountsEffects && l.EffectsKind == EffectsState && !l.Witness
}

// Relation ties a lifecycle object to its parent: a child exists only once its
// parent has reached State, and its ID derives from the parent's (Ref), so its
// events name the parent with {{ref "<parent prefix>"}} or {{.Parent}}.
type Relation struct {
	// Object is the parent lifecycle's object name.
	Object string
	// State is the state the parent must be in before the child is created.
	State string
	// Created is true when the parent's transition into State creates the
	// child (the receiver derives it from that event); the child then has
	// neither create event nor fixture of its own.
	Created bool
}

// ChildID is the ID of the child object of l under parentID: l's prefix and
// what followed the parent's own prefix, so {{ref}} maps one to the other.
func (l *Lifecycle) ChildID(parentID string) string { return Ref(prefixOr(l.IDPrefix), parentID) }

// Ancestors lists the objects above l, its parent first; it stops at a cycle
// (the loader refuses them) or at an unknown object.
func (v *Vocabulary) Ancestors(l *Lifecycle) []*Lifecycle {
	var out []*Lifecycle
	seen := map[*Lifecycle]bool{l: true}
	for cur := l; cur.Parent != nil; {
		p := v.LifecycleOf(cur.Parent.Object)
		if p == nil || seen[p] {
			break
		}
		seen[p] = true
		out = append(out, p)
		cur = p
	}
	return out
}

func prefixOr(p string) string {
	if p == "" {
		return "obj"
	}
	return p
}

// Transition is one event type moving a lifecycle object.
type Transition struct {
	EventRole
	From []string
	To   string
	// Effect is true when the transition applies one countable effect.
	Effect bool
	// Missing overrides Lifecycle.Missing for this event type ("" inherits).
	Missing string
}

// MissingRule is what an event of transition t for a missing object must get.
func (l *Lifecycle) MissingRule(t Transition) string {
	if t.Missing != "" {
		return t.Missing
	}
	if l.Missing != "" {
		return l.Missing
	}
	return MissingRetry
}

// States lists every state reachable from Initial, in breadth-first order.
func (l *Lifecycle) States() []string {
	seen := map[string]bool{l.Initial: true}
	out := []string{l.Initial}
	for i := 0; i < len(out); i++ {
		for _, t := range l.Transitions {
			if contains(t.From, out[i]) && !seen[t.To] {
				seen[t.To] = true
				out = append(out, t.To)
			}
		}
	}
	return out
}

// Path returns the transitions that take a fresh object from Initial to state,
// shortest first; ok is false when state is unreachable.
func (l *Lifecycle) Path(state string) ([]Transition, bool) { return l.PathFrom(l.Initial, state) }

// PathFrom returns the shortest run of transitions from one state to another.
func (l *Lifecycle) PathFrom(from, to string) ([]Transition, bool) {
	type node struct {
		state string
		path  []Transition
	}
	seen := map[string]bool{from: true}
	queue := []node{{state: from}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.state == to {
			return n.path, true
		}
		for _, t := range l.Transitions {
			if contains(t.From, n.state) && !seen[t.To] {
				seen[t.To] = true
				queue = append(queue, node{t.To, append(append([]Transition(nil), n.path...), t)})
			}
		}
	}
	return nil, false
}

// reachable reports whether to can be reached from from (in zero or more steps).
func (l *Lifecycle) reachable(from, to string) bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			return true
		}
		for _, t := range l.Transitions {
			if contains(t.From, s) && !seen[t.To] {
				seen[t.To] = true
				queue = append(queue, t.To)
			}
		}
	}
	return false
}

// Pair is one (state, transition) combination where the transition is not
// allowed: Stale when the object is past it (it must be acknowledged and never
// applied), premature when it can still come (it must not be acknowledged and
// dropped).
type Pair struct {
	State string
	T     Transition
	Stale bool
}

// Forbidden lists every reachable state with every transition not allowed from
// it, except a transition into the state the object is already in (that is
// another event for the same change: DEDUP-6).
func (l *Lifecycle) Forbidden() []Pair {
	var out []Pair
	for _, s := range l.States() {
		for _, t := range l.Transitions {
			if contains(t.From, s) || t.To == s {
				continue
			}
			out = append(out, Pair{State: s, T: t, Stale: !l.reachable(s, t.To)})
		}
	}
	return out
}

// EffectsOf counts the effects a path applies.
func EffectsOf(path []Transition) int {
	n := 0
	for _, t := range path {
		if t.Effect {
			n++
		}
	}
	return n
}

// Ordering keys of ordered updates.
const (
	// OrderVersion: the built-in domain's version field.
	OrderVersion = "version"
	// OrderCreated: the event's own created timestamp (Stripe's only ordering
	// signal); the state query returns the applied event's created as Unix seconds.
	OrderCreated = "created"
	// OrderField: a field of the object filled by {{.Key}}; the state query
	// returns the applied key.
	OrderField = "field"
)

// Ordered is an object updated by events that carry an ordering key.
type Ordered struct {
	EventRole
	// Key is OrderVersion, OrderCreated or OrderField.
	Key string
	// Fixture creates the object before its first update; "" when the first
	// update creates it.
	Fixture string
	// Delete is the event that deletes the object, ordered like an update;
	// nil when the target declares none.
	Delete *EventRole
	// Ties is the receiver's rule for two updates of one object with equal
	// keys (TiesLastWins, TiesFirstWins, TiesNone); "" is the default rule:
	// an update acknowledged after another with an equal key must be visible.
	Ties string
	// Tagged is true when the update's object carries {{.Tag}}, which tells
	// two updates with equal keys apart in the state query's status column.
	Tagged bool
	// Children is true when the target reads the object's child rows
	// (events.ordered.children): the key they were last written from.
	Children bool
}

// Tie rules of ordered updates (events.ordered.ties).
const (
	// TiesLastWins: of two updates with equal keys, the later delivered is
	// applied (acknowledged and visible).
	TiesLastWins = "last-wins"
	// TiesFirstWins: the first applied stays; a later one with an equal key
	// may be acknowledged and ignored.
	TiesFirstWins = "first-wins"
	// TiesNone: the provider never sends two updates of one object with equal
	// keys (a per-object version that always grows).
	TiesNone = "none"
)

// ObjectData is what an object template can use.
type ObjectData struct {
	EventID, Type, ObjectID, Source, Account, Currency, State string
	Amount, Created, Key                                      int64
	// Tag tells apart the ordered updates of one object, ties included
	// ("v3", "v3-tie"); for other events it is their status.
	Tag string
	// Parent is the parent object's ID for a lifecycle object with a
	// relation ("" otherwise).
	Parent string
}

// ObjectTemplate renders a role's business object: a text/template that must
// produce one JSON object. {{ref "ch"}} names a related object derived from
// the object's ID ("pi_x" gives "ch_x"), stable across the run's events.
type ObjectTemplate struct {
	src string
	t   *template.Template
}

// Ref derives a related object's ID from an object ID: prefix, "_", and
// whatever followed the object ID's own prefix.
func Ref(prefix, objectID string) string {
	if i := strings.IndexByte(objectID, '_'); i >= 0 {
		return prefix + objectID[i:]
	}
	return prefix + "_" + objectID
}

// ParseObjectTemplate parses src and renders it once with sample values: a
// template that does not produce one JSON object is refused at load time.
func ParseObjectTemplate(src string) (*ObjectTemplate, error) {
	var data *ObjectData
	t, err := template.New("object").Option("missingkey=error").Funcs(template.FuncMap{
		"ref":          func(prefix string) string { return Ref(prefix, data.ObjectID) },
		"stripeObject": stripeObject,
	}).Parse(src)
	if err != nil {
		return nil, err
	}
	ot := &ObjectTemplate{src: src, t: t}
	if _, err := ot.Render(ObjectData{EventID: "evt_sample", Type: "sample.type", ObjectID: "obj_sample", Source: "src",
		Account: "acct", Currency: "usd", State: "state", Amount: 1234, Created: time.Now().Unix(), Key: 1, Tag: "v1"}); err != nil {
		return nil, err
	}
	return ot, nil
}

// Render renders the template for d and checks it is one JSON object.
func (ot *ObjectTemplate) Render(d ObjectData) (json.RawMessage, error) {
	// ref reads the data being rendered; a clone per call keeps Render safe for
	// concurrent use.
	t, err := ot.t.Clone()
	if err != nil {
		return nil, err
	}
	t.Funcs(template.FuncMap{"ref": func(prefix string) string { return Ref(prefix, d.ObjectID) }})
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &obj); err != nil {
		return nil, fmt.Errorf("the template does not render one JSON object: %v (rendered %.120q)", err, b.String())
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b.Bytes()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// stripeObject is the resource name Stripe gives an event type's object:
// "payment_intent.succeeded" → "payment_intent", "customer.subscription.updated"
// → "subscription".
func stripeObject(typ string) string {
	i := strings.LastIndex(typ, ".")
	if i <= 0 {
		return typ
	}
	prefix := typ[:i]
	if j := strings.LastIndex(prefix, "."); j >= 0 {
		return prefix[j+1:]
	}
	return prefix
}

// Source returns the template text.
func (ot *ObjectTemplate) Source() string { return ot.src }

// Acceptance is how the receiver acknowledges: synchronously (the effect is
// committed before the 2xx) or asynchronously (the 2xx means durably accepted; a
// worker applies the event within Settle).
type Acceptance struct {
	Async bool
	// Settle bounds how long after its 2xx an event may take to show in the
	// receiver's state; every check reads the state only once it has settled.
	Settle time.Duration
}

// Handled reports whether events of type t should be stored by the receiver
// (reconciliation holds their keys against the rows).
func (v *Vocabulary) Handled(t string) bool {
	for _, r := range v.AllEffects() {
		if r.Type == t {
			return true
		}
	}
	for _, o := range v.AllOrdered() {
		if o.Type == t || o.Delete != nil && o.Delete.Type == t {
			return true
		}
	}
	for _, l := range v.AllLifecycles() {
		if l.Create != nil && l.Create.Type == t {
			return true
		}
		for _, tr := range l.Transitions {
			if tr.Type == t {
				return true
			}
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Event types of the built-in conformance domain (docs/conformance-domain.md).
const (
	TypeCredit              = "customer_cash_balance_transaction.created"
	TypePaymentCreated      = "payment_intent.created"
	TypePaymentSucceeded    = "payment_intent.succeeded"
	TypeRefunded            = "charge.refunded"
	TypeSubscriptionUpdated = "customer.subscription.updated"
	TypeSubscriptionDeleted = "customer.subscription.deleted"
	TypeUnhandled           = "hookcert.conformance.unhandled"
)

// BuiltinVocabulary is the conformance domain the reference receiver
// implements: a cash-balance credit per event, payments created, succeeded and
// refunded, versioned subscription updates. Its lifecycle, ordering and
// domain-constraint parts take part only where the target declares the
// state-machine, ordering and domain-constraint capabilities.
func BuiltinVocabulary() *Vocabulary {
	return &Vocabulary{
		Effect: &EventRole{Type: TypeCredit, IDPrefix: "cbtxn"},
		Lifecycle: &Lifecycle{
			Object: "payment", IDPrefix: "pi", Initial: "pending",
			Create: &EventRole{Type: TypePaymentCreated, IDPrefix: "pi"},
			Transitions: []Transition{
				{EventRole: EventRole{Type: TypePaymentSucceeded}, From: []string{"pending"}, To: "succeeded", Effect: true, Missing: MissingCreate},
				{EventRole: EventRole{Type: TypeRefunded}, From: []string{"succeeded"}, To: "refunded", Effect: true},
			},
			Missing: MissingRetry, CountsEffects: true,
		},
		Ordered: &Ordered{EventRole: EventRole{Type: TypeSubscriptionUpdated, IDPrefix: "sub"}, Key: OrderVersion,
			Delete: &EventRole{Type: TypeSubscriptionDeleted, IDPrefix: "sub"}},
		Unhandled: &EventRole{Type: TypeUnhandled, IDPrefix: "obj"},
	}
}

// HandledTypes lists the event types the receiver stores, sorted.
func (v *Vocabulary) HandledTypes() []string {
	var out []string
	add := func(t string) {
		if t != "" && !contains(out, t) {
			out = append(out, t)
		}
	}
	for _, r := range v.AllEffects() {
		add(r.Type)
	}
	for _, l := range v.AllLifecycles() {
		if l.Create != nil {
			add(l.Create.Type)
		}
		for _, t := range l.Transitions {
			add(t.Type)
		}
	}
	for _, o := range v.AllOrdered() {
		add(o.Type)
		if o.Delete != nil {
			add(o.Delete.Type)
		}
	}
	sort.Strings(out)
	return out
}

// Template returns the object template of event type t and, for a lifecycle
// transition, the state it moves to (nil: the built-in fields render).
func (v *Vocabulary) Template(t string) (*ObjectTemplate, string) {
	for _, r := range append(append([]*EventRole(nil), v.AllEffects()...), v.Unhandled) {
		if r != nil && r.Type == t {
			return r.Object, ""
		}
	}
	for _, o := range v.AllOrdered() {
		if o.Type == t {
			return o.Object, ""
		}
		if o.Delete != nil && o.Delete.Type == t {
			return o.Delete.Object, ""
		}
	}
	if l := v.LifecycleOfType(t); l != nil {
		if l.Create != nil && l.Create.Type == t {
			return l.Create.Object, l.Initial
		}
		for _, tr := range l.Transitions {
			if tr.Type == t {
				return tr.Object, tr.To
			}
		}
	}
	return nil, ""
}

// LifecycleOfType is the lifecycle object whose create or transition is event
// type t; nil when none is.
func (v *Vocabulary) LifecycleOfType(t string) *Lifecycle {
	for _, l := range v.AllLifecycles() {
		if l.Create != nil && l.Create.Type == t {
			return l
		}
		for _, tr := range l.Transitions {
			if tr.Type == t {
				return l
			}
		}
	}
	return nil
}
