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
// listed beside it. Durations are Go durations ("5m", "300s"). Besides
// text/template's own (printf, eq, or, …), templates may call:
//
//	json v               v as encoding/json writes it (strings escaped, HTML-safe)
//	unix, unixms t       Unix seconds / milliseconds of a time
//	usec t               the microseconds within its second
//	rfc3339, rfc3339nano t in UTC
//	trimLast sep s       s up to its last sep (when not at the start)
//	lastPart sep s       s after its last sep
//	stableNumber parts…  a 9-digit number derived from the parts (ours: IDs a provider would assign)
//	stableUpper36 parts… up to 10 upper-case base-36 characters derived from the parts
//	hash36 n parts…      n base-36 characters of SHA-256(parts)
//	hashUUID parts…      a UUID-shaped SHA-256(parts)
//	oneOf s a b …        whether s is one of the others
//	fail msg             stop rendering with the error msg
//	upper, lower s
//	header "Name"        signature.signed only: a header as sent
//	hmacHex, hmacB64 s   handshake.expect only: HMAC-SHA256 of s keyed with the first secret
type Contract struct {
	// ID names the profile in endpoints[].profile (lower case, digits, '-').
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	// SameAs makes this profile an alias of another (Clerk and Resend send
	// Svix's format): every field left empty is the other's. A location is
	// taken whole; vectors are not inherited; a false bool cannot undo the
	// other's true.
	SameAs string `yaml:"same_as,omitempty"`

	Body       ContractBody       `yaml:"body"`
	EventID    ContractLocation   `yaml:"event_id"`
	EventType  ContractLocation   `yaml:"event_type"`
	DeliveryID *ContractLocation  `yaml:"delivery_id,omitempty"`
	Account    *ContractLocation  `yaml:"account,omitempty"`
	Timestamp  *ContractTimestamp `yaml:"timestamp,omitempty"`
	Signature  ContractSignature  `yaml:"signature"`
	// Headers are extra headers, templates over the event (as the envelope)
	// and the attempt: {{.DeliveryID}} {{.Attempt}} (1 for the first)
	// {{.RetryNum}} (Attempt-1) {{.RetryReason}} {{.URL}} {{.Method}}. A
	// header that renders empty is not sent.
	Headers   map[string]string   `yaml:"headers,omitempty"`
	Delivery  ContractDelivery    `yaml:"delivery"`
	Handshake *ContractHandshake  `yaml:"handshake,omitempty"`
	IDs       ContractIDs         `yaml:"ids,omitempty"`
	Secret    ContractSecretShape `yaml:"secret,omitempty"`
	Sources   []string            `yaml:"sources"`
	Notes     []string            `yaml:"notes,omitempty"`
	// Vectors are signatures the contract must reproduce (published by the
	// provider where it publishes any): Validate signs each one and compares.
	Vectors []ContractVector `yaml:"vectors,omitempty"`
}

// ContractBody is the request body.
type ContractBody struct {
	// Format: json (default) or form (application/x-www-form-urlencoded).
	Format string `yaml:"format,omitempty"`
	// ContentType defaults to application/json or
	// application/x-www-form-urlencoded by Format.
	ContentType string `yaml:"content_type,omitempty"`
	// Envelope (json) renders one event: {{.ID}} {{.Type}} {{.Account}}
	// {{.Source}} {{.ObjectID}} {{.Amount}} {{.Currency}} {{.Status}}
	// {{.Version}} {{.Created}} (time.Time; helpers unix, unixms, usec,
	// rfc3339, rfc3339nano) and {{.Object}}, the conformance object as JSON.
	// Strings go through {{json .X}} (encoding/json's escaping), so the result
	// is valid JSON for every event: Validate renders it with hostile strings.
	// A declared Event.Object replaces the value at ObjectPath verbatim.
	// The white space outside strings is removed (write the envelope
	// readably) unless KeepSpace says the provider sends it.
	Envelope  string `yaml:"envelope,omitempty"`
	KeepSpace bool   `yaml:"keep_space,omitempty"`
	// Fields (form) are the form parameters, each a template as Envelope;
	// the object's fields are available one by one ({{.Amount}} {{.Currency}}
	// {{.Status}} {{.Version}}). Parameters are sent sorted by name; one
	// that renders empty is left out.
	Fields map[string]string `yaml:"fields,omitempty"`
	// Batch sends the envelope as the only element of a JSON array (SendGrid,
	// HubSpot): the receiver must take each event from the array.
	Batch bool `yaml:"batch,omitempty"`
	// ObjectPath is where the business object sits in the rendered envelope
	// ("$.data"), for declared objects and the Facts.
	ObjectPath string `yaml:"object_path,omitempty"`
	// DomainObjectPath is where the envelope renders hookcert's conformance
	// object ({{.Object}}) when no object is declared, when that differs from
	// ObjectPath (GitHub: "$.object" while a declared object is the whole body).
	DomainObjectPath string `yaml:"domain_object_path,omitempty"`
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
	// Value renders a header location from the event and attempt (default:
	// the value itself): "{{.Account}}.myshopify.com". Body locations are
	// rendered by the envelope or the fields.
	Value string `yaml:"value,omitempty"`
	// MustNotContain lists characters the value may not hold (Standard
	// Webhooks' webhook-id: "." separates the signed parts).
	MustNotContain string `yaml:"must_not_contain,omitempty"`
	// Note says what the provider documents about it (or that it is ours).
	Note string `yaml:"note,omitempty"`
}

