package reference

// The reference's observable contract: the tables a harness may lock and the
// queries it reads the receiver's state with (docs/reference.md, "Queries for
// a harness"; $1 source, $2 account, $3 event ID, $4 object ID). `hookcert
// demo` declares them in the target file it writes, and a Go test certifying
// the reference in library mode declares the same.
const (
	// EventTable holds the event keys (lock-gating); EffectTable the ledger,
	// the business effect (connection-loss, crashes inside the transaction).
	EventTable  = "processed_webhook_events"
	EffectTable = "ledger_entries"

	EventRowsQuery     = "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3"
	EffectsQuery       = "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3"
	ObjectEffectsQuery = "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4"
	ObjectQuery        = "SELECT version, status FROM subscriptions WHERE source=$1 AND account_id=$2 AND object_id=$4"
	PaymentQuery       = "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4"

	// QuiescentQuery (inbox mode) is true when no accepted event waits for a
	// worker: none is claimed and none pending is due. An event backing off
	// after a failed attempt (an event before its object) is waiting for the
	// world, not for a worker; dead-lettered events are finished work.
	QuiescentQuery = "SELECT count(*) = 0 FROM processed_webhook_events WHERE inbox_state = 'claimed' OR (inbox_state = 'pending' AND next_attempt_at <= now())"
	// InboxStateQuery and OutboxStateQuery map the inbox and outbox columns
	// onto the states a harness reads (claimed is processing), with attempts.
	InboxStateQuery = "SELECT CASE inbox_state WHEN 'claimed' THEN 'processing' ELSE inbox_state END, attempts " +
		"FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3"
	OutboxStateQuery = "SELECT CASE state WHEN 'claimed' THEN 'processing' ELSE state END, attempts " +
		"FROM outbox_messages WHERE source=$1 AND account_id=$2 AND event_id=$3 AND kind='credit'"

	// FailpointsPath serves the failpoint protocol (EnableFailpoints).
	FailpointsPath = "/_hookcert/failpoints"
)
