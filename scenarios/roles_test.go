package scenarios

import (
	"encoding/json"
	"testing"

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
