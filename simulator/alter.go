package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// The derived negative deliveries: one input of a correctly signed delivery
// changed after signing (Faults.Alter), or the signature header itself changed
// (Faults.Signature). Everything here is read off the rendered request and the
// profile's Inputs, never off a provider's name, so a profile declared as data
// gets the same faults as a built-in one.

// alterQuery is the query parameter added to the URL when the URL is the input
// changed after signing.
const alterQuery = "hookcert_altered=1"

// alterMethod is the method a delivery is sent with when the method is the
// input changed after signing.
const alterMethod = http.MethodPut

// inputOf is the input of p called name.
func inputOf(p profiles.Profile, name string) (profiles.Input, error) {
	l, ok := p.(profiles.InputLister)
	if !ok {
		return profiles.Input{}, fmt.Errorf("faults.alter: profile %s lists no inputs its signature covers (it is no profiles.InputLister)", p.ID())
	}
	var names []string
	for _, in := range l.Inputs() {
		if in.Name == name {
			return in, nil
		}
		names = append(names, in.Name)
	}
	return profiles.Input{}, fmt.Errorf("faults.alter: profile %s has no input %q (its inputs: %s)", p.ID(), name, strings.Join(names, ", "))
}

// alterSecrets are the secrets a fault signs with instead of the endpoint's:
// another key of the same shape for the "key" input, invalid ones beside or
// instead of the real one for the several-signature faults. nil keeps them.
func alterSecrets(p profiles.Profile, facts *profiles.Facts, secrets []string, f Faults) ([]string, error) {
	switch {
	case f.Alter == "key":
		return wrongSecretsK(p, secrets, 0), nil
	case f.Signature == SignatureAllInvalid || f.Signature == SignatureValidAmongInvalid:
		if !facts.MultipleSignatures {
			return nil, fmt.Errorf("faults.signature: %s needs a profile that sends several signatures; %s sends one", f.Signature, p.ID())
		}
		if len(secrets) == 0 {
			return nil, fmt.Errorf("faults.signature: %s needs the endpoint's secret", f.Signature)
		}
		if f.Signature == SignatureAllInvalid {
			two := []string{wrongSecretsK(p, secrets[:1], 0)[0], wrongSecretsK(p, secrets[:1], 1)[0]}
			if two[0] == secrets[0] || two[1] == secrets[0] || two[0] == two[1] {
				// A profile whose wrong secret, made twice, is the right one
				// again would send a valid signature among the "invalid".
				return nil, fmt.Errorf("faults.signature: %s: profile %s gave no two distinct wrong secrets", f.Signature, p.ID())
			}
			return two, nil
		}
		// The invalid one first: a receiver that reads only the first refuses.
		return []string{wrongSecretsK(p, secrets[:1], 0)[0], secrets[0]}, nil
	}
	return nil, nil
}

// alterInput changes input in of an already signed request: body and header
// are changed in place or replaced; the URL, when it is the input, comes back
// changed ("" otherwise).
func alterInput(in profiles.Input, body []byte, h http.Header, at profiles.Attempt) ([]byte, string, error) {
	what := "faults.alter: input " + in.Name
	switch {
	case in.Name == "timestamp":
		return alterTimestamp(in, body, h, at.SignedAt)
	case in.Header != "":
		v := h.Get(in.Header)
		if v == "" {
			return nil, "", fmt.Errorf("%s: header %s is not sent", what, in.Header)
		}
		nv, ok := swapLastAlnum(v)
		if !ok {
			return nil, "", fmt.Errorf("%s: header %s has no letter or digit to change", what, in.Header)
		}
		h.Set(in.Header, nv)
		return body, "", nil
	case in.JSONPath != "":
		b, err := alterJSON(body, in.JSONPath, swapLastAlnumJSON)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", what, err)
		}
		return b, "", nil
	case in.Form != "":
		b, err := alterForm(body, in.Form)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", what, err)
		}
		return b, "", nil
	case in.URL:
		if at.URL == "" {
			return nil, "", fmt.Errorf("%s: the attempt has no URL to change", what)
		}
		u := at.URL
		if strings.Contains(u, "?") {
			u += "&" + alterQuery
		} else {
			u += "?" + alterQuery
		}
		return body, u, nil
	case in.Body:
		return tamperLast(body), "", nil
	}
	return nil, "", fmt.Errorf("%s: the profile says nowhere where it lives (header, json_path, form, url or body)", what)
}

