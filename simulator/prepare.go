package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// prepared is one attempt's request, faults applied.
type prepared struct {
	body     []byte
	header   http.Header
	signedAt time.Time
	faults   []string
	padTo    int
	// head replaces the runner's request line and Host header when the URL
	// or the method is the input a fault changed after signing; url and
	// method are then those sent.
	head   []byte
	url    string
	method string
}

// userAgent is the User-Agent value when the profile sets none; shared by every
// request's header (capacity 1, so an append elsewhere would copy, not write here).
var userAgent = []string{"hookcert-simulator"}[:1:1]

// prepare renders ev for attempt at with faults f, its body padded to padTo
// bytes when padTo > 0. at.SignedAt must be set. facts are p's (the runner
// reads them once).
func prepare(p profiles.Profile, facts *profiles.Facts, secrets []string, ev profiles.Event, at profiles.Attempt, f Faults, padTo int) (*prepared, error) {
	signSecrets := secrets
	if f.WrongSecret {
		signSecrets = wrongSecretsFor(p, secrets)
	}
	var alter profiles.Input
	if f.Alter != "" {
		in, err := inputOf(p, f.Alter)
		if err != nil {
			return nil, err
		}
		alter = in
	}
	if alt, err := alterSecrets(p, facts, secrets, f); err != nil {
		return nil, err
	} else if alt != nil {
		signSecrets = alt
	}
	var body []byte
	var err error
	if bs, ok := p.(profiles.BodySigner); ok && !f.MissingSignature {
		// The signature lives in the body (Adyen); without the fault it is signed.
		body, err = bs.SignedBody(ev, signSecrets)
	} else {
		body, err = p.Body(ev)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s body for event %s: %w", p.ID(), ev.ID, err)
	}
	if f.MissingID {
		switch {
		case facts.EventIDJSONPath != "":
			if body, err = deleteJSONPath(body, facts.EventIDJSONPath); err != nil {
				return nil, fmt.Errorf("faults.missing_id: %w", err)
			}
		case facts.EventIDHeader == "":
			return nil, fmt.Errorf("faults.missing_id: profile %s has no event ID header or body field to remove", p.ID())
		}
	}
	if f.MalformedJSON {
		// A form parses whatever its bytes (every parser skips a bad escape),
		// so there is no malformed form a receiver must refuse.
		if isForm(facts) {
			return nil, fmt.Errorf("faults.malformed_json: profile %s sends a form body (%s), not JSON", p.ID(), facts.ContentType)
		}
		// Truncation keeps the bytes realistic while making the JSON invalid; the
		// truncated bytes are what gets signed.
		if len(body) < 2 {
			return nil, fmt.Errorf("faults.malformed_json: body of %d bytes is too short to truncate", len(body))
		}
		body = body[:len(body)-1]
	}
	if f.OversizeBytes > 0 {
		if body, err = padJSON(body, f.OversizeBytes); err != nil {
			return nil, fmt.Errorf("faults.oversize_bytes: %w", err)
		}
	}
	if padTo > 0 {
		// After the ID removal, which re-encodes the body and would drop the padding.
		pad := padWhitespace
		if isForm(facts) {
			pad = padForm
		}
		if body, err = pad(body, padTo); err != nil {
			return nil, fmt.Errorf("pad_to: %w", err)
		}
	}
	h, err := p.Headers(ev, body, at, signSecrets)
	if err != nil {
		return nil, fmt.Errorf("sign %s attempt %d of event %s: %w", p.ID(), at.N, ev.ID, err)
	}
	if f.MissingSignature {
		// The signature headers are exactly those that change with the secret;
		// profiles are deterministic, so everything else is equal.
		other, err := p.Headers(ev, body, at, wrongSecretsFor(p, signSecrets))
		if err != nil {
			return nil, fmt.Errorf("faults.missing_signature: %w", err)
		}
		for k, v := range h {
			if strings.Join(other[k], "\x00") != strings.Join(v, "\x00") {
				h.Del(k)
			}
		}
	}
	if f.MissingID && facts.EventIDHeader != "" {
		h.Del(facts.EventIDHeader)
	}
	if h.Get("Content-Type") == "" {
		ct := facts.ContentType
		if ct == "" {
			ct = "application/json"
		}
		h.Set("Content-Type", ct)
	}
	if h.Get("User-Agent") == "" {
		h["User-Agent"] = userAgent
	}
	sent := body
	if f.Tamper {
		sent = tamper(body)
	}
	out := &prepared{body: sent, header: h, signedAt: at.SignedAt, faults: f.List(), padTo: padTo}
	// After signing: what changes now is what the signature no longer matches.
	if f.Signature == SignaturePrefix || f.Signature == SignatureTruncate {
		if err := alterSignature(p, facts, ev, body, at, signSecrets, h, f.Signature); err != nil {
			return nil, err
		}
	}
	if f.Alter != "" && f.Alter != "key" {
		u, method := "", http.MethodPost
		if f.Alter == "method" {
			// Another method to the same URL: the request line is the input.
			u, method = at.URL, alterMethod
		} else {
			b, altURL, err := alterInput(alter, sent, h, at)
			if err != nil {
				return nil, err
			}
			out.body, u = b, altURL
		}
		if u != "" {
			pu, err := url.Parse(u)
			if err != nil || pu.Host == "" {
				return nil, fmt.Errorf("faults.alter: input %s: the attempt's URL %q is not absolute", alter.Name, u)
			}
			out.url, out.method = u, method
			out.head = []byte(method + " " + pu.RequestURI() + " HTTP/1.1\r\nHost: " + pu.Host + "\r\n")
		}
	}
	return out, nil
}

