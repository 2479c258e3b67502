package targetfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/vocab"
)

// twoLifecycles declares a payment intent and a refund of it, two ordered
// roles and two effect roles, each role after the first with its own queries
// and tables.
const twoLifecycles = `  events:
    effect:
      - {type: charge.succeeded, id_prefix: ch}
      - {name: payout, type: payout.paid, id_prefix: po, table: payouts,
         effects: SELECT count(*) FROM payouts WHERE id = $4}
    lifecycle:
      - object: payment_intent
        id_prefix: pi
        initial: processing
        create: {fixture: payment}
        transitions:
          - {type: payment_intent.succeeded, from: [processing], to: succeeded, effect: true}
          - {type: payment_intent.payment_failed, from: [processing], to: failed}
        state: SELECT status FROM payments WHERE id = $4
      - object: refund
        id_prefix: re
        initial: pending
        table: refunds
        parent: {object: payment_intent, state: succeeded}
        create: {fixture: refund}
        transitions:
          - type: refund.updated
            from: [pending]
            to: succeeded
            object: '{"id": "{{.ObjectID}}", "object": "refund", "payment_intent": "{{ref "pi"}}", "status": "succeeded"}'
          - {type: refund.failed, from: [pending], to: failed}
        state: SELECT status FROM refunds WHERE id = $4
        effects: SELECT count(*) FROM ledger WHERE refund_id = $4
    ordered:
      - {type: customer.updated, id_prefix: cus, key: created, state: SELECT 1::bigint FROM customers WHERE id = $4}
      - {name: price, type: price.updated, id_prefix: price, key: created, table: prices,
         state: SELECT 1::bigint FROM prices WHERE id = $4}
  fixtures:
    payment: {sql: "INSERT INTO payments (id, status) VALUES ($4, 'processing')"}
    refund: {sql: "INSERT INTO refunds (id, payment_id, status) VALUES ($4, $7, 'pending')"}
`

// TestSeveralRoles: lists of roles load, the first of each kind fills the
// singular field and the observer's slots, the others get role-named queries.
func TestSeveralRoles(t *testing.T) {
	tg, err := Parse([]byte(withEvents(twoLifecycles)), testVars)
	if err != nil {
		t.Fatal(err)
	}
	v := tg.Events
	if len(v.Effects) != 2 || len(v.Lifecycles) != 2 || len(v.OrderedRoles) != 2 {
		t.Fatalf("roles: %d effects, %d lifecycles, %d ordered", len(v.Effects), len(v.Lifecycles), len(v.OrderedRoles))
	}
	if v.Effect != v.Effects[0] || v.Lifecycle != v.Lifecycles[0] || v.Ordered != v.OrderedRoles[0] {
		t.Error("the singular fields are not the first roles")
	}
	refund := v.LifecycleOf("refund")
	if refund == nil || refund.Label != "refund" || refund.Table != "refunds" || !refund.CountsEffects ||
		refund.Parent == nil || *refund.Parent != (vocab.Relation{Object: "payment_intent", State: "succeeded"}) {
		t.Fatalf("refund = %+v", refund)
	}
	if v.Lifecycle.Label != "" || v.Effects[1].Label != "payout" || v.Effects[1].Table != "payouts" || v.OrderedRoles[1].Label != "price" {
		t.Errorf("labels: %q %q %q, payout table %q", v.Lifecycle.Label, v.Effects[1].Label, v.OrderedRoles[1].Label, v.Effects[1].Table)
	}
	q := tg.Store.Queries
	if q.Payment != "SELECT status FROM payments WHERE id = $4" {
		t.Errorf("payment slot = %q", q.Payment)
	}
	want := map[string]string{
		"payment:refund":        "target.events.lifecycle[1].state",
		"object_effects:refund": "target.events.lifecycle[1].effects",
		"object:price":          "target.events.ordered[1].state",
		"effects:payout":        "target.events.effect[1].effects",
	}
	for name, field := range want {
		if q.Roles[name] == "" || q.FieldPath(name) != field || q.Named()[name] == "" || !q.Declared(name) {
			t.Errorf("%s: sql %q, field %q (want %q)", name, q.Roles[name], q.FieldPath(name), field)
		}
	}
	for _, typ := range []string{"refund.updated", "payout.paid", "price.updated", "charge.succeeded"} {
		if !v.Handled(typ) {
			t.Errorf("%s not handled", typ)
		}
	}
	if tpl, state := v.Template("refund.updated"); tpl == nil || state != "succeeded" {
		t.Errorf("refund.updated template %v, state %q", tpl, state)
	}
	// A child's ID derives from its parent's, and back.
	if id := refund.ChildID("pi_abc"); id != "re_abc" || vocab.Ref("pi", id) != "pi_abc" {
		t.Errorf("child ID %q", id)
	}
	if anc := v.Ancestors(refund); len(anc) != 1 || anc[0].Object != "payment_intent" {
		t.Errorf("ancestors %v", anc)
	}
}