// alterTimestamp moves the signed timestamp where it is sent by one unit of its
// last digit (a second, or a millisecond), well inside any tolerance: only a
// signature that covers the timestamp tells the change.
func alterTimestamp(in profiles.Input, body []byte, h http.Header, at time.Time) ([]byte, string, error) {
	what := "faults.alter: input timestamp"
	if in.JSONPath != "" {
		b, err := alterJSON(body, in.JSONPath, swapLastDigitJSON)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", what, err)
		}
		return b, "", nil
	}
	if in.Header == "" {
		return nil, "", fmt.Errorf("%s: the profile says neither the header nor the JSON path it is sent in", what)
	}
	v := h.Get(in.Header)
	for _, ts := range timestampForms(at) {
		if i := strings.Index(v, ts); i >= 0 {
			nv, _ := swapLastDigit(ts)
			h.Set(in.Header, v[:i]+nv+v[i+len(ts):])
			return body, "", nil
		}
	}
	return nil, "", fmt.Errorf("%s: header %s does not carry the signed time in a known form (unix seconds or milliseconds, RFC 3339)", what, in.Header)
}

// timestampForms are the ways a provider writes a signed time, longest first
// so that milliseconds are not mistaken for seconds.
func timestampForms(t time.Time) []string {
	return []string{
		t.UTC().Format(time.RFC3339Nano), t.Format(time.RFC3339Nano), t.UTC().Format(time.RFC3339), t.Format(time.RFC3339),
		strconv.FormatInt(t.UnixMilli(), 10), strconv.FormatInt(t.Unix(), 10),
	}
}

// tamperLast changes the last digit of the body (an amount, a time, rarely
// the event ID, which envelopes put first), or appends a space when there is
// none: the body stays valid JSON or form, and differs from the signed one.
func tamperLast(body []byte) []byte {
	out := append([]byte(nil), body...)
	for i := len(out) - 1; i >= 0; i-- {
		if c := out[i]; c >= '0' && c <= '9' {
			out[i], _ = swapAlnum(c)
			return out
		}
	}
	return append(out, ' ')
}

// AlteredID is the event ID a delivery whose "id" input was changed after
// signing (Faults.Alter) carries: a receiver that accepts it stores it under
// this ID.
func AlteredID(id string) string {
	s, _ := swapLastAlnum(id)
	return s
}

// swapLastAlnum changes the last letter or digit of s within its class (a↔b,
// 0↔1), so an ID stays an ID of the same shape.
func swapLastAlnum(s string) (string, bool) {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if c, ok := swapAlnum(b[i]); ok {
			b[i] = c
			return string(b), true
		}
	}
	return s, false
}

// swapLastDigit changes the last digit of s.
func swapLastDigit(s string) (string, bool) {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] >= '0' && b[i] <= '9' {
			b[i], _ = swapAlnum(b[i])
			return string(b), true
		}
	}
	return s, false
}

// swapLastAlnumJSON changes the last letter or digit of a JSON string or
// number value, outside escapes, keeping it valid JSON.
func swapLastAlnumJSON(v []byte) ([]byte, error) {
	out := append([]byte(nil), v...)
	if len(out) > 0 && out[0] == '"' {
		last := -1
		for i := 1; i < len(out)-1; i++ {
			if out[i] == '\\' {
				// Skip the escape: \n's n, \u's hex digits are not the value's letters.
				if i+1 < len(out) && out[i+1] == 'u' {
					i += 5
				} else {
					i++
				}
				continue
			}
			if _, ok := swapAlnum(out[i]); ok {
				last = i
			}
		}
		if last < 0 {
			return nil, errors.New("the string value has no letter or digit to change")
		}
		out[last], _ = swapAlnum(out[last])
		return out, nil
	}
	return swapLastDigitJSON(v)
}

// swapLastDigitJSON changes the last digit of a JSON number, or of a string
// holding one (a timestamp written as text).
func swapLastDigitJSON(v []byte) ([]byte, error) {
	s, ok := swapLastDigit(string(v))
	if !ok || !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("value %.40s has no digit to change", v)
	}
	return []byte(s), nil
}

// alterJSON replaces the scalar value at path (a simple "$.a.b" or "$[0].a";
// into the first element when the body is an array and the path does not say)
// by change(value), byte for byte in place: every other byte of the body stays
// as signed.
func alterJSON(body []byte, path string, change func([]byte) ([]byte, error)) ([]byte, error) {
	segs, err := parsePath(path)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' && (len(segs) == 0 || segs[0].key != "") {
		segs = append([]pathSeg{{index: 0}}, segs...)
	}
	start, end, err := jsonValueSpan(body, segs)
	if err != nil {
		return nil, fmt.Errorf("json path %s: %w", path, err)
	}
	nv, err := change(body[start:end])
	if err != nil {
		return nil, fmt.Errorf("json path %s: %w", path, err)
	}
	out := make([]byte, 0, len(body)-(end-start)+len(nv))
	out = append(append(append(out, body[:start]...), nv...), body[end:]...)
	if !json.Valid(out) {
		return nil, fmt.Errorf("json path %s: the changed body is not valid JSON", path)
	}
	return out, nil
}

