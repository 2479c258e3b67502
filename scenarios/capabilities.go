package scenarios

// capabilityDocs documents every capability a guarantee can need. Declared ones come
// from the target file's `capabilities`; derived ones are read off its endpoints.
var capabilityDocs = []struct{ name, doc string }{
	{"crash", "declared: the harness may SIGKILL and restart the receiver (needs `lifecycle`)"},
	{"failpoints", "declared: the receiver implements the failpoint protocol (docs/failpoints.md)"},
	{"lock-gating", "declared: the harness may lock the receiver's event table (`observe.postgres.event_table`) to force races"},
	{"connection-loss", "declared: the harness may terminate the receiver's database sessions mid-transaction (needs an effect table to gate)"},
	{"ordering", "declared (built-in vocabulary): the receiver handles versioned updates (`customer.subscription.updated`) and exposes the `object` query; with `events:`, declaring `events.ordered` is enough"},
	{"state-machine", "declared (built-in vocabulary): the receiver handles the payment state machine and exposes the `payment` query; with `events:`, declaring `events.lifecycle` is enough"},
	{"domain-constraint", "declared (built-in vocabulary): the receiver credits one payment once whatever the event IDs (`object_effects` query); with `events:`, an `events.lifecycle.effects` query is enough"},
	{"deletion", "declared (built-in vocabulary): the receiver handles `customer.subscription.deleted` as an ordered update that deletes; with `events:`, declaring `events.ordered.delete` is enough"},
	{"retention", "declared: the receiver states its key and payload TTLs and offers a purge the harness can run as of a chosen time (`retention` section, `payload_present` query)"},
	{"inbox", "declared: the receiver accepts events durably, answers (acceptance.mode async) and applies them in workers; needs `inbox` with its `lease` and `state` query, (state, attempts) per event"},
	{"outbox", "declared: the receiver sends its downstream calls to the harness's sink, `{{.SinkURL}}`, with an operation key (`outbox` section)"},
	{"inbox-dead-letter", "derived: capability inbox and `inbox.max_attempts`"},
	{"outbox-dead-letter", "derived: capability outbox, `outbox.max_attempts` and the `outbox.state` query"},
	{"multi-account", "derived: two endpoints of one profile with different accounts"},
	{"multi-source", "derived: two endpoints of different profiles for one account"},
	{"header-event-id", "derived: an endpoint whose profile carries the event ID in a header, outside the body"},
	{"stop-in-transaction", "derived: the harness can stop the receiver inside its transaction: failpoints, or an effect table it may lock (lock-gating or connection-loss)"},
	{"signed-timestamp", "derived: an endpoint whose profile signs a timestamp"},
}
