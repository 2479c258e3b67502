package reference

import (
	"errors"
	"net/http"
	"testing"
)

// Every profile refuses a body that is not well-formed JSON with
// malformed_json, whether or not it checks the body before decoding it; those
// with an envelope refuse a well-formed body that is no object too (Shopify's
// body is the object: invalid_object).
func TestExtractMalformedJSON(t *testing.T) {
	h := http.Header{}
	for _, k := range []string{"webhook-id", "svix-id", "X-GitHub-Delivery", "X-Shopify-Event-Id"} {
		h.Set(k, "evt_1")
	}
	h.Set("X-GitHub-Event", "customer_cash_balance_transaction")
	h.Set("X-Shopify-Topic", "customer_cash_balance_transaction.created")
	rules := eventRules{checkID: requireEventID, unknownType: recordUnknown}
	for _, ep := range DefaultEndpoints() {
		bodies := []string{`{"id": "evt_1", "type": `, `{"id": "evt_1"} trailing`, ``}
		if ep.Profile != "shopify" {
			bodies = append(bodies, `[]`, `"event"`)
		}
		for _, body := range bodies {
			_, err := extract(ep, h, []byte(body), rules)
			var br *badRequest
			if !errors.As(err, &br) || br.Reason != "malformed_json" {
				t.Errorf("%s, body %q: got %v, want malformed_json", ep.Profile, body, err)
			}
		}
	}
}