// TestSeveralRolesRules: each rule of several roles and relations names the
// item's field and the rule.
func TestSeveralRolesRules(t *testing.T) {
	life := func(extra string) string {
		return withEvents(`  events:
    lifecycle:
      - object: payment_intent
        initial: processing
        create: {type: pi.created, object: '{}'}
        transitions: [{type: pi.ok, from: [processing], to: succeeded}]
        state: SELECT status FROM payments WHERE id = $4
      - object: refund
        initial: pending
        transitions: [{type: re.ok, from: [pending], to: succeeded}]
        state: SELECT status FROM refunds WHERE id = $4
` + extra)
	}
	cases := map[string]struct{ src, want string }{
		"unknown parent": {life("        create: {type: re.created, object: '{}'}\n        parent: {object: charge, state: succeeded}\n"),
			`target.events.lifecycle[1].parent.object (line 24): "charge" is not the object of any events.lifecycle (declared: payment_intent, refund)`},
		"parent itself": {life("        create: {type: re.created, object: '{}'}\n        parent: {object: refund, state: pending}\n"),
			`target.events.lifecycle[1].parent.object (line 24): must name another lifecycle object, not "refund" itself`},
		"parent state unknown": {life("        create: {type: re.created, object: '{}'}\n        parent: {object: payment_intent, state: refunded}\n"),
			`target.events.lifecycle[1].parent.state (line 24): "refunded" is not a state payment_intent can reach (processing, succeeded)`},
		"parent state missing": {life("        create: {type: re.created, object: '{}'}\n        parent: {object: payment_intent}\n"),
			`target.events.lifecycle[1].parent.state (line 24): required (the state payment_intent must be in before a refund exists)`},
		"created by parent with create": {life("        create: {type: re.created, object: '{}'}\n        parent: {object: payment_intent, state: succeeded, created: true}\n"),
			`target.events.lifecycle[1].create (line 23): must be absent with parent.created`},
		"no create": {life(""),
			`target.events.lifecycle[1].create (line 19): required: one of fixture`},
		"second object unnamed": {strings.Replace(life("        create: {type: re.created, object: '{}'}\n"), "      - object: refund\n        initial", "      - initial", 1),
			`target.events.lifecycle[1].object (line 19): required when several lifecycle objects are declared`},
		"duplicate object": {strings.Replace(life("        create: {type: re.created, object: '{}'}\n"), "object: refund", "object: payment_intent", 1),
			`target.events.lifecycle[1].object (line 19): "payment_intent" is also target.events.lifecycle[0].object: each role of events.lifecycle needs its own`},
		"state missing": {strings.Replace(life("        create: {type: re.created, object: '{}'}\n"), "        state: SELECT status FROM refunds WHERE id = $4\n", "", 1),
			`target.events.lifecycle[1].state (line 19): required`},
		"type across roles": {withEvents("  events:\n    ordered:\n      - {type: a.b, key: created, state: SELECT 1::bigint FROM t WHERE id = $4}\n      - {name: x, type: a.b, key: created, state: SELECT 1::bigint FROM t WHERE id = $4}\n"),
			`target.events.ordered[1].type (line 15): event type "a.b" is also target.events.ordered[0].type`},
		"ordered unnamed": {withEvents("  events:\n    ordered:\n      - {type: a.b, key: created, state: SELECT 1::bigint FROM t WHERE id = $4}\n      - {type: a.c, key: created, state: SELECT 1::bigint FROM t WHERE id = $4}\n"),
			`target.events.ordered[1].name (line 15): required when several roles of events.ordered are declared`},
		"bad table": {withEvents("  events:\n    effect:\n      - {type: a.b}\n      - {name: x, type: a.c, table: 'a;b'}\n"),
			`target.events.effect[1].table (line 15): must be a table name or schema.table`},
		"empty list": {withEvents("  events:\n    effect: []\n"),
			`target.events.effect (line 13): must be a mapping, or a list of at least one mapping, got an empty list`},
		"unknown field in an item": {withEvents("  events:\n    effect:\n      - {type: a.b, nope: 1}\n"),
			`target.events.effect[0].nope (line 14): unknown field`},
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
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %T is not a *FieldError", err)
			}
		})
	}
}

// TestRelationCycle: relations that come back to an object are refused.
func TestRelationCycle(t *testing.T) {
	src := withEvents(`  events:
    lifecycle:
      - object: a
        initial: new
        parent: {object: b, state: done}
        create: {type: a.new, object: '{}'}
        transitions: [{type: a.ok, from: [new], to: done}]
        state: SELECT status FROM t WHERE id = $4
      - object: b
        initial: new
        parent: {object: a, state: done}
        create: {type: b.new, object: '{}'}
        transitions: [{type: b.ok, from: [new], to: done}]
        state: SELECT status FROM t WHERE id = $4
`)
	_, err := Parse([]byte(src), testVars)
	if err == nil || !strings.Contains(err.Error(), "relations form a cycle") {
		t.Fatalf("err = %v", err)
	}
}

// An empty item of a list of roles is refused, not skipped.
func TestEmptyRoleItem(t *testing.T) {
	src := withEvents("  events:\n    effect:\n      - {type: a.b}\n      - ~\n")
	if _, err := Parse([]byte(src), testVars); err == nil || !strings.Contains(err.Error(), "target.events.effect[1]") {
		t.Fatalf("err = %v", err)
	}
}

// deletion needs a delete on any ordered role, not the first alone.
func TestDeletionOnASecondRole(t *testing.T) {
	src := withEvents(`  events:
    ordered:
      - {type: a.u, key: created, state: SELECT 1::bigint FROM t WHERE id = $4}
      - {name: price, type: p.u, key: created, state: SELECT 1::bigint FROM t WHERE id = $4, delete: {type: p.d}}
  capabilities: [deletion]
`)
	tg, err := Parse([]byte(src), testVars)
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Has(Deletion) || tg.Events.OrderedRoles[1].Delete == nil {
		t.Errorf("capabilities %v", tg.Capabilities)
	}
}
