package targetfile

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// The model: what a target file becomes once decoded, validated and rendered.

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
	// Store is how the harness reads the receiver's state: the observer kind and its settings.
	Store Store
	// FailpointsPath is the failpoint protocol's path under BaseURL, "" when the
	// target has no failpoints.
	FailpointsPath string
	// Capabilities as declared, in file order.
	Capabilities []Capability
	// MaxBodyBytes is the largest body the provider may send the receiver
	// (DefaultMaxBodyBytes when the file does not say), not the receiver's own cap.
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
	// Idempotency is the receiver's idempotency style (IdempotencyLedger,
	// IdempotencyObjectVersion, IdempotencyBoth), ledger when not declared.
	Idempotency string
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
	// ProviderAPI is the harness's provider API the receiver calls (nil when
	// the file declares none).
	ProviderAPI *ProviderAPISpec
	// DeclaredProfiles are the providers the file declares (its top-level
	// profiles: list), in file order; endpoints may name them beside the
	// built-in profiles (LookupProfile).
	DeclaredProfiles []profiles.Contract
	// declared are DeclaredProfiles compiled, by ID.
	declared map[string]profiles.Profile
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

// Store is the observer configuration: which kind of store holds the receiver's
// state (postgres, mysql, redis, command, http) and how to read it.
type Store struct {
	// Kind is the observer kind, one of ObserverKinds.
	Kind string
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
	// Command and HTTP are the store-neutral observers' settings (nil for the
	// other kinds).
	Command *CommandObserver
	HTTP    *HTTPObserver
}

// Observer kinds: where the receiver keeps its state, and so how the harness
// reads it (target.observe.<kind>).
const (
	KindPostgres = "postgres"
	KindMySQL    = "mysql"
	KindRedis    = "redis"
	KindCommand  = "command"
	KindHTTP     = "http"
)

// ObserverKinds are the kinds target.observe takes, in the order docs list them.
var ObserverKinds = []string{KindPostgres, KindMySQL, KindRedis, KindCommand, KindHTTP}

// SQL reports whether the store is a SQL database the harness's own sessions
// reach: only then can it lock a table, cut sessions, run SQL fixtures, a setup
// script or a purge statement.
func (s Store) SQL() bool { return s.Kind == KindPostgres || s.Kind == KindMySQL || s.Kind == "" }

// Field is the file path of the observer's section (target.observe.<kind>).
func (s Store) Field() string {
	if s.Kind == "" {
		return "target.observe." + KindPostgres
	}
	return "target.observe." + s.Kind
}

// CommandObserver is observe.command: a program per query.
type CommandObserver struct {
	// Dir is where the programs run; Env is added to the harness's environment.
	Dir string
	Env Env
	// Timeout bounds one call; MaxOutput its standard output.
	Timeout   time.Duration
	MaxOutput int
	// Capabilities is the command line that says which queries the program
	// answers ("" when the file gives none).
	Capabilities string
}

// HTTPObserver is observe.http: a URL per query.
type HTTPObserver struct {
	// BaseURL resolves relative query URLs ("" when every query is absolute).
	BaseURL string
	// Timeout bounds one call; MaxBody its answer.
	Timeout time.Duration
	MaxBody int
	// Capabilities is the URL that says which queries the observer answers.
	Capabilities string
}

// Defaults of the store-neutral observers.
const (
	DefaultObserverCallTimeout = 5 * time.Second
	DefaultObserverMaxOutput   = 64 << 10
)

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
	// ObjectChildren returns (key): the ordering key an ordered object's child
	// rows were last written from (events.ordered.children).
	ObjectChildren string
	// PayloadPresent returns (present boolean) for one event's key row, no row when
	// the key is gone (retention).
	PayloadPresent string
	// KeyTTL returns (milliseconds left) of one event's key: no row when the key
	// is gone, -1 when it never expires (a key store's expiry, RETENTION-5).
	KeyTTL string
	// Quiescent returns one boolean row, true when the receiver has no accepted
	// work pending (acceptance.quiescent); it takes no parameters.
	Quiescent string
	// InboxState and OutboxState return (state, attempts) of one event's
	// accepted work and downstream message (target.inbox.state, target.outbox.state).
	InboxState, OutboxState string
	// Roles are the queries of the roles of target.events after the first of
	// each kind, by their role names (vocab.QueryName: "payment:refund"); each
	// answers like the query its name starts with.
	Roles map[string]string
	// From maps a query name to the file field it was read from, for queries not
	// read from observe.<kind>.queries.<name> (see FieldPath).
	From map[string]string
	// Base is the observer's section (target.observe.<kind>; postgres when empty).
	Base string
}

// FieldPath is the file field a query was read from, for error messages.
func (q Queries) FieldPath(name string) string {
	if p := q.From[name]; p != "" {
		return p
	}
	if q.Base != "" {
		return q.Base + ".queries." + name
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
	for name, sql := range q.Roles {
		if sql != "" {
			m[name] = sql
		}
	}
	return m
}

// RoleNames lists the role queries' names, sorted.
func (q Queries) RoleNames() []string {
	out := make([]string, 0, len(q.Roles))
	for name := range q.Roles {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
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
		{QueryObjectChildren, q.ObjectChildren, []int{4}},
		{QueryPayloadPresent, q.PayloadPresent, []int{3}},
		{QueryKeyTTL, q.KeyTTL, []int{3}},
		{QueryInboxState, q.InboxState, []int{3}},
		{QueryOutboxState, q.OutboxState, []int{3}},
	}
}

// Query names, as the observer knows them.
const (
	QueryEventRows      = "event_rows"
	QueryEffects        = "effects"
	QueryObjectEffects  = "object_effects"
	QueryObject         = "object"
	QueryPayment        = "payment"
	QueryObjectChildren = "object_children"
	QueryPayloadPresent = "payload_present"
	QueryKeyTTL         = "key_ttl"
	QueryQuiescent      = "quiescent"
)

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
