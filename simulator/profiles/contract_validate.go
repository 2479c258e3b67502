package profiles

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Validate checks every rule of the contract; field prefixes each error's
// field ("target.profiles[0]", "contracts/zoom.yaml"). A same_as must name a
// built-in contract (ValidateWith takes another resolver). The templates are
// rendered with sample events, hostile strings among them; the vectors are
// signed and compared. Errors never quote a secret.
func (c Contract) Validate(field string) error { return c.ValidateWith(field, ContractOf) }

// ValidateWith is Validate with resolve finding the contracts a same_as may
// name (a target file's declared profiles beside the built-ins).
func (c Contract) ValidateWith(field string, resolve func(id string) (Contract, bool)) error {
	pr := problems{prefix: field}
	r := c
	if c.SameAs != "" {
		var err error
		if r, err = resolveContract(c, resolve); err != nil {
			pr.add("same_as", "%v", err)
			return pr.err()
		}
	}
	p := compileContract(r, &pr)
	if len(pr.list) == 0 {
		p.checkSamples(&pr)
	}
	if len(pr.list) == 0 {
		p.checkVectors(&pr, c.Vectors)
	}
	return pr.err()
}

// resolveContract merges a same_as chain: every field the contract leaves
// empty is the other's. Locations are taken whole (a location of its own
// replaces the other's); vectors are never inherited.
func resolveContract(c Contract, resolve func(id string) (Contract, bool)) (Contract, error) {
	seen := map[string]bool{c.ID: true}
	for c.SameAs != "" {
		if resolve == nil {
			return c, fmt.Errorf("%q: no profiles to resolve it against", c.SameAs)
		}
		other, ok := resolve(c.SameAs)
		if !ok {
			return c, fmt.Errorf("%q is not a known profile", c.SameAs)
		}
		if seen[other.ID] || other.ID == "" {
			return c, fmt.Errorf("%q: same_as goes round in a circle", c.SameAs)
		}
		seen[other.ID] = true
		vectors := c.Vectors
		merged := c
		mergeValue(reflect.ValueOf(&merged).Elem(), reflect.ValueOf(other))
		merged.SameAs = other.SameAs
		merged.Vectors = vectors
		c = merged
	}
	return c, nil
}

var locationType = reflect.TypeOf(ContractLocation{})

// mergeValue fills dst's zero fields from src, recursing into structs and
// pointers to structs (copied, never shared with src).
func mergeValue(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Struct:
		if dst.Type() == locationType {
			if dst.IsZero() {
				dst.Set(src)
			}
			return
		}
		for i := 0; i < dst.NumField(); i++ {
			mergeValue(dst.Field(i), src.Field(i))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if dst.IsNil() {
			cp := reflect.New(src.Elem().Type())
			cp.Elem().Set(src.Elem())
			dst.Set(cp)
			return
		}
		if dst.Elem().Kind() == reflect.Struct {
			cp := reflect.New(dst.Elem().Type())
			cp.Elem().Set(dst.Elem())
			mergeValue(cp.Elem(), src.Elem())
			dst.Set(cp)
		}
	default:
		if dst.IsZero() {
			dst.Set(src)
		}
	}
}

var (
	contractIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	// tchar of RFC 9110 section 5.6.2.
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	signedFields      = []string{"ID", "Timestamp", "Body", "URL", "Method", "Form", "DeliveryID"}
	tsFormats         = []string{"unix", "unix_ms", "rfc3339", "rfc3339nano"}
)

func notOneOf(v string, allowed []string) string {
	return fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

func parseDuration(pr *problems, field, s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		pr.add(field, "%q is not a duration (e.g. \"5m\", \"300s\")", s)
		return 0, false
	}
	if d < 0 {
		pr.add(field, "%q must not be negative", s)
		return 0, false
	}
	return d, true
}

func tmplField(pr *problems, field, text string) *template.Template {
	t, err := parseTemplate(field, text)
	if err != nil {
		pr.add(field, "does not parse: %v", err)
		return nil
	}
	return t
}

