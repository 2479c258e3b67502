package vocab

import "testing"

// The plural slices fall back to the singular role, so hand-built and
// built-in vocabularies read the same through them.
func TestAllRolesFallBackToTheFirst(t *testing.T) {
	v := BuiltinVocabulary()
	if len(v.AllEffects()) != 1 || v.AllEffects()[0] != v.Effect || len(v.AllLifecycles()) != 1 || len(v.AllOrdered()) != 1 {
		t.Fatal("built-in roles not listed")
	}
	if (&Vocabulary{}).AllLifecycles() != nil {
		t.Error("no lifecycle listed one")
	}
}

func TestSeveralRolesHandledAndTemplated(t *testing.T) {
	tpl, err := ParseObjectTemplate(`{"id": "{{.ObjectID}}", "parent": "{{.Parent}}"}`)
	if err != nil {
		t.Fatal(err)
	}
	pi := &Lifecycle{Object: "payment_intent", IDPrefix: "pi", Initial: "processing",
		Transitions: []Transition{{EventRole: EventRole{Type: "pi.ok"}, From: []string{"processing"}, To: "succeeded"}}}
	re := &Lifecycle{Object: "refund", IDPrefix: "re", Initial: "pending", Label: "refund", Parent: &Relation{Object: "payment_intent", State: "succeeded"},
		Transitions: []Transition{{EventRole: EventRole{Type: "re.ok", Object: tpl}, From: []string{"pending"}, To: "succeeded"}}}
	price := &Ordered{EventRole: EventRole{Type: "price.updated", Label: "price"}, Key: OrderCreated, Delete: &EventRole{Type: "price.deleted"}}
	v := &Vocabulary{Declared: true, Lifecycle: pi, Lifecycles: []*Lifecycle{pi, re},
		Effects:      []*EventRole{{Type: "charge.succeeded"}, {Type: "payout.paid", Label: "payout"}},
		OrderedRoles: []*Ordered{{EventRole: EventRole{Type: "customer.updated"}}, price}}
	for _, typ := range []string{"re.ok", "payout.paid", "price.updated", "price.deleted", "pi.ok"} {
		if !v.Handled(typ) {
			t.Errorf("%s not handled", typ)
		}
	}
	if got := v.HandledTypes(); len(got) != 7 {
		t.Errorf("handled types %v", got)
	}
	if got, state := v.Template("re.ok"); got != tpl || state != "succeeded" {
		t.Errorf("template of re.ok: %v %q", got, state)
	}
	if v.LifecycleOfType("re.ok") != re || v.EffectRoleOf("payout.paid").Label != "payout" {
		t.Error("role lookup by type")
	}
	if a := v.Ancestors(re); len(a) != 1 || a[0] != pi {
		t.Errorf("ancestors %v", a)
	}
	if id := re.ChildID("pi_x1"); id != "re_x1" {
		t.Errorf("child ID %q", id)
	}
	b, err := tpl.Render(ObjectData{ObjectID: "re_x1", Parent: "pi_x1"})
	if err != nil || string(b) != `{"id":"re_x1","parent":"pi_x1"}` {
		t.Errorf("render %s %v", b, err)
	}
	if QueryName("payment", "") != "payment" || QueryName("payment", "refund") != "payment:refund" ||
		BaseQuery("state:refund") != "state" || QueryLabel("state:refund") != "refund" || QueryLabel("state") != "" {
		t.Error("query names")
	}
}
