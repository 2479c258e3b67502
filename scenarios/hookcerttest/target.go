package hookcerttest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Target describes the receiver under test: the Go form of a target file
// (docs/target.md), field for field. It is checked by the target-file loader's
// own rules (its errors name these Go fields) and assembled by the same
// composition root as `hookcert certify`, so every guarantee the CLI reaches is
// reached here too. Only BaseURL, Endpoints, a database (DatabaseURL or Pool)
// and Queries.EventRows are required; every optional part left out makes the
// guarantees that need it not applicable, with the reason.
//
// Strings the target file renders as templates are rendered here too:
// BaseURL, endpoint paths and the lifecycle's command, env and dir may use
// {{.Port}}, {{.ListenAddr}}, {{.BaseURL}}, {{.DatabaseURL}} (DatabaseURL) and
// {{.SinkURL}} (the harness's downstream sink, capability outbox).
type Target struct {
	// Name names the target in reports; default: the test's name.
	Name string
	// BaseURL is the receiver's root URL (an httptest.Server's URL is fine,
	// or "http://127.0.0.1:{{.Port}}" for a receiver the Lifecycle starts);
	// every endpoint path is appended to it.
	BaseURL string
	// Endpoints are one per event-key scope (source, account).
	Endpoints []Endpoint
	// Profiles declares providers hookcert has no built-in profile for (a
	// target file's profiles:, docs/target.md "Declaring a provider"):
	// Endpoints may name them beside the built-in ones.
	Profiles []profiles.Contract

	// DatabaseURL is the receiver's database, where the harness reads its
	// state. Pool may be given instead: the harness then opens its own small
	// pools with that pool's connection settings (its sessions must carry the
	// harness's application_name, so connection-loss faults and the busy checks
	// between scenarios tell them from the receiver's) and never uses Pool
	// itself.
	DatabaseURL string
	Pool        *pgxpool.Pool
	// EventTable holds the receiver's event keys (capability lock-gating);
	// EffectTable is where it writes its business effect (connection-loss).
	// "table" or "schema.table".
	EventTable  string
	EffectTable string
	// Queries are the observer's queries ($1 source, $2 account, $3 event ID,
	// $4 object ID).
	Queries Queries
	// Timeouts bound the observer's connections and queries (zero fields: 5 s).
	Timeouts Timeouts

	// Capabilities the receiver declares: crash, lock-gating, connection-loss,
	// failpoints, ordering, state-machine, domain-constraint, deletion,
	// retention, inbox, outbox.
	Capabilities []string
	// Vocab is the receiver's own event vocabulary (docs/target.md, "Declared
	// events"), built in Go (object templates with vocab.ParseObjectTemplate);
	// nil means the built-in conformance domain. Its queries go in Queries: the
	// effect role's effects in Queries.Effects, the lifecycle's state in
	// Queries.Payment and its effects in Queries.ObjectEffects, the ordered
	// role's state in Queries.Object.
	Vocab *vocab.Vocabulary
	// Fixtures create business objects before events about them arrive (named
	// by the vocabulary's create.fixture).
	Fixtures map[string]Fixture
	// Acceptance says whether the receiver applies events before (zero value:
	// sync, 1 s settle) or after its 2xx (Async; 5 s settle by default).
	Acceptance vocab.Acceptance
	// Idempotency is how the receiver makes a redelivery harmless: "" or
	// "ledger" (an event ledger Queries.EventRows counts), "object-version"
	// (no ledger: each object carries the ordering key of the last event
	// applied; Queries.EventRows empty), "both" (docs/target.md, "Idempotency
	// styles").
	Idempotency string
	// MaxBodyBytes is the largest body the provider may send the receiver
	// (default 1 MiB): ACK-7 sends 1 KiB less and expects it applied, ACK-5
	// twice as much and expects a 4xx (docs/target.md, "Body size limit").
	MaxBodyBytes int
	// FailpointsPath is where the receiver serves the failpoint protocol
	// (docs/failpoints.md), under BaseURL; "" when it does not (capability
	// failpoints needs it).
	FailpointsPath string
	// Retention is the receiver's declared retention and its purge (capability
	// retention; Queries.PayloadPresent too).
	Retention *Retention

	// Lifecycle has the harness start the receiver as a process, stop it, and
	// SIGKILL and restart it (capability crash), with its worker processes
	// (Lifecycle.Worker) where it runs them apart.
	Lifecycle *Lifecycle
	// Inbox and Outbox declare the receiver's asynchronous work (capabilities
	// inbox and outbox, docs/target.md "The inbox and outbox contract").
	Inbox  *Inbox
	Outbox *Outbox

	// Kill stops the receiver abruptly, as SIGKILL stops a process: it stops
	// accepting connections, drops the open ones and ends its database
	// sessions so that no transaction in flight commits. Restart starts it
	// again at the same BaseURL and returns once it is ready. Both take the
	// place of a Lifecycle for capability crash, for a receiver the test runs
	// itself. A Receiver (StartReceiver) has them, and Alive; the WithReceiver
	// option sets all three from a Factory.
	Kill    func() error
	Restart func(ctx context.Context) error
	// Alive, optional, reports whether the receiver is up and, when it is not,
	// why. Without it the receiver is up unless Kill was called since the last
	// Restart and BaseURL accepts TCP connections (a receiver that crashes at a
	// failpoint by itself must then stop accepting them).
	Alive func() (ok bool, why string)
}

