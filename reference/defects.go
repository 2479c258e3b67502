package reference

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"
)

// Defect names. Each is a faithful copy of a real-world mistake; see Defects.
const (
	DefectCheckThenInsert    = "check-then-insert"
	DefectDuplicate500       = "duplicate-500"
	DefectMarkerSeparateTx   = "marker-separate-tx"
	DefectBusinessFirst      = "business-first"
	DefectDedupeByPayload    = "dedupe-by-payload"
	DefectGlobalEventID      = "global-event-id"
	DefectLastWriteWins      = "last-write-wins"
	DefectAckBeforeCommit    = "ack-before-commit"
	DefectSkipSignature      = "skip-signature"
	DefectSkipTimestampCheck = "skip-timestamp-check"
	DefectNoDomainConstraint = "no-domain-constraint"
	DefectRefundCheckThenAct = "refund-check-then-act"
	DefectSlowAck            = "slow-ack"
	DefectNoInputValidation  = "no-input-validation"
	DefectRejectUnknownTypes = "reject-unknown-types"
	DefectShortRetention     = "short-retention"
	DefectKeepPayloads       = "keep-payloads"
	DefectPurgeAll           = "purge-all"
	DefectKeepKeysForever    = "keep-keys-forever"
	DefectMemoryDedup        = "memory-dedup"
	DefectDedupWindow        = "dedup-window"
	DefectAckOnError         = "ack-on-error"
	DefectApplyUnknownTypes  = "apply-unknown-types"
	DefectOrphanPayloads     = "orphan-payloads"
	DefectNoTTLFloor         = "no-ttl-floor"
	DefectRotatedSecret      = "rotated-secret"
	DefectSkipLargeBodies    = "skip-large-bodies"
	DefectDropFirstRefund    = "drop-first-refund"

	// Derived from the provider contract: the handshake, every signed input,
	// the event identity.
	DefectHandshakeEchoWrong     = "handshake-echo-wrong"
	DefectHandshakeUnsigned      = "handshake-unsigned"
	DefectHandshakeAsEvent       = "handshake-as-event"
	DefectSignaturePrefixCompare = "signature-prefix-compare"
	DefectSignatureAnyScheme     = "signature-any-scheme"
	DefectFutureTimestamps       = "future-timestamps"
	DefectIDTruncated            = "id-truncated"
	DefectIDCaseFolded           = "id-case-folded"

	// Inbox defects (--mode inbox only).
	DefectInboxAckBeforeCommit = "inbox-ack-before-commit"
	DefectPollWithoutClaim     = "poll-without-claim"
	DefectNoLeaseExpiry        = "no-lease-expiry"
	DefectMarkDoneSeparateTx   = "mark-done-separate-tx"
	DefectRetryWithoutAttempts = "retry-without-attempts"
	DefectDropDeadLetters      = "drop-dead-letters"
	DefectPurgePending         = "purge-pending"
	DefectRequeueOnBoot        = "requeue-on-boot"

	// Outbox defects (either mode, with a sink URL).
	DefectFreshIdempotencyKey = "fresh-idempotency-key"
	DefectSendBeforeCommit    = "send-before-commit"
	DefectDropFailedSends     = "drop-failed-sends"
)

// skipLargeBodies is the size above which the skip-large-bodies defect stops
// processing: a "we never get events that big" shortcut.
const skipLargeBodies = 64 << 10

// slowAckWork is the synchronous downstream call the slow-ack defect makes per
// delivery, one delivery at a time.
const slowAckWork = 100 * time.Millisecond

// DefectInfo names one defect and says in one line what it gets wrong.
type DefectInfo struct {
	Name        string
	Description string
}

