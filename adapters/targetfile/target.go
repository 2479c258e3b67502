package targetfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hookcert/hookcert/vocab"
	"go.yaml.in/yaml/v3"
)

// Capability is a feature a target declares; guarantees that need an undeclared
// capability are reported as not applicable.
type Capability string

// The closed list of capabilities (documented in docs/target.md).
const (
	// Crash: the harness may SIGKILL and restart the receiver (needs lifecycle).
	Crash Capability = "crash"
	// LockGating: the harness may lock the receiver's event table (needs
	// observe.postgres.event_table).
	LockGating Capability = "lock-gating"
	// ConnectionLoss: the harness may terminate the receiver's PostgreSQL sessions
	// (needs observe.postgres).
	ConnectionLoss Capability = "connection-loss"
	// Failpoints: the receiver implements the failpoint protocol (needs failpoints).
	Failpoints Capability = "failpoints"
	// Ordering: versioned state updates (needs observe.postgres.queries.object).
	Ordering Capability = "ordering"
	// StateMachine: payment state machine (needs observe.postgres.queries.payment).
	StateMachine Capability = "state-machine"
	// DomainConstraint: two event IDs for one payment give one effect (needs
	// observe.postgres.queries.object_effects).
	DomainConstraint Capability = "domain-constraint"
	// Deletion: a deleted versioned object is not brought back by a stale update
	// (built-in vocabulary: customer.subscription.deleted; needs the ordering query).
	Deletion Capability = "deletion"
	// Retention: the receiver declares its key and payload TTLs and a purge the
	// harness can trigger as of a chosen time (needs target.retention and
	// observe.postgres.queries.payload_present).
	Retention Capability = "retention"
	// Inbox: the receiver accepts events durably, answers, and applies them in
	// workers (needs acceptance.mode async and target.inbox).
	Inbox Capability = "inbox"
	// Outbox: the receiver's downstream calls go to the harness's sink,
	// {{.SinkURL}}, with an operation key (needs target.outbox).
	Outbox Capability = "outbox"
)

// Capabilities lists every valid capability in documentation order.
var Capabilities = []Capability{Crash, LockGating, ConnectionLoss, Failpoints, Ordering,
	StateMachine, DomainConstraint, Deletion, Retention, Inbox, Outbox}

// Reserved reports whether c is accepted in a target file but not yet checked by
// any scenario (none is, today).
func Reserved(Capability) bool { return false }

// Default values applied when a field is omitted.
const (
	DefaultReadyTimeout   = 30 * time.Second
	DefaultStopGrace      = 5 * time.Second
	DefaultFailpointsPath = "/_hookcert/failpoints"
	// DefaultMaxBodyBytes is the body limit assumed when limits.max_body_bytes is
	// absent: 1 MiB, the reference receiver's default.
	DefaultMaxBodyBytes = 1 << 20
	// The observer's bounds (observe.postgres.connect_timeout, statement_timeout,
	// lock_timeout): its queries are single-row reads that take milliseconds, so
	// seconds mean the database is gone, silent or locked.
	DefaultConnectTimeout   = 5 * time.Second
	DefaultStatementTimeout = 5 * time.Second
	DefaultLockTimeout      = 5 * time.Second
	// MaxObserveTimeout is the longest of those bounds a file may set.
	MaxObserveTimeout = time.Hour
)

// Target is a loaded, validated and rendered target file.
type Target struct {
	// Name identifies the target in reports.
	Name string
	// BaseURL is the receiver's root URL (scheme and host, optional path prefix,
	// no trailing slash).
	BaseURL string
	// Endpoints has one entry per (profile, account).
	Endpoints []Endpoint
	// Lifecycle is nil when the harness does not control the process.
	Lifecycle *Lifecycle
	// Postgres is how the harness reads the receiver's state.
	Postgres Postgres
	// FailpointsPath is the failpoint protocol's path under BaseURL, "" when the
	// target has no failpoints.
	FailpointsPath string
	// Capabilities as declared, in file order.
	Capabilities []Capability
	// MaxBodyBytes is the largest body the receiver accepts (DefaultMaxBodyBytes
	// when the file does not say).
	MaxBodyBytes int
	// Source is the file the target was loaded from ("" for Parse).
	Source string
	// Retention is the declared retention and purge trigger; nil when the file
	// has no retention section.
	Retention *RetentionSpec
	// Events is the declared event vocabulary (Declared is true); nil when the
	// file has no events section, and the suite uses the built-in one.
	Events *vocab.Vocabulary
	// Fixtures are the named hooks that create business objects (nil when none).
	Fixtures map[string]Fixture
	// Acceptance is how the receiver acknowledges, defaults applied: sync with
	// DefaultSyncSettle when the file has no acceptance section.
	Acceptance vocab.Acceptance
	// Dir is the directory the file's relative paths were resolved against: the
	// target file's (WithBaseDir, set by Load); "" when parsed without one (the
	// harness's working directory).
	Dir string
	// Setup is the hook that prepares the receiver's database before it starts
	// (nil when the file declares none).
	Setup *Setup
	// Inbox and Outbox are the declared asynchronous work (nil when absent).
	Inbox  *InboxSpec
	Outbox *OutboxSpec
	// vars are the template variables the file uses.
	vars map[string]bool
	// envValues are the values {{env}} read (EnvSecrets).
	envValues []string
}

