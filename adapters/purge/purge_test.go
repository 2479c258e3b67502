package purge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

var asOf = time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)

func TestHTTPTrigger(t *testing.T) {
	var mu sync.Mutex
	var got []string
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			AsOf string `json:"as_of"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+body.AsOf)
		f := fail
		mu.Unlock()
		if f {
			http.Error(w, "purge broke", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	tr, err := New(context.Background(), targetfile.Purge{HTTPMethod: "POST", HTTPPath: "/_hookcert/purge"}, Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Purge(context.Background(), asOf); err != nil {
		t.Fatal(err)
	}
	want := "POST /_hookcert/purge application/json 2026-03-04T05:06:07.000008Z"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("server saw %q, want %q", got, want)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	err = tr.Purge(context.Background(), asOf)
	if err == nil || !strings.Contains(err.Error(), "answered 500: purge broke") {
		t.Fatalf("failing purge: %v", err)
	}
}

func TestCommandTrigger(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "as_of")
	spec := targetfile.Purge{Command: []string{"sh", "-c", `printf '%s %s' "$1" "$PURGE_ENV" > "$2"`, "sh", targetfile.AsOfPlaceholder, out}}
	tr, err := New(context.Background(), spec, Options{Dir: dir, Env: map[string]string{"PURGE_ENV": "from-lifecycle"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Purge(context.Background(), asOf); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != "2026-03-04T05:06:07.000008Z from-lifecycle" {
		t.Fatalf("command wrote %q (%v)", b, err)
	}
	bad, _ := New(context.Background(), targetfile.Purge{Command: []string{"sh", "-c", "echo cannot purge >&2; exit 3", targetfile.AsOfPlaceholder}}, Options{})
	if err := bad.Purge(context.Background(), asOf); err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "cannot purge") {
		t.Fatalf("failing command: %v", err)
	}
	slow, _ := New(context.Background(), targetfile.Purge{Command: []string{"sleep", "5", targetfile.AsOfPlaceholder}, Timeout: 100 * time.Millisecond}, Options{})
	start := time.Now()
	if err := slow.Purge(context.Background(), asOf); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("timeout not applied: %v after %s", err, time.Since(start))
	}
}

func TestSQLTrigger(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE TABLE keys (id text, received_at timestamptz);
		INSERT INTO keys VALUES ('old', '2026-01-01Z'), ('new', '2026-03-04Z')`); err != nil {
		t.Fatal(err)
	}
	tr, err := New(ctx, targetfile.Purge{SQL: "DELETE FROM keys WHERE received_at < $1::timestamptz - interval '30 days'"}, Options{DatabaseURL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Purge(ctx, asOf); err != nil {
		t.Fatal(err)
	}
	var left string
	if err := c.QueryRow(ctx, `SELECT string_agg(id, ',') FROM keys`).Scan(&left); err != nil || left != "new" {
		t.Fatalf("after the sql purge: %q (%v), want only the key younger than 30 days", left, err)
	}
	bad, err := New(ctx, targetfile.Purge{SQL: "DELETE FROM nokeys WHERE received_at < $1"}, Options{DatabaseURL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.Purge(ctx, asOf); err == nil || !strings.Contains(err.Error(), "nokeys") {
		t.Fatalf("failing sql: %v", err)
	}
}

func TestNoTrigger(t *testing.T) {
	if _, err := New(context.Background(), targetfile.Purge{}, Options{}); err == nil {
		t.Fatal("empty trigger accepted")
	}
}
