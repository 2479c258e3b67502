package mysqlref

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hookcert/hookcert/reference/signature"
)

// Event types the receiver handles; any other verified type is acknowledged
// and its key recorded, with no effect.
const (
	TypeChargeSucceeded     = "charge.succeeded"
	TypeSubscriptionUpdated = "customer.subscription.updated"
	TypeSubscriptionDeleted = "customer.subscription.deleted"
)

// Outcome statuses of the JSON answer {"status": …, "reason": …}.
const (
	StatusProcessed = "processed" // 200: key recorded, effect applied
	StatusIgnored   = "ignored"   // 200: key recorded, nothing to apply (unhandled type, stale version)
	StatusDuplicate = "duplicate" // 200: the key was already committed
	StatusRejected  = "rejected"  // 4xx: the delivery is not authentic or not usable
	StatusRetry     = "retry"     // 5xx: nothing committed, the provider should retry
)

type response struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

type result struct {
	code int
	response
}

func rejected(code int, reason string) result { return result{code, response{StatusRejected, reason}} }

var (
	processed = result{http.StatusOK, response{Status: StatusProcessed}}
	duplicate = result{http.StatusOK, response{Status: StatusDuplicate}}
	retry     = result{http.StatusInternalServerError, response{StatusRetry, "transient_error"}}
)

