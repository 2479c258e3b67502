package failpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// PathPrefix is where the protocol lives on the receiver.
const PathPrefix = "/_hookcert/failpoints"

// maxBody bounds a PUT body; an arming is a few dozen bytes.
const maxBody = 64 << 10

// Handler serves the protocol of docs/failpoints.md:
//
//	PUT    /_hookcert/failpoints/{point}  {"event_id": "evt_1", "action": "crash"}  -> 204
//	GET    /_hookcert/failpoints                                                 -> 200 [armings]
//	DELETE /_hookcert/failpoints                                                 -> 204
//
// Mount it for both PathPrefix and PathPrefix+"/" (or a prefix covering both). On a
// nil *Registry every request gets 404, as if the surface did not exist.
func (r *Registry) Handler() http.Handler {
	if r == nil {
		return http.NotFoundHandler()
	}
	return http.HandlerFunc(r.serve)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	switch {
	case path == PathPrefix:
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			writeJSON(w, http.StatusOK, r.Armed())
		case http.MethodDelete:
			r.DisarmAll()
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, "GET, HEAD, DELETE")
		}
	case strings.HasPrefix(path, PathPrefix+"/"):
		if req.Method != http.MethodPut {
			methodNotAllowed(w, "PUT")
			return
		}
		r.arm(w, req, Point(strings.TrimPrefix(path, PathPrefix+"/")))
	default:
		http.NotFound(w, req)
	}
}

type armRequest struct {
	EventID *string `json:"event_id"`
	Action  *string `json:"action"`
}

func (r *Registry) arm(w http.ResponseWriter, req *http.Request, p Point) {
	if !p.Valid() {
		writeError(w, &FieldError{Field: "point", Rule: fmt.Sprintf("path segment must be one of %s, got %q", joinPoints(), truncate(string(p)))})
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxBody))
	dec.DisallowUnknownFields()
	var body armRequest
	if err := dec.Decode(&body); err != nil {
		writeError(w, bodyError(err))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, &FieldError{Field: "body", Rule: "must be a single JSON object"})
		return
	}
	if body.Action == nil {
		writeError(w, &FieldError{Field: "action", Rule: fmt.Sprintf("required, %q or %q", ActionCrash, ActionError)})
		return
	}
	eventID := ""
	if body.EventID != nil {
		eventID = *body.EventID
	}
	if err := r.Arm(p, eventID, *body.Action); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// bodyError turns a JSON decoding failure into a FieldError naming what was wrong.
func bodyError(err error) *FieldError {
	var typeErr *json.UnmarshalTypeError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &FieldError{Field: typeErr.Field, Rule: "must be a JSON string"}
	case errors.As(err, &maxErr):
		return &FieldError{Field: "body", Rule: fmt.Sprintf("must be at most %d bytes", maxErr.Limit)}
	case errors.Is(err, io.EOF):
		return &FieldError{Field: "body", Rule: `required: a JSON object such as {"event_id": "evt_1", "action": "crash"}`}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &FieldError{Field: strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), Rule: "unknown field (allowed: event_id, action)"}
	default:
		return &FieldError{Field: "body", Rule: "must be a JSON object: " + err.Error()}
	}
}

type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field"`
	Rule  string `json:"rule"`
}

func writeError(w http.ResponseWriter, err error) {
	var fe *FieldError
	if !errors.As(err, &fe) {
		fe = &FieldError{Field: "body", Rule: err.Error()}
	}
	writeJSON(w, http.StatusBadRequest, errorBody{Error: fe.Error(), Field: fe.Field, Rule: fe.Rule})
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "failpoint: method not allowed", Field: "method", Rule: "must be one of " + allow})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do about it
}
