package profiles

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// AdyenAmount is a NotificationRequestItem amount in minor units.
type AdyenAmount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

// AdyenItem is the signed part of an Adyen NotificationRequestItem, plus the
// fields hookcert renders (providers.yaml adyen.payload.envelope).
type AdyenItem struct {
	AdditionalData      map[string]string `json:"additionalData,omitempty"`
	Amount              AdyenAmount       `json:"amount"`
	EventCode           string            `json:"eventCode"`
	EventDate           string            `json:"eventDate"`
	MerchantAccountCode string            `json:"merchantAccountCode"`
	MerchantReference   string            `json:"merchantReference"`
	OriginalReference   string            `json:"originalReference,omitempty"`
	PSPReference        string            `json:"pspReference"`
	Success             string            `json:"success"`
}

// adyenModel is hookcert's MODEL of the Adyen queue after its last published
// interval: the published 9/18/27 s immediate retries and 2 min … 8 h queue
// intervals, then (cadence undocumented) every 8 h until the 30-day horizon.
var adyenModel = func() []time.Duration {
	d := seconds(9, 9, 9, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800)
	for sum(d)+8*time.Hour <= 30*24*time.Hour {
		d = append(d, 8*time.Hour)
	}
	return d
}()

// adyenProfile renders Adyen Standard webhooks. legacy selects the old
// acknowledgement rule (2xx and the body "[accepted]").
type adyenProfile struct {
	base
	legacy bool
}

func adyenFacts(legacy bool) Facts {
	f := Facts{
		Name:            "Adyen (Standard webhooks)",
		ContentType:     "application/json", // JSON webhooks (HTTP POST form and SOAP variants exist)
		EventIDJSONPath: "",                 // Adyen has no event ID
		EventIDRule:     "pspReference:eventCode:success of $.notificationItems[0].NotificationRequestItem (natural key used by integrations; Adyen has no event ID)",
		// No delivery ID is documented (providers.yaml adyen.delivery_id).
		EventTypeJSONPath: "$.notificationItems[0].NotificationRequestItem.eventCode",
		ObjectJSONPath:    "$.notificationItems[0].NotificationRequestItem",
		AccountLocation:   "$.notificationItems[0].NotificationRequestItem.merchantAccountCode; $.live is \"false\" (test)",
		SignatureHeader:   "",
		SignatureScheme:   "per item additionalData.hmacSignature = base64 HMAC-SHA256 over pspReference:originalReference:merchantAccountCode:merchantReference:amount.value:amount.currency:eventCode:success; key = hex-decoded HMAC key (Adyen PHP HmacSignature.php)",
		SuccessRule:       "any 2xx (\"responding with a successful HTTP response status code, such as 200 or 202\"); no redirects",
		Timeout:           dur(10 * time.Second), // "If we do not receive this response within 10 seconds ... queued and retried."
		TimeoutSource:     "docs.adyen.com/japan-sellers-screening/webhooks; hookdeck guide also states 10 s",
		Tolerance:         nil, // no timestamp signed
		ResignsOnRetry:    false,
		Retry: RetrySchedule{
			// "sent at 9 seconds, 18 seconds, and again at 27 seconds", then "2 minutes, 5
			// minutes, 10 minutes, 15 minutes, 30 minutes, 1 hour, 2 hours, 4 hours, 8 hours"
			Delays:                seconds(9, 9, 9, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800),
			MaxAttempts:           0, // undocumented; the user chooses
			Horizon:               dur(30 * 24 * time.Hour),
			ContinuesUntilHorizon: true, // "From the queue, we automatically retry sending the webhook for up to 30 days."
			Source:                "https://docs.adyen.com/development-resources/webhooks/troubleshoot",
			Modelled:              adyenModel,
			ModelNote:             "MODEL after the published intervals: every 8 h until 30 days (cadence after 8 h is undocumented)",
		},
		Ordered:          nil, // undocumented; the user chooses
		OrderedSource:    "undocumented (the per-endpoint retry queue suggests in-order redelivery after an outage; inference only)",
		ManualRedelivery: boolp(true), // Customer Area > Webhooks > Troubleshoot; window undocumented
		Sources: []string{
			"https://docs.adyen.com/development-resources/webhooks",
			"https://docs.adyen.com/development-resources/webhooks/troubleshoot",
			"https://github.com/Adyen/adyen-php-api-library/blob/main/src/Adyen/Util/HmacSignature.php",
		},
		Notes: []string{
			"a failing endpoint's queue holds later webhooks until a retry succeeds (\"If a retry is successful, we continue with the next webhook in the queue.\")",
			"hookcert renders the object's status and version as additionalData \"status\" and \"version\" (strings)",
		},
	}
	if legacy {
		f.Name = "Adyen (Standard webhooks, legacy [accepted] acknowledgement)"
		f.SuccessRule = "HTTP 2xx with the body \"[accepted]\" (older API spec NotificationResponse: \"Set this parameter to [accepted] to acknowledge\")"
	}
	return f
}

