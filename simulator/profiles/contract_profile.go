package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// NewContractProfile turns a contract into a Profile: the body, headers,
// signature, verdict and facts all come from the data. resolve finds the
// profile a same_as names (nil: the built-in contracts, ContractOf). The
// contract is validated first (Validate's rules, its vectors signed); the
// error names the field and the rule.
//
// The profile also implements InputLister, EventIDMaker and BodySigner
// (whose SignedBody is Body unless the signature lives in the body), and,
// where the data says so, Handshaker (a handshake section), DeliveryIDMaker
// (ids.delivery) and PublicKeyer (ed25519, ecdsa-p256).
func NewContractProfile(c Contract, resolve func(id string) (Contract, bool)) (Profile, error) {
	if resolve == nil {
		resolve = ContractOf
	}
	field := "profile " + strconv.Quote(c.ID)
	if err := c.ValidateWith(field, resolve); err != nil {
		return nil, err
	}
	r, err := resolveContract(c, resolve)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	var prob problems
	cp := compileContract(r, &prob)
	if err := prob.err(); err != nil {
		return nil, err
	}
	return cp.wrap(), nil
}

// EventIDMaker is a profile that draws event IDs of its provider's shape
// (contract profiles: ids.event).
type EventIDMaker interface {
	// MakeEventID draws one event ID from r (deterministic for a seeded r).
	MakeEventID(r RandSource) string
}

// SecretMaker is a profile that generates signing secrets of its
// provider's shape (contract profiles: the secret section, or a key pair).
type SecretMaker interface {
	MakeSecret(r io.Reader) (string, error)
}

// PublicKeyer is a profile whose provider signs with a private key: the
// receiver is configured with the public key of the secret hookcert signs
// with, written in the contract's public_key_encoding.
type PublicKeyer interface {
	PublicKey(secret string) (string, error)
}

// WrongSecreter is a profile that makes, for a secret, another secret of the
// same shape that its signatures accept but the receiver does not hold (a
// forged delivery's key). Contract profiles implement it: changing a
// character of an ECDSA key's encoding would not give a key at all.
type WrongSecreter interface {
	WrongSecret(secret string) (string, error)
}

// contractProfile is a compiled contract.
type contractProfile struct {
	c     Contract // same_as resolved
	id    string
	facts Facts

	form        bool
	contentType string
	envelope    *template.Template
	fields      []namedTemplate // sorted by name
	batch       bool
	objectPath  string // where a declared object goes ("" for form bodies)

	eventID, eventType, deliveryID, account *location
	ts                                      *tsSpec
	headers                                 []namedTemplate // canonical names, sorted
	sigs                                    []*sigSpec      // the signature, then its also
	bodySig                                 *sigSpec        // the signature when it lives in the body

	success    func(status int) bool
	stop       map[int]bool
	stopHeader string
	stopValue  string

	hs *handshakeSpec

	eventShape, deliveryShape *idShape
	inputs                    []Input
}

type namedTemplate struct {
	name string
	t    *template.Template
}

// location is a compiled ContractLocation.
type location struct {
	what           string // "event.id", "event.type", "event.account", "attempt.delivery_id"
	name           string // the header as the data spells it, for the facts
	header         string // canonical
	jsonPath       string
	form           string
	value          *template.Template
	mustNotContain string
}

type tsSpec struct {
	header   string // canonical; "" when in the body or only in the signature
	jsonPath string
	format   string
}

// sigSpec is one signature header (or the signature in the body).
type sigSpec struct {
	name     string // the header as the data spells it
	header   string // canonical
	jsonPath string
	scheme   sigScheme
	signed   *template.Template
	refs     templateRefs
	format   *template.Template
	value    *template.Template
	multiple bool
	sep      string
	optional bool
	variants []sigVariant
}

type sigVariant struct {
	prefix string
	scheme sigScheme
	format *template.Template
}

