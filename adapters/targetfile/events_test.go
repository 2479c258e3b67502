package targetfile

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/vocab"
)

// stripeShop is the declared-vocabulary example of docs/target.md: a Stripe
// receiver with its own tables.
const stripeShop = `target:
  name: stripe-shop
  base_url: http://127.0.0.1:{{.Port}}
  endpoints:
    - profile: stripe
      account: acct_shop_a
      path: /stripe/webhook/acct_shop_a
      secret_env: SHOP_STRIPE_SECRET
      ack_timeout: 10s
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM stripe_events WHERE id = $3
  limits:
    max_body_bytes: 1048576
  acceptance:
    mode: async
    settle: 5s
    quiescent: SELECT count(*) = 0 FROM queue WHERE done_at IS NULL
  events:
    effect:
      type: charge.succeeded
      id_prefix: ch
      object: |
        {"id": "{{.ObjectID}}", "object": "charge", "amount": {{.Amount}}, "currency": "{{.Currency}}",
         "payment_intent": "{{ref "pi"}}", "status": "succeeded", "metadata": {}}
      effects: SELECT count(*) FROM charges WHERE id = $4
    lifecycle:
      object: payment_intent
      id_prefix: pi
      initial: processing
      create:
        fixture: payment
      missing: retry
      transitions:
        - type: payment_intent.succeeded
          from: [processing]
          to: succeeded
          effect: true
          object: |
            {"id": "{{.ObjectID}}", "object": "payment_intent", "amount": {{.Amount}}, "currency": "{{.Currency}}", "status": "succeeded", "latest_charge": "{{ref "ch"}}", "metadata": {}}
        - type: payment_intent.payment_failed
          from: [processing]
          to: failed
          missing: ignore
          object: '{"id": "{{.ObjectID}}", "object": "payment_intent", "status": "requires_payment_method", "amount": {{.Amount}}, "currency": "{{.Currency}}", "metadata": {}}'
        - type: charge.refunded
          from: [succeeded]
          to: refunded
          effect: true
          object: '{"id": "{{ref "ch"}}", "object": "charge", "payment_intent": "{{.ObjectID}}", "amount": {{.Amount}}, "amount_refunded": {{.Amount}}, "refunded": true, "currency": "{{.Currency}}", "metadata": {}}'
      state: SELECT status FROM payments WHERE id = $4
      effects: SELECT count(*) FROM ledger WHERE payment_id = $4
    ordered:
      type: customer.updated
      id_prefix: cus
      key: created
      create: {fixture: customer}
      object: '{"id": "{{.ObjectID}}", "object": "customer", "email": "{{.ObjectID}}@example.com", "metadata": {}}'
      state: SELECT extract(epoch FROM last_event_at)::bigint FROM customers WHERE id = $4
    unhandled:
      type: invoice.upcoming
      object: '{"id": "{{.ObjectID}}", "object": "invoice", "amount_due": {{.Amount}}, "currency": "{{.Currency}}"}'
  fixtures:
    payment:
      sql: INSERT INTO payments (id, amount, currency, status) VALUES ($4, $5, $6, 'processing')
    customer:
      command: ["./shop", "create-customer", "{{.ObjectID}}"]
    invoice:
      http: {path: "/test/invoices/{{.ObjectID}}", body: '{"id": "{{.ObjectID}}", "charge": "{{ref "ch"}}"}'}
  capabilities: [state-machine, ordering, domain-constraint]
`

