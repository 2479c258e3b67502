package scenarios

import (
	"fmt"
	"strings"
)

// Capability names a feature a target declares in its target file. A guarantee that
// needs a capability the target does not declare is reported not_applicable.
type Capability = string

// Guarantee is one documented promise with a stable ID. IDs are never reused or
// renumbered once published: reports and CI configurations refer to them.
type Guarantee struct {
	ID     string `json:"id"`
	Family string `json:"family"`
	// Title is a few words for tables; Promise is the one-sentence promise.
	Title   string `json:"title"`
	Promise string `json:"promise"`
	// Why names the failure the promise prevents.
	Why string `json:"why"`
	// Needs lists the capabilities the target must declare for the check to apply.
	Needs []Capability `json:"needs,omitempty"`
	// Scenarios names the checks (Ginkgo specs) that judge the promise.
	Scenarios []string `json:"scenarios"`
	// Codes are the deviation codes its checker can report (see DeviationCodes),
	// besides the reconciliation's, which every scenario can report.
	Codes []string `json:"codes"`
	// Sends says which of the target's declared roles it delivers, and how;
	// Expects what it then holds the receiver to.
	Sends   string `json:"sends"`
	Expects string `json:"expects"`
}

// sendsExpects documents, per guarantee, what it delivers in terms of the
// target's declared roles and what it expects back (docs/guarantees.md).
var sendsExpects = map[string][2]string{
	"DEDUP-1":     {"16 copies of one `effect` event, released together, on every endpoint", "every copy 2xx; 1 event row; 1 effect"},
	"DEDUP-2":     {"one `effect` event per endpoint, its first 2xx thrown away, redelivered after the profile's first retry delay, then resent", "every attempt 2xx; 1 event row; 1 effect"},
	"DEDUP-3":     {"one `effect` event ID to two accounts' endpoints", "both 2xx; 1 row and 1 effect under each account"},
	"DEDUP-4":     {"one `effect` event ID through two sources' endpoints", "both 2xx; 1 row and 1 effect under each source"},
	"DEDUP-5":     {"two `effect` events with byte-identical bodies and different header event IDs", "both 2xx; 1 row and 1 effect each"},
	"DEDUP-6":     {"a `lifecycle` object brought to an effect transition's from-state, then that transition twice under two event IDs: one after the other, then at once", "the object's effects are its path's plus one"},
	"ATOMIC-1":    {"one `effect` event, crashed inside its transaction (failpoint, or SIGKILL while it waits on the locked effect table), then redelivered", "not acknowledged; 0 rows and 0 effects after the restart; the redelivery 2xx, 1 row, 1 effect (async acceptance: accepted, then applied once)"},
	"ATOMIC-2":    {"for every state, each `lifecycle` event that can only follow it later, sent early, then again once its precondition holds", "the early one non-2xx with 0 event rows; the redelivery 2xx, 1 row, the object in the transition's state"},
	"ATOMIC-3":    {"one `effect` event whose database sessions are terminated while it waits on the locked effect table, then redelivered", "as ATOMIC-1"},
	"ATOMIC-4":    {"one `effect` event crashed after commit, before its answer (failpoint), then redelivered", "1 row and 1 effect after the restart; the redelivery 2xx, still 1 and 1"},
	"ATOMIC-5":    {"every `lifecycle` event type for an object that does not exist; then the object is created (its creating event or fixture) and brought to the event's precondition, and a refused event redelivered", "per the declared `missing`: retry: non-2xx and 0 rows, then applied once; create: 2xx and the object in the event's state; ignore: 2xx"},
	"ACK-1":       {"3 rounds of 16 concurrent `effect` events, SIGKILL after the k-th 2xx (k from the seed), restart, all redelivered (failpoint after-response where declared)", "every acknowledged event has 1 row and 1 effect after the restart; after the redelivery every event has 1 and 1"},
	"ACK-2":       {"64 concurrent `effect` events to the endpoint with the shortest timeout, then 8 to every other profile's", "every delivery 2xx within its endpoint's timeout"},
	"ACK-3":       {"a tampered body, a wrong secret and no signature on every endpoint, beside a valid `effect` event (the positive control)", "4xx and nothing stored; the control 2xx, 1 row, 1 effect"},
	"ACK-4":       {"an `effect` event signed beyond the tolerance, two signed inside it (half the tolerance ago, a minute ahead) and a control, on every timestamp-signing endpoint", "beyond: 4xx, nothing stored; inside and the control: 2xx, 1 row, 1 effect"},
	"ACK-5":       {"malformed JSON, no event ID and a body twice the size limit on every endpoint, beside a control", "4xx and nothing stored; the control applied"},
	"ACK-6":       {"an `unhandled` event on every endpoint, beside a control", "2xx and 0 effects once the receiver has settled; the control applied"},
	"ACK-7":       {"an `effect` event padded with JSON whitespace to 1 KiB under the size limit, on every endpoint", "2xx, 1 row, 1 effect"},
	"ORDER-1":     {"`ordered` updates of one object with keys 1, 3, 2, each after the previous settled", "the state query returns key 3"},
	"ORDER-2":     {"keys 1..8 of one object, each twice, shuffled by the seed, in two concurrent halves (lock-gated where allowed), then an old key resent and an old key under a new event ID", "the state query returns key 8"},
	"ORDER-3":     {"for every reachable `lifecycle` state, a fresh object brought there, then every event type it is past, under a new event ID", "the state and the object's effects unchanged"},
	"ORDER-4":     {"`ordered` update 1 of an object, its deletion carrying key 3, then update 2 under a new event ID", "the object reads the same after the stale update as after the deletion (no row, or the deletion's tombstone)"},
	"RETENTION-1": {"one `effect` event, a purge as of the end of the provider's redelivery horizon, a redelivery", "the declared key TTL covers the horizon; the key survives; the redelivery 2xx and no second effect"},
	"RETENTION-2": {"one `effect` event, a purge as of the key TTL minus an hour, a replay", "the replay 2xx and no second effect"},
	"RETENTION-3": {"one `effect` event, purges just past the payload TTL and inside the key TTL", "the payload gone, the key kept; a replay harmless"},
	"RETENTION-4": {"one `effect` event, a ladder of purges past the key TTL", "the key gone past its TTL; no payload outlives its key"},
	"INBOX-1":     {"8 concurrent `effect` events while the harness locks the inbox table (`inbox.table`, else the event table: nothing can be accepted) and the effect table (no worker can apply); SIGKILL once they are answered, or at once if one is answered while nothing could be stored; restart", "every acknowledged event in the inbox after the restart, then applied once; the unacknowledged redelivered and applied once"},
	"INBOX-2":     {"8 concurrent `effect` events accepted while the effect table is locked, so every worker stands at its business change; then released together", "each event applied once and done"},
	"INBOX-3":     {"one `effect` event accepted; its worker stopped at the locked effect table and SIGKILLed: where `lifecycle.worker` declares several processes, only the one holding the claim, the others left running; with one, the worker process alone, and a second event delivered while none runs; else the receiver; restart; wait past the declared lease", "the event claimed again and done, applied once (by a surviving worker process, before anything restarts, where one was left running); the second event acknowledged, stored and applied once"},
	"INBOX-4":     {"one `effect` event accepted; its worker let through its business change and stopped at the inbox table before marking the event done; SIGKILL (the worker processes alone where declared); restart; wait past the lease", "the event dispatched again and done, applied once in all"},
	"INBOX-5":     {"one `effect` event accepted; its worker's session terminated at the locked effect table", "the event retried and done, applied once, with at least 2 attempts recorded"},
	"INBOX-6":     {"one `effect` event accepted; every attempt's session terminated at the locked effect table, up to the declared max_attempts", "the event dead-lettered (state dead), still stored, never applied"},
	"INBOX-7":     {"8 `effect` events accepted while the effect table is locked (none done), then a purge as of ten key TTLs later, then released", "every event still there and applied once"},
	"OUTBOX-1":    {"4 concurrent copies of one `effect` event; the sink applies the first downstream call and drops its response, then fails the second with 503", "calls retried with one operation key; applied once downstream"},
	"OUTBOX-2":    {"one `effect` event; the sink applies its first downstream call and withholds the answer while the harness SIGKILLs the receiver; restart", "the call resent with the same operation key and answered 2xx; applied once downstream"},
	"OUTBOX-3":    {"one `effect` event whose transaction is cut by SIGKILL while it waits on the locked effect table; restart; then as ATOMIC-1", "no downstream call before the restart; then applied once downstream"},
	"OUTBOX-4":    {"one `effect` event; the sink answers every downstream call 503", "at least 2 calls, one operation key, then the message dead-lettered (state dead), not marked sent"},
}