// wrongSecretsFor asks the profile for wrong secrets where it can make them
// (contract profiles: an ECDSA key with one character changed is no key),
// else changes a character (wrongSecrets).
func wrongSecretsFor(p profiles.Profile, secrets []string) []string {
	if w, ok := p.(profiles.WrongSecreter); ok && len(secrets) > 0 {
		out := make([]string, len(secrets))
		for i, s := range secrets {
			ws, err := w.WrongSecret(s)
			if err != nil {
				return wrongSecrets(secrets)
			}
			out[i] = ws
		}
		return out
	}
	return wrongSecrets(secrets)
}

// wrongSecrets returns secrets of the same shape (prefix, alphabet, length) that
// differ in their first significant character, so a profile still parses them
// (e.g. whsec_ + base64) but the signature no longer verifies.
func wrongSecrets(secrets []string) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		b := []byte(s)
		start := strings.LastIndexByte(s, '_') + 1
		for j := start; j < len(b); j++ {
			if c, ok := swapAlnum(b[j]); ok {
				b[j] = c
				break
			}
		}
		out[i] = string(b)
	}
	if len(out) == 0 {
		out = []string{"hookcert-wrong-secret"}
	}
	return out
}

// swapAlnum pairs characters within their class (a↔b, …, 0↔1, …) so hex stays
// hex and base64 stays base64.
func swapAlnum(c byte) (byte, bool) {
	switch {
	case c >= 'a' && c <= 'z':
		return 'a' + ((c - 'a') ^ 1), true
	case c >= 'A' && c <= 'Z':
		return 'A' + ((c - 'A') ^ 1), true
	case c >= '0' && c <= '9':
		return '0' + ((c - '0') ^ 1), true
	}
	return c, false
}

// tamper changes the first digit of the body (usually an amount or a timestamp),
// or appends a space when there is none: the sent bytes differ from the signed.
func tamper(body []byte) []byte {
	out := append([]byte(nil), body...)
	for i, c := range out {
		if c >= '0' && c <= '9' {
			out[i], _ = swapAlnum(c)
			return out
		}
	}
	return append(out, ' ')
}

// padJSON grows a JSON object body to exactly n bytes with a padding field, or
// with trailing whitespace when the body is not an object.
func padJSON(body []byte, n int) ([]byte, error) {
	const pre = `{"hookcert_padding":"`
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 2 && trimmed[0] == '{' {
		overhead := len(pre) + len(`",`) + len(trimmed) - 1
		if n < overhead {
			return nil, fmt.Errorf("must be at least %d for this body (got %d)", overhead, n)
		}
		var b bytes.Buffer
		b.Grow(n)
		b.WriteString(pre)
		b.Write(bytes.Repeat([]byte{'x'}, n-overhead))
		b.WriteString(`",`)
		b.Write(trimmed[1:])
		return b.Bytes(), nil
	}
	if n < len(body) {
		return nil, fmt.Errorf("must be at least the body size %d (got %d)", len(body), n)
	}
	return append(append([]byte(nil), body...), bytes.Repeat([]byte{' '}, n-len(body))...), nil
}

// isForm reports whether the profile sends application/x-www-form-urlencoded
// bodies (Twilio).
func isForm(facts *profiles.Facts) bool {
	return strings.HasPrefix(strings.ToLower(facts.ContentType), "application/x-www-form-urlencoded")
}

// padFormParam names the parameter padForm adds: whitespace at the end of a
// form would change its last value, so a form grows by a parameter of its
// own, signed with the rest (a receiver reads the fields it knows).
const padFormParam = "hookcert_padding"

// padForm grows a form body to exactly n bytes with one more parameter.
func padForm(body []byte, n int) ([]byte, error) {
	extra := len("&" + padFormParam + "=")
	if len(body) == 0 {
		extra--
	}
	if n < len(body)+extra {
		return nil, fmt.Errorf("must be at least the body size %d plus the %d bytes of a padding parameter (got %d)", len(body), extra, n)
	}
	out := make([]byte, 0, n)
	out = append(out, body...)
	if len(body) > 0 {
		out = append(out, '&')
	}
	out = append(out, padFormParam+"="...)
	return append(out, bytes.Repeat([]byte{'x'}, n-len(out))...), nil
}

// padWhitespace grows body to exactly n bytes with spaces: right after the
// opening brace or bracket when the body is an object or array (inside the
// value, where every JSON parser must skip whitespace), else at the end. The
// JSON value, and so what a receiver decodes, is unchanged.
func padWhitespace(body []byte, n int) ([]byte, error) {
	if n < len(body) {
		return nil, fmt.Errorf("must be at least the body size %d (got %d)", len(body), n)
	}
	at := len(body)
	if i := bytes.IndexFunc(body, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 && (body[i] == '{' || body[i] == '[') {
		at = i + 1
	}
	out := make([]byte, n)
	copy(out, body[:at])
	pad := out[at : at+n-len(body)]
	for i := range pad {
		pad[i] = ' '
	}
	copy(out[at+len(pad):], body[at:])
	return out, nil
}

// deleteJSONPath removes a simple dotted path ("$.id", "$.data.id") from a JSON
// object body. Numbers keep their text.
func deleteJSONPath(body []byte, path string) ([]byte, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(path, "$"), "."), ".")
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %w", err)
	}
	m := root
	for i, p := range parts {
		if i == len(parts)-1 {
			if _, ok := m[p]; !ok {
				return nil, fmt.Errorf("path %s not found in body", path)
			}
			delete(m, p)
			break
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("path %s not found in body", path)
		}
		m = next
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("re-encode body: %w", err)
	}
	return out, nil
}
