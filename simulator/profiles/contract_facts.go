package profiles

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// buildFacts reads the Facts from the data; the summaries (signature
// scheme, success rule, account location) are written from it so docs and
// reports read as they do for the Go profiles.
func (p *contractProfile) buildFacts() Facts {
	c := &p.c
	f := Facts{
		Name:               c.Name,
		ContentType:        p.contentType,
		MaxRedirects:       c.Delivery.MaxRedirects,
		HonoursRetryAfter:  c.Delivery.HonoursRetryAfter,
		TimeoutSource:      c.Delivery.TimeoutSource,
		ResignsOnRetry:     c.Delivery.ResignsOnRetry,
		MultipleSignatures: c.Signature.Multiple,
		Ordered:            cloneBool(c.Delivery.Ordered),
		OrderedSource:      c.Delivery.OrderedSource,
		ManualRedelivery:   cloneBool(c.Delivery.ManualRedelivery),
		MaxPayload:         c.Body.MaxBytes,
		MaxPayloadSource:   c.Body.MaxBytesSource,
		Sources:            append([]string(nil), c.Sources...),
		Notes:              append([]string(nil), c.Notes...),
	}
	if l := p.eventID; l != nil {
		switch {
		case l.header != "":
			f.EventIDHeader = l.name
		case l.jsonPath != "":
			f.EventIDJSONPath = p.path(l.jsonPath)
		default:
			f.EventIDRule = fmt.Sprintf("the form parameter %s", l.form)
		}
	}
	if l := p.deliveryID; l != nil {
		if l.header != "" {
			f.DeliveryIDHeader = l.name
		} else if l.jsonPath != "" {
			f.DeliveryIDJSONPath = p.path(l.jsonPath)
		}
	}
	if l := p.eventType; l != nil {
		if l.header != "" {
			f.EventTypeHeader = l.name
		} else if l.jsonPath != "" {
			f.EventTypeJSONPath = p.path(l.jsonPath)
		}
	}
	if p.objectPath != "" {
		f.DeclaredObjectJSONPath = p.path(p.objectPath)
		f.ObjectJSONPath = f.DeclaredObjectJSONPath
	}
	if c.Body.DomainObjectPath != "" {
		f.ObjectJSONPath = p.path(c.Body.DomainObjectPath)
	}
	f.AccountLocation = p.accountSummary()
	if len(p.sigs) > 0 {
		f.SignatureHeader = p.sigs[0].name
	}
	f.SignatureScheme = p.signatureSummary()
	f.SuccessRule = p.successSummary()
	if d, err := time.ParseDuration(c.Delivery.Timeout); err == nil && c.Delivery.Timeout != "" {
		f.Timeout = &d
	} else if f.TimeoutSource == "" {
		f.TimeoutSource = "undocumented; the user chooses"
	}
	if c.Timestamp != nil && c.Timestamp.Tolerance != "" {
		if d, err := time.ParseDuration(c.Timestamp.Tolerance); err == nil {
			f.Tolerance = &d
		}
	}
	r := &c.Delivery.Retry
	f.Retry = RetrySchedule{MaxAttempts: r.MaxAttempts, Source: r.Source, ContinuesUntilHorizon: r.ContinuesUntilHorizon, ModelNote: r.ModelNote}
	if r.Delays != nil {
		f.Retry.Delays = durations(r.Delays)
	} else if r.MaxAttempts == 1 {
		f.Retry.Delays = []time.Duration{} // one attempt: no retries, documented
	}
	if r.Model != nil {
		f.Retry.Modelled = durations(r.Model)
	}
	if r.Horizon != "" {
		if d, err := time.ParseDuration(r.Horizon); err == nil {
			f.Retry.Horizon = &d
		}
	}
	if c.Delivery.ManualWindow != "" {
		if d, err := time.ParseDuration(c.Delivery.ManualWindow); err == nil {
			f.ManualRedeliveryWindow = &d
		}
	}
	return f
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

func durations(s []string) []time.Duration {
	out := make([]time.Duration, 0, len(s))
	for _, v := range s {
		d, _ := time.ParseDuration(v)
		out = append(out, d)
	}
	return out
}

func (l *location) describe() string {
	switch {
	case l.header != "":
		return l.name + " header"
	case l.jsonPath != "":
		return l.jsonPath
	}
	return "form parameter " + l.form
}

func (p *contractProfile) accountSummary() string {
	l := p.account
	if l == nil {
		return "none in the request; from endpoint configuration"
	}
	s := l.describe()
	if l.jsonPath != "" {
		s = p.path(l.jsonPath)
	}
	if p.c.Account.Note != "" {
		s += " (" + p.c.Account.Note + ")"
	}
	return s
}

var algNames = map[string]string{
	algHMACSHA1: "HMAC-SHA1", algHMACSHA256: "HMAC-SHA256", algHMACSHA512: "HMAC-SHA512",
	algEd25519: "Ed25519", algECDSAP256: "ECDSA P-256 (SHA-256, ASN.1 DER)", algToken: "token",
}

func (s *sigScheme) keySummary() string {
	var k string
	switch s.alg {
	case algEd25519:
		k = "the secret is a 32-byte Ed25519 seed in " + s.keyEncoding() + "; the receiver holds the public key (" + s.pubEnc + ")"
	case algECDSAP256:
		k = "the secret is a PKCS#8 DER P-256 key in " + s.keyEncoding() + "; the receiver holds the public key (" + s.pubEnc + ")"
	default:
		switch s.keyEncoding() {
		case "raw":
			k = "key = the secret's UTF-8 bytes"
		default:
			k = "key = " + s.keyEncoding() + "-decode(secret)"
		}
	}
	if s.prefix != "" {
		k += ", " + s.prefix + " stripped first"
	}
	return k
}

var (
	proseHeader = regexp.MustCompile(`\{\{\s*header\s+"([^"]+)"\s*\}\}`)
	proseJSON   = regexp.MustCompile(`\{\{\s*json\s+\.(\w+)\s*\}\}`)
	proseField  = regexp.MustCompile(`\{\{\s*\.(\w+)\s*\}\}`)
	proseNames  = map[string]string{"Body": "raw body", "Form": "form parameters sorted by name, each name then value",
		"DeliveryID": "delivery ID", "VerifyToken": "verify token", "URL": "full URL", "ID": "event ID"}
)

// prose writes a template the way the Go profiles' summaries read:
// "{{.Timestamp}}.{{.Body}}" → "{timestamp}.{raw body}".
func prose(t string) string {
	name := func(f string) string {
		if n, ok := proseNames[f]; ok {
			return n
		}
		return strings.ToLower(f)
	}
	t = proseHeader.ReplaceAllString(t, "{$1}")
	t = proseJSON.ReplaceAllStringFunc(t, func(m string) string {
		return `"{` + name(proseJSON.FindStringSubmatch(m)[1]) + `}"`
	})
	return proseField.ReplaceAllStringFunc(t, func(m string) string {
		return "{" + name(proseField.FindStringSubmatch(m)[1]) + "}"
	})
}

func (p *contractProfile) sigSummary(s *sigSpec, cs *ContractSignature) string {
	var b strings.Builder
	if s.jsonPath != "" {
		fmt.Fprintf(&b, "in the body at %s", s.jsonPath)
	} else {
		b.WriteString(s.name)
	}
	if s.scheme.alg == algToken {
		b.WriteString(": the secret itself (token), compared for equality")
		return b.String()
	}
	format := cs.Format
	if format == "" {
		format = "{{.Signature}}"
	}
	entry := strings.ReplaceAll(prose(format), "{signature}", "<"+s.scheme.enc+">")
	entries := entry
	if s.multiple {
		entries = entry + "[" + s.sep + entry + "…]"
	}
	value := cs.Value
	if value == "" {
		value = "{{.Signatures}}"
	}
	fmt.Fprintf(&b, ": %s", strings.ReplaceAll(prose(value), "{signatures}", entries))
	if s.multiple {
		b.WriteString(", one per active secret")
	}
	fmt.Fprintf(&b, "; %s over %q; %s", algNames[s.scheme.alg], prose(cs.Signed), s.scheme.keySummary())
	for _, v := range s.variants {
		fmt.Fprintf(&b, "; a %s secret signs %s (%s) instead, %s", v.prefix, algNames[v.scheme.alg], v.scheme.enc, v.scheme.keySummary())
	}
	return b.String()
}

func (p *contractProfile) signatureSummary() string {
	c := &p.c.Signature
	var parts []string
	if p.bodySig != nil {
		parts = append(parts, p.sigSummary(p.bodySig, c))
	}
	for i, s := range p.sigs {
		cs := c
		if i > 0 {
			cs = &c.Also[i-1]
		}
		parts = append(parts, p.sigSummary(s, cs))
	}
	out := strings.Join(parts, "; also ")
	if c.Optional {
		out += "; sent only when a secret is configured"
	}
	if c.Source != "" {
		out += " (" + c.Source + ")"
	}
	return out
}

func (p *contractProfile) successSummary() string {
	d := &p.c.Delivery
	var b strings.Builder
	if len(d.Success) == 0 || len(d.Success) == 1 && d.Success[0] == "2xx" {
		b.WriteString("any 2xx")
	} else {
		b.WriteString("HTTP " + strings.Join(d.Success, ", "))
	}
	if d.Timeout != "" {
		b.WriteString(" within " + d.Timeout)
	}
	if d.MaxRedirects > 0 {
		fmt.Fprintf(&b, "; up to %d redirects are followed", d.MaxRedirects)
	} else {
		b.WriteString("; redirects are failures")
	}
	for _, s := range d.Stop {
		fmt.Fprintf(&b, "; %d stops redelivery", s)
	}
	if d.StopHeader != "" {
		fmt.Fprintf(&b, "; a response header %s stops redelivery", d.StopHeader)
	}
	if d.HonoursRetryAfter {
		b.WriteString("; Retry-After is honoured")
	}
	return b.String()
}

// buildInputs derives what the signature and the event identity depend on
// from what the signed templates read and where the values live.
func (p *contractProfile) buildInputs() []Input {
	var sigs []*sigSpec
	if p.bodySig != nil {
		sigs = append(sigs, p.bodySig)
	}
	sigs = append(sigs, p.sigs...)
	fields := map[string]bool{}
	var headers []string
	seenHeader := map[string]bool{}
	for _, s := range sigs {
		for f := range s.refs.fields {
			fields[f] = true
		}
		for _, h := range s.refs.headers {
			if c := canonical(h); !seenHeader[c] {
				seenHeader[c] = true
				headers = append(headers, h)
			}
		}
	}
	bodySigned := fields["Body"]
	formSigned := fields["Form"] || bodySigned
	signedAt := func(l *location, field string) bool {
		if l == nil {
			return false
		}
		switch {
		case fields[field]:
			return true
		case l.jsonPath != "":
			return bodySigned
		case l.form != "":
			return formSigned
		}
		return seenHeader[l.header]
	}
	var in []Input
	add := func(name string, l *location, signed, identity bool) {
		x := Input{Name: name, Signed: signed, Identity: identity}
		if l != nil {
			x.Header, x.JSONPath, x.Form = l.name, l.jsonPath, l.form
			if x.JSONPath != "" {
				x.JSONPath = p.path(x.JSONPath)
			}
		}
		in = append(in, x)
	}
	if len(sigs) > 0 {
		in = append(in, Input{Name: "key", Signed: true})
	}
	// A signed form covers every parameter, so a changed body is refused too.
	in = append(in, Input{Name: "body", Body: true, Signed: bodySigned || fields["Form"]})
	add("id", p.eventID, signedAt(p.eventID, "ID"), true)
	if p.account != nil {
		add("account", p.account, signedAt(p.account, ""), true)
	}
	if p.ts != nil {
		x := Input{Name: "timestamp", Header: p.c.Timestamp.Header, Signed: fields["Timestamp"] || seenHeader[p.ts.header]}
		switch {
		case p.ts.jsonPath != "":
			x.JSONPath = p.path(p.ts.jsonPath)
			x.Signed = x.Signed || bodySigned
		case p.ts.header == "" && len(p.sigs) > 0:
			x.Header = p.sigs[0].name // inside the signature header's value
		}
		in = append(in, x)
	}
	if fields["URL"] {
		in = append(in, Input{Name: "url", URL: true, Signed: true})
	}
	if fields["Method"] {
		in = append(in, Input{Name: "method", Signed: true})
	}
	if p.deliveryID != nil {
		add("delivery-id", p.deliveryID, signedAt(p.deliveryID, "DeliveryID"), false)
	}
	if fields["Form"] {
		for _, f := range p.fields {
			in = append(in, Input{Name: "form:" + f.name, Form: f.name, Signed: true})
		}
	}
	for _, h := range headers {
		in = append(in, Input{Name: "header:" + h, Header: h, Signed: true})
	}
	return in
}

func canonical(h string) string { return http.CanonicalHeaderKey(h) }
