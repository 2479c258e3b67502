package targetfile

import "strings"

// Idempotency styles (target.idempotency): how the receiver makes a second
// delivery of an event harmless, and so what the guarantees may read.
const (
	// IdempotencyLedger: the receiver records every event key it has handled
	// (the event_rows query counts them). The default.
	IdempotencyLedger = "ledger"
	// IdempotencyObjectVersion: the receiver keeps no event ledger; each
	// stored object carries the ordering key of the last event applied to it,
	// and an event no newer than that is not applied again.
	IdempotencyObjectVersion = "object-version"
	// IdempotencyBoth: an event ledger and object versions.
	IdempotencyBoth = "both"
)

var idempotencyStyles = []string{IdempotencyLedger, IdempotencyObjectVersion, IdempotencyBoth}

// idempotency checks target.idempotency and applies its default. It runs
// before observe, whose required queries depend on it.
func (v *validator) idempotency(t *Target, raw string) {
	t.Idempotency = IdempotencyLedger
	if raw == "" {
		return
	}
	if !contains(idempotencyStyles, raw) {
		v.fail([]any{"target", "idempotency"}, "%q is not one of %s", raw, strings.Join(idempotencyStyles, ", "))
		return
	}
	t.Idempotency = raw
}

// Ledgerless reports whether the receiver keeps no event ledger: no
// event_rows query, and the guarantees that count event rows are not
// applicable.
func (t *Target) Ledgerless() bool { return t.Idempotency == IdempotencyObjectVersion }

// objectVersionRules checks what target.idempotency: object-version needs once
// the events are built: an ordered role whose state query returns the key
// (what every acknowledged event is reconciled against), and no event_rows
// query (the receiver keeps none; "both" says it keeps one too).
func (v *validator) objectVersionRules(t *Target, rt *rawTarget) {
	if t.Idempotency == IdempotencyLedger {
		return
	}
	if t.Idempotency == IdempotencyObjectVersion {
		if st := rt.store(); st != nil && st.Queries != nil && strings.TrimSpace(st.Queries.EventRows) != "" {
			v.fail([]any{"target", "observe", rt.storeKind(), "queries", "event_rows"},
				"must not be set with target.idempotency: object-version (the receiver keeps no event rows); declare idempotency: both when it keeps an event ledger too")
		}
	}
	if t.Events == nil || t.Events.Ordered == nil {
		v.fail([]any{"target", "idempotency"}, "%s needs target.events.ordered: its state query returns the key each object holds, which every acknowledged update is reconciled against", t.Idempotency)
	}
}