var defectTable = map[string]string{
	DefectCheckThenInsert:    "SELECT whether the key exists, then a plain INSERT; the unique key index is dropped, so concurrent copies all insert and all apply",
	DefectDuplicate500:       "plain INSERT without ON CONFLICT; a duplicate's unique violation is answered with 500, so the provider retries forever",
	DefectMarkerSeparateTx:   "the key is committed in its own transaction before the business change; a crash or failure in between loses the event",
	DefectBusinessFirst:      "the business change is committed first and the key recorded in a second transaction; a crash in between applies the event twice on redelivery",
	DefectDedupeByPayload:    "also deduplicates on a SHA-256 of the raw body; distinct events with identical bodies are dropped as duplicates",
	DefectGlobalEventID:      "checks the event ID alone, ignoring source and account; the same ID under another account is dropped",
	DefectLastWriteWins:      "no version check and no payment state machine; a late older update overwrites a newer one",
	DefectAckBeforeCommit:    "the 2xx is written and flushed before the commit; a crash after the ack loses an acknowledged event",
	DefectSkipSignature:      "the signature is not checked; forged and tampered deliveries are accepted",
	DefectSkipTimestampCheck: "the signed timestamp's tolerance is not enforced; old signed deliveries can be replayed",
	DefectNoDomainConstraint: "credits a payment for every succeeded event, with no state check and no one-credit-per-payment index; two event IDs for one payment credit it twice",
	DefectRefundCheckThenAct: "a refund reads the payment's status with a plain SELECT (no FOR UPDATE) and there is no one-refund-per-payment index; one after the other a second refund is refused, but two refund events for one payment at the same moment both read succeeded and both refund it",
	DefectSlowAck:            "handles one delivery at a time and makes a 100 ms synchronous downstream call before answering; under load acknowledgements queue past the provider's timeout",
	DefectNoInputValidation:  "trusts the request: no body size limit, a missing event ID is stored as an empty one, and malformed JSON crashes the handler into a 500",
	DefectRejectUnknownTypes: "answers 400 to event types it does not handle, so the provider retries them for days",
	DefectShortRetention:     "keeps event keys for one hour whatever the config says (\"5 minutes is enough\"); a provider's redelivery or a manual resend after that is applied again",
	DefectKeepPayloads:       "ignores the payload TTL: raw payloads stay until their key expires, keeping personal data nobody needs",
	DefectPurgeAll:           "the purge deletes every key older than the payload TTL instead of only the payloads; replays inside the key TTL are applied again",
	DefectKeepKeysForever:    "the purge only removes payloads and never deletes keys; the key table grows forever and data is kept with no end",
	DefectDedupWindow:        "deduplicates against the last 32 keys this process saw, in memory, with a plain INSERT and no unique key index; a redelivery that arrives after 32 other events is applied again",
	DefectMemoryDedup:        "deduplicates in process memory: a mutex-guarded map of seen keys, a plain INSERT and no unique key index; after a restart the map is empty and a redelivery of an event processed before the crash is applied again",
	DefectAckOnError:         "\"log and return 200\": a failed precondition or a database error rolls back but is still answered 200, so the provider never retries and the event is lost",
	DefectApplyUnknownTypes:  "a default branch credits the ledger for every event type it does not recognise instead of acknowledging and ignoring it",
	DefectOrphanPayloads:     "also copies every raw payload into webhook_payload_archive, which the purge never touches; payloads outlive their TTL and their key",
	DefectRotatedSecret:      "verifies its GitHub endpoints with the secret from before the last rotation: every genuine GitHub delivery is refused with 401, as forged ones are, so the provider retries and then gives up",
	DefectSkipLargeBodies:    "answers 200 to any verified body over 64 KiB without storing or applying it (\"too big to log, skip it\"); the provider stops sending an event that was never applied",
	DefectDropFirstRefund:    "the first refund after the receiver starts is recorded and acknowledged but never applied (a lazily started refund client's first call fails and the error is swallowed); that payment stays succeeded",
	DefectNoTTLFloor:         "accepts any configured key TTL, even one below the provider's redelivery horizon; a redelivery after the key is gone is applied again",

	DefectHandshakeEchoWrong:     "answers Slack's url_verification with the challenge encoded as a JSON string (quotes included), which is none of the answers Slack reads; the provider never verifies the endpoint",
	DefectHandshakeUnsigned:      "answers a handshake before checking its signature (\"it carries no event\"); a forged handshake gets the endpoint confirmed for someone else's app",
	DefectHandshakeAsEvent:       "answers the handshake, then records it in the event table like any verified request, under its challenge (the one unique value it carries): a handshake counts as an event",
	DefectSignaturePrefixCompare: "compares a signature with the expected one on the received signature's length only; a signature cut short is accepted",
	DefectSignatureAnyScheme:     "reads the signature whatever scheme or version it is written under (v0= for v1=, sha257= for sha256=); a signature of a scheme it does not verify is taken for one it does",
	DefectFutureTimestamps:       "holds the signed timestamp to the tolerance in the past only; a delivery signed far ahead is accepted, and stays replayable until that time has passed",
	DefectIDTruncated:            "deduplicates on the first 48 bytes of the event ID (as a key column or prefix index of 48 characters would); an event whose ID differs from another's only after them is dropped as a duplicate",
	DefectIDCaseFolded:           "deduplicates on the lower-cased event ID (as a case-insensitive collation would); an event whose ID differs from another's only in case is dropped as a duplicate",

	DefectInboxAckBeforeCommit: "inbox mode: the 202 is written and flushed before the event is inserted and committed (\"ack fast, store after\"); a crash after the ack loses an accepted event",
	DefectPollWithoutClaim:     "inbox mode: workers take the oldest pending event with a plain SELECT (no FOR UPDATE, no SKIP LOCKED, no claim) and apply it; idle workers that poll together all apply the same event",
	DefectNoLeaseExpiry:        "inbox mode: no reconciler; a claim whose worker died stays claimed forever and its event is never applied",
	DefectMarkDoneSeparateTx:   "inbox mode: the worker commits the business change, then marks the event done in a second transaction; a crash in between re-offers it after the lease and applies it again",
	DefectRetryWithoutAttempts: "inbox mode: failed attempts are not recorded (no attempt count, no last error); an event that always fails is retried forever and never dead-lettered",
	DefectDropDeadLetters:      "inbox mode: an event that would be dead-lettered is deleted instead (\"keep the table clean\"); nothing shows it failed and its key is gone",
	DefectRequeueOnBoot:        "inbox mode: abandoned claims are re-offered only when a process starts (serve or worker: \"requeue on deploy\"), never by lease expiry; right while every crash restarts every worker, but a claim whose worker process dies while its siblings run stays stuck until the next restart",
	DefectPurgePending:         "inbox mode: the purge deletes keys past their TTL whatever their state, pending and claimed work included (\"old rows are old\"); an accepted event not yet applied is purged and never applied",
	DefectFreshIdempotencyKey:  "outbox: every send attempt carries a new random Idempotency-Key instead of one derived from the event; a resend after a lost response or a crash is applied again downstream",
	DefectSendBeforeCommit:     "outbox: a credit's downstream call is made inside the business transaction, before its ledger insert and commit, with no outbox row; a rollback or crash after the call leaves an external effect for an event that never committed",
	DefectDropFailedSends:      "outbox: a message that would be dead-lettered is marked sent instead; a downstream that kept failing looks served and nobody retries or sees it",
}

