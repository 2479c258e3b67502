package reference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/hookcert/hookcert/reference/store"
)

// maxEventIDLen bounds event IDs; real providers' IDs are far shorter.
const maxEventIDLen = 255

// badRequest is a delivery that is authentic but unusable: 400 with Reason.
type badRequest struct {
	Reason string
	Detail string
}

func (e *badRequest) Error() string { return e.Reason + ": " + e.Detail }

// businessObject is the conformance domain's object (docs/conformance-domain.md).
type businessObject struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
	Version  int64  `json:"version"`
}

// eventRules are the two decisions of extract that a defect changes (steps.fields).
type eventRules struct {
	// checkID refuses an unusable event ID (requireEventID).
	checkID func(id, profile string) error
	// unknownType completes the event of a type the domain does not handle
	// (recordUnknown: as it is).
	unknownType func(ev store.Event, obj json.RawMessage) store.Event
}

// extract reads the event ID, type and business object where the endpoint's
// profile puts them (docs/conformance-domain.md, "Where each profile puts the
// fields"). The key's source and account come from the endpoint.
//
// Every profile but Shopify decodes its envelope from the whole body, and
// json.Unmarshal checks that the whole input is well-formed before decoding,
// so only Shopify's body, kept whole as the object, is checked on its own
// (json.Valid first would be a third pass over every body).
func extract(ep Endpoint, h http.Header, body []byte, rules eventRules) (store.Event, error) {
	var (
		id, typ string
		obj     json.RawMessage
	)
	switch ep.Profile {
	case "stripe":
		var env struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Object json.RawMessage `json:"object"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return store.Event{}, &badRequest{"malformed_json", "envelope: " + err.Error()}
		}
		id, typ, obj = env.ID, env.Type, env.Data.Object
	case "standard-webhooks", "svix":
		var env struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return store.Event{}, &badRequest{"malformed_json", "envelope: " + err.Error()}
		}
		hdr := "webhook-id"
		if ep.Profile == "svix" {
			hdr = "svix-id"
		}
		id, typ, obj = h.Get(hdr), env.Type, env.Data
	case "github":
		var env struct {
			Action string          `json:"action"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return store.Event{}, &badRequest{"malformed_json", "envelope: " + err.Error()}
		}
		// GitHub names the event in the header and the action in the body.
		id, typ, obj = h.Get("X-GitHub-Delivery"), h.Get("X-GitHub-Event"), env.Object
		if env.Action != "" {
			typ += "." + env.Action
		}
	case "shopify":
		if !json.Valid(body) {
			return store.Event{}, &badRequest{"malformed_json", "body is not well-formed JSON"}
		}
		id, typ, obj = h.Get("X-Shopify-Event-Id"), h.Get("X-Shopify-Topic"), body
	case "slack":
		// The event_callback envelope: the event ID beside the inner event,
		// whose type is the event's.
		var env struct {
			EventID string `json:"event_id"`
			Event   struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			} `json:"event"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return store.Event{}, &badRequest{"malformed_json", "envelope: " + err.Error()}
		}
		id, typ, obj = env.EventID, env.Event.Type, env.Event.Object
	default:
		return store.Event{}, fmt.Errorf("profile %q: no field mapping", ep.Profile)
	}
	if err := rules.checkID(id, ep.Profile); err != nil {
		return store.Event{}, err
	}
	if typ == "" {
		return store.Event{}, &badRequest{"missing_event_type", "no event type where profile " + ep.Profile + " puts it"}
	}
	ev := store.Event{
		Key:     store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: id},
		Type:    typ,
		Payload: body,
	}
	if !store.Handled(typ) {
		return rules.unknownType(ev, obj), nil
	}
	var o businessObject
	if len(obj) == 0 || bytes.Equal(obj, []byte("null")) {
		return store.Event{}, &badRequest{"missing_object", "event type " + typ + " needs a business object"}
	}
	if err := json.Unmarshal(obj, &o); err != nil {
		return store.Event{}, &badRequest{"invalid_object", err.Error()}
	}
	if o.ID == "" {
		return store.Event{}, &badRequest{"missing_object_id", "business object has no id"}
	}
	if (typ == store.TypeSubscriptionUpdated || typ == store.TypeSubscriptionDeleted) && o.Version < 0 {
		return store.Event{}, &badRequest{"invalid_object", "subscription version must not be negative"}
	}
	ev.ObjectID, ev.Amount, ev.Currency, ev.Status, ev.Version = o.ID, o.Amount, o.Currency, o.Status, o.Version
	return ev, nil
}

// requireEventID refuses a missing event ID, and one that is too long, not UTF-8
// or holds a NUL byte.
func requireEventID(id, profile string) error {
	switch {
	case id == "":
		return &badRequest{"missing_event_id", "no event ID where profile " + profile + " puts it"}
	case len(id) > maxEventIDLen || !utf8.ValidString(id) || bytes.IndexByte([]byte(id), 0) >= 0:
		return &badRequest{"invalid_event_id", fmt.Sprintf("event ID must be valid UTF-8 of at most %d bytes", maxEventIDLen)}
	}
	return nil
}

// recordUnknown keeps the event of an unknown type as it is: acknowledged and
// recorded, its object not read.
func recordUnknown(ev store.Event, _ json.RawMessage) store.Event { return ev }
