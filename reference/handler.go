package reference

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/reference/signature"
	"github.com/hookcert/hookcert/reference/store"
)

// response is the body of every answer (docs/conformance-domain.md, "Responses").
type response struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// result is the outcome of one delivery: HTTP code and body.
type result struct {
	code int
	response
}

// Outcome statuses.
const (
	StatusProcessed = "processed"
	StatusDuplicate = "duplicate"
	StatusIgnored   = "ignored"
	StatusRejected  = "rejected"
	StatusRetry     = "retry"
)

func rejected(code int, reason string) result {
	return result{code, response{StatusRejected, reason}}
}

var duplicate = result{http.StatusOK, response{Status: StatusDuplicate}}

func fromApply(r store.Result) result {
	if r.Applied {
		return result{http.StatusOK, response{Status: StatusProcessed}}
	}
	return result{http.StatusOK, response{StatusIgnored, r.Reason}}
}

func writeJSON(w http.ResponseWriter, code int, body response) {
	b, _ := json.Marshal(body) // two strings: cannot fail
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	// An explicit length lets the client read the whole answer as soon as it is
	// flushed, even while the handler goes on (after-response failpoint, or the
	// ack-before-commit defect).
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// serveDelivery validates a delivery completely before any write, then processes it.
func (s *Server) serveDelivery(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ep, ok := s.endpoints[r.URL.Path]
	log := s.log.With("endpoint", r.URL.Path)
	reject := func(res result, eventID string) {
		writeJSON(w, res.code, res.response)
		s.observe(log, res, eventID, start)
	}
	if !ok {
		reject(rejected(http.StatusNotFound, "unknown_endpoint"), "")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reject(rejected(http.StatusMethodNotAllowed, "method_not_allowed"), "")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		reject(rejected(http.StatusRequestEntityTooLarge, "body_too_large"), "")
		return
	case err != nil:
		reject(rejected(http.StatusBadRequest, "unreadable_body"), "")
		return
	}
	if !s.defects.has(DefectSkipSignature) {
		secret := ep.Secret
		if s.defects.has(DefectRotatedSecret) && ep.Profile == "github" {
			// The deployed secret was rotated at GitHub but not here.
			secret = "before-rotation-" + secret
		}
		if err := signature.Verify(ep.Profile, r.Header, body, secret, s.now(), s.signatureOptions()); err != nil {
			var se *signature.Error
			if !errors.As(err, &se) || se.Reason == signature.ReasonUnknownProfile || se.Reason == signature.ReasonInvalidSecret {
				// The endpoints were validated at start; this is a bug, not the sender's fault.
				log.Error("signature verification failed unexpectedly", "err", err)
				reject(result{http.StatusInternalServerError, response{StatusRetry, "internal_error"}}, "")
				return
			}
			// 401 for every signature failure, stale timestamps included: the
			// delivery is not trusted as sent now, and the sender must re-sign.
			reject(rejected(http.StatusUnauthorized, se.Reason), "")
			return
		}
	}
	if s.defects.has(DefectSkipLargeBodies) && len(body) > skipLargeBodies {
		writeJSON(w, http.StatusOK, response{StatusProcessed, "skipped_large_body"})
		s.observe(log, result{http.StatusOK, response{StatusProcessed, "skipped_large_body"}}, "", start)
		return
	}
	ev, err := extract(ep, r.Header, body, s.defects.has(DefectNoInputValidation), s.defects.has(DefectApplyUnknownTypes))
	if err != nil {
		var br *badRequest
		if errors.As(err, &br) && br.Reason == "malformed_json" && s.defects.has(DefectNoInputValidation) {
			// The defect parses without checking and falls over on bad JSON.
			reject(result{http.StatusInternalServerError, response{StatusRetry, "internal_error"}}, "")
			return
		}
		if errors.As(err, &br) {
			reject(rejected(http.StatusBadRequest, br.Reason), ev.EventID)
			return
		}
		log.Error("extract event", "err", err)
		reject(result{http.StatusInternalServerError, response{StatusRetry, "internal_error"}}, "")
		return
	}

	if s.defects.has(DefectRejectUnknownTypes) && !store.Handled(ev.Type) {
		reject(rejected(http.StatusBadRequest, "unsupported_event_type"), ev.EventID)
		return
	}
	if s.defects.has(DefectSlowAck) {
		// One delivery at a time, each waiting on a synchronous downstream call.
		s.slowMu.Lock()
		defer s.slowMu.Unlock()
		time.Sleep(slowAckWork)
	}

	// The database work must not be cancelled when the provider drops the
	// connection: a cancelled context makes pgx abandon the transaction, so a
	// delivery that has already inserted its key would roll back halfway through
	// for a reason that says nothing about the event. The timeout still bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.dbTimeout)
	defer cancel()

	acked := false
	ack := func(res result) {
		acked = true
		writeJSON(w, res.code, res.response)
		// Flush so the bytes are on the wire before whatever comes next (the
		// after-response failpoint, or the ack-before-commit defect's commit).
		_ = http.NewResponseController(w).Flush()
	}
	res := s.process(ctx, ev, ack, log)
	if res.code/100 == 5 && s.defects.has(DefectAckOnError) {
		// "Log and return 200": the failure has been logged and rolled back, and
		// the provider is told all is well, so it never sends the event again.
		log.Warn("processing failed; answering 200 anyway", "event_id", ev.EventID, "reason", res.Reason)
		res = result{http.StatusOK, response{Status: StatusProcessed}}
	}
	if !acked {
		ack(res)
		if res.code/100 == 2 {
			s.hit(log, fpAfterResponse, ev.EventID)
		}
	}
	s.observe(log, res, ev.EventID, start)
}

// observe logs one delivery and updates the metrics. Never logs secrets,
// signatures or payloads.
func (s *Server) observe(log *slog.Logger, res result, eventID string, start time.Time) {
	d := time.Since(start)
	s.metrics.deliveries.WithLabelValues(res.Status).Inc()
	s.metrics.latency.WithLabelValues(res.Status).Observe(d.Seconds())
	if res.Status == StatusRejected {
		s.metrics.rejections.WithLabelValues(res.Reason).Inc()
	}
	log.Info("delivery", "event_id", eventID, "outcome", res.Status, "reason", res.Reason,
		"http_status", res.code, "duration_ms", float64(d.Microseconds())/1000)
}

// hit calls a failpoint; an injected error after the response can only be logged.
func (s *Server) hit(log *slog.Logger, p fpPoint, eventID string) {
	if err := s.fp.hit(p, eventID); err != nil {
		log.Warn("failpoint error after response", "point", p.String(), "event_id", eventID, "err", err)
	}
}

func (s *Server) transient(log *slog.Logger, ev store.Event, what string, err error) result {
	log.Error("database error; asking the provider to retry", "event_id", ev.EventID, "step", what, "err", err)
	return result{http.StatusInternalServerError, response{StatusRetry, "transient_error"}}
}

func (s *Server) injected(log *slog.Logger, ev store.Event, p fpPoint, err error) result {
	log.Warn("failpoint injected an error", "point", p.String(), "event_id", ev.EventID, "err", err)
	return result{http.StatusInternalServerError, response{StatusRetry, "injected_fault"}}
}

func (s *Server) precondition(log *slog.Logger, ev store.Event, err error) result {
	log.Info("failed precondition; rolled back, asking the provider to retry", "event_id", ev.EventID, "err", err)
	return result{http.StatusServiceUnavailable, response{StatusRetry, "failed_precondition"}}
}

// applyErr maps an Apply error to a result.
func (s *Server) applyErr(log *slog.Logger, ev store.Event, err error) result {
	if errors.Is(err, store.ErrPrecondition) {
		return s.precondition(log, ev, err)
	}
	return s.transient(log, ev, "apply", err)
}

// process records the key and applies the event. ack writes and flushes a response
// early; only the ack-before-commit defect calls it.
func (s *Server) process(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result {
	switch {
	case s.inbox != nil:
		return s.processInbox(ctx, ev, ack, log)
	case s.defects.has(DefectMarkerSeparateTx):
		return s.processMarkerFirst(ctx, ev, log)
	case s.defects.has(DefectBusinessFirst):
		return s.processBusinessFirst(ctx, ev, log)
	}
	return s.processOneTx(ctx, ev, ack, log)
}

// processOneTx is the correct design (and, with a defect, its broken variants that
// keep one transaction): key and business change commit together, the response
// follows the commit.
func (s *Server) processOneTx(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.transient(log, ev, "begin", err)
	}
	// A no-op after Commit; otherwise undoes key and change together.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	keyEv := ev
	markCommitted := func() {} // memory-dedup keeps its claim once committed
	if s.defects.has(DefectDedupeByPayload) {
		// "Same body, same event": a body seen before is taken for a duplicate.
		seen, err := store.PayloadSeen(ctx, tx, ev.Key, ev.Payload)
		if err != nil {
			return s.transient(log, ev, "check payload", err)
		}
		if seen {
			return duplicate
		}
	}
	var inserted bool
	switch {
	case s.defects.has(DefectMemoryDedup):
		// Checked and set in memory before any database work; the database holds
		// no unique key, so nothing else stands between two copies.
		if !s.seen.claim(keyEv.Key) {
			return duplicate
		}
		// A copy that does not commit gives the key back, so the provider's retry
		// of a failed attempt is processed, in this process at least.
		committed := false
		defer func() {
			if !committed {
				s.seen.release(keyEv.Key)
			}
		}()
		markCommitted = func() { committed = true }
		if err := store.InsertKeyPlain(ctx, tx, keyEv); err != nil {
			return s.transient(log, ev, "insert key", err)
		}
		inserted = true
	case s.defects.has(DefectCheckThenInsert):
		exists, err := store.KeyExists(ctx, tx, keyEv.Key)
		if err != nil {
			return s.transient(log, ev, "check key", err)
		}
		if exists {
			return duplicate
		}
		if err := store.InsertKeyPlain(ctx, tx, keyEv); err != nil {
			return s.transient(log, ev, "insert key", err)
		}
		inserted = true
	case s.defects.has(DefectDuplicate500):
		if err := store.InsertKeyPlain(ctx, tx, keyEv); err != nil {
			return s.transient(log, ev, "insert key", err)
		}
		inserted = true
	case s.defects.has(DefectGlobalEventID):
		inserted, err = store.InsertKeyUnlessEventIDSeen(ctx, tx, keyEv)
	default:
		inserted, err = store.InsertKey(ctx, tx, keyEv)
	}
	if err != nil {
		return s.transient(log, ev, "insert key", err)
	}
	if !inserted {
		// The key is already committed (or was, by the copy we waited for): the
		// event has been applied once; acknowledge without touching anything.
		return duplicate
	}
	if s.defects.has(DefectOrphanPayloads) {
		if err := store.ArchivePayload(ctx, tx, ev); err != nil {
			return s.transient(log, ev, "archive payload", err)
		}
	}
	applied, err := store.Apply(ctx, tx, ev, s.rules)
	if err != nil {
		return s.applyErr(log, ev, err)
	}
	if err := s.fp.hit(fpAfterInsertBeforeCommit, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterInsertBeforeCommit, err)
	}
	res := fromApply(applied)
	if s.defects.has(DefectAckBeforeCommit) {
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
	if err := tx.Commit(ctx); err != nil {
		// Commit uncertainty: the provider's retry is either deduplicated (it did
		// commit) or applied (it did not); both are correct.
		return s.transient(log, ev, "commit", err)
	}
	markCommitted()
	if s.outbox != nil && applied.Applied {
		s.outbox.Wake()
	}
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return res
}

// processInbox is inbox mode: the key and the stored event (pending) commit in one
// transaction, the 202 follows the commit, and a worker applies the event later.
// A duplicate of a stored event is answered 200 duplicate whatever its state.
func (s *Server) processInbox(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result {
	if s.defects.has(DefectInboxAckBeforeCommit) {
		return s.processInboxAckFirst(ctx, ev, ack, log)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.transient(log, ev, "begin", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	inserted, err := store.InsertInbox(ctx, tx, ev)
	if err != nil {
		return s.transient(log, ev, "insert inbox event", err)
	}
	if !inserted {
		return duplicate
	}
	if err := s.fp.hit(fpAfterInsertBeforeCommit, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterInsertBeforeCommit, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.transient(log, ev, "commit", err)
	}
	s.inbox.Wake()
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return result{http.StatusAccepted, response{Status: StatusAccepted}}
}

// processMarkerFirst is the marker-separate-tx defect: the key commits on its own,
// so anything that stops the business transaction leaves a key without its effect
// and every redelivery is then answered "duplicate".
func (s *Server) processMarkerFirst(ctx context.Context, ev store.Event, log *slog.Logger) result {
	inserted, err := store.InsertKey(ctx, s.pool, ev) // autocommit: its own transaction
	if err != nil {
		return s.transient(log, ev, "insert key", err)
	}
	if !inserted {
		return duplicate
	}
	if s.defects.has(DefectOrphanPayloads) {
		if err := store.ArchivePayload(ctx, s.pool, ev); err != nil {
			return s.transient(log, ev, "archive payload", err)
		}
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
func (s *Server) processBusinessFirst(ctx context.Context, ev store.Event, log *slog.Logger) result {
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
	if s.defects.has(DefectOrphanPayloads) {
		if err := store.ArchivePayload(ctx, s.pool, ev); err != nil {
			return s.transient(log, ev, "archive payload", err)
		}
	}
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return fromApply(applied)
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
