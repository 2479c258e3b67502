package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxPayloadBytes: "Payloads are capped at 25 MB" (GitHub, webhook events and
// payloads); GitHub does not send larger ones, so anything larger is refused.
const maxPayloadBytes = 25 << 20

// GitHub's delivery headers (docs.github.com, webhook events and payloads:
// delivery headers).
const (
	headerEvent     = "X-GitHub-Event"
	headerDelivery  = "X-GitHub-Delivery"
	headerSignature = "X-Hub-Signature-256"
)

// delivery is one verified delivery, ready to enqueue.
type delivery struct {
	id      string // X-GitHub-Delivery: kept by a redelivery, so it names the event
	event   string // X-GitHub-Event: the event name; the action is in the body
	payload []byte
}

// accept verifies a delivery and enqueues it; 202 means it is durably queued
// (committed), never merely received.
func (g *Gateway) accept(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/x-www-form-urlencoded" {
			http.Error(w, "configure the webhook with content type application/json", http.StatusUnsupportedMediaType)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayloadBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "payload larger than 25 MB", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	// The signature comes first: nothing about an unauthenticated request is
	// worth telling its sender.
	if !validSignature(g.cfg.Secret, body, r.Header.Get(headerSignature)) {
		http.Error(w, "invalid or missing X-Hub-Signature-256", http.StatusBadRequest)
		return
	}
	d := delivery{id: strings.TrimSpace(r.Header.Get(headerDelivery)), event: strings.TrimSpace(r.Header.Get(headerEvent)), payload: body}
	if d.id == "" {
		http.Error(w, "missing X-GitHub-Delivery", http.StatusBadRequest)
		return
	}
	if d.event == "" {
		http.Error(w, "missing X-GitHub-Event", http.StatusBadRequest)
		return
	}
	if !isJSONObject(body) {
		http.Error(w, "the payload is not a JSON object", http.StatusBadRequest)
		return
	}
	if g.mem != nil {
		if !g.mem.put(d) {
			http.Error(w, "queue full, try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.acceptTimeout)
	defer cancel()
	if err := g.enqueue(ctx, d); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "22P05" || pe.Code == "22P02") {
			// Valid JSON that jsonb refuses (a \u0000 in a string).
			http.Error(w, "the payload cannot be stored", http.StatusBadRequest)
			return
		}
		g.log.Error("enqueue failed", "delivery", d.id, "event", d.event, "err", err)
		http.Error(w, "could not queue the delivery", http.StatusServiceUnavailable)
		return
	}
	g.nudge()
	w.WriteHeader(http.StatusAccepted)
}

// enqueue inserts one delivery into the inbox (autocommit: committed when Exec
// returns).
func (g *Gateway) enqueue(ctx context.Context, d delivery) error {
	_, err := g.pool.Exec(ctx,
		`INSERT INTO inbox (delivery_id, event, payload) VALUES ($1, $2, $3::jsonb)`, d.id, d.event, string(d.payload))
	return err
}

// nudge wakes one idle worker, if any is waiting.
func (g *Gateway) nudge() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// validSignature checks X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256
// of the raw body keyed with the secret (docs.github.com, validating webhook
// deliveries), compared in constant time.
func validSignature(secret, body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// isJSONObject reports whether b is one valid JSON object (GitHub payloads
// always are).
func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}
