package reference

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/reference/store"
)

// The receiver's defects (docs/reference.md, "Defects"). Each is a small
// alternative to one or more of the correct steps (steps, server.go), swapped in
// once by serverDefects when the server is built; the correct steps are in
// handler.go and retention.go. Inbox workers and the outbox dispatcher have their
// own tables (workerDefects, inbox_defects.go; dispatcherDefects,
// outbox_defects.go).

// serverDefect installs one defect into a server under construction: it replaces
// or wraps steps, or changes the rules, schema or body limit the server is built
// with.
type serverDefect struct {
	name    string
	install func(s *Server)
}

// serverDefects are installed in this order. A defect that wraps a step comes
// after those that replace it, so that it wraps the replacement (as the old
// inline checks did): ack-on-error wraps whichever process step is in place,
// dedupe-by-payload and orphan-payloads whichever key insert.
var serverDefects = []serverDefect{
	// Verification.
	{DefectSkipSignature, func(s *Server) {
		// Wrong: anyone who knows the URL can post events.
		s.steps.verify = func(Endpoint, http.Header, []byte) error { return nil }
	}},
	{DefectSkipTimestampCheck, func(s *Server) {
		// Wrong: a captured signed delivery can be replayed at any later time.
		s.steps.sigOptions.SkipTimestampCheck = true
	}},
	{DefectRotatedSecret, installRotatedSecret},
	{DefectSignaturePrefixCompare, func(s *Server) {
		// Wrong: a signature cut short matches the start of the expected one.
		s.steps.sigOptions.ComparePrefix = true
	}},
	{DefectSignatureAnyScheme, func(s *Server) {
		// Wrong: the scheme tells how the signature was made; ignoring it takes
		// a signature of another scheme for one of this.
		s.steps.sigOptions.AnyScheme = true
	}},
	{DefectFutureTimestamps, func(s *Server) {
		// Wrong: a delivery signed ahead can be replayed until its time comes.
		s.steps.sigOptions.AcceptFuture = true
	}},
	{DefectHandshakeUnsigned, installHandshakeUnsigned},
	{DefectHandshakeEchoWrong, func(s *Server) { s.steps.handshake = answerHandshakeQuoted }},
	{DefectHandshakeAsEvent, installHandshakeAsEvent},

	// Reading the event.
	{DefectNoInputValidation, installNoInputValidation},
	{DefectApplyUnknownTypes, func(s *Server) {
		// Wrong: unknown types are credited by a default branch instead of ignored.
		s.steps.fields.unknownType = readUnknownObject
		s.rules = s.rules.WithApplyUnknownTypes()
	}},
	{DefectSkipLargeBodies, installSkipLargeBodies},
	{DefectRejectUnknownTypes, installRejectUnknownTypes},
	{DefectSlowAck, installSlowAck},

	// The transaction structure: each replaces the process, key or commit step.
	{DefectMarkerSeparateTx, func(s *Server) { s.steps.process = s.processMarkerFirst }},
	{DefectBusinessFirst, func(s *Server) { s.steps.process = s.processBusinessFirst }},
	{DefectInboxAckBeforeCommit, func(s *Server) { s.steps.process = s.processInboxAckFirst }},
	{DefectMemoryDedup, func(s *Server) { installMemoryClaims(s, &seenKeys{}) }},
	{DefectDedupWindow, func(s *Server) { installMemoryClaims(s, &recentKeys{max: dedupWindow}) }},
	{DefectCheckThenInsert, func(s *Server) {
		s.schema.WithoutEventKeyIndex = true
		s.steps.recordKey = s.checkThenInsert
	}},
	{DefectDuplicate500, func(s *Server) { s.steps.recordKey = s.insertKeyPlain }},
	{DefectGlobalEventID, func(s *Server) { s.steps.recordKey = s.insertUnlessEventIDSeen }},
	{DefectIDTruncated, func(s *Server) { s.steps.recordKey = s.insertUnlessIDMatches(store.IDMatchPrefix) }},
	{DefectIDCaseFolded, func(s *Server) { s.steps.recordKey = s.insertUnlessIDMatches(store.IDMatchFolded) }},
	{DefectAckBeforeCommit, func(s *Server) { s.steps.commit = s.ackThenCommit }},
	{DefectDedupeByPayload, installDedupeByPayload},
	{DefectOrphanPayloads, installOrphanPayloads},
	{DefectAckOnError, installAckOnError},

	// The domain rules (store.Apply; the alternatives are in
	// store/domain_defects.go) and the schema.
	{DefectLastWriteWins, func(s *Server) {
		// Wrong: deduplication does not order events; a late older update wins.
		s.rules = s.rules.WithLastWriteWins()
	}},
	{DefectNoDomainConstraint, func(s *Server) {
		// Wrong: nothing holds one payment to one credit.
		s.rules = s.rules.WithNoDomainConstraint()
		s.schema.WithoutDomainConstraint = true
	}},
	{DefectDropFirstRefund, func(s *Server) {
		// Wrong: an acknowledged event must be applied; the first refund after
		// start is recorded and dropped.
		s.rules = s.rules.WithDropFirstRefund()
	}},
	{DefectRefundCheckThenAct, func(s *Server) {
		// Wrong: a refund checks, then acts, with nothing holding the payment
		// between the two.
		s.rules = s.rules.WithRefundCheckThenAct()
		s.schema.WithoutDomainConstraint = true
	}},

	// Retention (retention_defects.go). purge-all comes before short-retention:
	// where both are active the purge-all TTL is the one used.
	{DefectPurgeAll, installPurgeAll},
	{DefectShortRetention, installShortRetention},
	{DefectKeepPayloads, installKeepPayloads},
	{DefectKeepKeysForever, installKeepKeysForever},
	{DefectPurgePending, func(s *Server) {
		// Wrong: accepted work not yet applied is deleted with its key.
		s.steps.purge = store.PurgeUnfinished
	}},
	{DefectNoTTLFloor, func(s *Server) {
		// Wrong: a receiver without the floor knows nothing of horizons and says
		// nothing (config.go accepts the short TTL).
		s.steps.shortKeyTTL = func(Endpoint, Retention, Horizon) {}
	}},

	// Start-up (inbox_defects.go).
	{DefectRequeueOnBoot, func(s *Server) {
		s.steps.atStart = func(ctx context.Context) error { return requeueOnBoot(ctx, s.pool, s.log) }
	}},
}