// pathSeg is one step of a JSON path: an object key or an array index.
type pathSeg struct {
	key   string
	index int
}

// parsePath reads "$.a.b[0].c".
func parsePath(path string) ([]pathSeg, error) {
	if !strings.HasPrefix(path, "$") {
		return nil, fmt.Errorf("json path %q must start with $", path)
	}
	rest := path[1:]
	var out []pathSeg
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			i := strings.IndexAny(rest, ".[")
			if i < 0 {
				i = len(rest)
			}
			if i == 0 {
				return nil, fmt.Errorf("json path %q: empty key", path)
			}
			out = append(out, pathSeg{key: rest[:i]})
			rest = rest[i:]
		case '[':
			i := strings.IndexByte(rest, ']')
			n, err := strconv.Atoi(rest[1:max(i, 1)])
			if i < 0 || err != nil || n < 0 {
				return nil, fmt.Errorf("json path %q: an index must be [n]", path)
			}
			out = append(out, pathSeg{index: n})
			rest = rest[i+1:]
		default:
			return nil, fmt.Errorf("json path %q: expected . or [ at %q", path, rest)
		}
	}
	return out, nil
}

// jsonValueSpan finds the bytes of the scalar value segs lead to.
func jsonValueSpan(body []byte, segs []pathSeg) (int, int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for _, seg := range segs {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, err
		}
		d, _ := tok.(json.Delim)
		switch {
		case seg.key != "" && d == '{':
			found := false
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return 0, 0, err
				}
				if k == seg.key {
					found = true
					break
				}
				if err := skipValue(dec); err != nil {
					return 0, 0, err
				}
			}
			if !found {
				return 0, 0, fmt.Errorf("no key %q", seg.key)
			}
		case seg.key == "" && d == '[':
			for i := 0; i < seg.index; i++ {
				if !dec.More() {
					return 0, 0, fmt.Errorf("no element %d", seg.index)
				}
				if err := skipValue(dec); err != nil {
					return 0, 0, err
				}
			}
			if !dec.More() {
				return 0, 0, fmt.Errorf("no element %d", seg.index)
			}
		default:
			return 0, 0, fmt.Errorf("expected an object or array where %v is", seg)
		}
	}
	from := int(dec.InputOffset())
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, err
	}
	if _, ok := tok.(json.Delim); ok {
		return 0, 0, errors.New("the value is an object or array, not a scalar")
	}
	end := int(dec.InputOffset())
	// Between the previous token and the value: white space and a ':' or ','.
	start := from
	for start < end && (body[start] == ' ' || body[start] == '\t' || body[start] == '\n' || body[start] == '\r' || body[start] == ':' || body[start] == ',') {
		start++
	}
	return start, end, nil
}

// skipValue reads one whole value.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// alterForm changes the value of the form field named field in a raw
// application/x-www-form-urlencoded body, leaving every other byte as signed.
func alterForm(body []byte, field string) ([]byte, error) {
	parts := strings.Split(string(body), "&")
	for i, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || name != field {
			continue
		}
		b := []byte(v)
		changed := false
		// The last letter or digit outside a %XX escape.
		for j := len(b) - 1; j >= 0 && !changed; j-- {
			if j >= 1 && b[j-1] == '%' || j >= 2 && b[j-2] == '%' {
				continue
			}
			if c, ok := swapAlnum(b[j]); ok {
				b[j], changed = c, true
			}
		}
		if !changed {
			b = append(b, 'x')
		}
		parts[i] = k + "=" + string(b)
		return []byte(strings.Join(parts, "&")), nil
	}
	return nil, fmt.Errorf("the form has no field %q", field)
}

// signatureSpan finds where the signature itself sits in the value of the
// signature header: what differs between the header signed with the real
// secret and with other secrets of its shape. Several others, so that a
// signature sharing its first or last characters with one of them by chance
// does not shorten the span.
func signatureSpan(p profiles.Profile, header string, ev profiles.Event, body []byte, at profiles.Attempt, secrets []string, v string) (int, int, error) {
	lo, hi := len(v), len(v)
	for k := range 6 {
		o, err := p.Headers(ev, body, at, wrongSecretsK(p, secrets, k))
		if err != nil {
			return 0, 0, fmt.Errorf("faults.signature: %w", err)
		}
		w := o.Get(header)
		pre := 0
		for pre < len(v) && pre < len(w) && v[pre] == w[pre] {
			pre++
		}
		suf := 0
		for suf < len(v)-pre && suf < len(w)-pre && v[len(v)-1-suf] == w[len(w)-1-suf] {
			suf++
		}
		lo = min(lo, pre)
		hi = min(hi, suf)
	}
	if lo >= len(v)-hi {
		return 0, 0, fmt.Errorf("faults.signature: header %s does not change with the secret", header)
	}
	return lo, len(v) - hi, nil
}

