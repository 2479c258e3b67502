package profiles

import (
	"net/http"
	"net/url"
	"time"
)

// A Contract is a provider's delivery contract as data: what a target file's
// `profiles:` section declares, and what every built-in profile that fits the
// schema is described by (contracts/*.yaml, embedded). NewContractProfile
// turns one into a Profile; everything the harness needs from a provider (the
// request it sends, how it reads an answer, its handshake, the inputs its
// signature and event identity depend on) comes from here.
//
// Templates are Go text/template strings; the fields each one may use are
// listed beside it. Durations are Go durations ("5m", "300s").
type Contract struct {
	// ID names the profile in endpoints[].profile (lower case, digits, '-').
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	// SameAs makes this profile an alias of another (Clerk and Resend send
	// Svix's format): every field left empty is the other's.
	SameAs string `yaml:"same_as,omitempty"`

	Body       ContractBody        `yaml:"body"`
	EventID    ContractLocation    `yaml:"event_id"`
	EventType  ContractLocation    `yaml:"event_type"`
	DeliveryID *ContractLocation   `yaml:"delivery_id,omitempty"`
	Account    *ContractLocation   `yaml:"account,omitempty"`
	Timestamp  *ContractTimestamp  `yaml:"timestamp,omitempty"`
	Signature  ContractSignature   `yaml:"signature"`
	Headers    map[string]string   `yaml:"headers,omitempty"` // extra headers, templates over the event (Event)
	Delivery   ContractDelivery    `yaml:"delivery"`
	Handshake  *ContractHandshake  `yaml:"handshake,omitempty"`
	IDs        ContractIDs         `yaml:"ids,omitempty"`
	Secret     ContractSecretShape `yaml:"secret,omitempty"`
	Sources    []string            `yaml:"sources"`
	Notes      []string            `yaml:"notes,omitempty"`
}

// ContractBody is the request body.
type ContractBody struct {
	// Format: json (default) or form (application/x-www-form-urlencoded).
	Format string `yaml:"format,omitempty"`
	// ContentType defaults to application/json or
	// application/x-www-form-urlencoded by Format.
	ContentType string `yaml:"content_type,omitempty"`
	// Envelope (json) renders one event: {{.ID}} {{.Type}} {{.Account}}
	// {{.Source}} {{.ObjectID}} {{.Created}} (time.Time; helpers unix, unixms,
	// rfc3339, rfc3339nano) and {{.Object}}, the business object as JSON. The
	// result must be valid JSON.
	Envelope string `yaml:"envelope,omitempty"`
	// Fields (form) are the form parameters, each a template as Envelope;
	// {{.Object}} is not available, the object's fields are ({{.Amount}}…).
	Fields map[string]string `yaml:"fields,omitempty"`
	// Batch sends the envelope as the only element of a JSON array (SendGrid,
	// HubSpot): the receiver must take each event from the array.
	Batch bool `yaml:"batch,omitempty"`
	// ObjectPath is where the business object sits in the rendered envelope
	// ("$.data"), for declared objects and the Facts.
	ObjectPath string `yaml:"object_path,omitempty"`
	// MaxBytes is the largest body the provider documents it sends (0:
	// undocumented); MaxBytesSource quotes where.
	MaxBytes       int    `yaml:"max_bytes,omitempty"`
	MaxBytesSource string `yaml:"max_bytes_source,omitempty"`
}

// ContractLocation says where a value lives in a request: exactly one of a
// header, a JSON path into the body (into the batch's element when batched)
// or a form field.
type ContractLocation struct {
	Header   string `yaml:"header,omitempty"`
	JSONPath string `yaml:"json_path,omitempty"`
	Form     string `yaml:"form,omitempty"`
	// Note says what the provider documents about it (or that it is ours).
	Note string `yaml:"note,omitempty"`
}

// ContractTimestamp is the signed timestamp.
type ContractTimestamp struct {
	// Header carries it; empty when it lives in the body (JSONPath).
	Header   string `yaml:"header,omitempty"`
	JSONPath string `yaml:"json_path,omitempty"`
	// Format: unix (seconds, default), unix_ms, rfc3339, rfc3339nano.
	Format string `yaml:"format,omitempty"`
	// Tolerance a receiver applies; empty when the provider documents none.
	Tolerance string `yaml:"tolerance,omitempty"`
	// Future: whether the tolerance applies after now too (default true: a
	// timestamp more than Tolerance ahead is refused as well).
	Future *bool  `yaml:"future,omitempty"`
	Source string `yaml:"source,omitempty"`
}