func TestEventsDeclared(t *testing.T) {
	t.Setenv("SHOP_STRIPE_SECRET", "whsec_shop_test")
	tg, err := Parse([]byte(stripeShop), testVars)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	v := tg.Events
	if v == nil || !v.Declared {
		t.Fatalf("Events = %+v, want a declared vocabulary", v)
	}
	if v.Effect == nil || v.Effect.Type != "charge.succeeded" || v.Effect.IDPrefix != "ch" || v.Effect.Object == nil {
		t.Errorf("effect = %+v", v.Effect)
	}
	obj, err := v.Effect.Object.Render(vocab.ObjectData{ObjectID: "ch_abc", Amount: 500, Currency: "eur"})
	if err != nil || string(obj) != `{"id":"ch_abc","object":"charge","amount":500,"currency":"eur","payment_intent":"pi_abc","status":"succeeded","metadata":{}}` {
		t.Errorf("effect object = %s, %v", obj, err)
	}
	l := v.Lifecycle
	if l == nil || l.Object != "payment_intent" || l.IDPrefix != "pi" || l.Initial != "processing" || l.Fixture != "payment" ||
		l.Create != nil || l.Missing != vocab.MissingRetry || !l.CountsEffects || len(l.Transitions) != 3 {
		t.Fatalf("lifecycle = %+v", l)
	}
	if tr := l.Transitions[0]; tr.Type != "payment_intent.succeeded" || !reflect.DeepEqual(tr.From, []string{"processing"}) ||
		tr.To != "succeeded" || !tr.Effect || tr.Missing != "" || tr.Object == nil {
		t.Errorf("transition 0 = %+v", tr)
	}
	if tr := l.Transitions[1]; tr.Effect || l.MissingRule(tr) != vocab.MissingIgnore {
		t.Errorf("transition 1 = %+v", tr)
	}
	if got := l.States(); !reflect.DeepEqual(got, []string{"processing", "succeeded", "failed", "refunded"}) {
		t.Errorf("States = %v", got)
	}
	if o := v.Ordered; o == nil || o.Type != "customer.updated" || o.Key != vocab.OrderCreated || o.Fixture != "customer" || o.IDPrefix != "cus" {
		t.Errorf("ordered = %+v", o)
	}
	if u := v.Unhandled; u == nil || u.Type != "invoice.upcoming" || u.IDPrefix != "obj" || u.Object == nil {
		t.Errorf("unhandled = %+v", u)
	}
	// The declared queries fill the observer's slots, and remember their fields.
	q := tg.Store.Queries
	want := map[string]string{
		QueryEventRows:     "SELECT count(*) FROM stripe_events WHERE id = $3",
		QueryEffects:       "SELECT count(*) FROM charges WHERE id = $4",
		QueryPayment:       "SELECT status FROM payments WHERE id = $4",
		QueryObjectEffects: "SELECT count(*) FROM ledger WHERE payment_id = $4",
		QueryObject:        "SELECT extract(epoch FROM last_event_at)::bigint FROM customers WHERE id = $4",
		QueryQuiescent:     "SELECT count(*) = 0 FROM queue WHERE done_at IS NULL",
	}
	if got := q.Named(); !reflect.DeepEqual(got, want) {
		t.Errorf("Named = %v\nwant %v", got, want)
	}
	for name, path := range map[string]string{
		QueryEventRows: "target.observe.postgres.queries.event_rows", QueryEffects: "target.events.effect.effects",
		QueryPayment: "target.events.lifecycle.state", QueryObjectEffects: "target.events.lifecycle.effects",
		QueryObject: "target.events.ordered.state", QueryQuiescent: "target.acceptance.quiescent",
	} {
		if got := q.FieldPath(name); got != path {
			t.Errorf("FieldPath(%s) = %q, want %q", name, got, path)
		}
	}
	sum := tg.Summary().Queries
	if sum["events.lifecycle.state"] != want[QueryPayment] || sum["acceptance.quiescent"] != want[QueryQuiescent] ||
		sum["event_rows"] != want[QueryEventRows] || sum["payment"] != "" || len(sum) != len(want) {
		t.Errorf("Summary queries = %v", sum)
	}
	if !q.Declared(QueryObject) || q.Declared(QueryEventRows) || q.Declared(QueryQuiescent) {
		t.Error("Declared disagrees with where the queries came from")
	}
	if tg.Acceptance != (vocab.Acceptance{Async: true, Settle: 5 * time.Second}) {
		t.Errorf("Acceptance = %+v", tg.Acceptance)
	}
	if tg.Endpoints[0].AckTimeout != 10*time.Second {
		t.Errorf("AckTimeout = %s", tg.Endpoints[0].AckTimeout)
	}
	if len(tg.Fixtures) != 3 {
		t.Fatalf("Fixtures = %v", tg.Fixtures)
	}
	if f := tg.Fixtures["payment"]; f.Kind() != "sql" || f.Name != "payment" || !strings.HasPrefix(f.SQL, "INSERT INTO payments") {
		t.Errorf("payment fixture = %+v", f)
	}
	d := vocab.ObjectData{ObjectID: "cus_x1"}
	if f := tg.Fixtures["customer"]; f.Kind() != "command" || len(f.Command) != 3 {
		t.Errorf("customer fixture = %+v", f)
	} else if a, err := f.Command[2].Render(d); err != nil || a != "cus_x1" {
		t.Errorf("customer fixture argument = %q, %v", a, err)
	}
	f := tg.Fixtures["invoice"]
	if f.Kind() != "http" || f.HTTP.Method != "POST" {
		t.Fatalf("invoice fixture = %+v", f)
	}
	if p, _ := f.HTTP.Path.Render(d); p != "/test/invoices/cus_x1" {
		t.Errorf("invoice path = %q", p)
	}
	if b, _ := f.HTTP.Body.Render(d); b != `{"id": "cus_x1", "charge": "ch_x1"}` {
		t.Errorf("invoice body = %q", b)
	}
	if !tg.Has(StateMachine) || !tg.Has(Ordering) || !tg.Has(DomainConstraint) {
		t.Errorf("capabilities = %v", tg.Capabilities)
	}
}

