package scenarios

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// A declared role without a template sends the provider's shape and no field
// the provider does not send: no version, which real Stripe objects lack.
func TestDefaultObjectHasNoInventedFields(t *testing.T) {
	for profile, want := range map[string][]string{
		"stripe":            {"id", "object", "amount", "currency", "metadata"},
		"standard-webhooks": {"id", "amount", "currency"},
	} {
		b, err := defaultObject(profile).Render(vocab.ObjectData{ObjectID: "pi_1", Type: "payment_intent.succeeded", Amount: 5, Currency: "usd"})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if len(m) != len(want) {
			t.Errorf("%s: %s, want exactly the fields %v", profile, b, want)
		}
		for _, f := range want {
			if _, ok := m[f]; !ok {
				t.Errorf("%s: %s lacks %s", profile, b, f)
			}
		}
		if profile == "stripe" && m["object"] != "payment_intent" {
			t.Errorf("stripe object name %v, want payment_intent", m["object"])
		}
	}
}

// recordFixtures records the fixtures run, in order.
type recordFixtures struct{ ran []vocab.ObjectData }

func (r *recordFixtures) Create(_ context.Context, name string, d vocab.ObjectData) error {
	d.Type = name
	r.ran = append(r.ran, d)
	return nil
}

// A child object is made through its parent: the parent first (its fixture),
// then the child's fixture with the parent's ID; the child's ID derives from
// the parent's, and its events render {{.Parent}}.
func TestChildCreatedThroughItsParent(t *testing.T) {
	tpl, err := vocab.ParseObjectTemplate(`{"id": "{{.ObjectID}}", "payment_intent": "{{.Parent}}", "charge": "{{ref "ch"}}"}`)
	if err != nil {
		t.Fatal(err)
	}
	pi := &vocab.Lifecycle{Object: "payment_intent", IDPrefix: "pi", Initial: "processing", Fixture: "payment",
		Transitions: []vocab.Transition{{EventRole: vocab.EventRole{Type: "payment_intent.canceled"}, From: []string{"processing"}, To: "canceled"}}}
	re := &vocab.Lifecycle{Object: "refund", IDPrefix: "re", Initial: "pending", Fixture: "refund", Label: "refund",
		Parent:      &vocab.Relation{Object: "payment_intent", State: "processing"},
		Transitions: []vocab.Transition{{EventRole: vocab.EventRole{Type: "refund.updated", Object: tpl}, From: []string{"pending"}, To: "succeeded"}}}
	fx := &recordFixtures{}
	stripe, err := profiles.Lookup("stripe")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Vocab: &vocab.Vocabulary{Declared: true, Lifecycle: pi, Lifecycles: []*vocab.Lifecycle{pi, re}}, Fixtures: fx,
		Endpoints: []Endpoint{{Profile: stripe, Account: "acct"}}}
	s := testSession(t, env)
	ep := env.Endpoints[0]
	obj := s.newObject(re)
	if !strings.HasPrefix(obj, "re_") {
		t.Fatalf("child ID %q", obj)
	}
	parent := vocab.Ref("pi", obj)
	s.create(ep, re, obj)
	if len(fx.ran) != 2 || fx.ran[0].Type != "payment" || fx.ran[0].ObjectID != parent || fx.ran[0].Parent != "" ||
		fx.ran[1].Type != "refund" || fx.ran[1].ObjectID != obj || fx.ran[1].Parent != parent {
		t.Fatalf("fixtures run: %+v", fx.ran)
	}
	ev := s.render(ep, s.objectEvent(ep, "refund.updated", obj))
	var m map[string]string
	if err := json.Unmarshal(ev.Object, &m); err != nil {
		t.Fatal(err)
	}
	if m["payment_intent"] != parent || m["charge"] != vocab.Ref("ch", parent) {
		t.Errorf("child event object %s: want payment_intent %s and its charge", ev.Object, parent)
	}
}
