package reference

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

// A provider that verifies an endpoint before it delivers events sends a
// handshake: Slack's url_verification, signed like an event, whose challenge
// the endpoint must answer. It is no event: nothing is stored.

// handshakeChallenge reads the challenge of a verified request that is a
// handshake of ep's profile; ok is false for any other request.
func handshakeChallenge(ep Endpoint, body []byte) (challenge string, ok bool) {
	switch ep.Profile {
	case "slack":
		// https://api.slack.com/events/url_verification:
		// {"token": …, "challenge": …, "type": "url_verification"}.
		var m struct {
			Type      string `json:"type"`
			Challenge string `json:"challenge"`
		}
		if json.Unmarshal(body, &m) != nil || m.Type != "url_verification" {
			return "", false
		}
		return m.Challenge, true
	}
	return "", false
}

// answerHandshake answers the challenge as the plain text Slack documents
// first ("respond with the challenge attribute value").
func (s *Server) answerHandshake(_ context.Context, w http.ResponseWriter, _ Endpoint, challenge string, log *slog.Logger) {
	if challenge == "" {
		writeJSON(w, http.StatusBadRequest, response{StatusRejected, "missing_challenge"})
		log.Info("handshake", "outcome", StatusRejected, "reason", "missing_challenge")
		return
	}
	writePlain(w, http.StatusOK, challenge)
	log.Info("handshake", "outcome", "answered")
}

// writePlain answers text/plain with an explicit length.
func writePlain(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(text)))
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}
