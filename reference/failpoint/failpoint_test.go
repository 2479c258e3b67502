package failpoint

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// mount serves the registry the way a receiver does: both the list path and the
// per-point paths, on a mux that also has other routes.
func mount(r *Registry) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, r.Handler())
	mux.Handle(PathPrefix+"/", r.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return httptest.NewServer(mux)
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestProtocolRoundTrip(t *testing.T) {
	reg := New(func() { t.Error("crash must not fire in this test") })
	srv := mount(reg)
	defer srv.Close()
	base := srv.URL + PathPrefix

	if code, body := do(t, "GET", base, ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET empty = %d %q, want 200 []", code, body)
	}
	for _, c := range []struct{ point, body string }{
		{"after-response", `{"event_id": "evt_2", "action": "crash"}`},
		{"after-insert-before-commit", `{"event_id": "evt_1", "action": "crash"}`},
		{"after-commit-before-response", `{"action": "error"}`},
		{"after-insert-before-commit", `{"event_id": "", "action": "error"}`},
		{"after-insert-before-commit", `{"event_id": null, "action": "crash"}`}, // replaces the one above
	} {
		if code, body := do(t, "PUT", base+"/"+c.point, c.body); code != http.StatusNoContent {
			t.Fatalf("PUT %s %s = %d %q, want 204", c.point, c.body, code, body)
		}
	}
	code, body := do(t, "GET", base, "")
	if code != 200 {
		t.Fatalf("GET = %d %q", code, body)
	}
	var got []Arming
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("GET body %q: %v", body, err)
	}
	want := []Arming{
		{AfterInsertBeforeCommit, "", "crash"},
		{AfterInsertBeforeCommit, "evt_1", "crash"},
		{AfterCommitBeforeResponse, "", "error"},
		{AfterResponse, "evt_2", "crash"},
	}
	if len(got) != len(want) {
		t.Fatalf("GET = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("GET[%d] = %+v, want %+v (all: %+v)", i, got[i], want[i], got)
		}
	}
	// An armed point set over HTTP fires in-process.
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_5"); !errors.Is(err, ErrInjected) {
		t.Fatalf("Hit after PUT = %v, want ErrInjected", err)
	}
	if code, body := do(t, "DELETE", base, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %q, want 204", code, body)
	}
	if code, body := do(t, "GET", base, ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET after DELETE = %d %q, want 200 []", code, body)
	}
	if err := reg.Hit(AfterInsertBeforeCommit, "evt_1"); err != nil {
		t.Fatalf("Hit after DELETE = %v, want nil", err)
	}
}

func TestProtocolRejections(t *testing.T) {
	reg := New(func() { t.Error("crash must not run in this test") })
	srv := mount(reg)
	defer srv.Close()
	base := srv.URL + PathPrefix
	for _, c := range []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"unknown point", "PUT", "/before-everything", `{"action":"crash"}`, 400, "point"},
		{"empty point", "PUT", "/", `{"action":"crash"}`, 400, "point"},
		{"nested path", "PUT", "/after-response/x", `{"action":"crash"}`, 400, "point"},
		{"bad action", "PUT", "/after-response", `{"event_id":"evt_1","action":"explode"}`, 400, "action"},
		{"error after the response", "PUT", "/after-response", `{"event_id":"evt_1","action":"error"}`, 400, "action"},
		{"missing action", "PUT", "/after-response", `{"event_id":"evt_1"}`, 400, "action"},
		{"action wrong type", "PUT", "/after-response", `{"action":1}`, 400, "action"},
		{"event_id wrong type", "PUT", "/after-response", `{"event_id":7,"action":"crash"}`, 400, "event_id"},
		{"event_id too long", "PUT", "/after-response", `{"event_id":"` + strings.Repeat("e", maxEventIDLen+1) + `","action":"crash"}`, 400, "event_id"},
		{"unknown field", "PUT", "/after-response", `{"action":"crash","evnt_id":"evt_1"}`, 400, "evnt_id"},
		{"bad JSON", "PUT", "/after-response", `{"action":`, 400, "body"},
		{"empty body", "PUT", "/after-response", ``, 400, "body"},
		{"two objects", "PUT", "/after-response", `{"action":"crash"}{"action":"error"}`, 400, "body"},
		{"array body", "PUT", "/after-response", `[]`, 400, "body"},
		{"too large", "PUT", "/after-response", `{"event_id":"` + strings.Repeat("e", maxBody) + `","action":"crash"}`, 400, "body"},
		{"POST list", "POST", "", `{}`, 405, "method"},
		{"GET one point", "GET", "/after-response", ``, 405, "method"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := do(t, c.method, base+c.path, c.body)
			if code != c.code {
				t.Fatalf("%s %s = %d %q, want %d", c.method, c.path, code, body, c.code)
			}
			var eb errorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("error body %q is not JSON: %v", body, err)
			}
			if eb.Field != c.field || eb.Rule == "" || eb.Error == "" {
				t.Fatalf("error body = %+v, want field %q with a rule", eb, c.field)
			}
		})
	}
	if armed := reg.Armed(); len(armed) != 0 {
		t.Fatalf("rejected requests armed %+v", armed)
	}
}