// compileContract checks the contract's static rules and builds the
// profile; what cannot be compiled is reported to pr and left nil.
func compileContract(c Contract, pr *problems) *contractProfile {
	p := &contractProfile{c: c, id: c.ID}
	switch {
	case c.ID == "":
		pr.add("id", "must not be empty")
	case !contractIDPattern.MatchString(c.ID):
		pr.add("id", "%q must be lower-case letters, digits and '-', starting with a letter or digit", c.ID)
	}
	if c.Name == "" {
		pr.add("name", "must not be empty")
	}
	if len(c.Sources) == 0 {
		pr.add("sources", "must list at least one source the contract was read in")
	}
	for i, s := range c.Sources {
		if strings.TrimSpace(s) == "" {
			pr.add(fmt.Sprintf("sources[%d]", i), "must not be empty")
		}
	}
	p.compileBody(pr)
	p.eventID = p.compileLocation(pr, "event_id", &c.EventID, "event.id")
	p.eventType = p.compileLocation(pr, "event_type", &c.EventType, "event.type")
	if c.DeliveryID != nil {
		p.deliveryID = p.compileLocation(pr, "delivery_id", c.DeliveryID, "attempt.delivery_id")
	}
	if c.Account != nil {
		p.account = p.compileLocation(pr, "account", c.Account, "event.account")
	}
	if p.deliveryID != nil && p.deliveryID.value != nil && p.eventID != nil && p.deliveryID.header != "" && p.deliveryID.header == p.eventID.header {
		pr.add("delivery_id.value", "must be empty when the delivery ID is the event ID's header %s", c.DeliveryID.Header)
	}
	p.compileTimestamp(pr)
	p.compileSignatures(pr)
	p.compileHeaders(pr)
	p.compileDelivery(pr)
	p.compileHandshake(pr)
	if c.IDs.Event != "" {
		sh, err := parseIDShape(c.IDs.Event)
		if err != nil {
			pr.add("ids.event", "%v", err)
		}
		p.eventShape = sh
	}
	if c.IDs.Delivery != "" {
		sh, err := parseIDShape(c.IDs.Delivery)
		if err != nil {
			pr.add("ids.delivery", "%v", err)
		} else if c.DeliveryID == nil || c.DeliveryID.Header == "" {
			pr.add("ids.delivery", "needs a delivery_id header: it shapes the per-attempt delivery ID sent there")
		}
		p.deliveryShape = sh
	}
	p.compileSecretShape(pr)
	if len(pr.list) == 0 {
		p.facts = p.buildFacts()
		p.inputs = p.buildInputs()
	}
	return p
}

func (p *contractProfile) compileBody(pr *problems) {
	b := &p.c.Body
	switch b.Format {
	case "", "json":
	case "form":
		p.form = true
	default:
		pr.add("body.format", "%s", notOneOf(b.Format, []string{"json", "form"}))
	}
	p.contentType = b.ContentType
	if p.contentType == "" {
		p.contentType = "application/json"
		if p.form {
			p.contentType = "application/x-www-form-urlencoded"
		}
	} else if strings.ContainsAny(p.contentType, "\r\n") {
		pr.add("body.content_type", "must be one line")
	}
	p.batch = b.Batch
	if p.form {
		if b.Envelope != "" {
			pr.add("body.envelope", "must be empty for a form body (use body.fields)")
		}
		if len(b.Fields) == 0 {
			pr.add("body.fields", "must list the form parameters of a form body")
		}
		if b.Batch {
			pr.add("body.batch", "only a JSON body can be a batch")
		}
		if b.ObjectPath != "" || b.DomainObjectPath != "" {
			pr.add("body.object_path", "must be empty for a form body (a form has no place for a declared object)")
		}
		names := make([]string, 0, len(b.Fields))
		for k := range b.Fields {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if k == "" {
				pr.add("body.fields", "a field name must not be empty")
				continue
			}
			if t := tmplField(pr, "body.fields."+k, b.Fields[k]); t != nil {
				p.fields = append(p.fields, namedTemplate{name: k, t: t})
			}
		}
	} else {
		if len(b.Fields) > 0 {
			pr.add("body.fields", "must be empty for a JSON body (use body.envelope)")
		}
		if b.Envelope == "" {
			pr.add("body.envelope", "must not be empty for a JSON body")
		} else {
			p.envelope = tmplField(pr, "body.envelope", b.Envelope)
		}
		for _, f := range []struct{ name, v string }{{"body.object_path", b.ObjectPath}, {"body.domain_object_path", b.DomainObjectPath}} {
			if f.v != "" {
				if _, err := parseJSONPath(f.v); err != nil {
					pr.add(f.name, "%q %v", f.v, err)
				}
			}
		}
		p.objectPath = b.ObjectPath
	}
	if b.MaxBytes < 0 {
		pr.add("body.max_bytes", "must not be negative")
	}
	if b.MaxBytes > 0 && b.MaxBytesSource == "" {
		pr.add("body.max_bytes_source", "must say where the limit is documented")
	}
}

