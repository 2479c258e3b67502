package cmdobserve

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
)

// TestHTTPParameters: $n is escaped for where it stands, relative URLs
// resolve against the base, absolute ones are taken as they are.
func TestHTTPParameters(t *testing.T) {
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.EscapedPath() + "?" + r.URL.RawQuery + " accept=" + r.Header.Get("Accept"))
		_, _ = w.Write([]byte("1"))
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"count": 9}`))
	}))
	defer other.Close()
	r, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: srv.URL + "/app/", Queries: map[string]string{
		"event_rows":     "observe/events/$3?source=$1&acct=$2",
		"effects":        "/root/$4/effects",
		"object_effects": other.URL + "/count?o=$4",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	k := observe.Key{Source: "a&b=c", Account: "acct 1", EventID: "evt/1 ?#", ObjectID: "pi_1"}
	if _, err := r.Read(context.Background(), "event_rows", k); err != nil {
		t.Fatal(err)
	}
	if got, want := seen.Load(), "/app/observe/events/evt%2F1%20%3F%23?source=a%26b%3Dc&acct=acct+1 accept=application/json"; got != want {
		t.Errorf("request %q, want %q", got, want)
	}
	if _, err := r.Read(context.Background(), "effects", k); err != nil {
		t.Fatal(err)
	}
	if got, want := seen.Load(), "/root/pi_1/effects? accept=application/json"; got != want {
		t.Errorf("request %q, want %q", got, want)
	}
	rows, err := r.Read(context.Background(), "object_effects", k)
	if err != nil || rows.Values[0][0] != int64(9) {
		t.Errorf("absolute URL: %v, %v; want 9 from the other server", rows, err)
	}
	if got := r.Params("event_rows"); !reflect.DeepEqual(got, []int{3, 1, 2}) {
		t.Errorf("Params = %v", got)
	}
	if got := r.Describe("effects"); got != "/root/$4/effects" {
		t.Errorf("Describe = %q", got)
	}
	if r.Kind() != "http" || !r.Has("effects") || r.Has("payment") {
		t.Errorf("Kind %q, Has(effects) %v, Has(payment) %v", r.Kind(), r.Has("effects"), r.Has("payment"))
	}
}

func TestHTTPErrors(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("<html>\nTraceback: redis://app:hunter22@cache:6379/0 refused\nsecret sk_live_abcdefghijklmnop\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/slowbody", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("[1"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`"` + strings.Repeat("x", 2000) + `"`))
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("OK"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: srv.URL, Timeout: 300 * time.Millisecond, MaxBody: 1000, Queries: map[string]string{
		"effects": "/fail?e=$3", "event_rows": "/slow", "object_effects": "/slowbody", "payment": "/big", "quiescent": "/text",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := func(q string) error {
		_, err := r.Read(context.Background(), q, observe.Key{EventID: "evt_1"})
		return err
	}

	err = read("effects")
	if !errors.Is(err, observe.ErrUnreachable) || !strings.Contains(err.Error(), "target.observe.http.queries.effects: GET "+srv.URL+"/fail?e=evt_1 answered 500 Internal Server Error (a query answers 2xx with one JSON value); its body ends:") ||
		!strings.Contains(err.Error(), "refused") {
		t.Errorf("non-2xx: %v", err)
	}
	if err != nil && (strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "abcdefghijklmnop")) {
		t.Errorf("non-2xx error leaks a secret: %v", err)
	}
	for _, q := range []string{"event_rows", "object_effects"} {
		start := time.Now()
		err = read(q)
		if !errors.Is(err, observe.ErrTimeout) || !strings.Contains(err.Error(), "target.observe.http.queries."+q+": GET ") || !strings.Contains(err.Error(), "no answer within 300ms (target.observe.http.timeout)") {
			t.Errorf("%s: timeout: %v", q, err)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("%s: took %s with a 300ms timeout", q, time.Since(start))
		}
	}
	err = read("payment")
	if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), "answered more than 1000 bytes (target.observe.http.max_body_bytes)") {
		t.Errorf("oversized: %v", err)
	}
	err = read("quiescent")
	if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), `target.observe.http.queries.quiescent: not JSON`) {
		t.Errorf("not JSON: %v", err)
	}

	// A caller's own deadline is not the observer's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.Read(ctx, "event_rows", observe.Key{}); errors.Is(err, observe.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's deadline: %v", err)
	}
}

func TestHTTPUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: "http://" + addr, Queries: map[string]string{"effects": "/e/$3"}})
	if err != nil {
		t.Fatal(err) // no request at open without capabilities
	}
	_, err = r.Read(context.Background(), "effects", observe.Key{EventID: "evt_1"})
	if !errors.Is(err, observe.ErrUnreachable) || !strings.Contains(err.Error(), "target.observe.http.queries.effects: GET http://"+addr+"/e/evt_1: ") {
		t.Errorf("refused: %v", err)
	}
	_, err = OpenHTTP(context.Background(), HTTPConfig{BaseURL: "http://" + addr, Capabilities: "/caps", Queries: map[string]string{"effects": "/e/$3"}})
	if !errors.Is(err, observe.ErrUnreachable) || !strings.Contains(err.Error(), "target.observe.http.capabilities: GET http://"+addr+"/caps") {
		t.Errorf("capabilities refused: %v", err)
	}
}

func TestHTTPOpenChecks(t *testing.T) {
	cases := []struct {
		base, query, field, want string
	}{
		{"127.0.0.1:8099", "/x", "target.observe.http.base_url", `"127.0.0.1:8099" is not an absolute http or https URL`},
		{"ftp://host/", "/x", "target.observe.http.base_url", "not an absolute http or https URL"},
		{"http://user:hunter22@127.0.0.1:1", "/x?e=$5", "target.observe.http.queries.effects", "$5: hookcert's parameters"},
		{"http://127.0.0.1:1", "ftp://elsewhere/$3", "target.observe.http.queries.effects", `"ftp://elsewhere/e" is not an http or https URL`},
		{"http://127.0.0.1:1", "/x/%zz/$3", "target.observe.http.queries.effects", "not a URL"},
		{"http://127.0.0.1:1", " ", "target.observe.http.queries.effects", "empty: a query is a URL"},
		{"", "/x/$3", "target.observe.http.queries.effects", `"/x/e" is relative, and there is no target.observe.http.base_url to resolve it against`},
	}
	for _, c := range cases {
		_, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: c.base, Queries: map[string]string{"effects": c.query}})
		if !errors.Is(err, observe.ErrInvalidQuery) || !strings.Contains(err.Error(), c.field+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("base %q query %q: %v, want ErrInvalidQuery naming %s and saying %q", c.base, c.query, err, c.field, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter22") {
			t.Errorf("error leaks the base URL's password: %v", err)
		}
	}
}

func TestHTTPCapabilities(t *testing.T) {
	caps := `{"queries": ["event_rows", "effects"]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/caps" {
			_, _ = w.Write([]byte(caps))
			return
		}
		_ = json.NewEncoder(w).Encode(0)
	}))
	defer srv.Close()
	queries := map[string]string{"event_rows": "/q?e=$3", "effects": "/q?e=$3", "key_ttl": "/q?e=$3", "payload_present": "/q?e=$3"}
	r, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: srv.URL, Capabilities: "/caps", Queries: queries})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Has("event_rows") || !r.Has("effects") || r.Has("key_ttl") || r.Has("payload_present") {
		t.Errorf("Has: capabilities not applied")
	}
	want := map[string]string{
		"key_ttl":         "the http observer's capabilities (/caps) do not list key_ttl",
		"payload_present": "the http observer's capabilities (/caps) do not list payload_present",
	}
	if got := r.Unsupported(); !reflect.DeepEqual(got, want) {
		t.Errorf("Unsupported = %v, want %v", got, want)
	}
	if _, err := r.Read(context.Background(), "key_ttl", observe.Key{}); !errors.Is(err, observe.ErrNotConfigured) {
		t.Errorf("Read(key_ttl): %v", err)
	}
	caps = `{"queries": "event_rows"}`
	if _, err := OpenHTTP(context.Background(), HTTPConfig{BaseURL: srv.URL, Capabilities: "/caps", Queries: queries}); !errors.Is(err, observe.ErrInvalidQuery) ||
		!strings.Contains(err.Error(), `target.observe.http.capabilities: no "queries" array`) {
		t.Errorf("bad capabilities: %v", err)
	}
}

// TestHTTPWithoutBase: with no base URL every query is an absolute URL.
func TestHTTPWithoutBase(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"count": 1}`))
	}))
	defer srv.Close()
	r, err := OpenHTTP(context.Background(), HTTPConfig{Queries: map[string]string{"event_rows": srv.URL + "/rows/$3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rows, err := r.Read(context.Background(), "event_rows", observe.Key{EventID: "evt_1"}); err != nil || rows.Values[0][0] != int64(1) {
		t.Errorf("Read = %v, %v", rows, err)
	}
}