// alterSignature applies a "prefix" or "truncate" fault to the signature
// header of an already signed request.
func alterSignature(p profiles.Profile, facts *profiles.Facts, ev profiles.Event, body []byte, at profiles.Attempt, secrets []string, h http.Header, fault string) error {
	name := facts.SignatureHeader
	if name == "" {
		return fmt.Errorf("faults.signature: profile %s sends its signature in the body, not a header", p.ID())
	}
	v := h.Get(name)
	if v == "" {
		return fmt.Errorf("faults.signature: header %s is not sent", name)
	}
	lo, hi, err := signatureSpan(p, name, ev, body, at, secrets, v)
	if err != nil {
		return err
	}
	switch fault {
	case SignatureTruncate:
		h.Set(name, v[:lo+(hi-lo)/2]+v[hi:])
	case SignaturePrefix:
		k, j := formatPrefix(v, lo)
		if k == j {
			return fmt.Errorf("faults.signature: profile %s writes its signature with no format prefix", p.ID())
		}
		word := v[k:j]
		nw, ok := swapLastDigit(word)
		if !ok {
			nw, _ = swapLastAlnum(word)
		}
		h.Set(name, v[:k]+nw+v[j:])
	}
	return nil
}

// formatPrefix finds the format prefix of the signature starting at lo in a
// header value v: the word and separator right before it ("v1=", "sha256=",
// "v1,"). The word is v[k:j]; k == j when there is none.
func formatPrefix(v string, lo int) (k, j int) {
	j = lo
	if j > 0 && strings.ContainsRune("=,:", rune(v[j-1])) {
		j--
	}
	k = j
	for k > 0 && isAlnum(v[k-1]) {
		k--
	}
	return k, j
}

// SignatureFormat is the format prefix p writes its signature header with
// ("v1=", "sha256="), read off a request it renders and signs with secrets;
// "" when the header holds the signature alone, or p signs in the body.
func SignatureFormat(p profiles.Profile, secrets []string) (string, error) {
	facts := p.Facts()
	if facts.SignatureHeader == "" {
		return "", nil
	}
	ev := profiles.Event{Source: p.ID(), Account: "acct_probe", ID: "evt_probe", Type: "probe.created", ObjectID: "obj_probe",
		Amount: 1, Currency: "usd", Created: time.Unix(1700000000, 0).UTC()}
	at := profiles.Attempt{N: 1, DeliveryID: "dlv_probe", SignedAt: time.Now(), URL: "https://example.invalid/hook", Method: http.MethodPost}
	body, h, err := profiles.Render(p, ev, at, secrets)
	if err != nil {
		return "", fmt.Errorf("render a probe request of %s: %w", p.ID(), err)
	}
	v := h.Get(facts.SignatureHeader)
	lo, _, err := signatureSpan(p, facts.SignatureHeader, ev, body, at, secrets, v)
	if err != nil {
		return "", err
	}
	k, j := formatPrefix(v, lo)
	if k == j {
		return "", nil
	}
	return v[k:lo], nil
}

func isAlnum(c byte) bool { _, ok := swapAlnum(c); return ok }

// wrongSecretsK are the k-th of distinct wrong secrets of p's shape: the
// profile's own (profiles.WrongSecreter, applied k+1 times: a key one
// character off may be no key at all), else wrongSecretsN.
func wrongSecretsK(p profiles.Profile, secrets []string, k int) []string {
	w, ok := p.(profiles.WrongSecreter)
	if !ok || len(secrets) == 0 {
		return wrongSecretsN(secrets, k)
	}
	out := make([]string, len(secrets))
	for i, s := range secrets {
		for range k + 1 {
			ws, err := w.WrongSecret(s)
			if err != nil {
				return wrongSecretsN(secrets, k)
			}
			s = ws
		}
		out[i] = s
	}
	return out
}

// wrongSecretsN is wrongSecrets changing the k-th significant character of
// each secret instead of the first: distinct keys of the same shape.
func wrongSecretsN(secrets []string, k int) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		b := []byte(s)
		start := strings.LastIndexByte(s, '_') + 1
		seen := 0
		for j := start; j < len(b); j++ {
			c, ok := swapAlnum(b[j])
			if !ok {
				continue
			}
			if seen == k {
				b[j] = c
				break
			}
			seen++
		}
		out[i] = string(b)
	}
	if len(out) == 0 {
		out = []string{fmt.Sprintf("hookcert-wrong-secret-%d", k)}
	}
	return out
}