// TestEventsAbsent: a file without the new sections loads as before.
func TestEventsAbsent(t *testing.T) {
	tg, err := Parse([]byte(minimal), testVars)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Events != nil || tg.Fixtures != nil || tg.Store.Queries.From != nil || tg.Store.Queries.Quiescent != "" {
		t.Errorf("Events %v, Fixtures %v, From %v", tg.Events, tg.Fixtures, tg.Store.Queries.From)
	}
	if tg.Acceptance != (vocab.Acceptance{Settle: DefaultSyncSettle}) || tg.Endpoints[0].AckTimeout != 0 {
		t.Errorf("Acceptance %+v, AckTimeout %s", tg.Acceptance, tg.Endpoints[0].AckTimeout)
	}
	if got := tg.Store.Queries.FieldPath(QueryEffects); got != "target.observe.postgres.queries.effects" {
		t.Errorf("FieldPath(effects) = %q", got)
	}
	// The async default settle.
	tg, err = Parse([]byte(minimal+"  acceptance: {mode: async}\n"), testVars)
	if err != nil || tg.Acceptance != (vocab.Acceptance{Async: true, Settle: DefaultAsyncSettle}) {
		t.Errorf("async acceptance = %+v, %v", tg.Acceptance, err)
	}
}

// withEvents is minimal with an events section (and anything after it).
func withEvents(s string) string { return minimal + s }