// Uses reports whether the file's templates refer to variable name (e.g.
// "DatabaseURL"): the harness provisions a database only for a file that asks
// for one.
func (t *Target) Uses(name string) bool { return t.vars[name] }

// Endpoint is where deliveries of one profile for one account go.
type Endpoint struct {
	Profile string
	// Source is the event key's source for deliveries here: the profile unless the
	// file sets another (e.g. "stripe-test" to tell test from live traffic).
	Source  string
	Account string
	Path    string
	Secret  Secret
	// SecretEnv names the environment variable the secret was read from ("" when
	// the secret was inline).
	SecretEnv string
	// KeyTTL and PayloadTTL are the endpoint's declared retention: its own
	// key_ttl/payload_ttl, else target.retention's; 0 when neither is given.
	KeyTTL     time.Duration
	PayloadTTL time.Duration
	// AckTimeout is the endpoint's ack_timeout: the acknowledgement timeout
	// ACK-2 holds it to; 0 when the file gives none (the profile's documented
	// one, or the harness's model, applies).
	AckTimeout time.Duration
}

// Lifecycle is how the harness starts and stops the receiver process.
type Lifecycle struct {
	Command []string
	// Env is added to (and overrides) the harness's environment. Its values may
	// carry credentials (a database URL), so it prints them redacted.
	Env          Env
	Dir          string
	ReadyPath    string
	ReadyTimeout time.Duration
	StopGrace    time.Duration
	// Worker is the receiver's separate worker command (nil: its workers, if
	// any, run inside the receiver's process).
	Worker *Worker
}

// Worker is a receiver's worker process (target.lifecycle.worker): it has no
// HTTP side, so the harness can kill it alone while the receiver keeps
// accepting, and restart it. Processes copies of it run side by side.
type Worker struct {
	Command []string
	// Env is lifecycle.env with the worker's own env over it.
	Env       Env
	Dir       string
	Processes int
}

// MaxWorkerProcesses bounds lifecycle.worker.processes.
const MaxWorkerProcesses = 8

// Env is a set of environment variables whose values never print: fmt, JSON and
// slog show the names with "[redacted]" values. Index it to use a value.
type Env map[string]string

func (e Env) redacted() map[string]string {
	m := make(map[string]string, len(e))
	for k := range e {
		m[k] = redacted
	}
	return m
}

// Format implements fmt.Formatter with redacted values.
func (e Env) Format(f fmt.State, verb rune) { fmt.Fprintf(f, "%v", e.redacted()) }

// MarshalJSON implements json.Marshaler with redacted values.
func (e Env) MarshalJSON() ([]byte, error) { return json.Marshal(e.redacted()) }

// LogValue implements slog.LogValuer with redacted values.
func (e Env) LogValue() slog.Value { return slog.AnyValue(e.redacted()) }

// Postgres is the PostgreSQL observer configuration.
type Postgres struct {
	// URL is the receiver's database; a Secret because it may carry a password.
	URL Secret
	// EventTable is the table holding the receiver's event keys ("" if not given),
	// optionally schema-qualified.
	EventTable string
	// EffectTable is the table the receiver writes its business effect to ("" if
	// not given); the harness locks it to stop the receiver mid-transaction.
	EffectTable string
	Queries     Queries
	// ConnectTimeout bounds one connection attempt of the observer (connect,
	// TLS, authentication); StatementTimeout one query, on the server
	// (statement_timeout); LockTimeout a query's wait for a lock another session
	// holds (lock_timeout). Each is its Default… when the file does not say.
	ConnectTimeout   time.Duration
	StatementTimeout time.Duration
	LockTimeout      time.Duration
}