func (p *contractProfile) compileLocation(pr *problems, field string, l *ContractLocation, what string) *location {
	n := 0
	for _, v := range []string{l.Header, l.JSONPath, l.Form} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		pr.add(field, "must give exactly one of header, json_path, form; it gives %d", n)
		return nil
	}
	loc := &location{what: what, mustNotContain: l.MustNotContain}
	switch {
	case l.Header != "":
		if !headerNamePattern.MatchString(l.Header) {
			pr.add(field+".header", "%q is not a valid header name", l.Header)
			return nil
		}
		loc.name, loc.header = l.Header, http.CanonicalHeaderKey(l.Header)
	case l.JSONPath != "":
		if p.form {
			pr.add(field+".json_path", "the body is a form: use form")
			return nil
		}
		if _, err := parseJSONPath(l.JSONPath); err != nil {
			pr.add(field+".json_path", "%q %v", l.JSONPath, err)
			return nil
		}
		loc.jsonPath = l.JSONPath
	default:
		if !p.form {
			pr.add(field+".form", "the body is JSON: use json_path")
			return nil
		}
		if _, ok := p.c.Body.Fields[l.Form]; !ok {
			pr.add(field+".form", "%q is not one of body.fields", l.Form)
			return nil
		}
		loc.form = l.Form
	}
	if l.Value != "" {
		if loc.header == "" {
			pr.add(field+".value", "only a header location has a value template (the body renders its own)")
		} else {
			loc.value = tmplField(pr, field+".value", l.Value)
		}
	}
	return loc
}

func (p *contractProfile) compileTimestamp(pr *problems) {
	t := p.c.Timestamp
	if t == nil {
		return
	}
	if t.Format != "" && !oneOf(t.Format, tsFormats...) {
		pr.add("timestamp.format", "%s", notOneOf(t.Format, tsFormats))
	}
	ts := &tsSpec{format: t.Format, jsonPath: t.JSONPath}
	if t.Header != "" && t.JSONPath != "" {
		pr.add("timestamp", "must give at most one of header, json_path")
	}
	if t.Header != "" {
		if !headerNamePattern.MatchString(t.Header) {
			pr.add("timestamp.header", "%q is not a valid header name", t.Header)
		}
		ts.header = http.CanonicalHeaderKey(t.Header)
	}
	if t.JSONPath != "" {
		if p.form {
			pr.add("timestamp.json_path", "the body is a form")
		} else if _, err := parseJSONPath(t.JSONPath); err != nil {
			pr.add("timestamp.json_path", "%q %v", t.JSONPath, err)
		}
	}
	parseDuration(pr, "timestamp.tolerance", t.Tolerance)
	p.ts = ts
}

func (p *contractProfile) compileSignatures(pr *problems) {
	s := p.compileSig(pr, "signature", &p.c.Signature, true)
	if s == nil {
		return
	}
	if s.jsonPath != "" {
		p.bodySig = s
		return
	}
	p.sigs = append(p.sigs, s)
	for i := range p.c.Signature.Also {
		if a := p.compileSig(pr, fmt.Sprintf("signature.also[%d]", i), &p.c.Signature.Also[i], false); a != nil {
			p.sigs = append(p.sigs, a)
		}
	}
}

func (p *contractProfile) compileScheme(pr *problems, field, alg, key, prefix, enc, pubEnc string) sigScheme {
	sc := sigScheme{alg: alg, key: key, prefix: prefix, enc: enc, pubEnc: pubEnc}
	if !oneOf(alg, algorithms...) {
		pr.add(field+".algorithm", "%s", notOneOf(alg, algorithms))
		return sc
	}
	if key != "" && !oneOf(key, keyEncodings...) {
		pr.add(field+".key", "%s", notOneOf(key, keyEncodings))
	}
	if isAsymmetric(alg) && (key == "" || key == "raw") {
		pr.add(field+".key", "an %s secret is binary key material: key must be base64 or hex", alg)
	}
	if alg == algToken {
		if key != "" && key != "raw" {
			pr.add(field+".key", "a token is compared as is: key must be empty or raw")
		}
		if enc != "" {
			pr.add(field+".encoding", "a token is sent as is: encoding must be empty")
		}
	} else if enc != "" && !oneOf(enc, sigEncodings...) {
		pr.add(field+".encoding", "%s", notOneOf(enc, sigEncodings))
	}
	if pubEnc != "" {
		if !isAsymmetric(alg) {
			pr.add(field+".public_key_encoding", "only ed25519 and ecdsa-p256 have a public key")
		} else if !oneOf(pubEnc, pubEncodings...) {
			pr.add(field+".public_key_encoding", "%s", notOneOf(pubEnc, pubEncodings))
		}
	}
	if sc.enc == "" {
		sc.enc = "hex"
	}
	if sc.pubEnc == "" {
		sc.pubEnc = "hex"
		if alg == algECDSAP256 {
			sc.pubEnc = "base64-der"
		}
	}
	return sc
}