func newAdyen() Profile { return adyenProfile{base: base{id: "adyen", facts: adyenFacts(false)}} }
func newAdyenLegacy() Profile {
	return adyenProfile{base: base{id: "adyen-legacy", facts: adyenFacts(true)}, legacy: true}
}

// MakeObjectID makes adyen an ObjectIDMaker: the object ID is the
// pspReference, which the event key is derived from (conformance-domain.md).
func (adyenProfile) MakeObjectID(r RandSource) string { return NewAdyenPSPReference(r) }

func (p adyenProfile) derivedEventID(ev Event) string {
	return ev.ObjectID + ":" + ev.Type + ":true"
}

// errAdyenObject is the error of an event with a declared object: Adyen's
// NotificationRequestItem has fixed fields, with no place for one.
var errAdyenObject = errors.New("event.object: declared objects are not supported by this profile (Adyen's NotificationRequestItem has fixed fields: amount, eventCode, pspReference, …)")

func (p adyenProfile) check(ev Event) error {
	if ev.Object != nil {
		return fmt.Errorf("%s: %w", p.id, errAdyenObject)
	}
	if err := checkEvent(p.id, ev, false); err != nil {
		return err
	}
	if ev.Account == "" {
		return fmt.Errorf("%s: event.account: must not be empty (it is merchantAccountCode)", p.id)
	}
	// Adyen has no event ID; an ID that disagrees with the derived key would make
	// the engine's key differ from the receiver's.
	if want := p.derivedEventID(ev); ev.ID != "" && ev.ID != want {
		return fmt.Errorf("%s: event.id: Adyen has no event ID; leave it empty or set it to pspReference:eventCode:success (%q), see EventKey", p.id, want)
	}
	return nil
}

// render writes {"live":"false","notificationItems":[{"NotificationRequestItem":
// item}]} as json.Marshal of the former AdyenItem-based struct did
// (oracle_test.go): fields in declaration order, additionalData's keys sorted
// (hmacSignature, status, version) and the map left out when empty
// (omitempty), originalReference (always empty) left out. The item maps the
// event as docs/conformance-domain.md says: pspReference = merchantReference =
// object ID, eventCode = type, success "true", status and version in
// additionalData. sig is the base64 hmacSignature, empty for the unsigned body.
func (p adyenProfile) render(ev *Event, sig []byte) []byte {
	b := make([]byte, 0, 300+len(sig)+len(ev.Status)+len(ev.Currency)+len(ev.Type)+len(ev.Account)+2*len(ev.ObjectID))
	b = append(b, `{"live":"false","notificationItems":[{"NotificationRequestItem":{`...)
	if len(sig) > 0 || ev.Status != "" || ev.Version != 0 {
		b = append(b, `"additionalData":{`...)
		sep := false
		if len(sig) > 0 {
			// Standard base64 ([A-Za-z0-9+/=]): nothing to escape.
			b = append(b, `"hmacSignature":"`...)
			b = append(b, sig...)
			b = append(b, '"')
			sep = true
		}
		if ev.Status != "" {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"status":`...)
			b = appendJSONString(b, ev.Status)
			sep = true
		}
		if ev.Version != 0 {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"version":"`...) // a decimal: nothing to escape
			b = strconv.AppendInt(b, ev.Version, 10)
			b = append(b, '"')
		}
		b = append(b, `},`...)
	}
	b = append(b, `"amount":{"value":`...)
	b = strconv.AppendInt(b, ev.Amount, 10)
	b = append(b, `,"currency":`...)
	b = appendJSONString(b, ev.Currency)
	b = append(b, `},"eventCode":`...)
	b = appendJSONString(b, ev.Type)
	b = append(b, `,"eventDate":`...)
	b = appendJSONTime(b, ev.Created, time.RFC3339)
	b = append(b, `,"merchantAccountCode":`...)
	b = appendJSONString(b, ev.Account)
	b = append(b, `,"merchantReference":`...)
	b = appendJSONString(b, ev.ObjectID)
	b = append(b, `,"pspReference":`...)
	b = appendJSONString(b, ev.ObjectID)
	return append(b, `,"success":"true"}}]}`...)
}

