package profiles_test

import (
	"fmt"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// Render one Stripe delivery the way the engine does.
func ExampleRender() {
	p, err := profiles.Lookup("stripe")
	if err != nil {
		panic(err)
	}
	ev := profiles.Event{
		Source: "stripe", Account: "acct_A", ID: "evt_test_webhook",
		Type: "payment_intent.succeeded", ObjectID: "pi_1", Amount: 500, Currency: "eur",
		Status: "succeeded", Created: time.Unix(1700000000, 0),
	}
	body, h, err := profiles.Render(p, ev, profiles.Attempt{N: 1, SignedAt: time.Unix(1700000000, 0)}, []string{"whsec_test_secret"})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(body))
	fmt.Println(h.Get("Stripe-Signature")[:13])
	fmt.Println(profiles.EventKey(p, ev).EventID)
	// Output:
	// {"id":"evt_test_webhook","object":"event","api_version":"2026-03-25.dahlia","created":1700000000,"data":{"object":{"id":"pi_1","object":"payment_intent","amount":500,"currency":"eur","status":"succeeded","version":0}},"livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"payment_intent.succeeded"}
	// t=1700000000,
	// evt_test_webhook
}