// installServerDefects swaps in the steps of every named defect, in table order.
// Names the server does not run (worker or outbox defects) are left to the
// workers and the dispatcher. It returns how many it installed.
func installServerDefects(s *Server, names []string) (installed int) {
	active := newDefectSet(names)
	for _, d := range serverDefects {
		if active.has(d.name) {
			d.install(s)
			installed++
		}
	}
	return installed
}

// announceDroppedKeyIndex warns, after the migrations, that a defect runs without
// the unique key index.
func announceDroppedKeyIndex(log *slog.Logger, names []string) {
	active := newDefectSet(names)
	for _, d := range []string{DefectCheckThenInsert, DefectMemoryDedup, DefectDedupWindow} {
		if active.has(d) {
			log.Warn("DEFECT ACTIVE: "+d+" dropped unique index "+store.EventKeyIndex+
				"; a clean receiver recreates it at start and refuses to run if duplicate keys were left",
				"defect", d)
		}
	}
}

// installRotatedSecret: GitHub endpoints verify with the secret from before the
// last rotation. Wrong: the secret was rotated at GitHub but not here, so every
// genuine delivery is refused with 401.
func installRotatedSecret(s *Server) {
	next := s.steps.verify
	s.steps.verify = func(ep Endpoint, h http.Header, body []byte) error {
		if ep.Profile == "github" {
			ep.Secret = "before-rotation-" + ep.Secret
		}
		return next(ep, h, body)
	}
}

// installNoInputValidation trusts the request. Wrong: oversized and ID-less
// deliveries are stored, and malformed JSON is retried forever instead of
// refused.
func installNoInputValidation(s *Server) {
	s.maxBody = 1 << 40 // effectively unbounded: the defect reads whatever comes
	s.steps.fields.checkID = allowMissingEventID
	next := s.steps.refuse
	s.steps.refuse = func(err error, log *slog.Logger) result {
		var br *badRequest
		if errors.As(err, &br) && br.Reason == "malformed_json" {
			// The defect parses without checking and falls over on bad JSON.
			return result{http.StatusInternalServerError, response{StatusRetry, "internal_error"}}
		}
		return next(err, log)
	}
}

// allowMissingEventID is requireEventID letting a missing event ID through as "".
// Wrong: every ID-less delivery shares one key.
func allowMissingEventID(id, profile string) error {
	if id == "" {
		return nil
	}
	return requireEventID(id, profile)
}

// readUnknownObject reads the object of an unknown type as best it can, for the
// apply-unknown-types default branch that credits it. Wrong: an event type the
// domain does not know changes business state.
func readUnknownObject(ev store.Event, obj json.RawMessage) store.Event {
	var o businessObject
	_ = json.Unmarshal(obj, &o) // whatever parses; the defect credits it anyway
	ev.ObjectID, ev.Amount = o.ID, o.Amount
	return ev
}