func TestDisabledSurfaceIs404(t *testing.T) {
	var reg *Registry // receiver started without --enable-failpoints
	srv := mount(reg)
	defer srv.Close()
	for _, c := range []struct{ method, path, body string }{
		{"GET", PathPrefix, ""},
		{"DELETE", PathPrefix, ""},
		{"PUT", PathPrefix + "/after-response", `{"action":"crash"}`},
	} {
		if code, body := do(t, c.method, srv.URL+c.path, c.body); code != http.StatusNotFound {
			t.Fatalf("%s %s on a disabled registry = %d %q, want 404", c.method, c.path, code, body)
		}
	}
	if err := reg.Hit(AfterResponse, "evt_1"); err != nil {
		t.Fatalf("nil registry Hit = %v", err)
	}
	if err := reg.Arm(AfterResponse, "evt_1", ActionCrash); err == nil {
		t.Fatal("nil registry Arm = nil, want an error saying failpoints are disabled")
	}
	if got := reg.Armed(); len(got) != 0 {
		t.Fatalf("nil registry Armed = %v", got)
	}
	reg.DisarmAll()
}

func TestOneShot(t *testing.T) {
	crashes := 0
	reg := New(func() { crashes++ })
	if err := reg.Arm(AfterInsertBeforeCommit, "evt_1", ActionError); err != nil {
		t.Fatal(err)
	}
	if err := reg.Hit(AfterInsertBeforeCommit, "evt_1"); !errors.Is(err, ErrInjected) {
		t.Fatalf("first Hit = %v, want ErrInjected", err)
	}
	if err := reg.Hit(AfterInsertBeforeCommit, "evt_1"); err != nil {
		t.Fatalf("second Hit = %v, want nil (one-shot)", err)
	}
	if err := reg.Arm(AfterCommitBeforeResponse, "", ActionCrash); err != nil {
		t.Fatal(err)
	}
	err := reg.Hit(AfterCommitBeforeResponse, "evt_9")
	if crashes != 1 || !errors.Is(err, ErrInjected) {
		t.Fatalf("crash Hit: crashes = %d, err = %v; want 1 and an error wrapping ErrInjected (crash func returned)", crashes, err)
	}
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_9"); err != nil || crashes != 1 {
		t.Fatalf("second crash Hit = %v, crashes = %d; want nil, 1", err, crashes)
	}
	if got := reg.Armed(); len(got) != 0 {
		t.Fatalf("Armed after firing = %+v, want none", got)
	}
}

func TestEventScoping(t *testing.T) {
	reg := New(func() { t.Error("no crash armed") })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Arm(AfterInsertBeforeCommit, "evt_1", ActionError))
	if err := reg.Hit(AfterInsertBeforeCommit, "evt_2"); err != nil {
		t.Fatalf("other event = %v, want nil", err)
	}
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_1"); err != nil {
		t.Fatalf("other point = %v, want nil", err)
	}
	if err := reg.Hit(AfterInsertBeforeCommit, ""); err != nil {
		t.Fatalf("empty event ID must not match a scoped arming: %v", err)
	}
	if err := reg.Hit(AfterInsertBeforeCommit, "evt_1"); !errors.Is(err, ErrInjected) {
		t.Fatalf("armed event = %v, want ErrInjected", err)
	}
	// The exact event wins over "any event"; "any event" then fires for the next one.
	must(reg.Arm(AfterCommitBeforeResponse, "", ActionError))
	must(reg.Arm(AfterCommitBeforeResponse, "evt_1", ActionError))
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_1"); !errors.Is(err, ErrInjected) {
		t.Fatalf("exact = %v", err)
	}
	if got := reg.Armed(); len(got) != 1 || got[0].EventID != "" {
		t.Fatalf("after exact fired, Armed = %+v, want only the any-event arming", got)
	}
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_7"); !errors.Is(err, ErrInjected) {
		t.Fatalf("any-event arming for evt_7 = %v, want ErrInjected", err)
	}
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_8"); err != nil {
		t.Fatalf("any-event arming is one-shot, got %v", err)
	}
	var fe *FieldError
	if err := reg.Arm("after-lunch", "", ActionCrash); !errors.As(err, &fe) || fe.Field != "point" {
		t.Fatalf("Arm unknown point = %v, want FieldError on point", err)
	}
	if err := reg.Arm(AfterResponse, "", "panic"); !errors.As(err, &fe) || fe.Field != "action" {
		t.Fatalf("Arm bad action = %v, want FieldError on action", err)
	}
	if err := reg.Arm(AfterResponse, "", ActionError); !errors.As(err, &fe) || fe.Field != "action" {
		t.Fatalf("Arm error after the response = %v, want FieldError on action", err)
	}
}