func (p *contractProfile) compileSig(pr *problems, field string, cs *ContractSignature, main bool) *sigSpec {
	n := len(pr.list)
	s := &sigSpec{multiple: cs.Multiple, sep: cs.Separator, optional: cs.Optional}
	if s.sep == "" {
		s.sep = " "
	}
	s.scheme = p.compileScheme(pr, field, cs.Algorithm, cs.Key, cs.Prefix, cs.Encoding, cs.PublicKeyEncoding)
	switch {
	case cs.Header != "" && cs.JSONPath != "":
		pr.add(field, "must give exactly one of header, json_path; it gives 2")
	case cs.Header == "" && cs.JSONPath == "":
		pr.add(field, "must give exactly one of header, json_path; it gives 0")
	case cs.Header != "":
		if !headerNamePattern.MatchString(cs.Header) {
			pr.add(field+".header", "%q is not a valid header name", cs.Header)
		}
		s.name, s.header = cs.Header, http.CanonicalHeaderKey(cs.Header)
	default:
		if !main {
			pr.add(field+".json_path", "only the main signature can live in the body")
		} else if p.form {
			pr.add(field+".json_path", "the body is a form")
		} else if _, err := parseJSONPath(cs.JSONPath); err != nil {
			pr.add(field+".json_path", "%q %v", cs.JSONPath, err)
		}
		s.jsonPath = cs.JSONPath
	}
	if !main && (len(cs.Also) > 0 || len(cs.Variants) > 0) {
		pr.add(field, "an also signature has no also or variants of its own")
	}
	if !main && cs.Optional != p.c.Signature.Optional {
		pr.add(field+".optional", "must be the main signature's (one secret list signs them all)")
	}
	if cs.Algorithm == algToken {
		if cs.Signed != "" {
			pr.add(field+".signed", "must be empty for a token (the secret itself is sent)")
		}
		s.signed = template.Must(parseTemplate(field+".signed", ""))
	} else if cs.Signed == "" {
		pr.add(field+".signed", "must say what is signed (e.g. \"{{.Timestamp}}.{{.Body}}\")")
	} else if s.signed = tmplField(pr, field+".signed", cs.Signed); s.signed != nil {
		s.refs = refsOf(s.signed)
		p.checkSignedRefs(pr, field+".signed", s)
	}
	format := cs.Format
	if format == "" {
		format = "{{.Signature}}"
	}
	s.format = tmplField(pr, field+".format", format)
	value := cs.Value
	if value == "" {
		value = "{{.Signatures}}"
	}
	s.value = tmplField(pr, field+".value", value)
	if s.value != nil && !refsOf(s.value).fields["Signatures"] {
		pr.add(field+".value", "must write {{.Signatures}}")
	}
	if s.format != nil && !refsOf(s.format).fields["Signature"] {
		pr.add(field+".format", "must write {{.Signature}}")
	}
	if s.jsonPath != "" {
		if cs.Multiple {
			pr.add(field+".multiple", "a signature in the body is one signature")
		}
		if cs.Value != "" {
			pr.add(field+".value", "a signature in the body has no header value (use format)")
		}
		if p.ts != nil && p.ts.jsonPath == "" {
			pr.add("timestamp", "a signature in the body signs a timestamp in the body: give timestamp.json_path")
		}
	}
	for i, v := range cs.Variants {
		vf := fmt.Sprintf("%s.variants[%d]", field, i)
		if v.Prefix == "" {
			pr.add(vf+".prefix", "must not be empty (it selects the secrets the variant signs)")
		}
		vs := sigVariant{prefix: v.Prefix}
		vs.scheme = p.compileScheme(pr, vf, v.Algorithm, v.Key, v.Prefix, v.Encoding, v.PublicKeyEncoding)
		if v.Algorithm == algToken || cs.Algorithm == algToken {
			pr.add(vf+".algorithm", "a token has no variants")
		}
		f := v.Format
		if f == "" {
			f = "{{.Signature}}"
		}
		vs.format = tmplField(pr, vf+".format", f)
		s.variants = append(s.variants, vs)
	}
	if cs.Source == "" && main {
		pr.add(field+".source", "must say where the scheme is documented")
	}
	if len(pr.list) > n {
		return nil
	}
	return s
}

