package profiles

import (
	"strings"
	"testing"
)

const baseContractYAML = `
id: x-base
name: Base
body:
  envelope: '{"id": {{json .ID}}, "type": {{json .Type}}, "data": {{.Object}}}'
  object_path: $.data
event_id: {json_path: $.id}
event_type: {json_path: $.type}
timestamp: {header: X-Ts}
signature:
  algorithm: hmac-sha256
  signed: "{{.Timestamp}}.{{.Body}}"
  header: X-Sig
  source: test
sources: [test]
`

func baseContract(t *testing.T) Contract {
	t.Helper()
	cs, err := ParseContracts([]byte(baseContractYAML))
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func boolPtr(b bool) *bool { return &b }

// TestValidateRules: each rule, broken alone, gives an error naming its
// field (with the caller's prefix) and the rule.
func TestValidateRules(t *testing.T) {
	if err := baseContract(t).Validate("target.profiles[0]"); err != nil {
		t.Fatalf("the base contract must be valid: %v", err)
	}
	form := func(c *Contract) {
		c.Body = ContractBody{Format: "form", Fields: map[string]string{"Id": "{{.ID}}", "Type": "{{.Type}}"}}
		c.EventID = ContractLocation{Form: "Id"}
		c.EventType = ContractLocation{Form: "Type"}
	}
	cases := []struct {
		name   string
		change func(c *Contract)
		want   string
	}{
		{"id empty", func(c *Contract) { c.ID = "" }, "target.profiles[0].id: must not be empty"},
		{"id pattern", func(c *Contract) { c.ID = "Zoom_2" }, `id: "Zoom_2" must be lower-case letters, digits and '-'`},
		{"name", func(c *Contract) { c.Name = "" }, ".name: must not be empty"},
		{"sources", func(c *Contract) { c.Sources = nil }, ".sources: must list at least one source"},
		{"body format", func(c *Contract) { c.Body.Format = "xml" }, `.body.format: "xml" is not one of json, form`},
		{"envelope empty", func(c *Contract) { c.Body.Envelope = "" }, ".body.envelope: must not be empty for a JSON body"},
		{"envelope parse", func(c *Contract) { c.Body.Envelope = `{"id": {{json .ID}` }, ".body.envelope: does not parse"},
		{"envelope escaping", func(c *Contract) { c.Body.Envelope = `{"id": "{{.ID}}", "type": {{json .Type}}, "data": {{.Object}}}` }, ".body.envelope: renders invalid JSON when a string holds quotes"},
		{"envelope unknown field", func(c *Contract) { c.Body.Envelope = `{"id": {{json .Nope}}}` }, ".body: does not render a sample event: body.envelope: {{.Nope}} is not a field here"},
		{"fields with json", func(c *Contract) { c.Body.Fields = map[string]string{"a": "b"} }, ".body.fields: must be empty for a JSON body"},
		{"form without fields", func(c *Contract) {
			form(c)
			c.Body.Fields = nil
			c.EventID = ContractLocation{Header: "X-Id"}
			c.EventType = ContractLocation{Header: "X-Type"}
		}, ".body.fields: must list the form parameters"},
		{"form batch", func(c *Contract) { form(c); c.Body.Batch = true }, ".body.batch: only a JSON body can be a batch"},
		{"form object path", func(c *Contract) { form(c); c.Body.ObjectPath = "$.x" }, ".body.object_path: must be empty for a form body"},
		{"object path syntax", func(c *Contract) { c.Body.ObjectPath = "data" }, `.body.object_path: "data" must start with $`},
		{"object path absent", func(c *Contract) { c.Body.ObjectPath = "$.nope" }, ".body.object_path: $.nope is not in the body the envelope renders"},
		{"max bytes", func(c *Contract) { c.Body.MaxBytes = -1 }, ".body.max_bytes: must not be negative"},
		{"max bytes source", func(c *Contract) { c.Body.MaxBytes = 10 }, ".body.max_bytes_source: must say where"},
		{"location none", func(c *Contract) { c.EventID = ContractLocation{} }, ".event_id: must give exactly one of header, json_path, form; it gives 0"},
		{"location two", func(c *Contract) { c.EventID.Header = "X-Id" }, ".event_id: must give exactly one of header, json_path, form; it gives 2"},
		{"location header name", func(c *Contract) { c.EventID = ContractLocation{Header: "X Id"} }, `.event_id.header: "X Id" is not a valid header name`},
		{"location json in form", func(c *Contract) { form(c); c.EventType = ContractLocation{JSONPath: "$.type"} }, ".event_type.json_path: the body is a form: use form"},
		{"location form in json", func(c *Contract) { c.EventID = ContractLocation{Form: "id"} }, ".event_id.form: the body is JSON: use json_path"},
		{"location form unknown", func(c *Contract) { form(c); c.EventID = ContractLocation{Form: "Nope"} }, `.event_id.form: "Nope" is not one of body.fields`},
		{"location value on body", func(c *Contract) { c.EventID.Value = "{{.ID}}" }, ".event_id.value: only a header location has a value template"},
		{"location absent", func(c *Contract) { c.EventID.JSONPath = "$.event_id" }, ".event_id.json_path: $.event_id is not in the body"},
		{"delivery header", func(c *Contract) { c.DeliveryID = &ContractLocation{Header: "X-Sig"} }, ".signature.header: header X-Sig is already sent by delivery_id.header"},
		{"timestamp format", func(c *Contract) { c.Timestamp.Format = "iso" }, `.timestamp.format: "iso" is not one of unix, unix_ms, rfc3339, rfc3339nano`},
		{"timestamp two places", func(c *Contract) { c.Timestamp.JSONPath = "$.ts" }, ".timestamp: must give at most one of header, json_path"},
		{"timestamp tolerance", func(c *Contract) { c.Timestamp.Tolerance = "five minutes" }, `.timestamp.tolerance: "five minutes" is not a duration`},
		{"algorithm", func(c *Contract) { c.Signature.Algorithm = "hmac-md5" }, `target.profiles[0].signature.algorithm: "hmac-md5" is not one of hmac-sha1, hmac-sha256, hmac-sha512, ed25519, ecdsa-p256, token`},
		{"key", func(c *Contract) { c.Signature.Key = "utf8" }, `.signature.key: "utf8" is not one of raw, base64, hex`},
		{"asymmetric raw key", func(c *Contract) { c.Signature.Algorithm = "ed25519" }, ".signature.key: an ed25519 secret is binary key material: key must be base64 or hex"},
		{"encoding", func(c *Contract) { c.Signature.Encoding = "base32" }, `.signature.encoding: "base32" is not one of hex, base64, base64url`},
		{"token encoding", func(c *Contract) {
			c.Signature.Algorithm = "token"
			c.Signature.Signed = ""
			c.Signature.Encoding = "hex"
		}, ".signature.encoding: a token is sent as is"},
		{"token signed", func(c *Contract) { c.Signature.Algorithm = "token" }, ".signature.signed: must be empty for a token"},
		{"public key encoding", func(c *Contract) { c.Signature.PublicKeyEncoding = "hex" }, ".signature.public_key_encoding: only ed25519 and ecdsa-p256 have a public key"},
		{"signed empty", func(c *Contract) { c.Signature.Signed = "" }, ".signature.signed: must say what is signed"},
		{"signed unknown field", func(c *Contract) { c.Signature.Signed = "{{.Secret}}" }, ".signature.signed: {{.Secret}} is not one of {{.ID}}"},
		{"signed form", func(c *Contract) { c.Signature.Signed = "{{.Form}}" }, ".signature.signed: {{.Form}} needs a form body"},
		{"signed timestamp", func(c *Contract) { c.Timestamp = nil }, ".signature.signed: {{.Timestamp}} needs a timestamp section"},
		{"signed delivery", func(c *Contract) { c.Signature.Signed = "{{.DeliveryID}}{{.Body}}" }, ".signature.signed: {{.DeliveryID}} needs a delivery_id section"},
		{"signed header absent", func(c *Contract) { c.Signature.Signed = `{{header "X-Nope"}}{{.Body}}` }, `.signature.signed: header "X-Nope" is not one the request carries`},
		{"signed header variable", func(c *Contract) { c.Signature.Signed = `{{header .ID}}` }, ".signature.signed: header .ID: header takes one quoted header name"},
		{"signature two places", func(c *Contract) { c.Signature.JSONPath = "$.sig" }, ".signature: must give exactly one of header, json_path; it gives 2"},
		{"signature no place", func(c *Contract) { c.Signature.Header = "" }, ".signature: must give exactly one of header, json_path; it gives 0"},
		{"format", func(c *Contract) { c.Signature.Format = "v1" }, ".signature.format: must write {{.Signature}}"},
		{"value", func(c *Contract) { c.Signature.Value = "t={{.Timestamp}}" }, ".signature.value: must write {{.Signatures}}"},
		{"body signature signs body", func(c *Contract) {
			c.Signature.Header, c.Signature.JSONPath = "", "$.sig"
			c.Timestamp = nil
			c.Signature.Signed = "{{.Body}}"
		}, ".signature.signed: a signature in the body cannot sign {{.Body}}"},
		{"variant prefix", func(c *Contract) {
			c.Signature.Variants = []ContractSignatureVariant{{Algorithm: "ed25519", Key: "base64"}}
		}, ".signature.variants[0].prefix: must not be empty"},
		{"source", func(c *Contract) { c.Signature.Source = "" }, ".signature.source: must say where the scheme is documented"},
		{"also in body", func(c *Contract) {
			c.Signature.Also = []ContractSignature{{Algorithm: "hmac-sha1", Signed: "{{.Body}}", JSONPath: "$.x"}}
		}, ".signature.also[0].json_path: only the main signature can live in the body"},
		{"header name", func(c *Contract) { c.Headers = map[string]string{"Bad Name": "x"} }, `.headers.Bad Name: "Bad Name" is not a valid header name`},
		{"header twice", func(c *Contract) { c.Headers = map[string]string{"x-sig": "x"} }, ".headers.x-sig: header X-Sig is already sent by signature.header"},
		{"header template", func(c *Contract) { c.Headers = map[string]string{"X-A": "{{.Nope}}"} }, ".headers: a sample delivery's headers do not render: headers.X-A:"},
		{"timeout", func(c *Contract) { c.Delivery.Timeout = "soon" }, `.delivery.timeout: "soon" is not a duration`},
		{"timeout zero", func(c *Contract) { c.Delivery.Timeout = "0s" }, ".delivery.timeout: must be more than 0"},
		{"success", func(c *Contract) { c.Delivery.Success = []string{"2xxx"} }, `.delivery.success[0]: "2xxx" is not a status class (2xx), a status (200) or a range`},
		{"stop is success", func(c *Contract) { c.Delivery.Stop = []int{204} }, ".delivery.stop[0]: 204 is a success status too"},
		{"stop status", func(c *Contract) { c.Delivery.Stop = []int{99} }, ".delivery.stop[0]: 99 is not an HTTP status"},
		{"stop header", func(c *Contract) { c.Delivery.StopHeader = "X-Stop" }, `.delivery.stop_header: "X-Stop" is not "Name: value"`},
		{"retry count", func(c *Contract) {
			c.Delivery.Retry = ContractRetry{Delays: []string{"1s", "2s"}, MaxAttempts: 2, Source: "s"}
		}, ".delivery.retry.delays: lists 2 retries for 2 attempts"},
		{"retry horizon", func(c *Contract) {
			c.Delivery.Retry = ContractRetry{Delays: []string{"1h"}, Horizon: "30m", Source: "s"}
		}, ".delivery.retry.delays: add up to 1h0m0s, beyond the horizon 30m0s"},
		{"retry source", func(c *Contract) { c.Delivery.Retry = ContractRetry{Delays: []string{"1s"}} }, ".delivery.retry.source: must say where"},
		{"model note", func(c *Contract) {
			c.Delivery.Retry = ContractRetry{Model: []string{"1s"}, Source: "s", ModelNote: "a guess"}
		}, ".delivery.retry.model_note: must say the schedule is a MODEL"},
		{"ordered source", func(c *Contract) { c.Delivery.Ordered = boolPtr(false) }, ".delivery.ordered_source: must say where"},
		{"manual window", func(c *Contract) { c.Delivery.ManualWindow = "24h" }, ".delivery.manual_window: needs manual_redelivery: true"},
		{"handshake method", func(c *Contract) { c.Handshake = &ContractHandshake{Method: "PUT", Source: "s"} }, `.handshake.method: "PUT" is not one of POST, GET`},
		{"handshake body", func(c *Contract) { c.Handshake = &ContractHandshake{Source: "s", Expect: ContractExpect{Body: "x"}} }, ".handshake.body: must not be empty for a POST handshake"},
		{"handshake query", func(c *Contract) {
			c.Handshake = &ContractHandshake{Method: "GET", Source: "s", Expect: ContractExpect{Body: "{{.Challenge}}"}}
		}, ".handshake.query: must not be empty for a GET handshake"},
		{"handshake expect", func(c *Contract) { c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Source: "s"} }, ".handshake.expect: must give at least one of body, json, form"},
		{"handshake challenge", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{}`, Source: "s", Expect: ContractExpect{Body: "x"}}
		}, ".handshake: the request must carry {{.Challenge}}"},
		{"handshake refuse", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Source: "s", Expect: ContractExpect{Body: "x"}, Refuse: []string{"late"}}
		}, `.handshake.refuse[0]: "late" is not one of bad-signature, wrong-verify-token`},
		{"handshake bad signature unsigned", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Unsigned: true, Source: "s", Expect: ContractExpect{Body: "x"}, Refuse: []string{"bad-signature"}}
		}, ".handshake.refuse[0]: bad-signature needs a signed handshake"},
		{"handshake verify token", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Source: "s", Expect: ContractExpect{Body: "x"}, Refuse: []string{"wrong-verify-token"}}
		}, ".handshake.refuse[0]: wrong-verify-token needs a request that carries {{.VerifyToken}}"},
		{"handshake refuse status", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Source: "s", Expect: ContractExpect{Body: "x"}, RefuseStatus: 200}
		}, ".handshake.refuse_status: 200 is not a 4xx or 5xx status"},
		{"handshake source", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Expect: ContractExpect{Body: "x"}}
		}, ".handshake.source: must say where"},
		{"handshake json value", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Source: "s", Expect: ContractExpect{JSON: map[string]string{"c": "{{.Challenge}}"}}}
		}, ".handshake.expect.json.c: does not render a JSON value"},
		{"handshake deadline", func(c *Contract) {
			c.Handshake = &ContractHandshake{Body: `{"c":{{json .Challenge}}}`, Source: "s", Expect: ContractExpect{Body: "x"}, Deadline: "3"}
		}, `.handshake.deadline: "3" is not a duration`},
		{"ids event", func(c *Contract) { c.IDs.Event = "evt_{{base64 10}}" }, ".ids.event: {{base64 10}} is not base62, base36, hex, upper36 or uuid"},
		{"ids constant", func(c *Contract) { c.IDs.Event = "evt_1" }, ".ids.event: has no random part"},
		{"ids length", func(c *Contract) { c.IDs.Event = "{{hex 0}}" }, ".ids.event: {{hex 0}}: the length must be 1 to 128"},
		{"ids delivery", func(c *Contract) { c.IDs.Delivery = "{{uuid}}" }, ".ids.delivery: needs a delivery_id header"},
		{"secret encoding", func(c *Contract) { c.Secret = ContractSecretShape{Bytes: 16, Encoding: "base32"} }, `.secret.encoding: "base32" is not one of hex, base64, base62`},
		{"secret not accepted", func(c *Contract) {
			c.Signature.Key = "hex"
			c.Secret = ContractSecretShape{Bytes: 16, Encoding: "base62"}
		}, ".secret: generates secrets the signature does not accept"},
		{"secret asymmetric", func(c *Contract) {
			c.Signature.Algorithm, c.Signature.Key = "ed25519", "hex"
			c.Secret = ContractSecretShape{Bytes: 32}
		}, ".secret: must be empty for ed25519"},
		{"same_as unknown", func(c *Contract) { c.SameAs = "nope" }, `.same_as: "nope" is not a known profile`},
		{"vector signature", func(c *Contract) {
			c.Vectors = []ContractVector{{Name: "v", Secret: "s", Timestamp: "1", Body: "b", Signature: "00"}}
		}, ".vectors[0]: the contract computes another signature than the vector's"},
		{"vector inputs", func(c *Contract) { c.Vectors = []ContractVector{{Name: "v", Secret: "s", Body: "b", Signature: "00"}} }, ".vectors[0].timestamp: must be given: the signature covers it"},
		{"vector key", func(c *Contract) {
			c.Vectors = []ContractVector{{Name: "v", Secret: "s", PublicKey: "p", Timestamp: "1", Signature: "00"}}
		}, ".vectors[0]: must give exactly one of secret, public_key"},
		{"vector expected", func(c *Contract) { c.Vectors = []ContractVector{{Name: "v", Secret: "s"}} }, ".vectors[0].signature: must give the expected signature"},
		{"vector timestamp shape", func(c *Contract) {
			c.Vectors = []ContractVector{{Name: "v", Secret: "s", Timestamp: "0017", Signature: "00"}}
		}, `.vectors[0].timestamp: "0017" is not written the way the provider writes unix`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := baseContract(t)
			tc.change(&c)
			err := c.Validate("target.profiles[0]")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing\n  %s\ngot\n  %v", tc.want, err)
			}
			if !strings.HasPrefix(err.Error(), "target.profiles[0].") {
				t.Errorf("the error must start with the field: %v", err)
			}
			if _, err := NewContractProfile(c, nil); err == nil {
				t.Error("NewContractProfile accepted what Validate refuses")
			}
		})
	}
}

// TestValidateReportsEveryProblem: one error lists every broken rule.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := baseContract(t)
	c.Name, c.Signature.Algorithm, c.Delivery.Timeout = "", "md5", "x"
	err := c.Validate("p")
	for _, want := range []string{"p.name:", "p.signature.algorithm:", "p.delivery.timeout:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

// TestValidateFileNames: a file as prefix reads "file: field".
func TestValidateFileNames(t *testing.T) {
	c := baseContract(t)
	c.Name = ""
	if err := c.Validate("contracts/zoom.yaml"); err == nil || err.Error() != "contracts/zoom.yaml: name: must not be empty" {
		t.Fatalf("got %v", err)
	}
}

// TestValidateNeverQuotesASecret: a vector's secret, a bad key and a bad
// handshake answer never appear in an error.
func TestValidateNeverQuotesASecret(t *testing.T) {
	const secret = "SECRET-do-not-print-42"
	c := baseContract(t)
	c.Vectors = []ContractVector{{Name: "v", Secret: secret, Timestamp: "1", Body: "b", Signature: "00"}}
	if err := c.Validate("p"); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("error quotes the secret or is missing: %v", err)
	}
	c = baseContract(t)
	c.Signature.Key = "base64"
	p, err := NewContractProfile(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := sampleEvents("")[0]
	body, _ := p.Body(ev)
	_, err = p.Headers(ev, body, Attempt{N: 1, SignedAt: ev.Created}, []string{secret + "!!"})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "secrets[0]: secret: must be standard base64") {
		t.Fatalf("bad key error: %v", err)
	}
	zoom := fixture(t, "x-zoom").(Handshaker)
	in := HandshakeInput{Challenge: "c1", Secrets: []string{secret}, At: ev.Created}
	err = zoom.HandshakeAnswer(in, 200, nil, []byte(`{"plainToken":"c1","encryptedToken":"`+secret+`"}`))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("handshake error quotes the secret or is missing: %v", err)
	}
}

func TestParseContractsStrict(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"id: x\nsignature:\n  algoritm: hmac-sha256\n", "signature.algoritm: unknown key (line 3); valid keys: algorithm, also,"},
		{"- id: a\n- id: b\n  body: {envelop: x}\n", "[1].body.envelop: unknown key (line 3)"},
		{"id: x\nhandshake:\n  expect: {jsn: {}}\n", "handshake.expect.jsn: unknown key"},
		{"id: x\nvectors:\n  - {name: v, secret_key: s}\n", "vectors[0].secret_key: unknown key"},
		{"id: x\nsignature: {also: [{hedder: X}]}\n", "signature.also[0].hedder: unknown key"},
		{"just text\n", "must be a contract (a mapping) or a list of contracts"},
		{"", "the document is empty"},
		{"id: [1, 2]\n", "cannot unmarshal"},
	}
	for _, c := range cases {
		_, err := ParseContracts([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: want %q, got %v", c.yaml, c.want, err)
		}
	}
	cs, err := ParseContracts([]byte("- id: a\n  name: A\n- id: b\n"))
	if err != nil || len(cs) != 2 || cs[0].Name != "A" || cs[1].ID != "b" {
		t.Fatalf("a list: %v %+v", err, cs)
	}
}