// ContractSignature is how a delivery is authenticated.
type ContractSignature struct {
	// Algorithm: hmac-sha1, hmac-sha256, hmac-sha512, ed25519, ecdsa-p256
	// (SHA-256, ASN.1 DER signature), or token (the secret itself, compared
	// for equality: GitLab's X-Gitlab-Token).
	Algorithm string `yaml:"algorithm"`
	// Key is how the secret becomes the key: raw (its UTF-8 bytes, default),
	// base64 or hex; Prefix is stripped first (whsec_). For ed25519 and
	// ecdsa-p256 the secret is the private key (ed25519: a 32-byte seed;
	// ecdsa-p256: a PKCS#8 DER key), in Key's encoding; the receiver is given
	// the public key (PublicKey) in PublicKeyEncoding.
	Key               string `yaml:"key,omitempty"`
	Prefix            string `yaml:"prefix,omitempty"`
	PublicKeyEncoding string `yaml:"public_key_encoding,omitempty"` // hex, base64, base64-der (SPKI)
	// Signed is the signed content: {{.ID}} (event ID), {{.Timestamp}} (as
	// sent), {{.Body}} (raw bytes), {{.URL}} (the full delivery URL),
	// {{.Method}}, {{.Form}} (form parameters sorted by name, each name then
	// value, no separators: Twilio), {{header "X-Name"}} (a header as sent),
	// {{.DeliveryID}}. Empty for token.
	Signed string `yaml:"signed,omitempty"`
	// Encoding of the MAC or signature: hex (default), base64, base64url.
	Encoding string `yaml:"encoding,omitempty"`
	// Header carries it (or JSONPath, for a signature inside the body).
	Header   string `yaml:"header,omitempty"`
	JSONPath string `yaml:"json_path,omitempty"`
	// Format writes one signature into the header: {{.Signature}} and
	// {{.Timestamp}} ("v1={{.Signature}}", "sha256={{.Signature}}"); default
	// "{{.Signature}}".
	Format string `yaml:"format,omitempty"`
	// Multiple: during a secret roll the provider sends one signature per
	// active secret, joined by Separator (default " ").
	Multiple  bool   `yaml:"multiple,omitempty"`
	Separator string `yaml:"separator,omitempty"`
	Source    string `yaml:"source,omitempty"`
}

// ContractDelivery is what the provider does with an attempt.
type ContractDelivery struct {
	Timeout       string `yaml:"timeout,omitempty"`
	TimeoutSource string `yaml:"timeout_source,omitempty"`
	// Success lists what acknowledges: "2xx" (default) or explicit statuses.
	Success []string `yaml:"success,omitempty"`
	// Stop lists statuses after which the provider gives up (Standard
	// Webhooks' 410; Mailgun's 406); StopHeader a response header that does.
	Stop              []int  `yaml:"stop,omitempty"`
	StopHeader        string `yaml:"stop_header,omitempty"` // "name: value"
	HonoursRetryAfter bool   `yaml:"honours_retry_after,omitempty"`
	MaxRedirects      int    `yaml:"max_redirects,omitempty"`
	ResignsOnRetry    bool   `yaml:"resigns_on_retry,omitempty"`
	Retry             struct {
		Delays      []string `yaml:"delays,omitempty"`
		MaxAttempts int      `yaml:"max_attempts,omitempty"`
		Horizon     string   `yaml:"horizon,omitempty"`
		Source      string   `yaml:"source,omitempty"`
	} `yaml:"retry,omitempty"`
	// Ordered: nil when undocumented.
	Ordered          *bool  `yaml:"ordered,omitempty"`
	OrderedSource    string `yaml:"ordered_source,omitempty"`
	ManualRedelivery *bool  `yaml:"manual_redelivery,omitempty"`
	ManualWindow     string `yaml:"manual_window,omitempty"`
}