// installSkipLargeBodies answers 200 to a verified body over 64 KiB without
// reading it. Wrong: the provider stops sending an event that was never applied.
func installSkipLargeBodies(s *Server) {
	next := s.steps.readEvent
	s.steps.readEvent = func(ep Endpoint, h http.Header, body []byte, log *slog.Logger) (store.Event, result, bool) {
		if len(body) > skipLargeBodies {
			return store.Event{}, result{http.StatusOK, response{StatusProcessed, "skipped_large_body"}}, false
		}
		return next(ep, h, body, log)
	}
}

// installRejectUnknownTypes answers 400 to event types the domain does not
// handle. Wrong: the provider retries them for days.
func installRejectUnknownTypes(s *Server) {
	next := s.steps.readEvent
	s.steps.readEvent = func(ep Endpoint, h http.Header, body []byte, log *slog.Logger) (store.Event, result, bool) {
		ev, res, ok := next(ep, h, body, log)
		if ok && !store.Handled(ev.Type) {
			return ev, rejected(http.StatusBadRequest, "unsupported_event_type"), false
		}
		return ev, res, ok
	}
}

// installSlowAck handles one delivery at a time, each waiting on a synchronous
// downstream call before the database work. Wrong: under load acknowledgements
// queue past the provider's timeout.
func installSlowAck(s *Server) {
	var one sync.Mutex // held until the delivery has been answered and logged
	next := s.steps.deliver
	s.steps.deliver = func(w http.ResponseWriter, r *http.Request, ev store.Event, log *slog.Logger, start time.Time) {
		one.Lock()
		defer one.Unlock()
		time.Sleep(slowAckWork)
		next(w, r, ev, log, start)
	}
}

// installAckOnError is "log and return 200". Wrong: a failure has been rolled
// back, and the provider, told all is well, never sends the event again.
func installAckOnError(s *Server) {
	next := s.steps.process
	s.steps.process = func(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result {
		res := next(ctx, ev, ack, log)
		if res.code/100 == 5 {
			// "Log and return 200": the failure has been logged and rolled back, and
			// the provider is told all is well, so it never sends the event again.
			log.Warn("processing failed; answering 200 anyway", "event_id", ev.EventID, "reason", res.Reason)
			res = result{http.StatusOK, response{Status: StatusProcessed}}
		}
		return res
	}
}

// checkThenInsert asks whether the key exists, then inserts it plainly (the
// check-then-insert defect, with the unique index dropped). Wrong: concurrent
// copies all pass the check, and all insert and apply.
func (s *Server) checkThenInsert(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
	exists, err := store.KeyExists(ctx, tx, ev.Key)
	if err != nil {
		return s.transient(log, ev, "check key", err), false
	}
	if exists {
		return duplicate, false
	}
	return s.insertKeyPlain(ctx, tx, ev, log)
}

// insertKeyPlain inserts the key without ON CONFLICT (the duplicate-500 defect).
// Wrong: a duplicate's unique violation is answered 500, so the provider retries
// forever.
func (s *Server) insertKeyPlain(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
	if err := store.InsertKeyPlain(ctx, tx, ev); err != nil {
		return s.transient(log, ev, "insert key", err), false
	}
	return result{}, true
}

// insertUnlessEventIDSeen deduplicates on the event ID alone (the
// global-event-id defect). Wrong: the same ID under another source or account is
// dropped.
func (s *Server) insertUnlessEventIDSeen(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
	inserted, err := store.InsertKeyUnlessEventIDSeen(ctx, tx, ev)
	if err != nil {
		return s.transient(log, ev, "insert key", err), false
	}
	if !inserted {
		return duplicate, false
	}
	return result{}, true
}

// insertUnlessIDMatches records the key unless an event ID match takes for
// the same is there. Wrong: event IDs are compared whole, byte for byte.
func (s *Server) insertUnlessIDMatches(match string) func(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
	return func(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
		inserted, err := store.InsertKeyUnlessIDMatches(ctx, tx, ev, match)
		if err != nil {
			return s.transient(log, ev, "insert key", err), false
		}
		if !inserted {
			return duplicate, false
		}
		return result{}, true
	}
}

// installHandshakeUnsigned lets a handshake through unverified. Wrong: the
// handshake is signed like an event precisely so that only the provider can
// have the endpoint confirmed.
func installHandshakeUnsigned(s *Server) {
	next := s.steps.verify
	s.steps.verify = func(ep Endpoint, h http.Header, body []byte) error {
		if _, ok := handshakeChallenge(ep, body); ok {
			return nil
		}
		return next(ep, h, body)
	}
}

// answerHandshakeQuoted writes the challenge as a JSON string. Wrong: Slack
// reads the challenge as plain text, a form or {"challenge": …}; a quoted
// string is none of them.
func answerHandshakeQuoted(_ context.Context, w http.ResponseWriter, _ Endpoint, challenge string, log *slog.Logger) {
	b, _ := json.Marshal(challenge) // a string: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	log.Info("handshake", "outcome", "answered")
}

// installHandshakeAsEvent records every answered handshake in the event table,
// under its challenge.
// Wrong: a handshake is no event; the row stands for one that never happened.
func installHandshakeAsEvent(s *Server) {
	next := s.steps.handshake
	s.steps.handshake = func(ctx context.Context, w http.ResponseWriter, ep Endpoint, challenge string, log *slog.Logger) {
		next(ctx, w, ep, challenge, log)
		// Keyed on the one unique value the request carries.
		ev := store.Event{Key: store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: challenge}, Type: "url_verification"}
		if _, err := store.InsertKey(context.WithoutCancel(ctx), s.pool, ev); err != nil {
			log.Warn("record handshake", "err", err)
		}
	}
}