// defectScope says where a defect runs; a defect absent from defectScopes breaks
// the synchronous design and runs in sync mode only.
type defectScope int

const (
	scopeSync   defectScope = iota // sync mode only (the default)
	scopeInbox                     // --mode inbox only
	scopeOutbox                    // either mode, with a sink URL
)

var defectScopes = map[string]defectScope{
	DefectInboxAckBeforeCommit: scopeInbox,
	DefectPollWithoutClaim:     scopeInbox,
	DefectNoLeaseExpiry:        scopeInbox,
	DefectMarkDoneSeparateTx:   scopeInbox,
	DefectRetryWithoutAttempts: scopeInbox,
	DefectDropDeadLetters:      scopeInbox,
	DefectPurgePending:         scopeInbox,
	DefectRequeueOnBoot:        scopeInbox,
	DefectFreshIdempotencyKey:  scopeOutbox,
	DefectSendBeforeCommit:     scopeOutbox,
	DefectDropFailedSends:      scopeOutbox,
}

// DefectModes returns the modes a defect runs in (ModeSync, ModeInbox) and whether
// it needs the outbox (a sink URL). Unknown names return nil.
func DefectModes(name string) (modes []string, needsOutbox bool) {
	if _, ok := defectTable[name]; !ok {
		return nil, false
	}
	switch defectScopes[name] {
	case scopeInbox:
		return []string{ModeInbox}, false
	case scopeOutbox:
		return []string{ModeSync, ModeInbox}, true
	}
	return []string{ModeSync}, false
}