// wrap returns the profile as a type that implements exactly the optional
// interfaces its data declares: callers discover them by type assertion.
func (p *contractProfile) wrap() Profile {
	h, d, k := p.hs != nil, p.deliveryShape != nil, len(p.sigs) > 0 && isAsymmetric(p.sigs[0].scheme.alg) || p.bodySig != nil && isAsymmetric(p.bodySig.scheme.alg)
	hm, dm, km := handshakeMethods{p}, deliveryMethods{p}, publicKeyMethods{p}
	switch {
	case h && d && k:
		return cpHDK{p, hm, dm, km}
	case h && d:
		return cpHD{p, hm, dm}
	case h && k:
		return cpHK{p, hm, km}
	case d && k:
		return cpDK{p, dm, km}
	case h:
		return cpH{p, hm}
	case d:
		return cpD{p, dm}
	case k:
		return cpK{p, km}
	}
	return p
}

type (
	handshakeMethods struct{ p *contractProfile }
	deliveryMethods  struct{ p *contractProfile }
	publicKeyMethods struct{ p *contractProfile }

	cpH struct {
		*contractProfile
		handshakeMethods
	}
	cpD struct {
		*contractProfile
		deliveryMethods
	}
	cpK struct {
		*contractProfile
		publicKeyMethods
	}
	cpHD struct {
		*contractProfile
		handshakeMethods
		deliveryMethods
	}
	cpHK struct {
		*contractProfile
		handshakeMethods
		publicKeyMethods
	}
	cpDK struct {
		*contractProfile
		deliveryMethods
		publicKeyMethods
	}
	cpHDK struct {
		*contractProfile
		handshakeMethods
		deliveryMethods
		publicKeyMethods
	}
)

// MakeDeliveryID draws a delivery ID of the ids.delivery shape.
func (m deliveryMethods) MakeDeliveryID(r RandSource) string { return m.p.deliveryShape.draw(r) }

// PublicKey is the public key of an asymmetric secret.
func (m publicKeyMethods) PublicKey(secret string) (string, error) {
	s := m.p.bodySig
	if len(m.p.sigs) > 0 {
		s = m.p.sigs[0]
	}
	sc := s.schemeFor(secret)
	if !isAsymmetric(sc.alg) {
		return "", fmt.Errorf("%s: this secret signs with %s, which has no public key", m.p.id, sc.alg)
	}
	pub, err := sc.publicKey(secret)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.p.id, err)
	}
	return pub, nil
}

func (p *contractProfile) ID() string { return p.id }

// Facts returns a copy of the facts the data gives.
func (p *contractProfile) Facts() Facts { return base{facts: p.facts}.Facts() }

// Contract is the resolved contract the profile was built from.
func (p *contractProfile) Contract() Contract { return p.c }

// Inputs lists what the signature and the event identity depend on.
func (p *contractProfile) Inputs() []Input { return append([]Input(nil), p.inputs...) }

// MakeEventID draws an event ID of the ids.event shape, or evt_ and 24
// base-62 characters when the data gives none (the shape is then ours).
func (p *contractProfile) MakeEventID(r RandSource) string {
	if p.eventShape != nil {
		return p.eventShape.draw(r)
	}
	return "evt_" + randString(r, base62, 24)
}

// MakeSecret generates a secret: a key pair's private half for asymmetric
// algorithms, else the secret shape.
func (p *contractProfile) MakeSecret(r io.Reader) (string, error) {
	if r == nil {
		return "", fmt.Errorf("secret for %q: random source: must not be nil", p.id)
	}
	s := p.bodySig
	if len(p.sigs) > 0 {
		s = p.sigs[0]
	}
	if s != nil && isAsymmetric(s.scheme.alg) {
		var key []byte
		var err error
		if s.scheme.alg == algEd25519 {
			key = make([]byte, 32)
			_, err = io.ReadFull(r, key)
		} else {
			key, err = newECDSAKey(r)
		}
		if err != nil {
			return "", fmt.Errorf("secret for %q: %w", p.id, err)
		}
		return encodeKey(s.scheme.keyEncoding(), s.scheme.prefix, key), nil
	}
	sec, err := generateSecret(p.c.Secret, r)
	if err != nil {
		return "", fmt.Errorf("secret for %q: %w", p.id, err)
	}
	return sec, nil
}