// installDedupeByPayload takes a body seen before for a duplicate, before the
// key insert. Wrong: distinct events with identical bodies are dropped.
func installDedupeByPayload(s *Server) {
	next := s.steps.recordKey
	s.steps.recordKey = func(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
		// "Same body, same event": a body seen before is taken for a duplicate.
		seen, err := store.PayloadSeen(ctx, tx, ev.Key, ev.Payload)
		if err != nil {
			return s.transient(log, ev, "check payload", err), false
		}
		if seen {
			return duplicate, false
		}
		return next(ctx, tx, ev, log)
	}
}

// installOrphanPayloads copies every payload into webhook_payload_archive right
// after its key. Wrong: the purge never touches that table, so payloads outlive
// their TTL and their key.
func installOrphanPayloads(s *Server) {
	s.steps.copyPayload = store.ArchivePayload
	next := s.steps.recordKey
	s.steps.recordKey = func(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
		res, ok := next(ctx, tx, ev, log)
		if !ok {
			return res, false
		}
		if err := s.steps.copyPayload(ctx, tx, ev); err != nil {
			return s.transient(log, ev, "archive payload", err), false
		}
		return res, true
	}
}

// ackThenCommit writes and flushes the answer before the commit (the
// ack-before-commit defect). Wrong: a crash or failed commit after the ack loses
// an acknowledged event.
func (s *Server) ackThenCommit(ctx context.Context, tx pgx.Tx, ev store.Event, applied store.Result, ack func(result), log *slog.Logger) result {
	res := fromApply(applied)
	ack(res)
	s.hit(log, fpAfterResponse, ev.EventID)
	if err := tx.Commit(ctx); err != nil {
		log.Error("commit failed after the event was acknowledged: the event is lost", "event_id", ev.EventID, "err", err)
		return res
	}
	// The point still exists (after commit), but the answer has already gone.
	s.hit(log, fpAfterCommitBeforeResponse, ev.EventID)
	return res
}

// keyClaims is where an in-memory deduplication keeps the keys it has seen.
type keyClaims interface {
	// claim records k and reports whether it was not recorded yet.
	claim(k store.Key) bool
	// release forgets k after an attempt that did not commit.
	release(k store.Key)
}

// installMemoryClaims deduplicates in process memory (memory-dedup, and
// dedup-window with a bounded window): claims are checked and set before any
// database work, with a plain INSERT and no unique key index. Wrong: the
// database holds nothing that stops a copy the memory does not remember —
// after a restart (memory-dedup), or once the key has left the window
// (dedup-window) — and such a redelivery is applied again.
func installMemoryClaims(s *Server, seen keyClaims) {
	s.schema.WithoutEventKeyIndex = true
	s.steps.begin = func(ctx context.Context) (pgx.Tx, error) {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		return &claimTx{Tx: tx, seen: seen}, nil
	}
	s.steps.recordKey = func(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
		// Checked and set in memory before any database work; the database holds
		// no unique key, so nothing else stands between two copies.
		if !tx.(*claimTx).claim(ev.Key) {
			return duplicate, false
		}
		return s.insertKeyPlain(ctx, tx, ev, log)
	}
}