// Defects lists every defect with its one-line description, sorted by name.
func Defects() []DefectInfo {
	out := make([]DefectInfo, 0, len(defectTable))
	for n, d := range defectTable {
		out = append(out, DefectInfo{Name: n, Description: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DefectNames returns the valid defect names, sorted.
func DefectNames() []string {
	var names []string
	for _, d := range Defects() {
		names = append(names, d.Name)
	}
	return names
}

// ValidateDefects checks that every name is a known defect and that no two
// defects change the same step in conflicting ways.
func ValidateDefects(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if _, ok := defectTable[n]; !ok {
			return fmt.Errorf("defect %q: unknown; valid defects: %s", n, strings.Join(DefectNames(), ", "))
		}
		seen[n] = true
	}
	// These each replace how the key is recorded; two at once has no single meaning.
	var keyModes []string
	for _, n := range []string{DefectCheckThenInsert, DefectDuplicate500, DefectMarkerSeparateTx,
		DefectBusinessFirst, DefectGlobalEventID, DefectAckBeforeCommit, DefectMemoryDedup, DefectDedupWindow,
		DefectIDTruncated, DefectIDCaseFolded} {
		if seen[n] {
			keyModes = append(keyModes, n)
		}
	}
	if len(keyModes) > 1 {
		return fmt.Errorf("defects %s: at most one of them may be active (each replaces the transaction structure)", strings.Join(keyModes, ", "))
	}
	if seen[DefectHandshakeEchoWrong] && seen[DefectHandshakeAsEvent] {
		return fmt.Errorf("defects %s, %s: at most one of them may be active (each replaces how a handshake is answered)",
			DefectHandshakeAsEvent, DefectHandshakeEchoWrong)
	}
	if seen[DefectRejectUnknownTypes] && seen[DefectApplyUnknownTypes] {
		return fmt.Errorf("defects %s, %s: at most one of them may be active (each decides what an unknown type does)",
			DefectApplyUnknownTypes, DefectRejectUnknownTypes)
	}
	// poll-without-claim replaces claiming, leases and attempt records altogether,
	// so no other worker defect has anything to change beside it.
	if seen[DefectPollWithoutClaim] {
		for _, n := range []string{DefectNoLeaseExpiry, DefectRequeueOnBoot, DefectMarkDoneSeparateTx, DefectRetryWithoutAttempts, DefectDropDeadLetters} {
			if seen[n] {
				return fmt.Errorf("defects %s, %s: at most one of them may be active (%s takes events without a claim, lease or attempt record)",
					DefectPollWithoutClaim, n, DefectPollWithoutClaim)
			}
		}
	}
	if seen[DefectRetryWithoutAttempts] && seen[DefectDropDeadLetters] {
		return fmt.Errorf("defects %s, %s: at most one of them may be active (each decides what becomes of an event that keeps failing)",
			DefectDropDeadLetters, DefectRetryWithoutAttempts)
	}
	if seen[DefectSendBeforeCommit] {
		for _, n := range []string{DefectFreshIdempotencyKey, DefectDropFailedSends} {
			if seen[n] {
				return fmt.Errorf("defects %s, %s: at most one of them may be active (%s sends credits without the outbox the other changes)",
					DefectSendBeforeCommit, n, DefectSendBeforeCommit)
			}
		}
	}
	return nil
}

// ValidateDefectsFor is ValidateDefects for a receiver in mode (ModeSync or "",
// ModeInbox) with or without the outbox: sync-mode defects are refused in inbox
// mode, inbox defects outside it, and outbox defects without a sink URL.
func ValidateDefectsFor(names []string, mode string, outbox bool) error {
	if err := ValidateDefects(names); err != nil {
		return err
	}
	inbox := mode == ModeInbox
	for _, n := range names {
		switch defectScopes[n] {
		case scopeSync:
			if inbox {
				return fmt.Errorf("defect %q: breaks the synchronous design and runs only in %s mode; %s mode accepts the inbox and outbox defects (%s)",
					n, ModeSync, ModeInbox, strings.Join(defectsOf(scopeInbox, scopeOutbox), ", "))
			}
		case scopeInbox:
			if !inbox {
				return fmt.Errorf("defect %q: breaks the inbox and runs only in %s mode", n, ModeInbox)
			}
		case scopeOutbox:
			if !outbox {
				return fmt.Errorf("defect %q: breaks the outbox and needs a sink URL (--sink-url)", n)
			}
		}
	}
	return nil
}

// defectsOf lists the defects of the given scopes, sorted.
func defectsOf(scopes ...defectScope) []string {
	var out []string
	for _, n := range DefectNames() {
		for _, sc := range scopes {
			if defectScopes[n] == sc {
				out = append(out, n)
			}
		}
	}
	return out
}

// scoped returns the names in defects whose scope is sc.
func scoped(defects []string, sc defectScope) []string {
	var out []string
	for _, n := range defects {
		if _, ok := defectTable[n]; ok && defectScopes[n] == sc {
			out = append(out, n)
		}
	}
	return out
}

// announceDefects logs every active defect at WARN, once each, in name order.
func announceDefects(log *slog.Logger, names []string) {
	active := newDefectSet(names)
	for _, d := range Defects() {
		if active.has(d.Name) {
			log.Warn("DEFECT ACTIVE: "+d.Name+": "+d.Description+"; this receiver is deliberately broken",
				"defect", d.Name)
		}
	}
}

func newDefectSet(names []string) defectSet {
	d := defectSet{}
	for _, n := range names {
		d[n] = true
	}
	return d
}

type defectSet map[string]bool

func (d defectSet) has(name string) bool { return d[name] }
