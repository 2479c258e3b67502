package profiles

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"time"
)

// Bad handshake variants a contract may ask the receiver to refuse.
const (
	BadSignature     = "bad-signature"
	WrongVerifyToken = "wrong-verify-token"
)

type handshakeSpec struct {
	method       string
	signed       bool
	body         *template.Template
	query        []namedTemplate
	headers      []namedTemplate
	status       int
	expBody      *template.Template
	expJSON      []namedTemplate
	expForm      []namedTemplate
	facts        HandshakeFacts
	verifyTokens bool // the request carries {{.VerifyToken}}
}

// handshakeData is what handshake templates see.
type handshakeData struct {
	Challenge   string
	VerifyToken string
	ID          string // an event ID drawn from ids.event, seeded by the challenge
	Created     time.Time
}

func (p *contractProfile) compileHandshake(pr *problems) {
	c := p.c.Handshake
	if c == nil {
		return
	}
	hs := &handshakeSpec{method: c.Method}
	if hs.method == "" {
		hs.method = http.MethodPost
	}
	refs := map[string]bool{}
	note := func(t *template.Template) {
		for f := range refsOf(t).fields {
			refs[f] = true
		}
	}
	switch hs.method {
	case http.MethodPost:
		if c.Body == "" {
			pr.add("handshake.body", "must not be empty for a POST handshake")
		} else if hs.body = tmplField(pr, "handshake.body", c.Body); hs.body != nil {
			note(hs.body)
		}
		if len(c.Query) > 0 {
			pr.add("handshake.query", "only a GET handshake has a query (a POST one has a body)")
		}
		hs.signed = !c.Unsigned
	case http.MethodGet:
		if c.Body != "" {
			pr.add("handshake.body", "must be empty for a GET handshake")
		}
		if len(c.Query) == 0 {
			pr.add("handshake.query", "must not be empty for a GET handshake")
		}
		for _, k := range sortedKeys(c.Query) {
			if t := tmplField(pr, "handshake.query."+k, c.Query[k]); t != nil {
				hs.query = append(hs.query, namedTemplate{name: k, t: t})
				note(t)
			}
		}
	default:
		pr.add("handshake.method", "%s", notOneOf(c.Method, []string{"POST", "GET"}))
	}
	for _, k := range sortedKeys(c.Headers) {
		if !headerNamePattern.MatchString(k) {
			pr.add("handshake.headers."+k, "%q is not a valid header name", k)
			continue
		}
		if t := tmplField(pr, "handshake.headers."+k, c.Headers[k]); t != nil {
			hs.headers = append(hs.headers, namedTemplate{name: http.CanonicalHeaderKey(k), t: t})
			note(t)
		}
	}
	for f := range refs {
		if !oneOf(f, "Challenge", "VerifyToken", "ID", "Created") {
			pr.add("handshake", "{{.%s}} is not one of {{.Challenge}} {{.VerifyToken}} {{.ID}} {{.Created}}", f)
		}
	}
	if !refs["Challenge"] {
		pr.add("handshake", "the request must carry {{.Challenge}}: the answer proves the receiver read it")
	}
	hs.verifyTokens = refs["VerifyToken"]
	e := &c.Expect
	hs.status = e.Status
	if hs.status == 0 {
		hs.status = http.StatusOK
	} else if hs.status < 100 || hs.status > 599 {
		pr.add("handshake.expect.status", "%d is not an HTTP status (100-599)", e.Status)
	}
	if e.Body == "" && len(e.JSON) == 0 && len(e.Form) == 0 {
		pr.add("handshake.expect", "must give at least one of body, json, form")
	}
	if e.Body != "" {
		hs.expBody = tmplField(pr, "handshake.expect.body", e.Body)
	}
	for _, k := range sortedKeys(e.JSON) {
		if t := tmplField(pr, "handshake.expect.json."+k, e.JSON[k]); t != nil {
			hs.expJSON = append(hs.expJSON, namedTemplate{name: k, t: t})
		}
	}
	for _, k := range sortedKeys(e.Form) {
		if t := tmplField(pr, "handshake.expect.form."+k, e.Form[k]); t != nil {
			hs.expForm = append(hs.expForm, namedTemplate{name: k, t: t})
		}
	}
	deadline, _ := parseDuration(pr, "handshake.deadline", c.Deadline)
	revalidate, _ := parseDuration(pr, "handshake.revalidate", c.Revalidate)
	for i, r := range c.Refuse {
		f := fmt.Sprintf("handshake.refuse[%d]", i)
		switch r {
		case BadSignature:
			if !hs.signed {
				pr.add(f, "bad-signature needs a signed handshake (POST, not unsigned)")
			}
		case WrongVerifyToken:
			if !hs.verifyTokens {
				pr.add(f, "wrong-verify-token needs a request that carries {{.VerifyToken}}")
			}
		default:
			pr.add(f, "%s", notOneOf(r, []string{BadSignature, WrongVerifyToken}))
		}
	}
	if c.RefuseStatus != 0 && (c.RefuseStatus < 400 || c.RefuseStatus > 599) {
		pr.add("handshake.refuse_status", "%d is not a 4xx or 5xx status", c.RefuseStatus)
	}
	if c.Source == "" {
		pr.add("handshake.source", "must say where the handshake is documented")
	}
	if hs.signed && p.c.Signature.JSONPath != "" {
		pr.add("handshake.unsigned", "the signature lives in the event body: a handshake cannot be signed that way; set unsigned")
	}
	hs.facts = HandshakeFacts{Method: hs.method, Deadline: deadline, Refuse: append([]string(nil), c.Refuse...),
		RefuseStatus: c.RefuseStatus, Revalidate: revalidate, Source: c.Source, Summary: handshakeSummary(c, hs)}
	p.hs = hs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func handshakeSummary(c *ContractHandshake, hs *handshakeSpec) string {
	var b strings.Builder
	b.WriteString(hs.method)
	if hs.method == http.MethodGet {
		b.WriteString(" with the query ")
		b.WriteString(strings.Join(sortedKeys(c.Query), ", "))
	} else {
		b.WriteString(" ")
		b.WriteString(prose(strings.TrimSpace(c.Body)))
		if hs.signed {
			b.WriteString(", signed like an event")
		} else {
			b.WriteString(", unsigned")
		}
	}
	fmt.Fprintf(&b, "; answer %d with", hs.status)
	var alts []string
	if c.Expect.Body != "" {
		alts = append(alts, "the body "+prose(c.Expect.Body))
	}
	if len(c.Expect.JSON) > 0 {
		alts = append(alts, "JSON fields "+strings.Join(sortedKeys(c.Expect.JSON), ", "))
	}
	if len(c.Expect.Form) > 0 {
		alts = append(alts, "form fields "+strings.Join(sortedKeys(c.Expect.Form), ", "))
	}
	b.WriteString(" ")
	b.WriteString(strings.Join(alts, ", or "))
	if len(c.Refuse) > 0 {
		b.WriteString("; refuse ")
		b.WriteString(strings.Join(c.Refuse, ", "))
	}
	return b.String()
}

// HandshakeFacts is the handshake's documented contract.
func (m handshakeMethods) HandshakeFacts() HandshakeFacts {
	f := m.p.hs.facts
	f.Refuse = append([]string(nil), f.Refuse...)
	return f
}

func (p *contractProfile) handshakeData(in HandshakeInput, bad string) handshakeData {
	d := handshakeData{Challenge: in.Challenge, VerifyToken: in.VerifyToken, Created: in.At,
		ID: p.MakeEventID(seededRand("handshake:" + in.Challenge))}
	if bad == WrongVerifyToken {
		d.VerifyToken = wrongToken(in.VerifyToken)
	}
	return d
}

// wrongToken is a verify token that is not tok.
func wrongToken(tok string) string {
	sum := sha256.Sum256([]byte("hookcert-wrong-verify-token:" + tok))
	return "wrong_" + hex.EncodeToString(sum[:8])
}

// HandshakeRequest builds the verification request: the body (POST) or
// query (GET), the handshake's headers and, for a signed POST, the event
// ID and timestamp headers and the signatures, made with a wrong key for
// the bad-signature variant.
func (m handshakeMethods) HandshakeRequest(in HandshakeInput, bad string) (HandshakeHTTP, error) {
	p, hs := m.p, m.p.hs
	if bad != "" && !oneOf(bad, hs.facts.Refuse...) {
		return HandshakeHTTP{}, fmt.Errorf("%s: handshake variant %q is not one of the contract's refuse list (%s)", p.id, bad, strings.Join(hs.facts.Refuse, ", "))
	}
	if in.Challenge == "" {
		return HandshakeHTTP{}, fmt.Errorf("%s: handshake.challenge: must not be empty", p.id)
	}
	if oneOf(WrongVerifyToken, hs.facts.Refuse...) && in.VerifyToken == "" {
		return HandshakeHTTP{}, fmt.Errorf("%s: handshake.verify_token: must not be empty (the request carries it)", p.id)
	}
	if in.At.IsZero() {
		return HandshakeHTTP{}, fmt.Errorf("%s: handshake.at: must be set", p.id)
	}
	d := p.handshakeData(in, bad)
	out := HandshakeHTTP{Method: hs.method, Header: http.Header{}}
	if hs.method == http.MethodGet {
		out.Query = url.Values{}
		for _, q := range hs.query {
			v, err := execTemplate(q.t, d)
			if err != nil {
				return HandshakeHTTP{}, fmt.Errorf("%s: handshake.query.%s: %w", p.id, q.name, err)
			}
			out.Query.Set(q.name, string(v))
		}
	} else {
		body, err := execTemplate(hs.body, d)
		if err != nil {
			return HandshakeHTTP{}, fmt.Errorf("%s: handshake.body: %w", p.id, err)
		}
		out.Body = body
		out.Header.Set("Content-Type", p.contentType)
	}
	for _, h := range hs.headers {
		v, err := execTemplate(h.t, d)
		if err != nil {
			return HandshakeHTTP{}, fmt.Errorf("%s: handshake.headers.%s: %w", p.id, h.name, err)
		}
		out.Header[h.name] = []string{string(v)}
	}
	if !hs.signed {
		return out, nil
	}
	if err := checkSecrets(p.id, in.Secrets, true); err != nil {
		return HandshakeHTTP{}, err
	}
	if l := p.eventID; l != nil && l.header != "" {
		out.Header[l.header] = []string{d.ID}
	}
	ts := ""
	if p.ts != nil {
		ts = formatTimestamp(p.ts.format, in.At)
		if p.ts.header != "" {
			out.Header[p.ts.header] = []string{ts}
		}
	}
	sd := signedData{ID: d.ID, Timestamp: ts, Body: string(out.Body), URL: in.URL, Method: hs.method}
	if l := p.deliveryID; l != nil && l.header != "" && l.header == p.eventID.header {
		sd.DeliveryID = d.ID
	}
	for _, s := range p.sigs {
		if s.refs.fields["URL"] && in.URL == "" {
			return HandshakeHTTP{}, fmt.Errorf("%s: handshake.url: must be set (the signature covers the URL)", p.id)
		}
		use := in.Secrets[:1]
		if s.multiple {
			use = in.Secrets
		}
		var v string
		var err error
		if bad == BadSignature {
			v, err = s.renderWrong(sd, use, out.Header)
		} else {
			v, err = s.render(sd, use, out.Header)
		}
		if err != nil {
			return HandshakeHTTP{}, fmt.Errorf("%s: handshake: %w", p.id, err)
		}
		out.Header[s.header] = []string{v}
	}
	return out, nil
}

// renderWrong is render with every secret's key replaced by a wrong key of
// the same shape, written back in the secret's own encoding (and prefix, so
// it picks the same variant) so the same path signs it.
func (s *sigSpec) renderWrong(d signedData, secrets []string, hdr http.Header) (string, error) {
	wrong := make([]string, len(secrets))
	for i, sec := range secrets {
		sc := s.schemeFor(sec)
		if sc.alg == algToken {
			wrong[i] = "wrong-" + sec
			continue
		}
		key, err := sc.keyBytes(sec)
		if err != nil {
			return "", fmt.Errorf("secrets[%d]: %w", i, err)
		}
		wk, err := sc.wrongKey(key)
		if err != nil {
			return "", err
		}
		wrong[i] = encodeKey(sc.keyEncoding(), sc.prefix, wk)
	}
	return s.render(d, wrong, hdr)
}

// HandshakeAnswer judges the answer to the real request: the status, then
// any one of the accepted bodies.
func (m handshakeMethods) HandshakeAnswer(in HandshakeInput, status int, _ http.Header, body []byte) error {
	p, hs := m.p, m.p.hs
	if status != hs.status {
		return fmt.Errorf("%s: handshake answer: status %d, the provider expects %d", p.id, status, hs.status)
	}
	d := p.handshakeData(in, "")
	t := func(tm *template.Template) (*template.Template, error) { return bindSecret(tm, in.Secrets) }
	var tried []string
	if hs.expBody != nil {
		tm, err := t(hs.expBody)
		if err != nil {
			return fmt.Errorf("%s: handshake.expect.body: %w", p.id, err)
		}
		want, err := execTemplate(tm, d)
		if err != nil {
			return fmt.Errorf("%s: handshake.expect.body: %w", p.id, err)
		}
		if bytes.Equal(bytes.TrimSpace(body), bytes.TrimSpace(want)) {
			return nil
		}
		tried = append(tried, "the expected plain body")
	}
	if len(hs.expJSON) > 0 {
		ok, err := p.matchJSON(hs.expJSON, d, in.Secrets, body)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		names := make([]string, len(hs.expJSON))
		for i, f := range hs.expJSON {
			names[i] = f.name
		}
		tried = append(tried, "a JSON object with the expected "+strings.Join(names, ", "))
	}
	if len(hs.expForm) > 0 {
		vals, err := url.ParseQuery(string(bytes.TrimSpace(body)))
		match := err == nil
		names := make([]string, len(hs.expForm))
		for i, f := range hs.expForm {
			names[i] = f.name
			tm, err := t(f.t)
			if err != nil {
				return fmt.Errorf("%s: handshake.expect.form.%s: %w", p.id, f.name, err)
			}
			want, err := execTemplate(tm, d)
			if err != nil {
				return fmt.Errorf("%s: handshake.expect.form.%s: %w", p.id, f.name, err)
			}
			if match && vals.Get(f.name) != string(want) {
				match = false
			}
		}
		if match {
			return nil
		}
		tried = append(tried, "a form with the expected "+strings.Join(names, ", "))
	}
	return fmt.Errorf("%s: handshake answer: the %d-byte body is not %s", p.id, len(body), strings.Join(tried, ", nor "))
}

func (p *contractProfile) matchJSON(fields []namedTemplate, d handshakeData, secrets []string, body []byte) (bool, error) {
	var got map[string]json.RawMessage
	if err := json.Unmarshal(body, &got); err != nil {
		return false, nil
	}
	for _, f := range fields {
		tm, err := bindSecret(f.t, secrets)
		if err != nil {
			return false, fmt.Errorf("%s: handshake.expect.json.%s: %w", p.id, f.name, err)
		}
		want, err := execTemplate(tm, d)
		if err != nil {
			return false, fmt.Errorf("%s: handshake.expect.json.%s: %w", p.id, f.name, err)
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			return false, fmt.Errorf("%s: handshake.expect.json.%s: does not render a JSON value", p.id, f.name)
		}
		raw, ok := got[f.name]
		if !ok || json.Unmarshal(raw, &g) != nil || !reflect.DeepEqual(w, g) {
			return false, nil
		}
	}
	return true, nil
}

// bindSecret gives a template hmacHex and hmacB64: HMAC-SHA256 keyed with
// the first secret's UTF-8 bytes (Zoom's encryptedToken).
func bindSecret(t *template.Template, secrets []string) (*template.Template, error) {
	r := refsOf(t)
	if !r.funcs["hmacHex"] && !r.funcs["hmacB64"] {
		return t, nil
	}
	if len(secrets) == 0 || secrets[0] == "" {
		return nil, errors.New("hmacHex and hmacB64 need a secret")
	}
	key := []byte(secrets[0])
	mac := func(s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	c, err := t.Clone()
	if err != nil {
		return nil, err
	}
	return c.Funcs(template.FuncMap{
		"hmacHex": func(s string) (string, error) { return hex.EncodeToString(mac(s)), nil },
		"hmacB64": func(s string) (string, error) { return base64.StdEncoding.EncodeToString(mac(s)), nil },
	}), nil
}

// checkHandshakeSample renders the handshake with a sample input and
// requires the expected answer to render too.
func (p *contractProfile) checkHandshakeSample(pr *problems, secret string) {
	in := HandshakeInput{Challenge: "challenge_sample", VerifyToken: "verify_sample", Secrets: []string{secret},
		URL: "https://receiver.example/hooks?x=1", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	hm := handshakeMethods{p}
	for _, bad := range append([]string{""}, p.hs.facts.Refuse...) {
		req, err := hm.HandshakeRequest(in, bad)
		if err != nil {
			pr.add("handshake", "does not render a sample request: %v", trimID(p.id, err))
			return
		}
		if bad == "" && req.Method == http.MethodPost && strings.Contains(p.contentType, "json") && !json.Valid(req.Body) {
			pr.add("handshake.body", "renders invalid JSON: write strings with {{json .X}}")
		}
	}
	for _, f := range p.hs.expJSON {
		tm, err := bindSecret(f.t, in.Secrets)
		if err == nil {
			var v []byte
			if v, err = execTemplate(tm, p.handshakeData(in, "")); err == nil && !json.Valid(v) {
				err = errors.New("does not render a JSON value (write a string as {{json .Challenge}})")
			}
		}
		if err != nil {
			pr.add("handshake.expect.json."+f.name, "%v", err)
		}
	}
	for _, t := range append([]namedTemplate{{name: "body", t: p.hs.expBody}}, p.hs.expForm...) {
		if t.t == nil {
			continue
		}
		tm, err := bindSecret(t.t, in.Secrets)
		if err == nil {
			_, err = execTemplate(tm, p.handshakeData(in, ""))
		}
		if err != nil {
			pr.add("handshake.expect."+t.name, "%v", err)
		}
	}
}