// claimTx is memory-dedup's transaction: a copy that does not commit gives its
// claimed key back, so the provider's retry of a failed attempt is processed, in
// this process at least.
type claimTx struct {
	pgx.Tx
	seen      keyClaims
	claimed   *store.Key
	committed bool
}

// claim records k in memory for this transaction; false means another copy did.
func (t *claimTx) claim(k store.Key) bool {
	if !t.seen.claim(k) {
		return false
	}
	t.claimed = &k
	return true
}

// Commit keeps the claim once the transaction has committed.
func (t *claimTx) Commit(ctx context.Context) error {
	err := t.Tx.Commit(ctx)
	if err == nil {
		t.committed = true
	}
	return err
}

// Rollback (deferred by the process step, a no-op after a commit) gives an
// uncommitted claim back before the transaction rolls back.
func (t *claimTx) Rollback(ctx context.Context) error {
	if t.claimed != nil && !t.committed {
		t.seen.release(*t.claimed)
		t.claimed = nil
	}
	return t.Tx.Rollback(ctx)
}

// seenKeys is the memory-dedup defect's record of the keys this process has
// claimed: correct among the copies one process sees, empty after every restart.
type seenKeys struct {
	mu   sync.Mutex
	keys map[store.Key]struct{}
}

// claim records k and reports whether it was not recorded yet.
func (m *seenKeys) claim(k store.Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[k]; ok {
		return false
	}
	if m.keys == nil {
		m.keys = map[store.Key]struct{}{}
	}
	m.keys[k] = struct{}{}
	return true
}

// release forgets k after an attempt that did not commit.
func (m *seenKeys) release(k store.Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, k)
}

// dedupWindow is how many keys dedup-window remembers.
const dedupWindow = 32

// recentKeys is dedup-window's record: the last max keys claimed, the oldest
// forgotten first, as a bounded cache or a capped list of recent IDs does.
type recentKeys struct {
	mu    sync.Mutex
	max   int
	keys  map[store.Key]struct{}
	order []store.Key
}

func (r *recentKeys) claim(k store.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[k]; ok {
		return false
	}
	if r.keys == nil {
		r.keys = map[store.Key]struct{}{}
	}
	r.keys[k] = struct{}{}
	r.order = append(r.order, k)
	if len(r.order) > r.max {
		delete(r.keys, r.order[0])
		r.order = r.order[1:]
	}
	return true
}

func (r *recentKeys) release(k store.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.keys, k)
	for i, o := range r.order {
		if o == k {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// processMarkerFirst is the marker-separate-tx defect: the key commits on its own,
// so anything that stops the business transaction leaves a key without its effect
// and every redelivery is then answered "duplicate".
func (s *Server) processMarkerFirst(ctx context.Context, ev store.Event, _ func(result), log *slog.Logger) result {
	inserted, err := store.InsertKey(ctx, s.pool, ev) // autocommit: its own transaction
	if err != nil {
		return s.transient(log, ev, "insert key", err)
	}
	if !inserted {
		return duplicate
	}
	if err := s.steps.copyPayload(ctx, s.pool, ev); err != nil {
		return s.transient(log, ev, "archive payload", err)
	}
	if err := s.fp.hit(fpAfterInsertBeforeCommit, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterInsertBeforeCommit, err)
	}
	var applied store.Result
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		applied, err = store.Apply(ctx, tx, ev, s.rules)
		return err
	})
	if err != nil {
		return s.applyErr(log, ev, err)
	}
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return fromApply(applied)
}

// processBusinessFirst is the business-first defect: check, apply and commit, then
// record the key in a second transaction. Concurrent copies all pass the check, and
// a crash between the commits makes the redelivery apply the event again.
func (s *Server) processBusinessFirst(ctx context.Context, ev store.Event, _ func(result), log *slog.Logger) result {
	exists, err := store.KeyExists(ctx, s.pool, ev.Key)
	if err != nil {
		return s.transient(log, ev, "check key", err)
	}
	if exists {
		return duplicate
	}
	var applied store.Result
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		applied, err = store.Apply(ctx, tx, ev, s.rules)
		return err
	})
	if err != nil {
		return s.applyErr(log, ev, err)
	}
	if err := s.fp.hit(fpAfterInsertBeforeCommit, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterInsertBeforeCommit, err)
	}
	if _, err := store.InsertKey(ctx, s.pool, ev); err != nil {
		return s.transient(log, ev, "insert key", err)
	}
	if err := s.steps.copyPayload(ctx, s.pool, ev); err != nil {
		return s.transient(log, ev, "archive payload", err)
	}
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return fromApply(applied)
}