// Queries are the observer's SQL queries. Bound parameters: $1 source, $2 account,
// $3 event ID, $4 object ID; a query may use any subset. A declared event
// vocabulary's queries fill the same slots (From says where each came from).
type Queries struct {
	// EventRows counts the stored keys of one event (required).
	EventRows string
	// Effects counts the business effects of one event (required unless
	// events.effect.effects gives it).
	Effects string
	// ObjectEffects counts the business effects on one object (domain-constraint,
	// or events.lifecycle.effects).
	ObjectEffects string
	// Object returns (version[, status]) of a versioned object (ordering, or
	// events.ordered.state).
	Object string
	// Payment returns (status) of a payment (state-machine, or
	// events.lifecycle.state).
	Payment string
	// PayloadPresent returns (present boolean) for one event's key row, no row when
	// the key is gone (retention).
	PayloadPresent string
	// Quiescent returns one boolean row, true when the receiver has no accepted
	// work pending (acceptance.quiescent); it takes no parameters.
	Quiescent string
	// InboxState and OutboxState return (state, attempts) of one event's
	// accepted work and downstream message (target.inbox.state, target.outbox.state).
	InboxState, OutboxState string
	// From maps a query name to the file field it was read from, for queries not
	// read from observe.postgres.queries.<name> (see FieldPath).
	From map[string]string
}

// FieldPath is the file field a query was read from, for error messages.
func (q Queries) FieldPath(name string) string {
	if p := q.From[name]; p != "" {
		return p
	}
	return "target.observe.postgres.queries." + name
}

// Declared reports whether a query comes from the declared event vocabulary
// (its stricter column rules then apply).
func (q Queries) Declared(name string) bool {
	return strings.HasPrefix(q.From[name], "target.events.")
}

// Named returns the configured queries by their names, omitting empty ones.
func (q Queries) Named() map[string]string {
	m := map[string]string{}
	for _, e := range q.list() {
		if e.sql != "" {
			m[e.name] = e.sql
		}
	}
	if q.Quiescent != "" {
		m["quiescent"] = q.Quiescent
	}
	return m
}

type namedQuery struct {
	name, sql string
	needs     []int // the query must reference one of these parameters
}

func (q Queries) list() []namedQuery {
	return []namedQuery{
		{QueryEventRows, q.EventRows, []int{3}},
		// An event's effects may be counted by the event or by its object.
		{QueryEffects, q.Effects, []int{3, 4}},
		{QueryObjectEffects, q.ObjectEffects, []int{4}},
		{QueryObject, q.Object, []int{4}},
		{QueryPayment, q.Payment, []int{4}},
		{QueryPayloadPresent, q.PayloadPresent, []int{3}},
		{QueryInboxState, q.InboxState, []int{3}},
		{QueryOutboxState, q.OutboxState, []int{3}},
	}
}

// Vars are the template variables available in target file strings.
type Vars struct {
	// DatabaseURL is the database the harness prepared for the receiver.
	DatabaseURL string
	// ListenAddr is host:port the receiver should listen on.
	ListenAddr string
	// Port is ListenAddr's port; derived from ListenAddr when empty.
	Port string
	// BaseURL defaults to the rendered base_url, so lifecycle env can use it.
	BaseURL string
	// SinkURL is the harness's downstream sink (capability outbox).
	SinkURL string
}

// Has reports whether the target declares c.
func (t *Target) Has(c Capability) bool {
	for _, d := range t.Capabilities {
		if d == c {
			return true
		}
	}
	return false
}

// Endpoint returns the endpoint of (profile, account).
func (t *Target) Endpoint(profile, account string) (Endpoint, bool) {
	for _, e := range t.Endpoints {
		if e.Profile == profile && e.Account == account {
			return e, true
		}
	}
	return Endpoint{}, false
}

// EndpointsFor returns the endpoints of a profile in file order.
func (t *Target) EndpointsFor(profile string) []Endpoint {
	var out []Endpoint
	for _, e := range t.Endpoints {
		if e.Profile == profile {
			out = append(out, e)
		}
	}
	return out
}

// Profiles returns the distinct profiles of the endpoints, sorted.
func (t *Target) Profiles() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range t.Endpoints {
		if !seen[e.Profile] {
			seen[e.Profile] = true
			out = append(out, e.Profile)
		}
	}
	sort.Strings(out)
	return out
}

// URL joins BaseURL and a path starting with "/".
func (t *Target) URL(path string) string { return t.BaseURL + path }

