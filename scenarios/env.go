package scenarios

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Env is everything the scenarios need to reach one target. The harness builds it
// from a target file (see cmd/hookcert); tests may build it by hand. Optional parts
// are nil when the target does not offer them, and the guarantees that need them
// are reported not applicable.
type Env struct {
	// RunID namespaces every event and object ID of this run, so a run never
	// collides with old data or with another run against the same receiver. It
	// is the only part of a run not derived from the seed.
	RunID string
	// Endpoints are the target's delivery endpoints.
	Endpoints []Endpoint
	// Capabilities the target declares.
	Capabilities []string
	// Observer reads the receiver's state (required).
	Observer Observer
	// ObserverKind is the kind of store the observer reads (postgres, mysql,
	// redis, command, http): what the harness can do there besides reading.
	ObserverKind string
	// Queries reports whether the observer answers a named query (nil: only
	// the required ones are known to be answered).
	Queries func(name string) bool
	// Unanswered says why the observer does not answer a query the target
	// configures ("" when it does, or the query is not configured): a store
	// whose stated capabilities leave it out.
	Unanswered func(name string) string
	// Controller kills and restarts the receiver (capability crash).
	Controller Controller
	// Failpoints arms the receiver's failpoints (capability failpoints).
	Failpoints Failpoints
	// DB forces races and connection loss in the receiver's database
	// (capabilities lock-gating and connection-loss).
	DB DBFaults
	// Activity reads whether the receiver is still busy in its database (nil:
	// the harness only waits for its own attempts between scenarios).
	Activity Activity
	// Reachable checks that a receiver the harness does not control still
	// answers HTTP (nil: not checked).
	Reachable func(ctx context.Context) error
	// EventTable and EffectTable are the tables the harness may lock.
	EventTable  string
	EffectTable string
	// MaxBodyBytes is the largest body the provider may send (limits.max_body_bytes).
	MaxBodyBytes int
	// TimeScale compresses providers' retry schedules (provider seconds per real
	// second).
	TimeScale float64
	// Retention purges the receiver as of a chosen time and reads whether a
	// payload is still stored (capability retention).
	Retention Retention
	// Vocab is the receiver's event vocabulary: declared in the target file, or
	// vocab.BuiltinVocabulary for the conformance domain (nil means the latter).
	Vocab *vocab.Vocabulary
	// Idempotency is how the receiver makes a redelivery harmless: "" or
	// "ledger" (an event ledger the event_rows query counts),
	// "object-version" (no ledger: each object carries the ordering key of
	// the last event applied to it), "both".
	Idempotency string
	// Acceptance says whether the receiver applies events after its 2xx, and
	// how long it may take.
	Acceptance vocab.Acceptance
	// Quiescent reports whether the receiver has no accepted work left pending
	// (the target's quiescent query); nil when the target declares none.
	Quiescent func(ctx context.Context) (bool, error)
	// Fixtures create the business objects a receiver expects to exist before
	// events about them arrive (nil when the target declares none).
	Fixtures Fixtures
	// CrashUnavailable says why the receiver cannot be killed on this platform
	// ("" where it can): the crash capability is then not applicable.
	CrashUnavailable string
	// Workers kills and restarts the receiver's worker processes alone
	// (target.lifecycle.worker); nil when its workers run inside the receiver,
	// and a crash of the receiver is also one of its workers.
	Workers Workers
	// Queue reads each event's accepted work and downstream message
	// (capabilities inbox and outbox); nil when the target declares neither.
	Queue QueueObserver
	// Inbox is the declared inbox (capability inbox).
	Inbox InboxSpec
	// Outbox is the declared outbox (capability outbox).
	Outbox OutboxSpec
	// Sink is the harness's downstream service the receiver calls (capability
	// outbox); nil when the run has none.
	Sink Sink
	// ProviderAPI is the provider's read API the receiver refetches objects
	// from (capability refetch); nil when the run has none.
	ProviderAPI ProviderAPI
}

// ProviderAPI is the harness's provider API: it answers with each object's
// newest state as the simulator's model knows it. The session tells it every
// event it sends (Put, Delete); scenarios queue faults and read the calls.
type ProviderAPI interface {
	// Put tells the API an object's state as of one event: the newest
	// ordering key wins; an equal key replaces it unless stale is set.
	Put(objectID string, body json.RawMessage, key int64, stale bool)
	// Delete makes the object answer 404 from now on.
	Delete(objectID string, key int64)
	// Fail queues faults for the next calls on the object, one per call.
	Fail(objectID string, faults ...APIFault)
	// Drain returns the calls made since the previous Drain.
	Drain() []APICall
}