// Endpoint is one delivery endpoint.
type Endpoint struct {
	// Profile is the provider profile the simulator speaks (stripe, github,
	// standard-webhooks, …).
	Profile string
	// Source is the event key's source ($1); default: the profile.
	Source string
	// Account is the account scope ($2).
	Account string
	// Path is appended to Target.BaseURL; it starts with /.
	Path string
	// Secret is the signing secret in the provider's format.
	Secret string
	// KeyTTL and PayloadTTL are the endpoint's declared retention (default:
	// Target.Retention's).
	KeyTTL, PayloadTTL time.Duration
	// AckTimeout is the acknowledgement timeout ACK-2 holds the endpoint to;
	// default: the profile's documented one, else hookcert's 10 s model.
	AckTimeout time.Duration
}

// Queries are the observer's SQL queries (docs/target.md, "Queries").
type Queries struct {
	// EventRows counts the stored keys of one event; must reference $3.
	EventRows string
	// Effects counts the business effects of one event; $3 or $4.
	Effects string
	// ObjectEffects counts the effects on one object; $4 (domain-constraint).
	ObjectEffects string
	// Object returns (version[, status]) of a versioned object; $4 (ordering).
	Object string
	// Payment returns (status) of a payment; $4 (state-machine).
	Payment string
	// PayloadPresent returns (boolean): the key row still holds its payload;
	// $3 (retention).
	PayloadPresent string
	// Quiescent returns one boolean, true when no accepted work is pending; no
	// parameters (async receivers).
	Quiescent string
	// ObjectChildren returns (key): the ordering key an ordered object's child
	// rows were last written from; $4 (events.ordered.children, ORDER-6).
	ObjectChildren string
}

// Lifecycle is how the harness starts and stops the receiver process
// (target.lifecycle).
type Lifecycle struct {
	// Command is the program and its arguments, run directly (no shell).
	Command []string
	// Env is added to (and overrides) the test's environment.
	Env map[string]string
	// Dir is the working directory (default: the test's).
	Dir string
	// ReadyPath answers 2xx under BaseURL once the receiver is ready;
	// ReadyTimeout bounds the wait (default 30 s).
	ReadyPath    string
	ReadyTimeout time.Duration
	// StopGrace is how long a stopping receiver gets before SIGKILL (default 5 s).
	StopGrace time.Duration
	// Worker runs the receiver's workers as processes of their own, which the
	// harness can kill alone (capability inbox or outbox).
	Worker *Worker
}

// Worker is the receiver's separate worker process (target.lifecycle.worker).
type Worker struct {
	Command []string
	// Env goes over Lifecycle.Env.
	Env map[string]string
	Dir string
	// Processes is how many run side by side (default 1, at most 8).
	Processes int
}

// Inbox is the receiver's declared inbox (target.inbox).
type Inbox struct {
	// Lease is how long a worker's claim lasts before the event is offered again.
	Lease time.Duration
	// MaxAttempts is how many attempts an event gets before it is
	// dead-lettered (0: not declared).
	MaxAttempts int
	// Table is the table the workers claim in and mark done (default
	// Target.EventTable); the harness may lock it.
	Table string
	// State returns (state, attempts) of one event's accepted work, its state
	// mapped onto pending, processing, done or dead; $3.
	State string
}

// Outbox is the receiver's declared outbox (target.outbox): its downstream
// calls go to the harness's sink, {{.SinkURL}}.
type Outbox struct {
	// KeyHeader carries the operation key (default Idempotency-Key).
	KeyHeader string
	// MaxAttempts is how many calls a message gets before it is dead-lettered.
	MaxAttempts int
	// State returns (state, attempts) of one event's downstream message,
	// mapped onto pending, processing, sent or dead; $3.
	State string
}

// Timeouts bound the observer (zero fields take their 5 s defaults).
type Timeouts struct {
	Connect, Statement, Lock time.Duration
}

// Fixture creates one business object. Set exactly one of SQL (run on the
// receiver's database with $1 source, $2 account, $4 object ID, $5 amount,
// $6 currency; must reference $4) and Func.
type Fixture struct {
	SQL  string
	Func func(ctx context.Context, d vocab.ObjectData) error
}

// Retention is the receiver's declared two-tier retention and its purge
// (target.retention). Set one way to purge: Purge, or one of PurgeSQL,
// PurgeCommand and PurgeHTTPPath, as in a target file.
type Retention struct {
	// KeyTTL and PayloadTTL apply to endpoints that set none.
	KeyTTL, PayloadTTL time.Duration
	// Purge purges the receiver as if its clock read asOf, and returns when done.
	Purge func(ctx context.Context, asOf time.Time) error
	// PurgeSQL runs on the receiver's database with $1 = the as-of time.
	PurgeSQL string
	// PurgeCommand is run directly; "{{.AsOf}}" in an argument is the as-of time.
	PurgeCommand []string
	// PurgeHTTPPath is POSTed under BaseURL with {"as_of": "<RFC 3339>"}.
	PurgeHTTPPath string
}

// ModelAckTimeout is the acknowledgement timeout of an endpoint whose profile
// documents none and that sets no AckTimeout (hookcert's model, labelled so in
// the reports).
const ModelAckTimeout = 10 * time.Second
