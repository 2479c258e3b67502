package failpoints

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// fakeReceiver implements the failpoint protocol (docs/failpoints.md) minimally.
type fakeReceiver struct {
	mu     sync.Mutex
	armed  map[[2]string]string // (point, event ID) -> action
	bodies []string
}

func (f *fakeReceiver) fail(w http.ResponseWriter, field, rule string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": "failpoint: " + field + ": " + rule, "field": field, "rule": rule})
}

func (f *fakeReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest := strings.TrimPrefix(r.URL.Path, DefaultPath)
	switch {
	case rest == "" && r.Method == http.MethodGet:
		out := []Arming{}
		for k, a := range f.armed {
			out = append(out, Arming{Point: k[0], EventID: k[1], Action: a})
		}
		order := map[string]int{}
		for i, p := range Points {
			order[p] = i
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Point != out[j].Point {
				return order[out[i].Point] < order[out[j].Point]
			}
			return out[i].EventID < out[j].EventID
		})
		_ = json.NewEncoder(w).Encode(out)
	case rest == "" && r.Method == http.MethodDelete:
		f.armed = map[[2]string]string{}
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(rest, "/") && r.Method == http.MethodPut:
		point := rest[1:]
		body, _ := io.ReadAll(r.Body)
		f.bodies = append(f.bodies, string(body))
		var req struct {
			EventID *string `json:"event_id"`
			Action  string  `json:"action"`
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		switch err := dec.Decode(&req); {
		case err != nil:
			f.fail(w, "body", err.Error())
		case !contains(Points, point):
			f.fail(w, "point", "unknown point "+point)
		case req.Action != ActionCrash && req.Action != ActionError:
			f.fail(w, "action", `must be "crash" or "error"`)
		case req.EventID != nil && len(*req.EventID) > 1024:
			f.fail(w, "event_id", "at most 1024 bytes")
		default:
			id := ""
			if req.EventID != nil {
				id = *req.EventID
			}
			f.armed[[2]string{point, id}] = req.Action
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		http.NotFound(w, r)
	}
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	fake := &fakeReceiver{armed: map[[2]string]string{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c := New(srv.URL+"/", "", srv.Client())

	if err := c.Arm(ctx, AfterCommitBeforeResponse, "evt_1", ActionCrash); err != nil {
		t.Fatal(err)
	}
	if err := c.Arm(ctx, AfterInsertBeforeCommit, "", ActionError); err != nil {
		t.Fatal(err)
	}
	got, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Arming{
		{Point: AfterInsertBeforeCommit, EventID: "", Action: ActionError},
		{Point: AfterCommitBeforeResponse, EventID: "evt_1", Action: ActionCrash},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List = %+v, want %+v", got, want)
	}
	if b := fake.bodies; len(b) != 2 || b[0] != `{"event_id":"evt_1","action":"crash"}` || b[1] != `{"action":"error"}` {
		t.Errorf("request bodies = %q", b)
	}

	// The server's reason reaches the caller with the status.
	err = c.Arm(ctx, AfterResponse, strings.Repeat("x", 1025), ActionCrash)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || se.Field != "event_id" ||
		!strings.Contains(err.Error(), "400 Bad Request: failpoint: event_id: at most 1024 bytes") {
		t.Errorf("oversized event ID: %v", err)
	}

	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := c.List(ctx); err != nil || len(got) != 0 {
		t.Errorf("List after Reset = %v, %v", got, err)
	}
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	fake := &fakeReceiver{armed: map[[2]string]string{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	// Both bad arguments are reported, before any request.
	err := New(srv.URL, "", nil).Arm(ctx, "before-lunch", "evt_1", "explode")
	if err == nil || !strings.Contains(err.Error(), `point: must be one of after-insert-before-commit, after-commit-before-response, after-response, got "before-lunch"`) ||
		!strings.Contains(err.Error(), `action: must be "crash" or "error", got "explode"`) || len(fake.bodies) != 0 {
		t.Errorf("bad arguments: %v (requests sent: %d)", err, len(fake.bodies))
	}

	// A receiver without the protocol at that path answers 404.
	err = New(srv.URL, "/elsewhere", nil).Reset(ctx)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusNotFound || !strings.Contains(err.Error(), "started without failpoints enabled?") {
		t.Errorf("wrong path: %v", err)
	}

	// A non-JSON list answer is an error, not an empty list.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>") }))
	defer bad.Close()
	if _, err := New(bad.URL, "", nil).List(ctx); err == nil || !strings.Contains(err.Error(), "not a JSON array") {
		t.Errorf("non-JSON list: %v", err)
	}

	// An unreachable receiver.
	srv.Close()
	if err := New(srv.URL, "", nil).Reset(ctx); err == nil || !strings.Contains(err.Error(), "failpoints: reset") {
		t.Errorf("unreachable: %v", err)
	}
}