// WrongSecret is a secret of secret's shape holding a wrong key.
func (p *contractProfile) WrongSecret(secret string) (string, error) {
	s := p.bodySig
	if len(p.sigs) > 0 {
		s = p.sigs[0]
	}
	sc := s.schemeFor(secret)
	if sc.alg == algToken {
		return "wrong-" + secret, nil
	}
	key, err := sc.keyBytes(secret)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.id, err)
	}
	wk, err := sc.wrongKey(key)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.id, err)
	}
	return encodeKey(sc.keyEncoding(), sc.prefix, wk), nil
}

// eventData is what body and header templates see of an event.
type eventData struct {
	ID, Type, Account, Source, ObjectID string
	Amount, Version                     int64
	Currency, Status                    string
	Created                             time.Time
	Object                              string // the conformance object as JSON
}

// attemptData adds the attempt, for header templates.
type attemptData struct {
	eventData
	DeliveryID  string
	Attempt     int // 1 for the first delivery
	RetryNum    int // Attempt-1
	RetryReason string
	URL         string
	Method      string
}

type signedData struct {
	ID, Timestamp, Body, URL, Method, Form, DeliveryID string
}

type formatData struct{ Signature, Timestamp string }

type valueData struct{ Signatures, Timestamp string }

func newEventData(ev *Event) eventData {
	return eventData{ID: ev.ID, Type: ev.Type, Account: ev.Account, Source: ev.Source, ObjectID: ev.ObjectID,
		Amount: ev.Amount, Version: ev.Version, Currency: ev.Currency, Status: ev.Status, Created: ev.Created,
		Object: string(appendObject(nil, ev))}
}

// path is a body path as the request has it: into the batch's element.
func (p *contractProfile) path(jp string) string {
	if p.batch {
		return "$[0]" + jp[1:]
	}
	return jp
}

func (l *location) raw(ev *Event, at *Attempt) string {
	switch l.what {
	case "event.id":
		return ev.ID
	case "event.type":
		return ev.Type
	case "event.account":
		return ev.Account
	}
	if at != nil {
		return at.DeliveryID
	}
	return ""
}

// checkLocation applies a location's rules to the raw value.
func (p *contractProfile) checkLocation(l *location, v string) error {
	if l == nil {
		return nil
	}
	where := l.header
	if l.jsonPath != "" {
		where = l.jsonPath
	} else if l.form != "" {
		where = "form field " + l.form
	}
	// The type is checked with the event (checkEvent); Headers leaves it
	// alone, as the Go profiles do.
	if v == "" && l.what != "attempt.delivery_id" && l.what != "event.type" {
		return fmt.Errorf("%s: %s: must not be empty (it is %s)", p.id, l.what, where)
	}
	if l.mustNotContain != "" && strings.ContainsAny(v, l.mustNotContain) {
		return fmt.Errorf("%s: %s: must not contain any of %q (it is %s)", p.id, l.what, l.mustNotContain, where)
	}
	return nil
}

// Body renders the event: the envelope (a declared object placed at
// body.object_path, a batch wrapped in an array) or the form fields.
func (p *contractProfile) Body(ev Event) ([]byte, error) {
	if p.form && ev.Object != nil {
		return nil, fmt.Errorf("%s: event.object: declared objects are not supported by this profile (its body is a form)", p.id)
	}
	if err := checkEvent(p.id, ev, true); err != nil {
		return nil, err
	}
	for _, l := range []*location{p.eventID, p.eventType, p.account} {
		if l != nil && l.header == "" {
			if err := p.checkLocation(l, l.raw(&ev, nil)); err != nil {
				return nil, err
			}
		}
	}
	d := newEventData(&ev)
	if p.form {
		vals := url.Values{}
		for _, f := range p.fields {
			v, err := execTemplate(f.t, d)
			if err != nil {
				return nil, fmt.Errorf("%s: body.fields.%s: %w", p.id, f.name, err)
			}
			if len(v) > 0 {
				vals.Set(f.name, string(v))
			}
		}
		return []byte(vals.Encode()), nil
	}
	b, err := execTemplate(p.envelope, d)
	if err != nil {
		return nil, fmt.Errorf("%s: body.envelope: %w", p.id, err)
	}
	if !p.c.Body.KeepSpace {
		var c bytes.Buffer
		c.Grow(len(b))
		if err := json.Compact(&c, b); err != nil {
			return nil, fmt.Errorf("%s: body.envelope: rendered invalid JSON for this event", p.id)
		}
		b = c.Bytes()
	} else if !json.Valid(b) {
		return nil, fmt.Errorf("%s: body.envelope: rendered invalid JSON for this event", p.id)
	}
	if ev.Object != nil {
		if b, err = replaceAtPath(b, p.objectPath, ev.Object); err != nil {
			return nil, fmt.Errorf("%s: body.object_path %s: %w", p.id, p.objectPath, err)
		}
	}
	if p.batch {
		out := make([]byte, 0, len(b)+2)
		out = append(append(append(out, '['), b...), ']')
		b = out
	}
	return b, nil
}