func init() {
	for i := range catalogue {
		se := sendsExpects[catalogue[i].ID]
		catalogue[i].Sends, catalogue[i].Expects = se[0], se[1]
	}
}

// Families in report order.
var Families = []string{"DEDUP", "ATOMIC", "ACK", "ORDER", "RETENTION", "INBOX", "OUTBOX"}

var catalogue = []Guarantee{
	{
		ID: "DEDUP-1", Family: "DEDUP", Title: "Concurrent duplicates",
		Promise:   "Concurrent copies of one delivery converge on one event row and one effect, and every copy is acknowledged.",
		Why:       "Providers retry while a first attempt is still running; a check-then-insert receiver applies the event twice.",
		Scenarios: []string{"16 copies released together (lock-gated when the target allows it)"},
		Codes:     []string{"dedup.not-acked", "dedup.rows", "dedup.effects"},
	},
	{
		ID: "DEDUP-2", Family: "DEDUP", Title: "Redelivery after a lost acknowledgement",
		Promise:   "A redelivery after a lost acknowledgement is acknowledged and changes nothing.",
		Why:       "The provider never saw the first 2xx, so it sends the event again; a receiver that errors on the duplicate is retried for days.",
		Scenarios: []string{"first response discarded, redelivered per the profile's schedule"},
		Codes:     []string{"dedup.not-acked", "dedup.rows", "dedup.effects"},
	},
	{
		ID: "DEDUP-3", Family: "DEDUP", Title: "Account scope",
		Promise:   "The same event ID under another account is a different event and is applied.",
		Why:       "Event IDs are unique per provider account at best; a global key silently drops another tenant's event.",
		Needs:     []Capability{"multi-account"},
		Scenarios: []string{"one event ID delivered to two accounts' endpoints"},
		Codes:     []string{"dedup.not-acked", "dedup.rows", "dedup.effects"},
	},
	{
		ID: "DEDUP-4", Family: "DEDUP", Title: "Source scope",
		Promise:   "The same event ID from another source is a different event and is applied.",
		Why:       "Two providers (or test and live) can produce the same ID; keying on the ID alone drops one of them.",
		Needs:     []Capability{"multi-source"},
		Scenarios: []string{"one event ID delivered through two profiles' endpoints"},
		Codes:     []string{"dedup.not-acked", "dedup.rows", "dedup.effects"},
	},
	{
		ID: "DEDUP-5", Family: "DEDUP", Title: "Identical payloads, different IDs",
		Promise:   "Different event IDs with identical payload text are different events and are both applied.",
		Why:       "Deduplicating on a hash of the body drops genuinely repeated business events (two equal top-ups).",
		Needs:     []Capability{"header-event-id"},
		Scenarios: []string{"two event IDs, byte-identical bodies"},
		Codes:     []string{"dedup.not-acked", "dedup.rows", "dedup.effects"},
	},
	{
		ID: "DEDUP-6", Family: "DEDUP", Title: "One business operation, one effect",
		Promise:   "Two different event IDs for one business operation are held to one effect by a domain constraint.",
		Why:       "Providers sometimes emit two events for one change; the event key alone cannot stop a double credit.",
		Needs:     []Capability{"domain-constraint"},
		Scenarios: []string{"two succeeded events for one payment, sequential and concurrent"},
		Codes:     []string{"dedup.not-acked", "dedup.object-effects"},
	},
	{
		ID: "ATOMIC-1", Family: "ATOMIC", Title: "Crash before commit",
		Promise:   "A crash before commit leaves neither the key nor the change, and a redelivery after restart applies the event once.",
		Why:       "A key committed apart from its change turns a crash into a lost event; a change committed apart from its key turns it into a double.",
		Needs:     []Capability{"crash", "stop-in-transaction"},
		Scenarios: []string{"crash at after-insert-before-commit (failpoints), or SIGKILL while the receiver waits inside its transaction on the locked effect table; restart, redeliver"},
		Codes:     []string{"atomic.acked-uncommitted", "atomic.partial", "atomic.not-acked", "atomic.not-applied"},
	},
	{
		ID: "ATOMIC-2", Family: "ATOMIC", Title: "Failed precondition rolls back",
		Promise:   "A failed business precondition rolls back the key with the change and answers non-2xx; a later redelivery succeeds.",
		Why:       "If the key survives the failed attempt, every redelivery is taken for a duplicate and the event is lost.",
		Needs:     []Capability{"state-machine"},
		Scenarios: []string{"from every state, every event that can only come later (a refund of a payment not yet succeeded) sent before its precondition, then after"},
		Codes:     []string{"atomic.acked-uncommitted", "atomic.partial", "atomic.not-acked", "atomic.not-applied", "atomic.object-state"},
	},
	{
		ID: "ATOMIC-3", Family: "ATOMIC", Title: "Lost database connection",
		Promise:   "A database connection lost in the middle of the transaction leaves nothing partial, and a redelivery applies the event once.",
		Why:       "A receiver that committed part of its work in an earlier transaction is left half-done by a network blip.",
		Needs:     []Capability{"connection-loss"},
		Scenarios: []string{"effect table gated, receiver's backends terminated mid-transaction, redeliver"},
		Codes:     []string{"atomic.acked-uncommitted", "atomic.partial", "atomic.not-acked", "atomic.not-applied"},
	},
	{
		ID: "ATOMIC-4", Family: "ATOMIC", Title: "Commit uncertainty is retryable",
		Promise:   "When the receiver dies after commit but before answering, the redelivery is acknowledged and applies nothing twice.",
		Why:       "The provider cannot know the commit happened; the receiver must make its retry harmless.",
		Needs:     []Capability{"crash", "failpoints"},
		Scenarios: []string{"crash at after-commit-before-response, restart, redeliver"},
		Codes:     []string{"atomic.not-acked", "atomic.not-applied"},
	},
	{
		ID: "ATOMIC-5", Family: "ATOMIC", Title: "Event before its object",
		Promise:   "An event for an object that does not exist yet is never acknowledged and lost: it is answered non-2xx and applied once the object exists and the provider redelivers it, or it creates the object, as the target declares.",
		Why:       "Providers send events before the receiver's own application has written the row they refer to; a receiver that acknowledges and skips them loses the change for good.",
		Needs:     []Capability{"state-machine"},
		Scenarios: []string{"every event type of the lifecycle for an object nobody created yet; then the object is created and brought to the event's precondition, and the provider redelivers"},
		Codes:     []string{"atomic.missing-lost", "atomic.partial", "atomic.not-acked", "atomic.object-state"},
	},
	{
		ID: "ACK-1", Family: "ACK", Title: "2xx only after durability",
		Promise:   "Every acknowledged event is durable: killed right after its 2xx and restarted, the receiver still has it.",
		Why:       "An acknowledgement sent before the commit tells the provider to stop retrying an event that may be lost.",
		Needs:     []Capability{"crash"},
		Scenarios: []string{"kill right after each 2xx (failpoint after-response where declared), restart, observe"},
		Codes:     []string{"ack.lost", "ack.effects"},
	},
	{
		ID: "ACK-2", Family: "ACK", Title: "Acknowledgement within the timeout",
		Promise:   "Under 64 concurrent deliveries every delivery is acknowledged within the endpoint's timeout (the target's ack_timeout, else the profile's documented one, else hookcert's labelled 10 s model).",
		Why:       "A provider that times out counts the delivery as failed and sends it again, multiplying load exactly when the receiver is slow.",
		Scenarios: []string{"64 concurrent distinct events on the endpoint with the shortest timeout, then 8 at once on every other profile's, each held to its own timeout"},
		Codes:     []string{"ack.timeout"},
	},
	{
		ID: "ACK-3", Family: "ACK", Title: "Bad signatures rejected",
		Promise:   "A delivery with a bad signature, a tampered body, a wrong secret or no signature gets a 4xx and leaves nothing behind.",
		Why:       "Anyone who knows the URL could otherwise forge events.",
		Scenarios: []string{"tampered body, wrong secret, missing signature"},
		Codes:     []string{"ack.accepted-bad-input", "ack.stored-bad-input", "ack.control-rejected"},
	},
	{
		ID: "ACK-4", Family: "ACK", Title: "Stale timestamps rejected",
		Promise:   "A correctly signed delivery whose signed timestamp is outside the profile's tolerance gets a 4xx and leaves nothing behind.",
		Why:       "Without the recency check a captured delivery can be replayed forever.",
		Needs:     []Capability{"signed-timestamp"},
		Scenarios: []string{"signed beyond the tolerance (refused); signed half the tolerance ago and a minute ahead (both accepted)"},
		Codes:     []string{"ack.accepted-bad-input", "ack.stored-bad-input", "ack.control-rejected", "ack.boundary-rejected", "ack.boundary-not-applied"},
	},
	{
		ID: "ACK-5", Family: "ACK", Title: "Malformed deliveries rejected",
		Promise:   "A signed delivery with malformed JSON, no event ID, or an oversized body gets a 4xx and leaves nothing behind.",
		Why:       "Storing an event without an ID, or reading unbounded bodies, corrupts the key space or exhausts memory.",
		Scenarios: []string{"malformed JSON, missing event ID, a body twice the size limit, on every endpoint"},
		Codes:     []string{"ack.accepted-bad-input", "ack.stored-bad-input", "ack.control-rejected"},
	},
	{
		ID: "ACK-6", Family: "ACK", Title: "Unknown types acknowledged",
		Promise:   "A valid delivery of an event type the receiver does not handle is acknowledged and changes no business state.",
		Why:       "Rejecting unknown types makes the provider retry them for days and can get the endpoint disabled.",
		Scenarios: []string{"a signed event of an unhandled type on every endpoint, read once the receiver has settled"},
		Codes:     []string{"ack.unknown-type-rejected", "ack.unknown-type-applied", "ack.control-rejected"},
	},
	{
		ID: "ACK-7", Family: "ACK", Title: "Large legitimate bodies accepted",
		Promise:   "A legitimate, correctly signed delivery just under the size limit (the target's limits.max_body_bytes, 1 MiB by default) is acknowledged and applied.",
		Why:       "A body cap tighter than what the provider sends rejects real events; the provider retries them until it gives up, and the change is lost.",
		Scenarios: []string{"a valid event padded to 1 KiB under the limit, on every endpoint"},
		Codes:     []string{"ack.boundary-rejected", "ack.boundary-not-applied"},
	},
	{
		ID: "ORDER-1", Family: "ORDER", Title: "Late older update",
		Promise:   "An older update arriving after a newer one does not regress the object.",
		Why:       "Providers do not keep order; deduplication alone lets version 2 overwrite version 3.",
		Needs:     []Capability{"ordering"},
		Scenarios: []string{"version 3, then version 2"},
		Codes:     []string{"order.not-acked", "order.regressed"},
	},
	{
		ID: "ORDER-2", Family: "ORDER", Title: "Shuffled duplicated stream",
		Promise:   "A shuffled, duplicated stream of versioned updates ends at the newest version.",
		Why:       "Retries and parallel delivery interleave versions arbitrarily.",
		Needs:     []Capability{"ordering"},
		Scenarios: []string{"versions 1..N duplicated and shuffled by the seed, sent concurrently"},
		Codes:     []string{"order.not-acked", "order.regressed"},
		// Concurrent copies in the stream race without a unique key: the
		// reconciliation then finds a duplicated event row.
	},
	{
		ID: "ORDER-3", Family: "ORDER", Title: "Invalid transitions refused",
		Promise:   "An event the object is already past never moves it back, from any state (a late succeeded never undoes a refund; a late failure never undoes a success).",
		Why:       "Out-of-order events otherwise move objects backwards in their lifecycle.",
		Needs:     []Capability{"state-machine"},
		Scenarios: []string{"every reachable state, then every event type it is past, each under a new event ID"},
		Codes:     []string{"order.not-acked", "order.transition-applied"},
	},
	{
		ID: "ORDER-4", Family: "ORDER", Title: "No resurrection",
		Promise:   "An update older than a deletion, arriving after it, does not bring the deleted object back.",
		Why:       "A retry of an old update that loses the race with the delete recreates the object with stale data when the receiver upserts without remembering the deletion.",
		Needs:     []Capability{"ordering", "deletion"},
		Scenarios: []string{"update 1, deletion carrying key 3, then update 2 under a new event ID"},
		Codes:     []string{"order.not-acked", "order.resurrected"},
	},
	{
		ID: "RETENTION-1", Family: "RETENTION", Title: "Key TTL covers the redelivery horizon",
		Promise:   "Every endpoint's declared key TTL covers its provider's redelivery horizon (automatic retries and manual resend), and a key purged as of the end of that horizon is still there: the redelivery is a duplicate.",
		Why:       "Advice like \"keep IDs for 5 minutes\" meets retry schedules of days and resend buttons of weeks; a key deleted first turns a redelivery into a second effect.",
		Needs:     []Capability{"retention"},
		Scenarios: []string{"declared key TTL against the profile's retry horizon and manual resend window (with sources); purge as of the end of the horizon, then redeliver"},
		Codes:     []string{"retention.ttl-below-horizon", "retention.key-purged-early", "retention.replay-applied"},
	},
	{
		ID: "RETENTION-2", Family: "RETENTION", Title: "Replay inside the key TTL",
		Promise:   "After a purge as of just inside the key TTL, a replay of the event is acknowledged and has no second effect.",
		Why:       "A purge that removes keys early (a wrong TTL, or a purge that deletes more than it should) makes old events look new.",
		Needs:     []Capability{"retention"},
		Scenarios: []string{"deliver, purge as of key TTL − 1 h, replay"},
		Codes:     []string{"retention.key-purged-early", "retention.replay-applied"},
	},
	{
		ID: "RETENTION-3", Family: "RETENTION", Title: "Payloads expire before keys",
		Promise:   "After a purge as of just past the payload TTL, the stored payload is gone and the key remains and still deduplicates.",
		Why:       "Payloads carry personal data nobody needs once processed; keys must stay to keep deduplicating.",
		Needs:     []Capability{"retention"},
		Scenarios: []string{"deliver, purge as of payload TTL + 1 h, read payload_present and event_rows, replay"},
		Codes:     []string{"retention.payload-kept", "retention.key-purged-early", "retention.replay-applied"},
	},
	{
		ID: "RETENTION-4", Family: "RETENTION", Title: "Keys expire",
		Promise:   "After a purge as of past the key TTL, the key (and its payload) is gone: data is not kept forever. The replay-protection window actually measured is reported.",
		Why:       "Keys kept forever grow without bound and keep data past any stated purpose.",
		Needs:     []Capability{"retention"},
		Scenarios: []string{"deliver, purge as of a ladder of times up to 10 × key TTL, report when the key disappeared"},
		Codes:     []string{"retention.key-kept", "retention.payload-orphaned"},
	},
	{
		ID: "INBOX-1", Family: "INBOX", Title: "Durable acceptance",
		Promise:   "An event is acknowledged only once it is durably accepted: after a crash before any worker ran, every acknowledged event is still there and is applied once.",
		Why:       "A receiver that answers 202 before its inbox row commits (or from an in-memory queue) loses acknowledged events in every deploy or crash; the provider will not resend them.",
		Needs:     []Capability{"inbox", "crash", "lock-gating"},
		Scenarios: []string{"inbox and effect tables locked, 8 concurrent deliveries, SIGKILL, restart"},
		Codes:     []string{"inbox.lost", "inbox.not-applied", "inbox.effects"},
	},
	{
		ID: "INBOX-2", Family: "INBOX", Title: "Competing workers",
		Promise:   "Competing workers apply each accepted event exactly once.",
		Why:       "Workers that poll for unprocessed rows without claiming them (FOR UPDATE SKIP LOCKED, or a conditional claim) all pick the same event and apply it once each.",
		Needs:     []Capability{"inbox", "lock-gating"},
		Scenarios: []string{"8 events accepted while the effect table is locked; workers released together"},
		Codes:     []string{"inbox.effects", "inbox.not-applied"},
	},
	{
		ID: "INBOX-3", Family: "INBOX", Title: "Worker crash, lease expiry",
		Promise:   "A worker that dies holding a claim leaves the event to be claimed again after its lease and applied once.",
		Why:       "Without lease expiry a claim outlives its worker, and the event stays claimed, acknowledged and never applied.",
		Needs:     []Capability{"inbox", "crash", "stop-in-transaction"},
		Scenarios: []string{"worker stopped at the locked effect table, SIGKILL, restart, wait past the lease; with worker processes, the one holding the claim dies alone (the others must take over), or the only one does and an event delivered meanwhile must be accepted"},
		Codes:     []string{"inbox.stuck", "inbox.not-applied", "inbox.effects", "inbox.lost"},
	},
	{
		ID: "INBOX-4", Family: "INBOX", Title: "Duplicate dispatch",
		Promise:   "An event dispatched again after its worker died mid-apply is applied only once: the change and the mark of completion commit together.",
		Why:       "A worker that commits the business change and marks the event done in a second transaction applies it twice when it dies in between and the event is dispatched again.",
		Needs:     []Capability{"inbox", "crash", "lock-gating", "stop-in-transaction"},
		Scenarios: []string{"worker stopped after its change, before marking done (inbox table locked), SIGKILL, restart, wait past the lease"},
		Codes:     []string{"inbox.effects", "inbox.stuck", "inbox.not-applied"},
	},
	{
		ID: "INBOX-5", Family: "INBOX", Title: "Transient failure retried",
		Promise:   "A transient failure in a worker is retried, and the attempt is recorded.",
		Why:       "Retries without attempt records can neither back off nor ever dead-letter: a poison event is retried forever and nobody can see why.",
		Needs:     []Capability{"inbox", "connection-loss"},
		Scenarios: []string{"worker's session terminated at the locked effect table"},
		Codes:     []string{"inbox.attempts-unrecorded", "inbox.stuck", "inbox.not-applied", "inbox.effects"},
	},
	{
		ID: "INBOX-6", Family: "INBOX", Title: "Dead letters kept",
		Promise:   "An event that keeps failing is dead-lettered after the declared attempts: kept, visible and not applied, never deleted.",
		Why:       "An acknowledged event that is dropped when it fails too often is lost without a trace; one retried forever blocks nothing but hides the failure.",
		Needs:     []Capability{"inbox-dead-letter", "connection-loss"},
		Scenarios: []string{"every attempt's session terminated at the locked effect table, up to max_attempts"},
		Codes:     []string{"inbox.dead-letter-lost", "inbox.not-dead-lettered"},
	},
	{
		ID: "INBOX-7", Family: "INBOX", Title: "No purge of pending work",
		Promise:   "A purge never removes accepted work that is not done, however old it is.",
		Why:       "A retention purge that deletes rows by age alone drops events that were acknowledged and are still waiting for a worker (or for an operator, as dead letters).",
		Needs:     []Capability{"inbox", "retention", "lock-gating"},
		Scenarios: []string{"events accepted and held back from their workers, a purge as of ten key TTLs later"},
		Codes:     []string{"inbox.pending-purged", "inbox.not-applied", "inbox.effects"},
	},
	{
		ID: "OUTBOX-1", Family: "OUTBOX", Title: "Lost downstream response",
		Promise:   "A downstream call whose response was lost is sent again with the same operation key and is applied once downstream.",
		Why:       "A fresh idempotency key per attempt turns every lost response into a second charge, refund or e-mail downstream.",
		Needs:     []Capability{"outbox"},
		Scenarios: []string{"sink drops the first response and fails the second; 4 concurrent copies of the event"},
		Codes:     []string{"outbox.not-sent", "outbox.key-changed", "outbox.applied-twice"},
	},
	{
		ID: "OUTBOX-2", Family: "OUTBOX", Title: "Crash after sending",
		Promise:   "A crash after the downstream call, before it was recorded as sent, resends it with the same operation key, and it is applied once downstream.",
		Why:       "The outbox cannot know whether a call it never saw answered was applied: only a stable operation key makes the resend harmless.",
		Needs:     []Capability{"outbox", "crash"},
		Scenarios: []string{"sink withholds the first answer, SIGKILL, restart"},
		Codes:     []string{"outbox.not-sent", "outbox.key-changed", "outbox.applied-twice"},
	},
	{
		ID: "OUTBOX-3", Family: "OUTBOX", Title: "No call for a rolled-back change",
		Promise:   "No downstream call is made for an event whose transaction rolled back; once it commits, the call is made once.",
		Why:       "A call made inline, before the commit, cannot be taken back when the transaction fails: the downstream acts on a change that never happened.",
		Needs:     []Capability{"outbox", "crash", "stop-in-transaction"},
		Scenarios: []string{"SIGKILL while the transaction waits on the locked effect table, restart, redeliver"},
		Codes:     []string{"outbox.sent-uncommitted", "outbox.not-sent", "outbox.applied-twice"},
	},
	{
		ID: "OUTBOX-4", Family: "OUTBOX", Title: "Downstream failures dead-lettered",
		Promise:   "A downstream call that keeps failing is retried, then dead-lettered and kept, never dropped or marked sent.",
		Why:       "An outbox that gives up silently, or records a failed call as sent, loses the effect while every dashboard stays green.",
		Needs:     []Capability{"outbox-dead-letter"},
		Scenarios: []string{"sink answers every call 503"},
		Codes:     []string{"outbox.key-changed", "outbox.dropped"},
	},
}