// TestConcurrentHit: many deliveries of one event reach an armed point at once; exactly
// one of them gets the injected failure. Run with -race.
func TestConcurrentHit(t *testing.T) {
	var crashes atomic.Int64
	reg := New(func() { crashes.Add(1) })
	for round := 0; round < 50; round++ {
		if err := reg.Arm(AfterInsertBeforeCommit, "evt_dup", ActionError); err != nil {
			t.Fatal(err)
		}
		if err := reg.Arm(AfterCommitBeforeResponse, "", ActionCrash); err != nil {
			t.Fatal(err)
		}
		var injected, wg = atomic.Int64{}, sync.WaitGroup{}
		start := make(chan struct{})
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if errors.Is(reg.Hit(AfterInsertBeforeCommit, "evt_dup"), ErrInjected) {
					injected.Add(1)
				}
				_ = reg.Hit(AfterCommitBeforeResponse, "evt_other")
				_ = reg.Armed()
			}()
		}
		close(start)
		wg.Wait()
		if injected.Load() != 1 {
			t.Fatalf("round %d: %d goroutines got ErrInjected, want exactly 1", round, injected.Load())
		}
	}
	if crashes.Load() != 50 {
		t.Fatalf("crash armed 50 times fired %d times, want 50", crashes.Load())
	}
	// Arm, Hit and DisarmAll racing must leave the fast-path counter consistent.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				_ = reg.Arm(AfterInsertBeforeCommit, "", ActionError)
				_ = reg.Hit(AfterInsertBeforeCommit, "e")
				if i%50 == 0 {
					reg.DisarmAll()
				}
			}
		}()
	}
	wg.Wait()
	reg.DisarmAll()
	if n := reg.armed.Load(); n != 0 {
		t.Fatalf("armed counter = %d after DisarmAll, want 0", n)
	}
}

const helperEnv = "HOOKCERT_FAILPOINT_HELPER_DIR"

// TestHelperProcess is not a test: it is the child process of TestCrashKillsProcess
// and does nothing unless that test started it (the os/exec test pattern).
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		return
	}
	mark := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			os.Exit(5)
		}
	}
	defer mark("deferred-cleanup-ran") // a crash must not run this
	reg := New(nil)
	srv := mount(reg)
	defer srv.Close()
	req, _ := http.NewRequest("PUT", srv.URL+PathPrefix+"/after-commit-before-response", strings.NewReader(`{"event_id":"evt_1","action":"crash"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		os.Exit(3)
	}
	resp.Body.Close()
	if err := reg.Hit(AfterCommitBeforeResponse, "evt_2"); err != nil {
		os.Exit(4)
	}
	mark("reached-armed-point")
	_ = reg.Hit(AfterCommitBeforeResponse, "evt_1")
	mark("survived-crash")
	os.Exit(0)
}

func TestCrashKillsProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child ended with %v, want death by signal; output:\n%s", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v (exit code %d), want signal: killed; output:\n%s", ee, ee.ExitCode(), out)
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	if !exists("reached-armed-point") {
		t.Fatal("child did not reach the armed point")
	}
	if exists("survived-crash") {
		t.Fatal("child ran past the crash point")
	}
	if exists("deferred-cleanup-ran") {
		t.Fatal("child ran its deferred cleanup: not a crash")
	}
	t.Logf("child: %v", ee)
}