// Body returns the UNSIGNED notification (no hmacSignature). Use Render or
// SignedBody for what Adyen sends.
func (p adyenProfile) Body(ev Event) ([]byte, error) {
	if err := p.check(ev); err != nil {
		return nil, err
	}
	return p.render(&ev, nil), nil
}

// SignedBody returns the notification with additionalData.hmacSignature made
// with the first secret (one signature per item; no rotation overlap): what
// AdyenHMAC computes for the rendered item, fed to the MAC field by field.
func (p adyenProfile) SignedBody(ev Event, secrets []string) ([]byte, error) {
	if err := p.check(ev); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	m, ok := getMAC(macAdyen256, secrets[0])
	if !ok {
		return nil, fmt.Errorf("%s: secrets[0]: %w", p.id, errAdyenKey)
	}
	// pspReference = merchantReference = object ID, no originalReference.
	writeAdyenContent(m, ev.ObjectID, "", ev.Account, ev.ObjectID, ev.Amount, ev.Currency, ev.Type, "true")
	var sig [b64SHA256Len]byte
	b64 := base64.StdEncoding.AppendEncode(sig[:0], m.finish())
	m.release()
	return p.render(&ev, b64), nil
}

// Headers carries only the content type: the signature is in the body.
func (p adyenProfile) Headers(_ Event, _ []byte, at Attempt, secrets []string) (http.Header, error) {
	if err := checkAttempt(p.id, at, false); err != nil {
		return nil, err
	}
	if err := checkSecrets(p.id, secrets, true); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", p.facts.ContentType)
	return h, nil
}

// Verdict: adyen acknowledges any 2xx; adyen-legacy also needs the body
// "[accepted]". Everything else goes to the retry queue.
func (p adyenProfile) Verdict(status int, _ http.Header, body []byte) AckVerdict {
	if !is2xx(status) {
		return Retry
	}
	if p.legacy && !bytes.Equal(bytes.TrimSpace(body), []byte("[accepted]")) {
		return Retry
	}
	return Acknowledged
}

// Adyen stays Go only, with no data file: its signature is an HMAC over a
// colon-joined selection of the item's fields (pspReference … success,
// amount.value among them) written back into the same item, its event key
// is derived from three of those fields (there is no event ID), and the
// item has fixed fields, so declared objects have no place. A contract's
// signed content sees only the event ID, timestamp and delivery ID of a
// body it signs; Adyen's inputs are therefore listed here by hand.

// adyenItemPath is where the one NotificationRequestItem sits.
const adyenItemPath = "$.notificationItems[0].NotificationRequestItem."

// Inputs: the key, and the item's signed fields; pspReference, eventCode
// and success make the event key, merchantAccountCode the account. The
// rest of the body (eventDate, additionalData's status and version) is not
// signed.
func (p adyenProfile) Inputs() []Input {
	field := func(name string, identity bool) Input {
		return Input{Name: "field:" + name, JSONPath: adyenItemPath + name, Signed: true, Identity: identity}
	}
	return []Input{
		{Name: "key", Signed: true},
		{Name: "body", Body: true},
		{Name: "id", JSONPath: adyenItemPath + "pspReference", Signed: true, Identity: true},
		{Name: "account", JSONPath: adyenItemPath + "merchantAccountCode", Signed: true, Identity: true},
		field("eventCode", true),
		field("success", true),
		field("merchantReference", false),
		field("amount.value", false),
		field("amount.currency", false),
	}
}
