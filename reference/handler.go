package reference

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
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

// Bodies of the two answers nearly every delivery gets, encoded once.
var (
	processedBody = encodeResponse(response{Status: StatusProcessed})
	duplicateBody = encodeResponse(response{Status: StatusDuplicate})
)

// contentTypeJSON is every answer's Content-Type, shared (net/http only reads it).
var contentTypeJSON = []string{"application/json"}

func encodeResponse(body response) []byte {
	b, _ := json.Marshal(body) // two strings: cannot fail
	return append(b, '\n')
}

func writeJSON(w http.ResponseWriter, code int, body response) {
	var b []byte
	switch body {
	case response{Status: StatusProcessed}:
		b = processedBody
	case response{Status: StatusDuplicate}:
		b = duplicateBody
	default:
		b = encodeResponse(body)
	}
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	// An explicit length lets the client read the whole answer as soon as it is
	// flushed, even while the handler goes on (after-response failpoint, or the
	// ack-before-commit defect).
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// serveDelivery validates a delivery completely before any write, then processes it.
func (s *Server) serveDelivery(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ep, ok := s.endpoints[r.URL.Path]
	log := s.epLog[r.URL.Path]
	if !ok {
		log = s.log.With("endpoint", r.URL.Path)
	}
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
	if err := s.steps.verify(ep, r.Header, body); err != nil {
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
	if challenge, ok := handshakeChallenge(ep, body); ok {
		// A verified handshake is answered, never stored: it is no event.
		s.steps.handshake(r.Context(), w, ep, challenge, log)
		return
	}
	ev, res, ok := s.steps.readEvent(ep, r.Header, body, log)
	if !ok {
		reject(res, ev.EventID)
		return
	}
	s.steps.deliver(w, r, ev, log, start)
}

// verify checks the delivery's signature with the endpoint's secret, and its
// signed timestamp against the tolerance (steps.sigOptions).
func (s *Server) verify(ep Endpoint, h http.Header, body []byte) error {
	return signature.Verify(ep.Profile, h, body, ep.Secret, s.now(), s.steps.sigOptions)
}

// readEvent reads the event of a verified delivery where its profile puts it;
// ok false answers res instead (steps.refuse).
func (s *Server) readEvent(ep Endpoint, h http.Header, body []byte, log *slog.Logger) (store.Event, result, bool) {
	ev, err := extract(ep, h, body, s.steps.fields)
	if err != nil {
		return ev, s.steps.refuse(err, log), false
	}
	return ev, result{}, true
}

// refuse answers a delivery whose event cannot be read: 400 naming what is
// wrong, or 500 when the field mapping itself failed.
func refuse(err error, log *slog.Logger) result {
	var br *badRequest
	if errors.As(err, &br) {
		return rejected(http.StatusBadRequest, br.Reason)
	}
	log.Error("extract event", "err", err)
	return result{http.StatusInternalServerError, response{StatusRetry, "internal_error"}}
}

// deliver processes a readable event and answers it; the answer follows the
// commit unless the process step already gave it.
func (s *Server) deliver(w http.ResponseWriter, r *http.Request, ev store.Event, log *slog.Logger, start time.Time) {
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
	res := s.steps.process(ctx, ev, ack, log)
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

// processOneTx is the correct design: key and business change commit together in
// ONE transaction, and the response follows the commit.
func (s *Server) processOneTx(ctx context.Context, ev store.Event, ack func(result), log *slog.Logger) result {
	if s.oneTrip && ev.Type == store.TypeCashBalance && s.fp.idle() {
		return s.creditOneTrip(ctx, ev, log)
	}
	tx, err := s.steps.begin(ctx)
	if err != nil {
		return s.transient(log, ev, "begin", err)
	}
	// A no-op after Commit; otherwise undoes key and change together.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	if res, ok := s.steps.recordKey(ctx, tx, ev, log); !ok {
		return res
	}
	applied, err := store.Apply(ctx, tx, ev, s.rules)
	if err != nil {
		return s.applyErr(log, ev, err)
	}
	if err := s.fp.hit(fpAfterInsertBeforeCommit, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterInsertBeforeCommit, err)
	}
	return s.steps.commit(ctx, tx, ev, applied, ack, log)
}

// creditOneTrip is processOneTx for a cash credit when nothing may stop it
// between its writes and its commit (no defect, no outbox, no armed failpoint):
// the same rows, written by one statement that is its own transaction
// (store.CreditOneTrip). Step by step, the balance row stays locked from the
// upsert until the COMMIT arrives a round trip later, and every credit to the
// account queues behind that; here the commit follows the upsert inside
// PostgreSQL, and the receiver and the backend wake once per credit, not five
// times.
func (s *Server) creditOneTrip(ctx context.Context, ev store.Event, log *slog.Logger) result {
	inserted, err := store.CreditOneTrip(ctx, s.pool, ev)
	if err != nil {
		// Commit uncertainty included: the retry is deduplicated or applied.
		return s.transient(log, ev, "credit", err)
	}
	if !inserted {
		return duplicate
	}
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return fromApply(store.Result{Applied: true})
}

// begin starts the delivery's transaction.
func (s *Server) begin(ctx context.Context) (pgx.Tx, error) { return s.pool.Begin(ctx) }

// recordKey inserts the event key (INSERT ... ON CONFLICT DO NOTHING RETURNING on
// the unique key index); ok false answers res instead: a duplicate, or a
// transient error.
func (s *Server) recordKey(ctx context.Context, tx pgx.Tx, ev store.Event, log *slog.Logger) (result, bool) {
	inserted, err := store.InsertKey(ctx, tx, ev)
	if err != nil {
		return s.transient(log, ev, "insert key", err), false
	}
	if !inserted {
		// The key is already committed (or was, by the copy we waited for): the
		// event has been applied once; acknowledge without touching anything.
		return duplicate, false
	}
	return result{}, true
}

// commitThenAnswer commits key and change together and only then returns the
// answer, so a 2xx never goes out for an event that is not committed.
func (s *Server) commitThenAnswer(ctx context.Context, tx pgx.Tx, ev store.Event, applied store.Result, _ func(result), log *slog.Logger) result {
	if err := tx.Commit(ctx); err != nil {
		// Commit uncertainty: the provider's retry is either deduplicated (it did
		// commit) or applied (it did not); both are correct.
		return s.transient(log, ev, "commit", err)
	}
	if s.outbox != nil && applied.Applied {
		s.outbox.Wake()
	}
	if err := s.fp.hit(fpAfterCommitBeforeResponse, ev.EventID); err != nil {
		return s.injected(log, ev, fpAfterCommitBeforeResponse, err)
	}
	return fromApply(applied)
}

// processInbox is inbox mode: the key and the stored event (pending) commit in one
// transaction, the 202 follows the commit, and a worker applies the event later.
// A duplicate of a stored event is answered 200 duplicate whatever its state.
func (s *Server) processInbox(ctx context.Context, ev store.Event, _ func(result), log *slog.Logger) result {
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