// ContractHandshake is a verification the provider makes before (and, where
// Revalidate is set, while) it delivers events: the receiver must answer it
// as Expect says, within Deadline, and refuse it where Refuse says.
type ContractHandshake struct {
	// Method: POST (default; signed like an event unless Unsigned) or GET.
	Method   string `yaml:"method,omitempty"`
	Unsigned bool   `yaml:"unsigned,omitempty"`
	// Body (POST) and Query (GET, name → value) are templates over
	// {{.Challenge}} (a fresh random token per handshake), {{.VerifyToken}}
	// (the endpoint's verify token, Meta) and {{.Created}}.
	Body    string            `yaml:"body,omitempty"`
	Query   map[string]string `yaml:"query,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Expect: the status (default 200) and either the exact body (Body,
	// template, compared after trimming white space) or JSON fields (JSON,
	// name → template; {{hmacHex .Secret .Challenge}} computes Zoom's
	// encryptedToken).
	Expect struct {
		Status int               `yaml:"status,omitempty"`
		Body   string            `yaml:"body,omitempty"`
		JSON   map[string]string `yaml:"json,omitempty"`
	} `yaml:"expect"`
	// Deadline is how long the provider waits for the answer.
	Deadline string `yaml:"deadline,omitempty"`
	// Refuse lists the bad handshakes the receiver must refuse (any non-2xx,
	// or RefuseStatus): bad-signature (signed with another key),
	// wrong-verify-token (Meta).
	Refuse       []string `yaml:"refuse,omitempty"`
	RefuseStatus int      `yaml:"refuse_status,omitempty"`
	// Revalidate: the provider repeats the handshake this often (Zoom: 72h).
	Revalidate string `yaml:"revalidate,omitempty"`
	Source     string `yaml:"source,omitempty"`
}

// ContractIDs shapes the IDs the simulator draws: a prefix and Length
// characters of Alphabet (base62, base36, hex, upper36), or uuid.
type ContractIDs struct {
	Event    string `yaml:"event,omitempty"`    // e.g. "evt_{{base62 24}}", "{{uuid}}"
	Delivery string `yaml:"delivery,omitempty"` // per attempt, when DeliveryID is a header of its own
}

// ContractSecretShape says how hookcert generates a secret for the profile
// (demo, library mode): Bytes random bytes in Encoding behind Prefix.
type ContractSecretShape struct {
	Bytes    int    `yaml:"bytes,omitempty"`
	Encoding string `yaml:"encoding,omitempty"` // hex, base64, base62
	Prefix   string `yaml:"prefix,omitempty"`
}

// Handshaker is a profile whose provider verifies an endpoint with a
// handshake before it delivers events (Slack's url_verification, Zoom's
// endpoint.url_validation, Twitch's webhook_callback_verification,
// Discord's PING, Meta's GET hub.challenge). Contract profiles with a
// handshake section implement it; so do the built-ins whose contract has one.
type Handshaker interface {
	// HandshakeFacts is the handshake's documented contract.
	HandshakeFacts() HandshakeFacts
	// HandshakeRequest builds the verification request for in: signed with
	// in.Secrets like an event unless the contract says it is not; bad names a
	// deliberately bad variant from HandshakeFacts.Refuse ("" for the real one).
	HandshakeRequest(in HandshakeInput, bad string) (HandshakeHTTP, error)
	// HandshakeAnswer judges the receiver's answer to the real request: nil
	// when it is what the provider expects, else an error saying what differs
	// (never quoting a secret).
	HandshakeAnswer(in HandshakeInput, status int, header http.Header, body []byte) error
}

// HandshakeFacts describes a provider's handshake.
type HandshakeFacts struct {
	Method   string        // POST or GET
	Deadline time.Duration // 0: undocumented
	// Refuse lists the bad variants the receiver must refuse:
	// "bad-signature", "wrong-verify-token".
	Refuse       []string
	RefuseStatus int           // 0: any non-2xx
	Revalidate   time.Duration // 0: never re-validated
	Summary      string        // one line: what is sent and what must come back
	Source       string
}

// HandshakeInput is one handshake: a fresh challenge, the endpoint's secrets
// (and verify token, for Meta), the full URL it is sent to, and when.
type HandshakeInput struct {
	Challenge   string
	VerifyToken string
	Secrets     []string
	URL         string
	At          time.Time
}

// HandshakeHTTP is a handshake request as sent.
type HandshakeHTTP struct {
	Method string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// Input is one part of a delivery that its signature or its event identity
// depends on, derived from the contract: the negative deliveries of the
// derived checks change exactly one Input.
type Input struct {
	// Name is stable and names the deviation: "key", "body", "id",
	// "timestamp", "url", "delivery-id", "form:<field>", "header:<name>".
	Name string
	// Where it is: a header, a JSON path into the body, a form field, the
	// URL's query (URL), or the whole body (Body).
	Header   string
	JSONPath string
	Form     string
	URL      bool
	Body     bool
	// Signed: covered by the signature, so a delivery with it changed after
	// signing must be refused.
	Signed bool
	// Identity: part of the event key, so a delivery with it changed (and
	// signed again) is another event.
	Identity bool
}

// InputLister is a profile that can say what its signature and its event
// identity depend on. Contract profiles implement it from their data.
type InputLister interface {
	Inputs() []Input
}