// checkSignedRefs checks what a signed template reads against what the
// request has.
func (p *contractProfile) checkSignedRefs(pr *problems, field string, s *sigSpec) {
	for f := range s.refs.fields {
		if !oneOf(f, signedFields...) {
			pr.add(field, "{{.%s}} is not one of {{.%s}}", f, strings.Join(signedFields, "}} {{."))
		}
	}
	for _, b := range s.refs.bad {
		pr.add(field, "%s: header takes one quoted header name", b)
	}
	for _, h := range s.refs.headers {
		if !headerNamePattern.MatchString(h) {
			pr.add(field, "header %q is not a valid header name", h)
		}
	}
	r := s.refs.fields
	if r["Form"] && !p.form {
		pr.add(field, "{{.Form}} needs a form body (body.format: form)")
	}
	if r["Timestamp"] && p.c.Timestamp == nil {
		pr.add(field, "{{.Timestamp}} needs a timestamp section")
	}
	if r["DeliveryID"] && p.c.DeliveryID == nil {
		pr.add(field, "{{.DeliveryID}} needs a delivery_id section")
	}
	if s.jsonPath != "" || p.c.Signature.JSONPath != "" {
		for _, f := range []string{"Body", "URL", "Method", "Form"} {
			if r[f] {
				pr.add(field, "a signature in the body cannot sign {{.%s}} (it is written before the request exists)", f)
			}
		}
		if len(s.refs.headers) > 0 {
			pr.add(field, "a signature in the body cannot sign a header")
		}
	}
}

func (p *contractProfile) compileHeaders(pr *problems) {
	taken := map[string]string{http.CanonicalHeaderKey("Content-Type"): "body.content_type"}
	claim := func(h, by string) {
		if h == "" {
			return
		}
		if prev, ok := taken[h]; ok {
			pr.add(by, "header %s is already sent by %s", h, prev)
			return
		}
		taken[h] = by
	}
	for _, l := range []struct {
		loc   *location
		field string
	}{{p.eventID, "event_id.header"}, {p.eventType, "event_type.header"}, {p.account, "account.header"}, {p.deliveryID, "delivery_id.header"}} {
		if l.loc == nil || l.loc.header == "" {
			continue
		}
		if l.loc.what == "attempt.delivery_id" && p.eventID != nil && l.loc.header == p.eventID.header {
			continue // GitHub: the delivery ID is the event ID
		}
		claim(l.loc.header, l.field)
	}
	if p.ts != nil {
		claim(p.ts.header, "timestamp.header")
	}
	for i, s := range p.sigs {
		f := "signature.header"
		if i > 0 {
			f = fmt.Sprintf("signature.also[%d].header", i-1)
		}
		claim(s.header, f)
	}
	names := make([]string, 0, len(p.c.Headers))
	for k := range p.c.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f := "headers." + k
		if !headerNamePattern.MatchString(k) {
			pr.add(f, "%q is not a valid header name", k)
			continue
		}
		claim(http.CanonicalHeaderKey(k), f)
		if t := tmplField(pr, f, p.c.Headers[k]); t != nil {
			p.headers = append(p.headers, namedTemplate{name: http.CanonicalHeaderKey(k), t: t})
		}
	}
	// A signature may read only headers the request carries besides it.
	for i, s := range p.sigs {
		for _, h := range s.refs.headers {
			by, ok := taken[http.CanonicalHeaderKey(h)]
			if !ok {
				pr.add(sigField(i)+".signed", "header %q is not one the request carries", h)
			} else if strings.HasPrefix(by, "signature.") {
				pr.add(sigField(i)+".signed", "header %q is a signature header", h)
			}
		}
	}
}

func sigField(i int) string {
	if i == 0 {
		return "signature"
	}
	return fmt.Sprintf("signature.also[%d]", i-1)
}

var statusClass = regexp.MustCompile(`^([1-5])xx$`)