// ContractTimestamp is the signed timestamp.
type ContractTimestamp struct {
	// Header carries it (the attempt's signing time), or JSONPath names where
	// the envelope renders it in the body (the event's creation: the body does
	// not change across attempts); neither when it is only part of the
	// signature header's value (Stripe's t=, Paddle's ts=).
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
	// base64 or hex; Prefix is stripped first where present (whsec_). For ed25519 and
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
	// {{.DeliveryID}}. Empty for token. A signature inside the body signs
	// parts of the body only ({{.ID}} {{.Timestamp}} {{.DeliveryID}}, read
	// back from their locations).
	Signed string `yaml:"signed,omitempty"`
	// Encoding of the MAC or signature: hex (default, lower case), base64
	// (standard, padded), base64url (URL alphabet, unpadded).
	Encoding string `yaml:"encoding,omitempty"`
	// Header carries it (or JSONPath, for a signature inside the body).
	Header   string `yaml:"header,omitempty"`
	JSONPath string `yaml:"json_path,omitempty"`
	// Format writes one signature: {{.Signature}} and {{.Timestamp}}
	// ("v1={{.Signature}}", "sha256={{.Signature}}"); default
	// "{{.Signature}}".
	Format string `yaml:"format,omitempty"`
	// Value writes the whole header: {{.Signatures}} (the formatted
	// signatures joined by Separator) and {{.Timestamp}}
	// ("t={{.Timestamp}},{{.Signatures}}"); default "{{.Signatures}}".
	Value string `yaml:"value,omitempty"`
	// Multiple: during a secret roll the provider sends one signature per
	// active secret, joined by Separator (default " ").
	Multiple  bool   `yaml:"multiple,omitempty"`
	Separator string `yaml:"separator,omitempty"`
	// Optional: the provider signs only when a secret is configured
	// (GitHub); otherwise a delivery needs one.
	Optional bool `yaml:"optional,omitempty"`
	// Variants sign a secret that starts with their Prefix their own way
	// (Standard Webhooks: a whsk_ secret is an ed25519 seed, "v1a,<sig>").
	Variants []ContractSignatureVariant `yaml:"variants,omitempty"`
	// Also lists further signature headers sent beside this one, signed the
	// same way from the same secrets (GitHub's legacy X-Hub-Signature).
	Also   []ContractSignature `yaml:"also,omitempty"`
	Source string              `yaml:"source,omitempty"`
}

// ContractSignatureVariant signs the secrets that start with Prefix (which
// is stripped) with another algorithm, key encoding, encoding and format;
// the signed content is the signature's.
type ContractSignatureVariant struct {
	Prefix            string `yaml:"prefix"`
	Algorithm         string `yaml:"algorithm"`
	Key               string `yaml:"key,omitempty"`
	PublicKeyEncoding string `yaml:"public_key_encoding,omitempty"`
	Encoding          string `yaml:"encoding,omitempty"`
	Format            string `yaml:"format,omitempty"`
}

// ContractDelivery is what the provider does with an attempt.
type ContractDelivery struct {
	Timeout       string `yaml:"timeout,omitempty"`
	TimeoutSource string `yaml:"timeout_source,omitempty"`
	// Success lists what acknowledges: "2xx" (default) or explicit statuses.
	Success []string `yaml:"success,omitempty"`
	// Stop lists statuses after which the provider gives up (Standard
	// Webhooks' 410; Mailgun's 406); StopHeader a response header that does.
	Stop              []int         `yaml:"stop,omitempty"`
	StopHeader        string        `yaml:"stop_header,omitempty"` // "name: value"
	HonoursRetryAfter bool          `yaml:"honours_retry_after,omitempty"`
	MaxRedirects      int           `yaml:"max_redirects,omitempty"`
	ResignsOnRetry    bool          `yaml:"resigns_on_retry,omitempty"`
	Retry             ContractRetry `yaml:"retry,omitempty"`
	// Ordered: nil when undocumented.
	Ordered          *bool  `yaml:"ordered,omitempty"`
	OrderedSource    string `yaml:"ordered_source,omitempty"`
	ManualRedelivery *bool  `yaml:"manual_redelivery,omitempty"`
	ManualWindow     string `yaml:"manual_window,omitempty"`
}