// SignedBody is the body a provider sends: Body, with the signature written
// at signature.json_path when it lives in the body (Mailgun).
func (p *contractProfile) SignedBody(ev Event, secrets []string) ([]byte, error) {
	body, err := p.Body(ev)
	if err != nil || p.bodySig == nil {
		return body, err
	}
	s := p.bodySig
	if err := checkSecrets(p.id, secrets, !s.optional); err != nil {
		return nil, err
	}
	if len(secrets) == 0 {
		return body, nil
	}
	d := signedData{ID: ev.ID}
	if p.ts != nil && p.ts.jsonPath != "" {
		raw, err := jsonAtPath(body, p.path(p.ts.jsonPath))
		if err != nil {
			return nil, fmt.Errorf("%s: timestamp.json_path %s: %w", p.id, p.ts.jsonPath, err)
		}
		d.Timestamp = jsonText(raw)
	}
	if l := p.deliveryID; l != nil && l.jsonPath != "" {
		raw, err := jsonAtPath(body, p.path(l.jsonPath))
		if err != nil {
			return nil, fmt.Errorf("%s: delivery_id.json_path %s: %w", p.id, l.jsonPath, err)
		}
		d.DeliveryID = jsonText(raw)
	}
	v, err := s.render(d, secrets[:1], nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.id, err)
	}
	out, err := replaceAtPath(body, p.path(s.jsonPath), appendJSONString(nil, v))
	if err != nil {
		return nil, fmt.Errorf("%s: signature.json_path %s: %w", p.id, s.jsonPath, err)
	}
	return out, nil
}

// schemeFor is the scheme and format a secret signs with: a variant's when
// the secret has its prefix.
func (s *sigSpec) schemeFor(secret string) *sigScheme {
	for i := range s.variants {
		if strings.HasPrefix(secret, s.variants[i].prefix) {
			return &s.variants[i].scheme
		}
	}
	return &s.scheme
}

// render signs d with each secret and writes the header value (or the body
// signature). hdr answers {{header "X"}}.
func (s *sigSpec) render(d signedData, secrets []string, hdr http.Header) (string, error) {
	t := s.signed
	if len(s.refs.headers) > 0 {
		c, err := t.Clone()
		if err != nil {
			return "", err
		}
		t = c.Funcs(template.FuncMap{"header": func(name string) (string, error) {
			if hdr == nil {
				return "", fmt.Errorf("header %q: no headers here", name)
			}
			return hdr.Get(name), nil
		}})
	}
	var content []byte
	if s.scheme.alg != algToken {
		var err error
		if content, err = execTemplate(t, d); err != nil {
			return "", fmt.Errorf("signature.signed: %w", err)
		}
	}
	entries := make([]string, 0, len(secrets))
	for i, sec := range secrets {
		sc, format := &s.scheme, s.format
		for j := range s.variants {
			if strings.HasPrefix(sec, s.variants[j].prefix) {
				sc, format = &s.variants[j].scheme, s.variants[j].format
				break
			}
		}
		sig, err := sc.sign(sec, content)
		if err != nil {
			return "", fmt.Errorf("secrets[%d]: %w", i, err)
		}
		e, err := execTemplate(format, formatData{Signature: sig, Timestamp: d.Timestamp})
		if err != nil {
			return "", fmt.Errorf("signature.format: %w", err)
		}
		entries = append(entries, string(e))
	}
	v, err := execTemplate(s.value, valueData{Signatures: strings.Join(entries, s.sep), Timestamp: d.Timestamp})
	if err != nil {
		return "", fmt.Errorf("signature.value: %w", err)
	}
	return string(v), nil
}