func (p *contractProfile) compileDelivery(pr *problems) {
	d := &p.c.Delivery
	if d.Timeout != "" {
		if t, ok := parseDuration(pr, "delivery.timeout", d.Timeout); ok && t == 0 {
			pr.add("delivery.timeout", "must be more than 0")
		}
	}
	type rng struct{ lo, hi int }
	var ok []rng
	for i, s := range d.Success {
		f := fmt.Sprintf("delivery.success[%d]", i)
		if m := statusClass.FindStringSubmatch(s); m != nil {
			c := int(m[1][0] - '0')
			ok = append(ok, rng{c * 100, c*100 + 99})
			continue
		}
		lo, hi, found := strings.Cut(s, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if found {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 100 || b > 599 || a > b {
			pr.add(f, "%q is not a status class (2xx), a status (200) or a range (200-204) within 100-599", s)
			continue
		}
		ok = append(ok, rng{a, b})
	}
	if len(ok) == 0 {
		ok = []rng{{200, 299}}
	}
	p.success = func(status int) bool {
		for _, r := range ok {
			if status >= r.lo && status <= r.hi {
				return true
			}
		}
		return false
	}
	p.stop = map[int]bool{}
	for i, s := range d.Stop {
		f := fmt.Sprintf("delivery.stop[%d]", i)
		switch {
		case s < 100 || s > 599:
			pr.add(f, "%d is not an HTTP status (100-599)", s)
		case p.success(s):
			pr.add(f, "%d is a success status too", s)
		default:
			p.stop[s] = true
		}
	}
	if d.StopHeader != "" {
		name, value, found := strings.Cut(d.StopHeader, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !found || !headerNamePattern.MatchString(name) || value == "" {
			pr.add("delivery.stop_header", "%q is not \"Name: value\"", d.StopHeader)
		}
		p.stopHeader, p.stopValue = name, value
	}
	if d.MaxRedirects < 0 {
		pr.add("delivery.max_redirects", "must not be negative")
	}
	r := &d.Retry
	var delays, model []time.Duration
	for i, s := range r.Delays {
		if v, ok := parseDuration(pr, fmt.Sprintf("delivery.retry.delays[%d]", i), s); ok {
			delays = append(delays, v)
		} else if s == "" {
			pr.add(fmt.Sprintf("delivery.retry.delays[%d]", i), "must not be empty")
		}
	}
	for i, s := range r.Model {
		if v, ok := parseDuration(pr, fmt.Sprintf("delivery.retry.model[%d]", i), s); ok {
			model = append(model, v)
		} else if s == "" {
			pr.add(fmt.Sprintf("delivery.retry.model[%d]", i), "must not be empty")
		}
	}
	if r.MaxAttempts < 0 {
		pr.add("delivery.retry.max_attempts", "must not be negative")
	}
	horizon, hasHorizon := parseDuration(pr, "delivery.retry.horizon", r.Horizon)
	if r.MaxAttempts > 0 && len(r.Delays) > 0 && len(r.Delays) != r.MaxAttempts-1 && !r.ContinuesUntilHorizon {
		pr.add("delivery.retry.delays", "lists %d retries for %d attempts (max_attempts counts the first)", len(r.Delays), r.MaxAttempts)
	}
	if r.MaxAttempts > 0 && len(r.Model) > 0 && len(r.Model) != r.MaxAttempts-1 {
		pr.add("delivery.retry.model", "lists %d retries for %d attempts (max_attempts counts the first)", len(r.Model), r.MaxAttempts)
	}
	if hasHorizon && sum(delays) > horizon {
		pr.add("delivery.retry.delays", "add up to %v, beyond the horizon %v", sum(delays), horizon)
	}
	if hasHorizon && sum(model) > horizon {
		pr.add("delivery.retry.model", "adds up to %v, beyond the horizon %v", sum(model), horizon)
	}
	if len(r.Model) > 0 && !strings.Contains(r.ModelNote, "MODEL") {
		pr.add("delivery.retry.model_note", "must say the schedule is a MODEL (the word in capitals), not published")
	}
	if len(r.Model) == 0 && r.ModelNote != "" {
		pr.add("delivery.retry.model_note", "is set without a model")
	}
	if len(r.Model) > 0 && len(r.Delays) > 0 && !r.ContinuesUntilHorizon {
		pr.add("delivery.retry.model", "is for unpublished schedules: delays are published here")
	}
	if (len(r.Delays) > 0 || r.MaxAttempts > 0 || r.Horizon != "") && r.Source == "" {
		pr.add("delivery.retry.source", "must say where the schedule is documented")
	}
	if d.Ordered != nil && d.OrderedSource == "" {
		pr.add("delivery.ordered_source", "must say where the ordering statement is")
	}
	if d.ManualWindow != "" {
		parseDuration(pr, "delivery.manual_window", d.ManualWindow)
		if d.ManualRedelivery == nil || !*d.ManualRedelivery {
			pr.add("delivery.manual_window", "needs manual_redelivery: true")
		}
	}
}

func (p *contractProfile) compileSecretShape(pr *problems) {
	s := p.c.Secret
	sig := &p.c.Signature
	if isAsymmetric(sig.Algorithm) && s != (ContractSecretShape{}) {
		pr.add("secret", "must be empty for %s: hookcert generates a key pair", sig.Algorithm)
	}
	if s.Bytes < 0 || s.Bytes > 1024 {
		pr.add("secret.bytes", "%d must be between 1 and 1024 (0: 32)", s.Bytes)
	}
	if s.Encoding != "" && !oneOf(s.Encoding, "hex", "base64", "base62") {
		pr.add("secret.encoding", "%s", notOneOf(s.Encoding, []string{"hex", "base64", "base62"}))
	}
	if isHMAC(sig.Algorithm) && s.Encoding != "" {
		// The generated secret must be one the signature accepts.
		sc := sigScheme{alg: sig.Algorithm, key: sig.Key, prefix: sig.Prefix}
		gen, err := generateSecret(s, newHashReader("hookcert-sample-secret", nil))
		if err == nil {
			if _, err := sc.keyBytes(gen); err != nil {
				pr.add("secret", "generates secrets the signature does not accept (%v)", err)
			}
		}
	}
}

// Sample events the templates are rendered with: a plain one and one whose
// strings hold every character JSON escapes.
func sampleEvents(mustNotContain string) []Event {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	plain := Event{Source: "sample", Account: "acct_sample", ID: "evt_sample", Type: "sample.created",
		ObjectID: "obj_sample", Version: 1, Amount: 100, Currency: "eur", Status: "active", Created: created}
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if strings.ContainsRune(mustNotContain, r) {
				return -1
			}
			return r
		}, s)
	}
	hostile := plain
	hostile.ID = clean(`evt_"q\b<&>` + "\u2028x")
	hostile.Account = clean(`acct_"<&>\`)
	hostile.Type = clean(`a.b"\`)
	hostile.ObjectID = clean(`obj_"\`)
	hostile.Currency = `e"u\r`
	hostile.Status = "st\tat\"us"
	return []Event{plain, hostile}
}

// checkSamples renders the contract with sample events, attempts and
// secrets: templates must execute, the body must hold every location the
// data names, and signing must succeed.
func (p *contractProfile) checkSamples(pr *problems) {
	secret, err := p.MakeSecret(newHashReader("hookcert-sample-secret", nil))
	if err != nil {
		pr.add("secret", "%v", err)
		return
	}
	at := Attempt{N: 2, DeliveryID: "dlv_sample", SignedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
		RetryReason: "http_timeout", URL: "https://receiver.example/hooks?x=1", Method: http.MethodPost}
	must := ""
	for _, l := range []*location{p.eventID, p.eventType, p.account} {
		if l != nil {
			must += l.mustNotContain
		}
	}
	for i, ev := range sampleEvents(must) {
		body, err := p.SignedBody(ev, []string{secret})
		if err != nil {
			if i == 1 && strings.Contains(err.Error(), "invalid JSON") {
				pr.add("body.envelope", "renders invalid JSON when a string holds quotes or backslashes: write strings with {{json .X}}")
			} else {
				pr.add("body", "does not render a sample event: %v", trimID(p.id, err))
			}
			return
		}
		if i == 0 {
			p.checkBodyPaths(pr, body)
		}
		if _, err := p.Headers(ev, body, at, []string{secret}); err != nil {
			pr.add("headers", "a sample delivery's headers do not render: %v", trimID(p.id, err))
			return
		}
	}
	if p.objectPath != "" {
		ev := sampleEvents("")[0]
		ev.Object = []byte(`{"id":"obj_declared","kind":"sample"}`)
		if _, err := p.Body(ev); err != nil {
			pr.add("body.object_path", "a declared object cannot be placed: %v", trimID(p.id, err))
		}
	}
	if p.hs != nil {
		p.checkHandshakeSample(pr, secret)
	}
}

func trimID(id string, err error) string {
	return strings.TrimPrefix(err.Error(), id+": ")
}

func (p *contractProfile) checkBodyPaths(pr *problems, body []byte) {
	check := func(field, path string) {
		if path == "" {
			return
		}
		if p.form {
			return
		}
		if !bodyHas(body, p.path(path)) {
			pr.add(field, "%s is not in the body the envelope renders", path)
		}
	}
	for _, l := range []struct {
		loc   *location
		field string
	}{{p.eventID, "event_id.json_path"}, {p.eventType, "event_type.json_path"}, {p.deliveryID, "delivery_id.json_path"}, {p.account, "account.json_path"}} {
		if l.loc != nil {
			check(l.field, l.loc.jsonPath)
		}
	}
	if p.ts != nil {
		check("timestamp.json_path", p.ts.jsonPath)
	}
	if p.bodySig != nil {
		check("signature.json_path", p.bodySig.jsonPath)
	}
	check("body.object_path", p.objectPath)
	check("body.domain_object_path", p.c.Body.DomainObjectPath)
}

// checkVectors signs every vector and compares.
func (p *contractProfile) checkVectors(pr *problems, vectors []ContractVector) {
	s := p.bodySig
	if len(p.sigs) > 0 {
		s = p.sigs[0]
	}
	for i, v := range vectors {
		f := fmt.Sprintf("vectors[%d]", i)
		if v.Name == "" {
			pr.add(f+".name", "must not be empty")
		}
		if v.Signature == "" {
			pr.add(f+".signature", "must give the expected signature")
			continue
		}
		if (v.Secret == "") == (v.PublicKey == "") {
			pr.add(f, "must give exactly one of secret, public_key")
			continue
		}
		if v.PublicKey != "" && !isAsymmetric(s.scheme.alg) {
			pr.add(f+".public_key", "only ed25519 and ecdsa-p256 vectors can give a public key")
			continue
		}
		r := s.refs.fields
		for _, need := range []struct {
			field, v, name string
		}{{"ID", v.ID, "id"}, {"Timestamp", v.Timestamp, "timestamp"}, {"URL", v.URL, "url"}, {"DeliveryID", v.DeliveryID, "delivery_id"}} {
			if r[need.field] && need.v == "" {
				pr.add(f+"."+need.name, "must be given: the signature covers it")
			}
		}
		if v.Timestamp != "" && p.ts != nil {
			t, err := parseTimestamp(p.ts.format, v.Timestamp)
			if err != nil {
				pr.add(f+".timestamp", "%q is not a %s timestamp", v.Timestamp, tsFormatName(p.ts.format))
				continue
			}
			if formatTimestamp(p.ts.format, t) != v.Timestamp {
				pr.add(f+".timestamp", "%q is not written the way the provider writes %s", v.Timestamp, tsFormatName(p.ts.format))
			}
		}
		got, content, err := p.signVector(v)
		if err != nil {
			pr.add(f, "cannot be signed: %v", err)
			continue
		}
		if v.PublicKey != "" {
			if err := verifyPublic(s.scheme.alg, s.scheme.pubEnc, v.PublicKey, s.scheme.enc, v.Signature, content); err != nil {
				pr.add(f, "the signature does not verify with the public key: %v", err)
			}
			continue
		}
		if got == v.Signature {
			continue
		}
		if s.schemeFor(v.Secret).alg == algECDSAP256 {
			// A published ECDSA signature carries its own random nonce: it must
			// verify against the secret's public key.
			sc := s.schemeFor(v.Secret)
			pub, err := sc.publicKey(v.Secret)
			if err == nil {
				err = verifyPublic(sc.alg, sc.pubEnc, pub, sc.enc, v.Signature, content)
			}
			if err != nil {
				pr.add(f, "the signature does not verify with the secret's public key: %v", err)
			}
			continue
		}
		pr.add(f, "the contract computes another signature than the vector's (%s)", describeMismatch(got, v.Signature))
	}
}

func tsFormatName(f string) string {
	if f == "" {
		return "unix"
	}
	return f
}

// describeMismatch says how two signatures differ without printing either
// in full (neither is a secret, but a long value helps no one).
func describeMismatch(got, want string) string {
	n := 0
	for n < len(got) && n < len(want) && got[n] == want[n] {
		n++
	}
	return fmt.Sprintf("they agree on the first %d of %d characters", n, len(want))
}

// seededRand is a deterministic RandSource from a string.
func seededRand(s string) RandSource {
	var seed [32]byte
	copy(seed[:], s)
	h := newHashReader("hookcert-seed:", []byte(s))
	_, _ = h.Read(seed[:])
	return rand.New(rand.NewChaCha8(seed))
}