// TestEventsRules: each rule gives an error naming the field and the rule, and
// nothing is loaded.
func TestEventsRules(t *testing.T) {
	lifecycle := func(body string) string {
		return "  events:\n    lifecycle:\n" + body
	}
	const okTransitions = "      transitions: [{type: p.ok, from: [new], to: done}]\n"
	cases := map[string]struct{ src, want string }{
		"empty events": {withEvents("  events: {}\n"),
			"target.events (line 12): declare at least one of effect, lifecycle, ordered, unhandled"},
		"no type": {withEvents("  events:\n    unhandled: {object: '{}'}\n"),
			"target.events.unhandled.type (line 13): required (the provider's event type)"},
		"duplicate type": {withEvents("  events:\n    effect: {type: a.b}\n    unhandled: {type: a.b}\n"),
			`target.events.unhandled.type (line 14): event type "a.b" is also target.events.effect.type: each event type plays one role`},
		"bad id_prefix": {withEvents("  events:\n    effect: {type: a.b, id_prefix: ch_x}\n"),
			`target.events.effect.id_prefix (line 13): must be a letter then up to 15 letters or digits, no _ (got "ch_x")`},
		"template not JSON": {withEvents("  events:\n    effect: {type: a.b, object: 'id={{.ObjectID}}'}\n"),
			"target.events.effect.object (line 13): bad template: the template does not render one JSON object"},
		"template unknown var": {withEvents("  events:\n    effect: {type: a.b, object: '{\"id\": \"{{.Nope}}\"}'}\n"),
			"target.events.effect.object (line 13): bad template: template: object:1:10: executing \"object\" at <.Nope>: can't evaluate field Nope"},
		"template bad syntax": {withEvents("  events:\n    effect: {type: a.b, object: '{{ref}'}\n"),
			"target.events.effect.object (line 13): bad template: template: object:1: bad character U+007D '}'"},
		"bad effects_kind": {withEvents("  events:\n    effect: {type: a.b, effects_kind: flag}\n"),
			`target.events.effect.effects_kind (line 13): "flag" is not one of count, state`},
		"witness of a count": {withEvents("  events:\n    effect: {type: a.b, witness: SELECT count(*) FROM audit WHERE event_id = $3}\n"),
			"target.events.effect.witness (line 13): only with effects_kind: state"},
		"witness params": {withEvents("  events:\n    effect: {type: a.b, effects_kind: state, witness: SELECT count(*) FROM audit WHERE a = $1}\n"),
			"target.events.effect.witness (line 13): must reference $3 (the event ID) or $4 (the object ID)"},
		"effect unknown fixture": {withEvents("  events:\n    effect: {type: a.b, create: {fixture: order}}\n"),
			`target.events.effect.create.fixture (line 13): no fixture "order": target.fixtures declares none`},
		"lifecycle state without effects": {withEvents(lifecycle("      initial: new\n      create: {fixture: f}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n      effects_kind: state\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.effects_kind (line 18): only with lifecycle.effects"},
		"lifecycle witness of a count": {withEvents(lifecycle("      initial: new\n      create: {fixture: f}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n      effects: SELECT count(*) FROM l WHERE id=$4\n      witness: SELECT count(*) FROM a WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.witness (line 19): only with effects_kind: state"},
		"effect query params": {withEvents("  events:\n    effect: {type: a.b, effects: SELECT count(*) FROM t WHERE a = $1}\n"),
			"target.events.effect.effects (line 13): must reference $3 (the event ID) or $4 (the object ID)"},
		"no initial": {withEvents(lifecycle("      create: {fixture: f}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.initial (line 13): required"},
		"no transitions": {withEvents(lifecycle("      initial: new\n      create: {fixture: f}\n      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.transitions (line 13): at least one transition is required"},
		"no to": {withEvents(lifecycle("      initial: new\n      create: {fixture: f}\n      transitions: [{type: p.ok, from: [new]}]\n      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.transitions[0].to (line 16): required"},
		"no from": {withEvents(lifecycle("      initial: new\n      create: {fixture: f}\n      transitions: [{type: p.ok, to: done}]\n      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.transitions[0].from (line 16): at least one state is required"},
		"unknown from": {withEvents(lifecycle("      initial: new\n      create: {fixture: f}\n      transitions: [{type: p.ok, from: [new, paid], to: done}]\n      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			`target.events.lifecycle.transitions[0].from[1] (line 16): state "paid" is neither initial ("new") nor any transition's to`},
		"no create": {withEvents(lifecycle("      initial: new\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n")),
			"target.events.lifecycle.create (line 13): required: one of fixture (a fixture creates the object) and type (an event creates it)"},
		"create both": {withEvents(lifecycle("      initial: new\n      create: {fixture: f, type: p.new}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			"target.events.lifecycle.create (line 15): set exactly one of fixture and type"},
		"create type without object": {withEvents(lifecycle("      initial: new\n      create: {type: p.new}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n")),
			"target.events.lifecycle.create.object (line 15): required with create.type"},
		"unknown fixture": {withEvents(lifecycle("      initial: new\n      create: {fixture: pay}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n  fixtures: {f: {sql: 'INSERT INTO t VALUES ($4)'}}\n")),
			`target.events.lifecycle.create.fixture (line 15): no fixture "pay" under target.fixtures (declared: f)`},
		"no fixtures at all": {withEvents(lifecycle("      initial: new\n      create: {fixture: pay}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n")),
			`target.events.lifecycle.create.fixture (line 15): no fixture "pay": target.fixtures declares none`},
		"bad missing": {withEvents(lifecycle("      initial: new\n      create: {type: p.new, object: '{}'}\n      missing: drop\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$4\n")),
			`target.events.lifecycle.missing (line 16): must be one of retry, create, ignore (got "drop")`},
		"bad transition missing": {withEvents(lifecycle("      initial: new\n      create: {type: p.new, object: '{}'}\n      transitions: [{type: p.ok, from: [new], to: done, missing: later}]\n      state: SELECT s FROM t WHERE id=$4\n")),
			`target.events.lifecycle.transitions[0].missing (line 16): must be one of retry, create, ignore (got "later")`},
		"no state": {withEvents(lifecycle("      initial: new\n      create: {type: p.new, object: '{}'}\n" + okTransitions)),
			"target.events.lifecycle.state (line 13): required"},
		"state without $4": {withEvents(lifecycle("      initial: new\n      create: {type: p.new, object: '{}'}\n" + okTransitions + "      state: SELECT s FROM t WHERE id=$3\n")),
			"target.events.lifecycle.state (line 17): must reference $4 (the object ID)"},
		"effect not bool": {withEvents(lifecycle("      initial: new\n      create: {type: p.new, object: '{}'}\n      transitions: [{type: p.ok, from: [new], to: done, effect: yes}]\n      state: SELECT s FROM t WHERE id=$4\n")),
			`target.events.lifecycle.transitions[0].effect (line 16): must be true or false, got "yes"`},
		"payment beside state": {strings.Replace(withEvents(lifecycle("      initial: new\n      create: {type: p.new, object: '{}'}\n"+okTransitions+"      state: SELECT s FROM t WHERE id=$4\n")),
			"        effects:", "        payment: SELECT s FROM p WHERE id=$4\n        effects:", 1),
			"target.observe.postgres.queries.payment (line 11): must not be set beside target.events.lifecycle.state, which reads the same state"},
		"ordered key": {withEvents("  events:\n    ordered: {type: c.u, key: version, state: SELECT 1 FROM t WHERE id=$4}\n"),
			`target.events.ordered.key (line 13): must be created or field (got "version")`},
		"ordered no key": {withEvents("  events:\n    ordered: {type: c.u, state: SELECT 1 FROM t WHERE id=$4}\n"),
			"target.events.ordered.key (line 13): required: created"},
		"ordered field without Key": {withEvents("  events:\n    ordered: {type: c.u, key: field, object: '{\"id\": \"{{.ObjectID}}\"}', state: SELECT 1 FROM t WHERE id=$4}\n"),
			"target.events.ordered.object (line 13): must put {{.Key}} in a field"},
		"ordered no state": {withEvents("  events:\n    ordered: {type: c.u, key: created}\n"),
			"target.events.ordered.state (line 13): required"},
		"ordered create type": {withEvents("  events:\n    ordered: {type: c.u, key: created, create: {type: c.created}, state: SELECT 1 FROM t WHERE id=$4}\n"),
			"target.events.ordered.create.type (line 13): unknown field in target.events.ordered.create (valid: fixture)"},
		"acceptance mode": {withEvents("  acceptance: {mode: later}\n"),
			`target.acceptance.mode (line 12): must be sync or async (got "later")`},
		"acceptance settle": {withEvents("  acceptance: {settle: 1h}\n"),
			"target.acceptance.settle (line 12): must be at most 10m0s (got 1h)"},
		"acceptance settle zero": {withEvents("  acceptance: {settle: 0s}\n"),
			"target.acceptance.settle (line 12): must be positive (got 0s)"},
		"quiescent params": {withEvents("  acceptance: {quiescent: SELECT count(*) = 0 FROM q WHERE a = $2}\n"),
			"target.acceptance.quiescent (line 12): must take no parameters (got $2)"},
		"ack_timeout": {strings.Replace(minimal, "secret: s}", "secret: s, ack_timeout: 10m}", 1),
			"target.endpoints[0].ack_timeout (line 5): must be at most 5m0s (got 10m)"},
		"ack_timeout bad": {strings.Replace(minimal, "secret: s}", "secret: s, ack_timeout: soon}", 1),
			`target.endpoints[0].ack_timeout (line 5): must be a duration like 30s or 1m (got "soon")`},
		"fixture two kinds": {withEvents("  fixtures:\n    f: {sql: 'INSERT INTO t VALUES ($4)', command: [x]}\n"),
			"target.fixtures.f (line 13): set exactly one of sql, command and http (got 2)"},
		"fixture none": {withEvents("  fixtures:\n    f: {}\n"),
			"target.fixtures.f (line 13): set exactly one of sql, command and http (got 0)"},
		"fixture sql $3": {withEvents("  fixtures:\n    f: {sql: 'INSERT INTO t VALUES ($4, $3)'}\n"),
			"target.fixtures.f.sql (line 13): must not use $3: a fixture runs before any event exists"},
		"fixture sql $8": {withEvents("  fixtures:\n    f: {sql: 'INSERT INTO t VALUES ($4, $8)'}\n"),
			"target.fixtures.f.sql (line 13): must use only parameters $1 source, $2 account, $4 object ID, $5 amount, $6 currency, $7 parent ID: parameter $8 is out of range $1..$7"},
		"fixture sql no $4": {withEvents("  fixtures:\n    f: {sql: 'INSERT INTO t VALUES ($5)'}\n"),
			"target.fixtures.f.sql (line 13): must reference $4 (the object ID)"},
		"fixture command template": {withEvents("  fixtures:\n    f: {command: [x, '{{.DatabaseURL}}']}\n"),
			"target.fixtures.f.command[1] (line 13): bad template: template: fixture:1:2: executing \"fixture\" at <.DatabaseURL>: can't evaluate field DatabaseURL"},
		"fixture http method": {withEvents("  fixtures:\n    f: {http: {method: GET, path: /x}}\n"),
			`target.fixtures.f.http.method (line 13): must be POST, PUT or PATCH (got "GET")`},
		"fixture http path": {withEvents("  fixtures:\n    f: {http: {path: 'x/{{.ObjectID}}'}}\n"),
			`target.fixtures.f.http.path (line 13): must be a path starting with "/", without fragment or spaces (got "x/obj_sample")`},
		"fixtures not a mapping": {withEvents("  fixtures: [a]\n"),
			"target.fixtures (line 12): must be a mapping of names to mappings, got a list"},
		"effects required": {strings.Replace(minimal, "        effects: SELECT count(*) FROM t WHERE event_id=$3\n", "", 1) + "  events:\n    effect: {type: a.b}\n",
			"target.observe.postgres.queries.effects (line 9): required (or target.events.effect.effects)"},
		"capability needs declared state": {withEvents("  events:\n    ordered: {type: c.u, key: created, state: SELECT 1 FROM t WHERE id=$4}\n  capabilities: [state-machine]\n"),
			`target.capabilities[0] (line 14): capability "state-machine" needs target.observe.postgres.queries.payment, which is missing`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tg, err := Parse([]byte(c.src), testVars)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, c.want)
			}
			if tg != nil {
				t.Error("a file with errors gave a target")
			}
			if lines := errorLines(err); len(lines) != 1 {
				t.Errorf("%d errors, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %T is not a *FieldError", err)
			}
		})
	}
}

// TestEventsOptionalQueries: events.effect.effects replaces queries.effects,
// and a lifecycle declared with its state query satisfies state-machine.
func TestEventsOptionalQueries(t *testing.T) {
	src := strings.Replace(minimal, "        effects: SELECT count(*) FROM t WHERE event_id=$3\n", "", 1) + `  events:
    effect: {type: a.b, effects: SELECT count(*) FROM e WHERE object_id = $4}
    lifecycle:
      initial: new
      create: {type: p.new, object: '{"id": "{{.ObjectID}}"}'}
      transitions: [{type: p.ok, from: [new], to: done, missing: create}]
      state: SELECT s FROM t WHERE id = $4
  capabilities: [state-machine]
`
	tg, err := Parse([]byte(src), testVars)
	if err != nil {
		t.Fatal(err)
	}
	q := tg.Store.Queries
	if q.Effects != "SELECT count(*) FROM e WHERE object_id = $4" || q.FieldPath(QueryEffects) != "target.events.effect.effects" {
		t.Errorf("effects = %q from %s", q.Effects, q.FieldPath(QueryEffects))
	}
	l := tg.Events.Lifecycle
	if l.Object != "object" || l.IDPrefix != "obj" || l.Create == nil || l.Create.Type != "p.new" || l.Create.Object == nil || l.CountsEffects ||
		l.Transitions[0].Missing != vocab.MissingCreate {
		t.Errorf("lifecycle = %+v", l)
	}
	if tg.Events.Effect.IDPrefix != "obj" {
		t.Errorf("default id_prefix = %q", tg.Events.Effect.IDPrefix)
	}
}

func TestDataTemplate(t *testing.T) {
	dt, err := ParseDataTemplate(`{{.ObjectID}}:{{ref "ch"}}:{{.Amount}}:{{.Currency}}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dt.Render(vocab.ObjectData{ObjectID: "pi_9z", Amount: 42, Currency: "usd"})
	if err != nil || got != "pi_9z:ch_9z:42:usd" {
		t.Errorf("Render = %q, %v", got, err)
	}
	if dt.Source() == "" {
		t.Error("no source")
	}
	if _, err := ParseDataTemplate("{{.Port}}"); err == nil {
		t.Error("a target variable parsed in a fixture template")
	}
}

// TestDocumentedStripeExample keeps docs/target.md's declared-vocabulary example
// loading, with every role declared.
func TestDocumentedStripeExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/target.md")
	if err != nil {
		t.Fatal(err)
	}
	var example string
	for _, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		// The Stripe receiver's example; the declared provider's (Acme)
		// has its own test in examples/custom-provider.
		if strings.Contains(body, "\n  events:\n") && strings.Contains(body, "SHOP_STRIPE_SECRET") {
			example = body
		}
	}
	if example == "" {
		t.Fatal("no yaml example with events in docs/target.md")
	}
	t.Setenv("SHOP_STRIPE_SECRET", "whsec_shop_test")
	tg, err := Parse([]byte(example), testVars)
	if err != nil {
		t.Fatalf("documented example: %v", err)
	}
	v := tg.Events
	if v == nil || v.Effect == nil || v.Lifecycle == nil || v.Ordered == nil || v.Unhandled == nil || len(tg.Fixtures) != 2 {
		t.Errorf("the example does not declare every role and its fixtures: %+v", v)
	}
}

// TestEffectState: a state effect keeps its query without a witness (and
// says it cannot show a double application); a witness fills the effects
// slot, and a fixture makes each event's object.
func TestEffectState(t *testing.T) {
	base := strings.Replace(minimal, "        effects: SELECT count(*) FROM t WHERE event_id=$3\n", "", 1)
	src := base + `  events:
    effect: {type: a.b, effects_kind: state, effects: SELECT count(*) FROM orders WHERE id = $4 AND paid, create: {fixture: order}}
  fixtures: {order: {sql: 'INSERT INTO orders (id) VALUES ($4)'}}
`
	tg, err := Parse([]byte(src), testVars)
	if err != nil {
		t.Fatal(err)
	}
	r := tg.Events.Effect
	if r.EffectsKind != vocab.EffectsState || r.Witness || !r.DoubleBlind() || r.Fixture != "order" {
		t.Errorf("effect = %+v", r)
	}
	if q := tg.Store.Queries; q.FieldPath(QueryEffects) != "target.events.effect.effects" {
		t.Errorf("effects from %s", q.FieldPath(QueryEffects))
	}
	if ws := tg.Warnings(); len(ws) != 1 || ws[0].Field != "target.events.effect.effects_kind" || !strings.Contains(ws[0].Fix, "events.effect.witness") {
		t.Errorf("warnings of a state effect without a witness = %v", ws)
	}
	src = strings.Replace(src, "create: {fixture: order}}", "witness: SELECT count(*) FROM order_audit WHERE event_id = $3}", 1)
	if tg, err = Parse([]byte(src), testVars); err != nil {
		t.Fatal(err)
	}
	r = tg.Events.Effect
	if !r.Witness || r.DoubleBlind() {
		t.Errorf("effect with a witness = %+v", r)
	}
	if ws := tg.Warnings(); len(ws) != 0 {
		t.Errorf("warnings of a state effect with a witness = %v", ws)
	}
	if q := tg.Store.Queries; q.Effects != "SELECT count(*) FROM order_audit WHERE event_id = $3" || q.FieldPath(QueryEffects) != "target.events.effect.witness" {
		t.Errorf("effects = %q from %s", q.Effects, q.FieldPath(QueryEffects))
	}
	// A lifecycle's object effects likewise.
	lc := minimal + `  events:
    lifecycle:
      initial: new
      create: {type: p.new, object: '{"id": "{{.ObjectID}}"}'}
      transitions: [{type: p.ok, from: [new], to: done, effect: true}]
      state: SELECT s FROM t WHERE id = $4
      effects: SELECT count(*) FROM orders WHERE id = $4 AND credited
      effects_kind: state
`
	if tg, err = Parse([]byte(lc), testVars); err != nil {
		t.Fatal(err)
	}
	if l := tg.Events.Lifecycle; !l.DoubleBlind() || tg.Store.Queries.FieldPath(QueryObjectEffects) != "target.events.lifecycle.effects" {
		t.Errorf("lifecycle = %+v, object_effects from %s", l, tg.Store.Queries.FieldPath(QueryObjectEffects))
	}
	if tg, err = Parse([]byte(lc+"      witness: SELECT count(*) FROM credit_audit WHERE order_id = $4\n"), testVars); err != nil {
		t.Fatal(err)
	}
	if l, q := tg.Events.Lifecycle, tg.Store.Queries; l.DoubleBlind() || !l.Witness || q.FieldPath(QueryObjectEffects) != "target.events.lifecycle.witness" {
		t.Errorf("lifecycle with a witness = %+v, object_effects from %s", l, q.FieldPath(QueryObjectEffects))
	}
}