// formatTimestamp writes t as timestamp.format says.
func formatTimestamp(format string, t time.Time) string {
	switch format {
	case "unix_ms":
		return strconv.FormatInt(t.UnixMilli(), 10)
	case "rfc3339":
		return t.UTC().Format(time.RFC3339)
	case "rfc3339nano":
		return t.UTC().Format(time.RFC3339Nano)
	}
	return strconv.FormatInt(t.Unix(), 10)
}

func parseTimestamp(format, s string) (time.Time, error) {
	switch format {
	case "unix_ms":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, errors.New("not unix milliseconds")
		}
		return time.UnixMilli(n), nil
	case "rfc3339", "rfc3339nano":
		return time.Parse(time.RFC3339Nano, s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, errors.New("not unix seconds")
	}
	return time.Unix(n, 0), nil
}

// formContent is Twilio's {{.Form}}: parameters sorted by name (a repeated
// name's values sorted too), each name then value, no separators.
func formContent(body []byte) (string, error) {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return "", errors.New("body is not a URL-encoded form")
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		vs := append([]string(nil), vals[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	return b.String(), nil
}

// Headers builds one attempt's headers: content type, the header locations,
// the timestamp, the extra headers (those rendering empty are left out) and
// the signatures.
func (p *contractProfile) Headers(ev Event, body []byte, at Attempt, secrets []string) (http.Header, error) {
	tsInHeaders := p.ts != nil && p.ts.jsonPath == ""
	if err := checkAttempt(p.id, at, tsInHeaders); err != nil {
		return nil, err
	}
	optional := p.bodySig != nil || len(p.sigs) > 0 && p.sigs[0].optional
	if err := checkSecrets(p.id, secrets, !optional); err != nil {
		return nil, err
	}
	method := at.Method
	if method == "" {
		method = http.MethodPost
	}
	d := attemptData{eventData: newEventData(&ev), DeliveryID: at.DeliveryID, Attempt: at.N, RetryNum: at.N - 1,
		RetryReason: at.RetryReason, URL: at.URL, Method: method}
	h := make(http.Header, 4+len(p.headers)+len(p.sigs))
	h.Set("Content-Type", p.contentType)
	deliveryValue := ""
	for _, l := range []*location{p.eventID, p.eventType, p.account, p.deliveryID} {
		if l == nil || l.header == "" {
			continue
		}
		raw := l.raw(&ev, &at)
		if err := p.checkLocation(l, raw); err != nil {
			return nil, err
		}
		v := raw
		if l.value != nil {
			b, err := execTemplate(l.value, d)
			if err != nil {
				return nil, fmt.Errorf("%s: %s value: %w", p.id, l.what, err)
			}
			v = string(b)
		}
		if l.what == "attempt.delivery_id" {
			if p.eventID != nil && l.header == p.eventID.header {
				deliveryValue = h.Get(l.header) // the event ID is the delivery ID
				continue
			}
			deliveryValue = v
			if v == "" {
				continue
			}
		}
		h[l.header] = []string{v}
	}
	ts := ""
	if p.ts != nil {
		if p.ts.jsonPath != "" {
			raw, err := jsonAtPath(body, p.path(p.ts.jsonPath))
			if err == nil {
				ts = jsonText(raw)
			}
		} else {
			ts = formatTimestamp(p.ts.format, at.SignedAt)
			if p.ts.header != "" {
				h[p.ts.header] = []string{ts}
			}
		}
	}
	for _, x := range p.headers {
		v, err := execTemplate(x.t, d)
		if err != nil {
			return nil, fmt.Errorf("%s: headers.%s: %w", p.id, x.name, err)
		}
		if len(v) > 0 {
			h[x.name] = []string{string(v)}
		}
	}
	if len(p.sigs) == 0 || len(secrets) == 0 {
		return h, nil
	}
	if l := p.deliveryID; l != nil && l.header == "" {
		if l.jsonPath != "" {
			if raw, err := jsonAtPath(body, p.path(l.jsonPath)); err == nil {
				deliveryValue = jsonText(raw)
			}
		} else if vals, err := url.ParseQuery(string(body)); err == nil {
			deliveryValue = vals.Get(l.form)
		}
	}
	sd := signedData{ID: ev.ID, Timestamp: ts, Body: string(body), URL: at.URL, Method: method, DeliveryID: deliveryValue}
	for _, s := range p.sigs {
		if s.refs.fields["URL"] && at.URL == "" {
			return nil, fmt.Errorf("%s: attempt.url: must be set (the signature covers the URL)", p.id)
		}
		if s.refs.fields["Form"] {
			f, err := formContent(body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.id, err)
			}
			sd.Form = f
		}
		use := secrets[:1]
		if s.multiple {
			use = secrets
		}
		v, err := s.render(sd, use, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.id, err)
		}
		h[s.header] = []string{v}
	}
	return h, nil
}