// CheckProfiles reports endpoints whose profile is not in known (the simulator's
// profile registry, which this package does not import). Parse with WithProfiles
// reports the same beside the file's other errors, with their lines.
func (t *Target) CheckProfiles(known []string) error {
	ok := map[string]bool{}
	for _, k := range known {
		ok[k] = true
	}
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	var errs []error
	for i, e := range t.Endpoints {
		if !ok[e.Profile] {
			errs = append(errs, &FieldError{Path: fmt.Sprintf("target.endpoints[%d].profile", i),
				Rule: fmt.Sprintf("unknown profile %q (valid: %s)", e.Profile, strings.Join(sorted, ", "))})
		}
	}
	return errors.Join(errs...)
}

// MaxFileBytes caps the size of a target file: 1 MiB, hundreds of times a real
// one, so a wrong path (a log, a database dump) fails at once instead of being
// parsed into memory.
const MaxFileBytes = 1 << 20

// maxReported caps the errors one file reports; a file with more is not a target
// file with mistakes but something else.
const maxReported = 500

// ErrTooLarge is wrapped by the error for a file larger than MaxFileBytes.
var ErrTooLarge = errors.New("target file too large")

// Option tunes Parse, Load and Validate.
type Option func(*options)

type options struct {
	profiles []string
	// placeholders: the template variables hold stand-ins, not the run's values.
	placeholders bool
	// baseDir: relative paths are resolved against it (WithBaseDir).
	baseDir string
	// hooks: parts a Go test supplies as functions (WithGoHooks).
	hooks GoHooks
}

// GoHooks says which parts of a target a Go test supplies as functions
// instead of the file's own (library mode, hookcerttest): each satisfies the
// rule that would otherwise need the file's section.
type GoHooks struct {
	// Controller: Kill and Restart functions take the place of
	// target.lifecycle for capability crash.
	Controller bool
	// Purge: a purge function takes the place of target.retention.purge.
	Purge bool
	// Fixtures are fixture names the test creates in Go, which events may name
	// beside target.fixtures.
	Fixtures []string
}

// WithGoHooks checks the target with the parts h says a Go test supplies.
func WithGoHooks(h GoHooks) Option { return func(o *options) { o.hooks = h } }

// WithProfiles checks every endpoint's profile against known (the simulator's
// profile registry, which this package does not import), beside the other rules
// and with its line. An empty list checks nothing.
func WithProfiles(known []string) Option {
	return func(o *options) { o.profiles = known }
}

// PlaceholderVars are the stand-in template values Validate renders with: any
// check they pass, the harness's real values pass too.
var PlaceholderVars = Vars{
	DatabaseURL: "postgres://hookcert@127.0.0.1:5432/hookcert",
	ListenAddr:  "127.0.0.1:65535",
	SinkURL:     "http://127.0.0.1:65534",
	Port:        "65535",
}

// Inspect checks a whole target file as Validate does and returns it rendered
// with PlaceholderVars, to learn what the run must provide (Uses) before
// anything is provisioned. Its URLs and commands are stand-ins: Parse the file
// with the run's values to use it.
func Inspect(data []byte, knownProfiles []string, opts ...Option) (*Target, error) {
	o := options{profiles: knownProfiles}
	for _, f := range opts {
		f(&o)
	}
	o.placeholders = true
	return parse(data, PlaceholderVars, o)
}

// Validate checks a whole target file before anything is provisioned: template
// variables are rendered with PlaceholderVars, so every rule is checked except
// what only the run's real values could break (a duplicate endpoint path is
// reported only when the two templates are identical). Environment variables
// (secret_env, url_env) are read as Parse reads them. knownProfiles may be nil.
// The errors are those of Parse.
func Validate(data []byte, knownProfiles []string, opts ...Option) error {
	_, err := Inspect(data, knownProfiles, opts...)
	return err
}

// ReadFile reads a target file, refusing one larger than MaxFileBytes with an
// error naming the file, its size and the limit.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("target file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("target file %s: %w: %d bytes, limit %d bytes (1 MiB)", path, ErrTooLarge, fi.Size(), MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("target file %s: %w: more than %d bytes (1 MiB)", path, ErrTooLarge, MaxFileBytes)
	}
	return data, nil
}

