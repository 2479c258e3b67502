package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// BodySigner is implemented by profiles whose signature lives inside the body
// (Adyen's additionalData.hmacSignature). Their Body returns the unsigned body;
// SignedBody returns the body a real provider sends. Render picks the right one.
type BodySigner interface {
	SignedBody(ev Event, secrets []string) ([]byte, error)
}

// eventIDDeriver is implemented by profiles without an event ID, whose receivers
// derive the key from other fields (Adyen).
type eventIDDeriver interface {
	derivedEventID(ev Event) string
}

// Render builds one attempt's request body and headers the way the provider
// does: the body (signed inside for BodySigner profiles) and the headers signed
// with every secret given. This is the entry point the engine should use.
func Render(p Profile, ev Event, at Attempt, secrets []string) ([]byte, http.Header, error) {
	var (
		body []byte
		err  error
	)
	if bs, ok := p.(BodySigner); ok {
		body, err = bs.SignedBody(ev, secrets)
	} else {
		body, err = p.Body(ev)
	}
	if err != nil {
		return nil, nil, err
	}
	h, err := p.Headers(ev, body, at, secrets)
	if err != nil {
		return nil, nil, err
	}
	return body, h, nil
}

// EventKey returns the (source, account, event_id) key a receiver derives from
// a delivery of ev under p. It equals ev.Key() except for providers without an
// event ID (Adyen: pspReference:eventCode:success).
func EventKey(p Profile, ev Event) Key {
	k := ev.Key()
	if d, ok := p.(eventIDDeriver); ok {
		k.EventID = d.derivedEventID(ev)
	}
	return k
}

// RetryAfter reads a Retry-After response header (delay-seconds or an HTTP
// date, RFC 9110 section 10.2.3) relative to now. ok is false when the header
// is absent or unparsable. A date in the past gives 0.
//
// Standard Webhooks: Retry-After "should be taken into consideration when
// scheduling the next attempt" (spec, status handling; providers.yaml
// standard_webhooks.success.status_handling.retry_after).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// base carries what every profile shares. data is the profile's embedded
// contract (nil for Adyen, which is Go only): it gives the Go profile the
// parts the data describes beyond rendering (inputs, handshake).
type base struct {
	id    string
	facts Facts
	data  *contractProfile
}

func (b base) ID() string { return b.id }

// Inputs lists what the signature and event identity depend on, from the
// profile's contract.
func (b base) Inputs() []Input {
	if b.data == nil {
		return nil
	}
	return b.data.Inputs()
}

// Facts returns a copy, so callers cannot change the shared contract.
func (b base) Facts() Facts {
	f := b.facts
	f.Retry.Delays = cloneDurations(f.Retry.Delays)
	f.Retry.Modelled = cloneDurations(f.Retry.Modelled)
	f.Sources = append([]string(nil), f.Sources...)
	f.Notes = append([]string(nil), f.Notes...)
	return f
}

func cloneDurations(d []time.Duration) []time.Duration {
	if d == nil {
		return nil
	}
	return append([]time.Duration{}, d...)
}

func is2xx(status int) bool { return status >= 200 && status <= 299 }

// verdict2xx is the common rule: any 2xx acknowledges, anything else (3xx
// included) is a failure the provider retries per its schedule.
func verdict2xx(status int) AckVerdict {
	if is2xx(status) {
		return Acknowledged
	}
	return Retry
}

func dur(d time.Duration) *time.Duration { return &d }
func boolp(b bool) *bool                 { return &b }

func seconds(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

func sum(d []time.Duration) time.Duration {
	var t time.Duration
	for _, v := range d {
		t += v
	}
	return t
}

// errNoSecret is returned when a profile that always signs gets no secret.
var errNoSecret = errors.New("secrets: at least one non-empty secret is required")

// checkSecrets validates the secret list without ever echoing a secret.
func checkSecrets(profile string, secrets []string, required bool) error {
	if required && len(secrets) == 0 {
		return fmt.Errorf("%s: %w", profile, errNoSecret)
	}
	for i, s := range secrets {
		if s == "" {
			return fmt.Errorf("%s: secrets[%d]: must not be empty", profile, i)
		}
	}
	return nil
}

// checkEvent validates the fields every profile renders. A declared object
// must be a JSON object; the object ID is then not rendered, so not required.
func checkEvent(profile string, ev Event, needID bool) error {
	if ev.Object != nil {
		if err := CheckObject(ev.Object); err != nil {
			return fmt.Errorf("%s: event.object: %w", profile, err)
		}
	}
	switch {
	case needID && ev.ID == "":
		return fmt.Errorf("%s: event.id: must not be empty", profile)
	case ev.Type == "":
		return fmt.Errorf("%s: event.type: must not be empty", profile)
	case ev.ObjectID == "" && ev.Object == nil:
		return fmt.Errorf("%s: event.object_id: must not be empty", profile)
	case ev.Created.IsZero():
		return fmt.Errorf("%s: event.created: must be set (it is rendered into the envelope)", profile)
	}
	return nil
}

// CheckObject reports whether b is one valid JSON object (surrounding JSON
// whitespace allowed), as Event.Object must be.
func CheckObject(b []byte) error {
	if !json.Valid(b) {
		return errors.New("must be valid JSON")
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errors.New("must be a JSON object ({…}), not another JSON value")
	}
	return nil
}

// checkAttempt validates an attempt; signedAt says whether the scheme signs a
// timestamp, in which case SignedAt is required.
func checkAttempt(profile string, at Attempt, signedAt bool) error {
	if at.N < 1 {
		return fmt.Errorf("%s: attempt.n: must be 1 or more, got %d", profile, at.N)
	}
	if signedAt && at.SignedAt.IsZero() {
		return fmt.Errorf("%s: attempt.signed_at: must be set (the scheme signs a timestamp)", profile)
	}
	return nil
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