func writeJSON(w http.ResponseWriter, code int, body response) {
	b, _ := json.Marshal(body) // two strings: cannot fail
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	// An explicit length lets the client take the whole answer as soon as it
	// is flushed, even while the handler goes on (the ack-before-commit defect).
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// event is one verified delivery's event, read from Stripe's envelope.
type event struct {
	source, account, id, typ string
	objectID                 string
	amount                   int64
	currency                 string
	version                  int64
	status                   string
}

// serveDelivery validates a delivery completely before any write, then
// processes it.
func (s *Server) serveDelivery(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	log := s.log.With("endpoint", r.URL.Path)
	ep, ok := s.endpoints[r.URL.Path]
	answer := func(res result, eventID string) {
		writeJSON(w, res.code, res.response)
		logDelivery(log, res, eventID, start)
	}
	if !ok {
		answer(rejected(http.StatusNotFound, "unknown_endpoint"), "")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(rejected(http.StatusMethodNotAllowed, "method_not_allowed"), "")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		answer(rejected(http.StatusRequestEntityTooLarge, "body_too_large"), "")
		return
	case err != nil:
		answer(rejected(http.StatusBadRequest, "unreadable_body"), "")
		return
	}
	if err := signature.Verify(signature.ProfileStripe, r.Header, body, ep.Secret, time.Now(), signature.Options{Tolerance: s.tolerance}); err != nil {
		var se *signature.Error
		if !errors.As(err, &se) || se.Reason == signature.ReasonUnknownProfile || se.Reason == signature.ReasonInvalidSecret {
			// The endpoints were validated at start: a bug, not the sender's fault.
			log.Error("signature verification failed unexpectedly", "err", err)
			answer(result{http.StatusInternalServerError, response{StatusRetry, "internal_error"}}, "")
			return
		}
		// 401 for every signature failure, stale timestamps included: the
		// sender must sign again.
		answer(rejected(http.StatusUnauthorized, se.Reason), "")
		return
	}
	ev, reason := readEvent(ep, body)
	if reason != "" {
		answer(rejected(http.StatusBadRequest, reason), ev.id)
		return
	}
	// The database work must not stop when the provider drops the connection:
	// the transaction either commits or rolls back as a whole, for reasons of
	// its own. The timeout still bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.dbTimeout)
	defer cancel()
	acked := false
	ack := func(res result) {
		if acked {
			return
		}
		acked = true
		writeJSON(w, res.code, res.response)
		// On the wire before whatever follows (the defect's commit).
		_ = http.NewResponseController(w).Flush()
	}
	res := s.process(ctx, ev, ack, log)
	if acked && res.code/100 != 2 {
		log.Error("the event was acknowledged but not committed: it is lost", "event_id", ev.id)
	}
	ack(res)
	logDelivery(log, res, ev.id, start)
}

// readEvent reads the event from Stripe's envelope; a non-empty reason is
// why the delivery is unusable (400).
func readEvent(ep Endpoint, body []byte) (event, string) {
	if !json.Valid(body) {
		return event{}, "malformed_json"
	}
	var env struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return event{}, "malformed_json"
	}
	ev := event{source: ep.KeySource(), account: ep.Account, id: env.ID, typ: env.Type}
	switch {
	case env.ID == "":
		return ev, "missing_event_id"
	case !usableText(env.ID, maxIDLen):
		return event{}, "invalid_event_id"
	case env.Type == "":
		return ev, "missing_event_type"
	case !usableText(env.Type, maxTypeLen):
		return ev, "invalid_event_type"
	}
	if env.Type != TypeChargeSucceeded && env.Type != TypeSubscriptionUpdated && env.Type != TypeSubscriptionDeleted {
		return ev, "" // recorded and acknowledged; its object is not read
	}
	obj := env.Data.Object
	if len(obj) == 0 || bytes.Equal(obj, []byte("null")) {
		return ev, "missing_object"
	}
	var o struct {
		ID       string `json:"id"`
		Amount   *int64 `json:"amount"`
		Currency string `json:"currency"`
		Version  *int64 `json:"version"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal(obj, &o); err != nil {
		return ev, "invalid_object"
	}
	switch {
	case o.ID == "":
		return ev, "missing_object_id"
	case !usableText(o.ID, maxIDLen):
		return ev, "invalid_object"
	}
	ev.objectID = o.ID
	if env.Type == TypeChargeSucceeded {
		if o.Amount == nil || len(o.Currency) > maxCurrency {
			return ev, "invalid_object"
		}
		ev.amount, ev.currency = *o.Amount, o.Currency
		return ev, ""
	}
	if o.Version == nil || *o.Version < 0 || len(o.Status) > maxStatusLen {
		return ev, "invalid_object"
	}
	ev.version, ev.status = *o.Version, o.Status
	switch {
	case env.Type == TypeSubscriptionDeleted:
		ev.status = "deleted"
	case ev.status == "":
		ev.status = "active"
	}
	return ev, ""
}

// usableText is valid UTF-8 without NUL of 1 to max bytes.
func usableText(s string, max int) bool {
	return len(s) <= max && utf8.ValidString(s) && !bytes.Contains([]byte(s), []byte{0})
}

// process runs the delivery's transaction, again from the start when InnoDB
// picked it as a deadlock victim (it has then rolled back, key and all).
func (s *Server) process(ctx context.Context, ev event, ack func(result), log *slog.Logger) result {
	for attempt := 1; ; attempt++ {
		res, err := s.processOnce(ctx, ev, ack)
		if err == nil {
			return res
		}
		if isMySQLError(err, erLockDeadlock) && attempt < deadlockAttempts && ctx.Err() == nil {
			log.Info("deadlock: running the transaction again", "event_id", ev.id, "attempt", attempt)
			// A short random pause, so the two victims do not meet again.
			time.Sleep(time.Duration(1+rand.IntN(10*attempt)) * time.Millisecond)
			continue
		}
		// Nothing was committed (or, on a failed COMMIT, it is uncertain): the
		// provider's retry is then deduplicated or applied, both correct. A lost
		// connection is never retried here: its transaction is gone, and the
		// provider must learn it was not applied.
		log.Error("database error; asking the provider to retry", "event_id", ev.id, "err", err)
		return retry
	}
}

// processOnce is the design: the key and the effect commit in ONE
// transaction, and the answer follows the COMMIT.
func (s *Server) processOnce(ctx context.Context, ev event, ack func(result)) (result, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return result{}, err
	}
	// A no-op after Commit; otherwise undoes key and effect together.
	defer func() { _ = tx.Rollback() }()
	dup, err := s.recordKey(ctx, tx, ev)
	if err != nil {
		return result{}, err
	}
	if dup {
		// Committed by an earlier copy (or the one this INSERT waited for):
		// applied once already, acknowledged without touching anything.
		return duplicate, nil
	}
	if s.defects.has(DefectAckBeforeCommit) {
		// Defect: the provider is told the event is safe while its effect and
		// its COMMIT are still to come.
		ack(processed)
	}
	applied, err := s.apply(ctx, tx, ev)
	if err != nil {
		return result{}, err
	}
	if err := tx.Commit(); err != nil {
		return result{}, err
	}
	if !applied {
		return result{http.StatusOK, response{StatusIgnored, ignoredReason(ev)}}, nil
	}
	return processed, nil
}

// recordKey inserts the event key under its UNIQUE key; dup is true when the
// key is committed already (ER_DUP_ENTRY). A copy racing an uncommitted insert
// of the same key waits for it: a duplicate when it commits, the insert when
// it rolls back.
func (s *Server) recordKey(ctx context.Context, tx *sql.Tx, ev event) (dup bool, err error) {
	if s.defects.has(DefectCheckThenInsert) {
		// Defect: "does it exist?" under a snapshot every concurrent copy
		// shares, then a plain INSERT with no unique key to stop the second.
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook_events WHERE source = ? AND account_id = ? AND event_id = ?",
			ev.source, ev.account, ev.id).Scan(&n); err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO webhook_events (source, account_id, event_id, event_type) VALUES (?, ?, ?, ?)",
		ev.source, ev.account, ev.id, ev.typ)
	if isMySQLError(err, erDupEntry) {
		return true, nil
	}
	return false, err
}

// Versioned upserts. A subscription row changes only for a newer version: the
// assignments run left to right, so status and updated_at compare with the old
// version before version itself moves. VALUES() is what MariaDB and MySQL 8
// both accept (MySQL 8.0.20+ prefers a row alias, which MariaDB lacks).
const (
	upsertGuarded = `INSERT INTO subscriptions (source, account_id, object_id, version, status) VALUES (?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE
			status = IF(VALUES(version) > version, VALUES(status), status),
			updated_at = IF(VALUES(version) > version, CURRENT_TIMESTAMP(6), updated_at),
			version = GREATEST(version, VALUES(version))`
	// The last-write-wins defect's: whatever arrives last is stored.
	upsertLastWriteWins = `INSERT INTO subscriptions (source, account_id, object_id, version, status) VALUES (?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE status = VALUES(status), version = VALUES(version), updated_at = CURRENT_TIMESTAMP(6)`
)

// apply makes the event's one business change inside the delivery's
// transaction; applied is false when there was nothing to change.
func (s *Server) apply(ctx context.Context, tx *sql.Tx, ev event) (applied bool, err error) {
	switch ev.typ {
	case TypeChargeSucceeded:
		_, err := tx.ExecContext(ctx, "INSERT INTO ledger_entries (source, account_id, event_id, object_id, amount, currency) VALUES (?, ?, ?, ?, ?, ?)",
			ev.source, ev.account, ev.id, ev.objectID, ev.amount, ev.currency)
		return err == nil, err
	case TypeSubscriptionUpdated, TypeSubscriptionDeleted:
		q := upsertGuarded
		if s.defects.has(DefectLastWriteWins) {
			q = upsertLastWriteWins
		}
		r, err := tx.ExecContext(ctx, q, ev.source, ev.account, ev.objectID, ev.version, ev.status)
		if err != nil {
			return false, err
		}
		// 1 inserted, 2 updated, 0 left as it was (an older or equal version).
		n, err := r.RowsAffected()
		return n > 0, err
	}
	return false, nil
}

func ignoredReason(ev event) string {
	if ev.typ == TypeSubscriptionUpdated || ev.typ == TypeSubscriptionDeleted {
		return "stale_version"
	}
	return "unhandled_type"
}

// logDelivery logs one delivery's outcome; never a secret, signature or payload.
func logDelivery(log *slog.Logger, res result, eventID string, start time.Time) {
	log.Info("delivery", "event_id", eventID, "outcome", res.Status, "reason", res.Reason,
		"http_status", res.code, "duration_ms", float64(time.Since(start).Microseconds())/1000)
}