// Verdict reads a response as delivery.success, stop and stop_header say:
// a success acknowledges; otherwise a stop status or the stop header stops;
// anything else is retried.
func (p *contractProfile) Verdict(status int, header http.Header, _ []byte) AckVerdict {
	if p.success(status) {
		return Acknowledged
	}
	if p.stop[status] {
		return Stop
	}
	if p.stopHeader != "" && strings.EqualFold(strings.TrimSpace(header.Get(p.stopHeader)), p.stopValue) {
		return Stop
	}
	return Retry
}

// signVector computes a vector's signature the way a delivery is signed.
func (p *contractProfile) signVector(v ContractVector) (string, []byte, error) {
	s := p.bodySig
	if len(p.sigs) > 0 {
		s = p.sigs[0]
	}
	d, hdr, err := p.vectorData(s, v)
	if err != nil {
		return "", nil, err
	}
	content, err := p.vectorContent(s, d, hdr)
	if err != nil {
		return "", nil, err
	}
	if v.Secret == "" {
		return "", content, nil
	}
	if s.jsonPath != "" {
		// A body signature is the formatted signature alone.
		sig, err := s.schemeFor(v.Secret).sign(v.Secret, content)
		if err != nil {
			return "", nil, err
		}
		e, err := execTemplate(s.format, formatData{Signature: sig, Timestamp: d.Timestamp})
		if err != nil {
			return "", nil, err
		}
		return string(e), content, nil
	}
	out, err := s.render(d, []string{v.Secret}, hdr)
	return out, content, err
}

func (p *contractProfile) vectorData(s *sigSpec, v ContractVector) (signedData, http.Header, error) {
	method := v.Method
	if method == "" {
		method = http.MethodPost
	}
	d := signedData{ID: v.ID, Timestamp: v.Timestamp, Body: v.Body, URL: v.URL, Method: method, DeliveryID: v.DeliveryID}
	if s.refs.fields["Form"] {
		f, err := formContent([]byte(v.Body))
		if err != nil {
			return d, nil, err
		}
		d.Form = f
	}
	hdr := http.Header{}
	for k, val := range v.Headers {
		hdr.Set(k, val)
	}
	return d, hdr, nil
}

// vectorContent is the signed content of a vector (what a public key
// verifies).
func (p *contractProfile) vectorContent(s *sigSpec, d signedData, hdr http.Header) ([]byte, error) {
	if s.scheme.alg == algToken {
		return nil, nil
	}
	t := s.signed
	if len(s.refs.headers) > 0 {
		c, err := t.Clone()
		if err != nil {
			return nil, err
		}
		t = c.Funcs(template.FuncMap{"header": func(name string) (string, error) { return hdr.Get(name), nil }})
	}
	return execTemplate(t, d)
}

// problems collects validation errors, each naming its field.
type problems struct {
	prefix string
	list   []error
}

func (p *problems) add(field, format string, args ...any) {
	name := field
	switch {
	case p.prefix == "":
	case strings.HasSuffix(p.prefix, ".yaml") || strings.HasSuffix(p.prefix, ".yml") || strings.HasPrefix(p.prefix, "profile "):
		name = p.prefix + ": " + field // a file or a profile, not a field path
	default:
		name = p.prefix + "." + field
	}
	p.list = append(p.list, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return errors.Join(p.list...)
}

// bodyHas reports whether the value at a body path exists in body.
func bodyHas(body []byte, path string) bool {
	_, err := jsonAtPath(body, path)
	return err == nil
}