// APIFault is what one call on an object gets instead of, or before, its
// answer: Status (404, 429, 5xx; 0 answers the object), Retry-After with a
// 429, and a delay first (bounded by the API).
type APIFault struct {
	Status     int
	RetryAfter time.Duration
	Delay      time.Duration
}

// APICall is one call the receiver made to the provider API.
type APICall struct {
	Seq              int
	At               time.Time
	Method, Path     string
	Provider, Object string
	Status           int
	Fault            string
	Key              int64
}

// InboxSpec is what a target declares of its inbox workers.
type InboxSpec struct {
	// Lease is how long a worker's claim lasts before the event is offered again.
	Lease time.Duration
	// MaxAttempts is how many attempts an event gets before it is dead-lettered
	// (0: not declared).
	MaxAttempts int
	// Table is the table the workers claim in and mark done (the event table
	// when not declared); the harness may lock it.
	Table string
}

// OutboxSpec is what a target declares of its outbox.
type OutboxSpec struct {
	// MaxAttempts is how many calls a message gets before it is dead-lettered
	// (0: not declared).
	MaxAttempts int
	// HasState says the target gives the outbox state query.
	HasState bool
}

// QueueState is one event's row in the receiver's inbox or outbox.
type QueueState struct {
	// State is one of pending, processing, done (sent for the outbox), dead.
	State    string
	Attempts int
	Found    bool
}

// QueueObserver reads the receiver's inbox and outbox by event key.
type QueueObserver interface {
	InboxState(ctx context.Context, k profiles.Key) (QueueState, error)
	OutboxState(ctx context.Context, k profiles.Key) (QueueState, error)
}

// Sink is the downstream service the receiver's outbox calls. Calls are
// attributed to events by the event ID their body carries.
type Sink interface {
	// Calls returns the calls whose body carries eventID, in arrival order.
	Calls(eventID string) []SinkCall
	// Fail answers status, applying nothing, to the next n calls for eventID.
	Fail(eventID string, n, status int)
	// Lose applies the next n calls for eventID and drops their responses.
	Lose(eventID string, n int)
	// HoldAfterApply applies the next call for eventID and withholds its
	// response for d, or until the caller goes away.
	HoldAfterApply(eventID string, d time.Duration)
}

// SinkCall is one downstream call.
type SinkCall struct {
	Seq int
	At  time.Time
	// Key is the call's operation key ("" when absent).
	Key string
	// Status answered (0: lost or withheld) and Outcome (applied, replayed,
	// failed, lost, key_reused, bad_request; "" while it is being answered).
	Status  int
	Outcome string
}

// Fixtures create business objects in the receiver, the way its own
// application would before the provider sends events about them.
type Fixtures interface {
	// Create runs the named fixture for one object.
	Create(ctx context.Context, name string, d vocab.ObjectData) error
}

// Retention is the receiver's declared purge and the payload observation the
// RETENTION guarantees need.
type Retention interface {
	// Purge asks the receiver to purge as if its clock read asOf, and waits.
	Purge(ctx context.Context, asOf time.Time) error
	// PayloadPresent reports whether the event's key row still holds its payload;
	// found is false when the key row is gone.
	PayloadPresent(ctx context.Context, k profiles.Key) (present, found bool, err error)
}

// Endpoint is one delivery endpoint of the target.
type Endpoint struct {
	Profile profiles.Profile
	// Source is the event key's source for deliveries here (the profile ID unless
	// the target file says otherwise).
	Source  string
	Account string
	URL     string
	Secrets []string
	// KeyTTL and PayloadTTL are the receiver's declared retention for this
	// endpoint (0 when not declared).
	KeyTTL     time.Duration
	PayloadTTL time.Duration
	// AckTimeout is the acknowledgement timeout ACK-2 holds deliveries here to:
	// the target's ack_timeout, else the profile's documented one, else a
	// labelled model (AckTimeoutModel is then true); 0 when none applies.
	AckTimeout      time.Duration
	AckTimeoutModel bool
}