// Catalogue returns every guarantee in report order.
func Catalogue() []Guarantee {
	out := make([]Guarantee, len(catalogue))
	copy(out, catalogue)
	return out
}

// Lookup finds a guarantee by ID (case-insensitive).
func Lookup(id string) (Guarantee, error) {
	for _, g := range catalogue {
		if strings.EqualFold(g.ID, id) {
			return g, nil
		}
	}
	ids := make([]string, len(catalogue))
	for i, g := range catalogue {
		ids[i] = g.ID
	}
	return Guarantee{}, fmt.Errorf("unknown guarantee %q (valid: %s)", id, strings.Join(ids, ", "))
}

func catalogueIndex(id string) int {
	for i, g := range catalogue {
		if g.ID == id {
			return i
		}
	}
	return len(catalogue)
}

// ReconcileCodes are the reconciliation's deviation codes: every scenario can
// report them.
var ReconcileCodes = []string{"reconcile.lost", "reconcile.duplicated", "reconcile.applied-twice"}

// codeDocs says what each deviation code means. Codes are stable: reports and CI
// configurations refer to them.
var codeDocs = map[string]string{
	"dedup.not-acked":             "a valid delivery (a copy, a redelivery, the same ID in another scope) was not acknowledged",
	"dedup.rows":                  "the event's key rows are not what one event per key means (0 or more than 1)",
	"dedup.effects":               "the event's effects are not exactly one",
	"dedup.object-effects":        "one business operation was applied other than once",
	"atomic.acked-uncommitted":    "a delivery was acknowledged although its transaction could not have committed (crash, failed precondition, lost connection)",
	"atomic.partial":              "a key row or an effect survived a transaction that did not commit",
	"atomic.not-acked":            "a valid delivery or redelivery was not acknowledged",
	"atomic.not-applied":          "after the redelivery (or a commit before a crash) the event is not stored exactly once",
	"atomic.object-state":         "the lifecycle object is not in the state its events lead to",
	"atomic.missing-lost":         "an event for an object that did not exist yet was acknowledged, and not applied once the object existed: the change is lost",
	"ack.boundary-rejected":       "a legitimate delivery at the edge of a limit or tolerance (a large body, a timestamp inside the tolerance) was not acknowledged",
	"ack.boundary-not-applied":    "a legitimate delivery at the edge of a limit or tolerance was acknowledged but not stored and applied once",
	"ack.lost":                    "an acknowledged event is not stored after the receiver was killed and restarted",
	"ack.effects":                 "an event killed in flight and redelivered after the restart is not applied exactly once",
	"ack.timeout":                 "a delivery was not acknowledged within the provider's timeout",
	"ack.accepted-bad-input":      "an invalid delivery (bad signature, stale timestamp, malformed body) was not refused with a 4xx",
	"ack.control-rejected":        "a valid delivery sent as the positive control (beside invalid ones, or beside an unhandled type) was not acknowledged and applied: refusing or ignoring everything proves nothing",
	"ack.stored-bad-input":        "an invalid delivery left a key row or an effect",
	"ack.unknown-type-rejected":   "a valid event of an unhandled type was not acknowledged",
	"ack.unknown-type-applied":    "a valid event of an unhandled type changed the receiver's state",
	"order.not-acked":             "a valid update was not acknowledged",
	"order.regressed":             "the object is not at the newest version delivered",
	"order.transition-applied":    "a forbidden state transition changed the object or added an effect",
	"order.resurrected":           "a stale update brought a deleted object back",
	"retention.ttl-below-horizon": "an endpoint declares no key TTL, or one shorter than its provider's redelivery horizon",
	"retention.key-purged-early":  "a purge removed a key inside its declared key TTL (or payload TTL)",
	"retention.replay-applied":    "a replay inside the key TTL was not acknowledged as a duplicate",
	"retention.payload-kept":      "a payload is still stored after a purge past its payload TTL",
	"retention.payload-orphaned":  "a payload is still stored after its key was purged",
	"retention.key-kept":          "a key survived a purge past its declared key TTL",
	"inbox.lost":                  "an acknowledged event is not in the inbox after a crash before its worker ran: it was acknowledged before it was durably accepted",
	"inbox.not-applied":           "an accepted event was not applied",
	"inbox.effects":               "an accepted event was applied more than once (by competing workers, or again after a re-dispatch)",
	"inbox.stuck":                 "an event whose worker died is still pending or claimed well past its lease",
	"inbox.attempts-unrecorded":   "a failed attempt was retried without being recorded (attempts below 2 after an injected failure)",
	"inbox.dead-letter-lost":      "an event that exhausted its attempts is gone, or marked done without being applied, instead of dead-lettered",
	"inbox.not-dead-lettered":     "an event that failed the declared number of attempts is not dead-lettered",
	"inbox.pending-purged":        "an accepted event that was not done yet was removed by a purge",
	"outbox.not-sent":             "no downstream call for the event was answered 2xx",
	"outbox.key-changed":          "the downstream calls for one event carried different operation keys",
	"outbox.applied-twice":        "the downstream applied one event's operation more than once",
	"outbox.sent-uncommitted":     "a downstream call was made for an event whose transaction had not committed",
	"outbox.dropped":              "a downstream message that never succeeded was dropped, given up on before its declared attempts, or recorded as sent",
	"reconcile.lost":              "an acknowledged event has no event row",
	"reconcile.duplicated":        "an event key has more than one event row",
	"reconcile.applied-twice":     "a credit-like event was applied more than once",
}

// DeviationCodes returns every deviation code with its meaning.
func DeviationCodes() map[string]string {
	out := make(map[string]string, len(codeDocs))
	for k, v := range codeDocs {
		out[k] = v
	}
	return out
}