// Load reads and validates a target file (see ReadFile and Parse). Its
// relative paths are resolved against the file's directory.
func Load(path string, vars Vars, opts ...Option) (*Target, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	dir, err := BaseDir(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data, vars, append([]Option{WithBaseDir(dir)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("target file %s: %w", path, err)
	}
	t.Source = path
	return t, nil
}

// Parse decodes and validates a target file's content. All errors are returned
// together (errors.Join), in line order; each is a *FieldError naming the field
// path, its line and the rule: values of the wrong type, unknown fields and
// repeated keys as well as the validation rules. Content larger than
// MaxFileBytes, or with more than one YAML document, is refused.
func Parse(data []byte, vars Vars, opts ...Option) (*Target, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return parse(data, vars, o)
}

func parse(data []byte, vars Vars, o options) (*Target, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d bytes (1 MiB)", ErrTooLarge, len(data), MaxFileBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Path: "target", Rule: "required (the file is empty)"}
		}
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("invalid YAML: %w", err)
	case !emptyDocument(&next):
		return nil, &FieldError{Path: "(file)", Line: next.Line,
			Rule: "a second YAML document starts here; a target file holds one (remove the --- line and what follows, or split the file)"}
	}
	sc := newShapeChecker()
	sc.check(&root, reflect.TypeOf(rawDoc{}), nil)
	var doc rawDoc
	// Decoding goes on past values of the wrong type, leaving them zero; the
	// shape check has reported them with their paths.
	if err := root.Decode(&doc); err != nil {
		var te *yaml.TypeError
		switch {
		case len(sc.errs) > 0 && !errors.As(err, &te):
			// The decoder gave up (e.g. on a bad merge): the shape errors say why.
			return nil, joinSorted(sc.errs)
		case len(sc.errs) == 0:
			return nil, explainYAML(err)
		}
	}
	v := &validator{root: &root, vars: vars, bad: sc.bad, opts: o}
	t := v.build(&doc)
	if t != nil {
		t.vars, t.envValues, t.Dir = v.used, v.envValues, o.baseDir
	}
	errs := make([]*FieldError, 0, len(sc.errs)+len(v.errs))
	errs = append(append(errs, sc.errs...), v.errs...)
	if len(errs) == 0 {
		return t, nil
	}
	return nil, joinSorted(errs)
}

// joinSorted joins errors in line order (the way the file reads; errors without a
// line, 0, first), at most maxReported of them.
func joinSorted(errs []*FieldError) error {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	out := make([]error, 0, min(len(errs), maxReported)+1)
	for _, e := range errs[:min(len(errs), maxReported)] {
		out = append(out, e)
	}
	if len(errs) > maxReported {
		out = append(out, fmt.Errorf("… and %d more errors", len(errs)-maxReported))
	}
	return errors.Join(out...)
}

// emptyDocument reports whether a document holds nothing (a trailing "---").
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		c := n.Content[0]
		return c.Kind == yaml.ScalarNode && c.ShortTag() == "!!null" && c.Value == ""
	}
	return len(n.Content) == 0
}

// FieldError is one error of a target file: the field path, the rule, and the line
// of the field (or of its closest present parent) when known.
type FieldError struct {
	Path string
	Rule string
	Line int
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Rule)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Rule)
}

// userinfoRE finds the password of a URL anywhere in a text: scheme://user:password@.
var userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@"]*):[^\s@/"]*@`)

// redactText hides passwords in an error message that may quote a rendered
// template: the database URL given to the harness (whole, or its bare password if
// a template function changed the rest), any URL's userinfo password and any
// password=... setting.
func redactText(s, dbURL string) string {
	if dbURL != "" {
		if r := redactURL(dbURL); r != dbURL {
			s = strings.ReplaceAll(s, dbURL, r)
		}
		if pw := urlPassword(dbURL); len(pw) >= 3 {
			s = strings.ReplaceAll(s, pw, "xxxxx")
		}
	}
	s = userinfoRE.ReplaceAllString(s, "${1}:xxxxx@")
	return passwordKVRE.ReplaceAllString(s, "${1}xxxxx")
}

// passwordKVRE finds a libpq password=value setting, quoted or not.
var passwordKVRE = regexp.MustCompile(`(?i)\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'"]+)`)

// urlPassword returns the password of a URL or key=value connection string, "" if
// it has none.
func urlPassword(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		return u.Query().Get("password")
	}
	for _, f := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// redactURL hides a password in a URL or key=value connection string.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	if strings.Contains(s, "password=") {
		var parts []string
		for _, f := range strings.Fields(s) {
			if strings.HasPrefix(f, "password=") {
				f = "password=xxxxx"
			}
			parts = append(parts, f)
		}
		return strings.Join(parts, " ")
	}
	return s
}