// ContractRetry is the automatic redelivery schedule (RetrySchedule).
type ContractRetry struct {
	// Delays are the published waits before each retry; empty when
	// unpublished.
	Delays      []string `yaml:"delays,omitempty"`
	MaxAttempts int      `yaml:"max_attempts,omitempty"` // the first attempt included
	Horizon     string   `yaml:"horizon,omitempty"`
	Source      string   `yaml:"source,omitempty"`
	// ContinuesUntilHorizon: retries go on after Delays until Horizon.
	ContinuesUntilHorizon bool `yaml:"continues_until_horizon,omitempty"`
	// Model is hookcert's MODEL of an unpublished schedule and ModelNote
	// says so (RetrySchedule.Modelled).
	Model     []string `yaml:"model,omitempty"`
	ModelNote string   `yaml:"model_note,omitempty"`
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
	// (the endpoint's verify token, Meta), {{.ID}} (an event ID of the
	// ids.event shape, drawn from the challenge) and {{.Created}}. A signed
	// POST also carries the event ID and timestamp headers the contract
	// declares, and its signature; a GET is never signed.
	Body    string            `yaml:"body,omitempty"`
	Query   map[string]string `yaml:"query,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Expect is the answer the provider accepts.
	Expect ContractExpect `yaml:"expect"`
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

// ContractExpect is a handshake's accepted answer: the status (default 200)
// and at least one of an exact body (Body, compared after trimming white
// space), JSON fields (JSON: name → a template rendering the JSON value,
// '{{json .Challenge}}', '1') or form fields (Form: name → template). Where
// several are given, an answer matching any one is accepted (Slack takes the
// challenge as plain text, JSON or a form). Templates see {{.Challenge}}
// {{.VerifyToken}} {{.ID}} {{.Created}} and hmacHex / hmacB64 (HMAC-SHA256
// keyed with the first secret's UTF-8 bytes: Zoom's encryptedToken is
// {{json (hmacHex .Challenge)}}).
type ContractExpect struct {
	Status int               `yaml:"status,omitempty"`
	Body   string            `yaml:"body,omitempty"`
	JSON   map[string]string `yaml:"json,omitempty"`
	Form   map[string]string `yaml:"form,omitempty"`
}

// ContractVector is one signature the contract must reproduce: the inputs
// a delivery signs and the signature header's value (or, for a signature in
// the body, the signature itself). An asymmetric vector may give only the
// public key: the signature must then verify.
type ContractVector struct {
	Name      string `yaml:"name"`
	Published bool   `yaml:"published,omitempty"` // copied from the provider's own material
	Source    string `yaml:"source,omitempty"`
	Secret    string `yaml:"secret,omitempty"`
	PublicKey string `yaml:"public_key,omitempty"`
	ID        string `yaml:"id,omitempty"`
	// Timestamp as sent (parsed with timestamp.format).
	Timestamp  string `yaml:"timestamp,omitempty"`
	URL        string `yaml:"url,omitempty"`
	Method     string `yaml:"method,omitempty"`
	DeliveryID string `yaml:"delivery_id,omitempty"`
	// Body is the raw body; a form body is its URL encoding (repeated names
	// allowed), from which {{.Form}} is built.
	Body    string            `yaml:"body,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"` // for {{header "X"}}
	// Signature is the expected value.
	Signature string `yaml:"signature"`
}

// ContractIDs shapes the IDs the simulator draws: literal text and
// {{base62 N}}, {{base36 N}}, {{hex N}}, {{upper36 N}} (N characters of the
// alphabet) or {{uuid}}, drawn from a seeded RandSource.
type ContractIDs struct {
	Event    string `yaml:"event,omitempty"`    // e.g. "evt_{{base62 24}}", "{{uuid}}"
	Delivery string `yaml:"delivery,omitempty"` // per attempt, when DeliveryID is a header of its own
}

// ContractSecretShape says how hookcert generates a secret for the profile
// (demo, library mode): Bytes random bytes in Encoding behind Prefix (for
// base62, Bytes characters). Asymmetric algorithms generate a key pair
// instead; an empty shape gives 32 random bytes in hex.
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
	// "account", "timestamp", "url", "method", "delivery-id",
	// "form:<field>", "header:<name>", "field:<name>" (a signed field of
	// the body: Adyen).
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