// Observer reads the receiver's state through the target's queries. Optional
// queries return ErrNotConfigured-wrapping errors when absent.
type Observer interface {
	EventRows(ctx context.Context, k profiles.Key) (int, error)
	// Effects counts the effects of one event of the effect role; objectID is
	// the event's business object ($4), which a receiver may count by instead.
	Effects(ctx context.Context, k profiles.Key, objectID string) (int, error)
	ObjectEffects(ctx context.Context, source, account, objectID string) (int, error)
	Object(ctx context.Context, source, account, objectID string) (version int64, status string, found bool, err error)
	Payment(ctx context.Context, source, account, objectID string) (status string, found bool, err error)
	// KeyTTL reads how long one event's key has left before the store expires
	// it (the key_ttl query): found is false when the key is gone, never true
	// when it does not expire.
	KeyTTL(ctx context.Context, k profiles.Key) (ttl time.Duration, never, found bool, err error)
}

// RoleObserver reads the queries of the roles after the first of each kind,
// by their names (vocab.QueryName: "payment:refund" answers as payment does).
// An observer without it answers the first role of each kind alone.
type RoleObserver interface {
	EffectsOf(ctx context.Context, query string, k profiles.Key, objectID string) (int, error)
	ObjectEffectsOf(ctx context.Context, query, source, account, objectID string) (int, error)
	ObjectOf(ctx context.Context, query, source, account, objectID string) (version int64, status string, found bool, err error)
	PaymentOf(ctx context.Context, query, source, account, objectID string) (status string, found bool, err error)
}

// Controller crashes and restarts the receiver.
type Controller interface {
	// Kill sends SIGKILL and waits for the process to be gone.
	Kill() error
	// WaitExit waits for a process that is crashing by itself (a failpoint).
	WaitExit(ctx context.Context) error
	// Restart starts the receiver again and waits until it is ready.
	Restart(ctx context.Context) error
	// Alive reports whether the receiver process is running and, when it is
	// not, how it ended and the last of its output (scrubbed).
	Alive() (ok bool, why string)
}

// Workers controls a receiver's separate worker processes. Controller.Kill and
// Restart act on them too; these act on them alone, the receiver's HTTP side
// left running.
type Workers interface {
	// Processes is how many worker processes run.
	Processes() int
	// Kill sends SIGKILL to every worker process and waits until they are gone.
	Kill() error
	// Restart starts the ones not running again.
	Restart(ctx context.Context) error
	// KillHolder sends SIGKILL to the one worker process whose database session
	// waits on g, and waits until it is gone, the others left running; it
	// returns that process's number (from 1), or 0 when it cannot tell which
	// process it is (then nothing was killed).
	KillHolder(ctx context.Context, g Gate) (int, error)
}

// Failpoints arms the receiver's failpoints (docs/failpoints.md).
type Failpoints interface {
	Arm(ctx context.Context, point, eventID, action string) error
	Reset(ctx context.Context) error
}

// DBFaults forces races and connection loss in the receiver's database.
type DBFaults interface {
	// Hold locks table in SHARE mode until the gate is released.
	Hold(ctx context.Context, table string) (Gate, error)
	// TerminateWaiters terminates the receiver's sessions that wait on g — the
	// ones the current scenario stopped, not whatever else is running — and
	// returns their pids. With ownOnly, a session whose transaction began
	// before g's lock was taken is another scenario's work and is left alone.
	TerminateWaiters(ctx context.Context, g Gate, ownOnly bool) ([]int, error)
}

// Activity tells whether the receiver still has work in flight in its database,
// so that one scenario's stragglers cannot disturb the next.
type Activity interface {
	// Busy counts the receiver's sessions that run a statement, hold a
	// transaction open or wait on a lock, and describes them briefly.
	Busy(ctx context.Context) (n int, detail string, err error)
}

// Gate is a held table lock.
type Gate interface {
	// Held counts the receiver's sessions the lock holds now.
	Held(ctx context.Context) (GateHeld, error)
	Release(ctx context.Context) error
}

// GateHeld is who a lock gate holds at one moment.
type GateHeld struct {
	// AtGate waits on the lock and Behind on a lock one of those holds (a row
	// lock the receiver took before it reached the locked table): sessions
	// whose transaction began after the lock was taken.
	AtGate, Behind int
	// Foreign waits on the lock in a transaction that began before it was
	// taken: work that was already running.
	Foreign int
}
