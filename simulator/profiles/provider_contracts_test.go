package profiles

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// newProviders are the contracts that exist only as data (no Go profile):
// each must say, field by field, what its research leaves undocumented.
var newProviders = []string{
	"checkout-com", "discord", "gitlab", "hubspot", "intercom", "linear", "mailgun",
	"meta-whatsapp", "sendgrid", "square", "twilio", "twitch-eventsub", "vercel", "zoom",
}

// aliasProviders send another provider's format (same_as).
var aliasProviders = map[string]string{"clerk": "svix", "resend": "svix", "openai": "standard-webhooks"}

func TestNewProvidersAreBuiltIn(t *testing.T) {
	for _, id := range append(append([]string(nil), newProviders...), "clerk", "resend", "openai") {
		c, ok := ContractOf(id)
		if !ok {
			t.Errorf("%s: no embedded contract", id)
			continue
		}
		if len(c.Vectors) == 0 {
			t.Errorf("%s: no test vector", id)
		}
		if _, err := Lookup(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	for id, other := range aliasProviders {
		if c, _ := ContractOf(id); c.SameAs != other {
			t.Errorf("%s: same_as %q, want %q", id, c.SameAs, other)
		}
	}
	if _, ok := ContractOf("paypal"); ok {
		t.Error("paypal: its RSA signature over a downloaded certificate cannot be exercised offline (contracts/README.md)")
	}
}

// says reports whether some note of c says that the thing named by one of
// words is undocumented.
func says(c Contract, words ...string) bool {
	notes := append([]string(nil), c.Notes...)
	for _, l := range []*ContractLocation{&c.EventID, &c.EventType, c.DeliveryID, c.Account} {
		if l != nil {
			notes = append(notes, l.Note)
		}
	}
	if c.Timestamp != nil {
		notes = append(notes, c.Timestamp.Source)
	}
	for _, n := range notes {
		n = strings.ToLower(n)
		if !strings.Contains(n, "undocumented") && !strings.Contains(n, "unpublished") && !strings.Contains(n, "is documented") {
			continue
		}
		for _, w := range words {
			if strings.Contains(n, w) {
				return true
			}
		}
	}
	return false
}

// Where the research has no value the field stays empty and a note says so
// (never a guessed value).
func TestNewProvidersSayWhatIsUndocumented(t *testing.T) {
	for _, id := range newProviders {
		c, _ := ContractOf(id)
		d := c.Delivery
		if d.Timeout == "" && !says(c, "timeout") {
			t.Errorf("%s: no timeout and no note saying it is undocumented", id)
		}
		if d.Timeout != "" && d.TimeoutSource == "" {
			t.Errorf("%s: a timeout without its source", id)
		}
		if len(d.Retry.Delays) == 0 && len(d.Retry.Model) == 0 && !says(c, "retr", "schedule") {
			t.Errorf("%s: no retry delays and no note saying they are undocumented", id)
		}
		if d.Ordered == nil && !says(c, "order") {
			t.Errorf("%s: ordering unset and no note saying it is undocumented", id)
		}
		if d.ManualRedelivery == nil && !says(c, "manual redelivery") {
			t.Errorf("%s: manual redelivery unset and no note saying it is undocumented", id)
		}
		if c.Timestamp != nil && c.Timestamp.Tolerance == "" && !says(c, "tolerance") {
			t.Errorf("%s: a signed timestamp without a tolerance and no note saying it is undocumented", id)
		}
		if len(c.Sources) == 0 || c.Signature.Source == "" {
			t.Errorf("%s: the contract and its signature need sources", id)
		}
	}
}

// A provider that sends no event ID gets one the receiver keys on, and the
// data says it is hookcert's modelling choice.
func TestNoEventIDProvidersSayTheirModellingChoice(t *testing.T) {
	for _, id := range []string{"twilio", "zoom", "mailgun", "meta-whatsapp"} {
		c, _ := ContractOf(id)
		if !strings.Contains(c.EventID.Note, "Modelling choice") {
			t.Errorf("%s: event_id.note must say the event identity is a modelling choice: %q", id, c.EventID.Note)
		}
	}
	// Twilio's idempotency header is from integrators' code, not Twilio's pages.
	c, _ := ContractOf("twilio")
	if c.EventID.Header != "I-Twilio-Idempotency-Token" || !strings.Contains(c.EventID.Note, "SECONDARY") {
		t.Errorf("twilio: event_id %+v must be the I-Twilio-Idempotency-Token header, marked SECONDARY", c.EventID)
	}
}

// The asymmetric providers' keys: Discord's receiver holds RFC 8032 TEST
// 1's public key for its seed; SendGrid's signatures are RFC 6979's (the
// vector, derived with Python's cryptography, byte for byte).
func TestAsymmetricProviderKeys(t *testing.T) {
	p, _ := Lookup("discord")
	k, ok := p.(PublicKeyer)
	if !ok {
		t.Fatal("discord: no public key")
	}
	pub, err := k.PublicKey("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	if err != nil {
		t.Fatal(err)
	}
	if want := "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"; pub != want {
		t.Errorf("discord: public key %s, RFC 8032 TEST 1 publishes %s", pub, want)
	}

	c, _ := ContractOf("sendgrid")
	v := c.Vectors[0]
	p, _ = Lookup("sendgrid")
	ev := Event{Source: "sendgrid", Account: "a", ID: "evt_test_webhook", Type: "processed", ObjectID: "o", Created: time.Unix(1700000000, 0)}
	body := []byte(v.Body)
	h, err := p.Headers(ev, body, Attempt{N: 1, SignedAt: time.Unix(1700000000, 0)}, []string{v.Secret})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("X-Twilio-Email-Event-Webhook-Signature"); got != v.Signature {
		t.Errorf("sendgrid: signature %s, RFC 6979 gives %s", got, v.Signature)
	}
	if got := h.Get("X-Twilio-Email-Event-Webhook-Timestamp"); got != v.Timestamp {
		t.Errorf("sendgrid: timestamp header %q, want %q", got, v.Timestamp)
	}
	// The SPKI DER public key derive_vectors.py prints for the vector's key.
	const sendgridPub = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEuy0tO3O0zR0yhDlv690M2EjoJDM9e/tY4I/E7akn+6aORxUjWDEU4QYfGzXgoJfdHx1CCXTIEdpET7H/GW+OWA=="
	if k, ok := p.(PublicKeyer); !ok {
		t.Error("sendgrid: no public key")
	} else if pub, err := k.PublicKey(v.Secret); err != nil || pub != sendgridPub {
		t.Errorf("sendgrid: public key %q (%v), want %s", pub, err, sendgridPub)
	}
}

// Twilio signs the URL the request is posted to: the same delivery to
// another URL carries another signature, and the idempotency header (not
// signed) is the event ID.
func TestTwilioSignsTheURLAndSortedParameters(t *testing.T) {
	p, _ := Lookup("twilio")
	ev := Event{Source: "twilio", Account: "AC123", ID: "tok-1", Type: "delivered", ObjectID: "SM1", Created: time.Unix(1700000000, 0)}
	sign := func(u string) http.Header {
		_, h, err := Render(p, ev, Attempt{N: 1, SignedAt: time.Unix(1700000000, 0), URL: u, Method: http.MethodPost}, []string{"12345"})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := sign("https://r.example/hooks/twilio"), sign("https://r.example/hooks/twilio?x=1")
	if a.Get("X-Twilio-Signature") == "" || a.Get("X-Twilio-Signature") == b.Get("X-Twilio-Signature") {
		t.Errorf("the signature does not depend on the URL: %q, %q", a.Get("X-Twilio-Signature"), b.Get("X-Twilio-Signature"))
	}
	if a.Get("I-Twilio-Idempotency-Token") != ev.ID {
		t.Errorf("I-Twilio-Idempotency-Token %q, want the event ID", a.Get("I-Twilio-Idempotency-Token"))
	}
	body, _, err := Render(p, ev, Attempt{N: 1, URL: "https://r.example/", Method: http.MethodPost}, []string{"12345"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "AccountSid=AC123&MessageSid=SM1&MessageStatus=delivered"; string(body) != want {
		t.Errorf("body %s, want %s", body, want)
	}
}
