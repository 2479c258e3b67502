package cmdobserve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// shapeCase is one answer and how it must be read; both observers are run on
// the same table, the command one through a real program printing the
// answer, the HTTP one through a real loopback server answering it.
type shapeCase struct {
	query  string
	answer string // one word: no spaces (a command line splits on them)
	cols   []string
	rows   [][]any
	err    string // a part of the error; "" for none
}

var shapeCases = []shapeCase{
	{query: "event_rows", answer: "null", cols: []string{"count"}},
	{query: "event_rows", answer: "3", cols: []string{"count"}, rows: [][]any{{int64(3)}}},
	{query: "event_rows", answer: "3.0", cols: []string{"count"}, rows: [][]any{{int64(3)}}},
	{query: "effects", answer: "[4]", cols: []string{"count"}, rows: [][]any{{int64(4)}}},
	{query: "effects", answer: "[]", cols: []string{"count"}},
	{query: "effects", answer: `{"count":2,"note":"extra keys are ignored"}`, cols: []string{"count"}, rows: [][]any{{int64(2)}}},
	{query: "effects", answer: `{"count":null}`, cols: []string{"count"}, rows: [][]any{{nil}}},
	{query: "object_effects", answer: "[[5]]", cols: []string{"count"}, rows: [][]any{{int64(5)}}},
	{query: "object", answer: `{"version":7,"status":"active"}`, cols: []string{"version", "status"}, rows: [][]any{{int64(7), "active"}}},
	{query: "object", answer: `{"version":7}`, cols: []string{"version"}, rows: [][]any{{int64(7)}}},
	{query: "object", answer: `[[1,"a"],[2,"b"]]`, cols: []string{"version", "status"}, rows: [][]any{{int64(1), "a"}, {int64(2), "b"}}},
	{query: "object", answer: "null", cols: []string{"version", "status"}},
	{query: "payment", answer: `"succeeded"`, cols: []string{"status"}, rows: [][]any{{"succeeded"}}},
	{query: "payment", answer: `{"status":"refunded"}`, cols: []string{"status"}, rows: [][]any{{"refunded"}}},
	{query: "payload_present", answer: "true", cols: []string{"present"}, rows: [][]any{{true}}},
	{query: "payload_present", answer: `{"present":false}`, cols: []string{"present"}, rows: [][]any{{false}}},
	{query: "key_ttl", answer: `{"ttl_ms":-1}`, cols: []string{"ttl_ms"}, rows: [][]any{{int64(-1)}}},
	{query: "key_ttl", answer: "86400000", cols: []string{"ttl_ms"}, rows: [][]any{{int64(86400000)}}},
	{query: "quiescent", answer: `{"quiescent":true}`, cols: []string{"quiescent"}, rows: [][]any{{true}}},
	{query: "inbox_state", answer: `["done",2]`, cols: []string{"state", "attempts"}, rows: [][]any{{"done", int64(2)}}},
	{query: "outbox_state", answer: `{"state":"sent","attempts":1}`, cols: []string{"state", "attempts"}, rows: [][]any{{"sent", int64(1)}}},

	// Wrong shapes: the target's mistake.
	{query: "effects", answer: `"3"`, err: `a string "3" where count is due (want an integer or null)`},
	{query: "effects", answer: "1.5", err: "a number 1.5 where count is due"},
	{query: "effects", answer: "true", err: "a boolean true where count is due"},
	{query: "effects", answer: `{"n":3}`, err: `an object without "count"`},
	{query: "effects", answer: "[[1],[2]]", err: "2 rows (query effects answers at most one)"},
	{query: "effects", answer: "[1,2]", err: "a row of 2 value(s)"},
	{query: "key_ttl", answer: "[[1],[2]]", err: "2 rows (query key_ttl answers at most one)"},
	{query: "object", answer: `{"status":"x"}`, err: `an object without "version"`},
	{query: "object", answer: `[[1,"a"],[2]]`, err: "a row of 1 value(s)"},
	{query: "object", answer: `[1,[2]]`, err: "element 1 of the array is an array"},
	{query: "object", answer: `[[1],2]`, err: "element 1 of an array of rows is a number 2"},
	{query: "object", answer: `{"version":{"n":1}}`, err: `"version" is an object`},
	{query: "payment", answer: "5", err: "a number 5 where status is due (want a string or null)"},
	{query: "payload_present", answer: "1", err: "a number 1 where present is due (want true or false or null)"},
	{query: "inbox_state", answer: `["done","x"]`, err: `a string "x" where attempts is due`},
	{query: "effects", answer: "hello", err: "not JSON"},
	{query: "effects", answer: "{", err: "not JSON"},
	{query: "effects", answer: "1,2", err: "more than one JSON value"},
}

func checkShape(t *testing.T, r observe.Reader, field string, c shapeCase) {
	t.Helper()
	got, err := r.Read(context.Background(), c.query, observe.Key{Source: "stripe", EventID: "evt_1"})
	if c.err != "" {
		if !errors.Is(err, observe.ErrInvalidQuery) {
			t.Fatalf("%s answering %s: error %v, want one wrapping ErrInvalidQuery", c.query, c.answer, err)
		}
		if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), c.err) {
			t.Fatalf("%s answering %s: error %q, want it to name %s and say %q", c.query, c.answer, err, field, c.err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s answering %s: %v", c.query, c.answer, err)
	}
	want := sqlstore.Rows{Columns: c.cols, Values: c.rows}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s answering %s: rows %#v, want %#v", c.query, c.answer, got, want)
	}
}

func TestCommandShapes(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "answer.sh", `printf '%s\n' "$*"`)
	for _, c := range shapeCases {
		r, err := OpenCommand(context.Background(), CommandConfig{Dir: dir, Queries: map[string]string{c.query: "./answer.sh " + c.answer}})
		if err != nil {
			t.Fatal(err)
		}
		checkShape(t, r, "target.observe.command.queries."+c.query, c)
	}
}

func TestHTTPShapes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(r.URL.Query().Get("v")))
	}))
	defer srv.Close()
	for _, c := range shapeCases {
		r, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: srv.URL, Queries: map[string]string{c.query: "/answer?v=" + url.QueryEscape(c.answer)}})
		if err != nil {
			t.Fatal(err)
		}
		checkShape(t, r, "target.observe.http.queries."+c.query, c)
		r.Close()
	}
}

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
