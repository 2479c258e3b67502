//go:build unix

package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/targetfile"
)

// TestHelperProcess is not a test: the other tests run the test binary itself as
// the receiver process, in the mode named by HOOKCERT_PROCESS_HELPER.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("HOOKCERT_PROCESS_HELPER")
	if mode == "" {
		return
	}
	addr := os.Getenv("HELPER_ADDR")
	switch mode {
	case "connect":
		// A worker holding one TCP connection open (TestOwnerOfLocalPort).
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			os.Exit(1)
		}
		fmt.Printf("LOCAL=%d\n", c.LocalAddr().(*net.TCPAddr).Port)
		select {}
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: cannot open config /nonexistent/receiver.yaml")
		os.Exit(3)
	case "leak":
		// A receiver that echoes its configuration when it fails.
		fmt.Printf("config: secret=%s database=%s\n", os.Getenv("HELPER_SECRET"), os.Getenv("DATABASE_URL"))
		fmt.Fprintf(os.Stderr, "fatal: bad signing key whsec_%s (password %s)\n", os.Getenv("HELPER_UNLISTED"), os.Getenv("HELPER_PW"))
		os.Exit(3)
	case "harness":
		// A harness that starts a receiver and is then killed.
		spec, _ := helperSpecAt(os.Getenv("HELPER_CHILD_ADDR"), "serve")
		p, err := Start(context.Background(), spec)
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		fmt.Printf("receiver pid %d\n", p.PID())
		select {}
	case "serve", "never-ready", "ignore-term":
		term := make(chan os.Signal, 1)
		if mode == "ignore-term" {
			// Ignored, and term never fires: only SIGKILL ends this one.
			signal.Ignore(syscall.SIGTERM)
		} else {
			signal.Notify(term, syscall.SIGTERM)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			os.Exit(1)
		}
		fmt.Printf("listening on %s\n", addr)
		fmt.Fprintln(os.Stderr, "a line on stderr")
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if mode == "never-ready" {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})}
		go func() { _ = srv.Serve(l) }()
		<-term
		fmt.Println("got SIGTERM, shutting down")
		_ = srv.Shutdown(context.Background())
		os.Exit(0)
	}
	os.Exit(2)
}

func helperSpec(t *testing.T, mode string) (Spec, string) {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return helperSpecAt(addr, mode)
}

func helperSpecAt(addr, mode string) (Spec, string) {
	return Spec{
		Command:      []string{os.Args[0], "-test.run=^TestHelperProcess$"},
		Env:          map[string]string{"HOOKCERT_PROCESS_HELPER": mode, "HELPER_ADDR": addr},
		ReadyURL:     "http://" + addr + "/healthz",
		ReadyTimeout: 10 * time.Second,
	}, addr
}

func portClosed(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
		t.Errorf("port %s still accepts connections", addr)
	}
}

func TestLifecycle(t *testing.T) {
	baseline := runtime.NumGoroutine()
	ctx := context.Background()
	spec, addr := helperSpec(t, "serve")
	p, err := Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	first := p.PID()
	if !p.Running() || first <= 0 {
		t.Fatalf("Running=%v PID=%d after Start", p.Running(), first)
	}
	// Own process group: the pgid is the pid.
	if pgid, err := syscall.Getpgid(first); err != nil || pgid != first {
		t.Errorf("pgid = %d, %v; want %d", pgid, err, first)
	}
	resp, err := http.Get("http://" + addr + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	e, err := p.Kill()
	if err != nil {
		t.Fatal(err)
	}
	if e.Signal != syscall.SIGKILL.String() || !e.Forced || e.Code != -1 || e.PID != first {
		t.Errorf("Kill exit = %+v, want SIGKILL of %d", e, first)
	}
	if p.Running() {
		t.Error("Running after Kill")
	}
	portClosed(t, addr)
	if _, err := p.Kill(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second Kill = %v, want ErrNotRunning", err)
	}

	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if p.PID() == first || !p.Running() {
		t.Errorf("after Restart PID=%d (first %d) Running=%v", p.PID(), first, p.Running())
	}
	if err := p.Restart(ctx); err == nil {
		t.Error("Restart while running: no error")
	}
	e, err = p.Stop(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != 0 || e.Signal != "" || e.Forced {
		t.Errorf("graceful Stop exit = %+v", e)
	}
	portClosed(t, addr)
	out := p.Output()
	for _, want := range []string{"listening on " + addr, "a line on stderr", "killed by signal killed", "got SIGTERM, shutting down", "exited with status 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "[hookcert] started pid") != 2 {
		t.Errorf("output should mark two starts:\n%s", out)
	}
	// No goroutine outlives the process (wait, output copy, readiness client).
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		t.Errorf("%d goroutines after Stop, %d before Start", n, baseline)
	}
}

func TestStopEscalatesAfterGrace(t *testing.T) {
	spec, addr := helperSpec(t, "ignore-term")
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e, err := p.Stop(300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Stop returned after %s, before the grace period", d)
	}
	if !e.Forced || e.Signal != syscall.SIGKILL.String() {
		t.Errorf("exit = %+v, want forced SIGKILL", e)
	}
	portClosed(t, addr)
}

func TestExitBeforeReady(t *testing.T) {
	spec, _ := helperSpec(t, "exit")
	_, err := Start(context.Background(), spec)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"exited with status 3 before it was ready", "fatal: cannot open config /nonexistent/receiver.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestNeverReady(t *testing.T) {
	spec, addr := helperSpec(t, "never-ready")
	// Long enough for a race-built helper to listen and answer 503 on a
	// loaded machine: the error must quote that answer.
	spec.ReadyTimeout = 3 * time.Second
	start := time.Now()
	_, err := Start(context.Background(), spec)
	if err == nil {
		t.Fatal("no error")
	}
	if d := time.Since(start); d < 3*time.Second || d > 10*time.Second {
		t.Errorf("gave up after %s", d)
	}
	for _, want := range []string{"not ready after 3s", "503 Service Unavailable", "listening on"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// The half-started process must not be left behind.
	portClosed(t, addr)
}

func TestBadSpec(t *testing.T) {
	if _, err := Start(context.Background(), Spec{}); err == nil || !strings.Contains(err.Error(), "spec.Command: required") {
		t.Errorf("empty command: %v", err)
	}
	_, err := Start(context.Background(), Spec{Command: []string{"/nonexistent/receiver"}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/receiver") {
		t.Errorf("missing program: %v", err)
	}
}

func TestRingKeepsTheEnd(t *testing.T) {
	r := &ring{limit: 10}
	for _, s := range []string{"0123456789", "abc", "defghijklmnop"} {
		if _, err := r.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := r.String(), "[hookcert] ... 16 earlier bytes dropped\nghijklmnop"; got != want {
		t.Errorf("ring = %q, want %q", got, want)
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"A=1", "B=2"}, map[string]string{"B": "3", "C": "4"})
	if strings.Join(got, ",") != "A=1,B=3,C=4" {
		t.Errorf("mergeEnv = %v", got)
	}
}

func TestSpecFor(t *testing.T) {
	src := `target:
  name: r
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: acct_A, path: /w, secret: whsec_x}]
  lifecycle:
    command: [./receiver, --listen, "{{.ListenAddr}}"]
    env: {DATABASE_URL: "{{.DatabaseURL}}"}
    ready: {http: /healthz, timeout: 7s}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM e WHERE event_id=$3
        effects: SELECT count(*) FROM l WHERE event_id=$3
`
	tg, err := targetfile.Parse([]byte(src), targetfile.Vars{ListenAddr: "127.0.0.1:9", DatabaseURL: "postgres://h/db"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := SpecFor(tg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Command, " ") != "./receiver --listen 127.0.0.1:9" || s.Env["DATABASE_URL"] != "postgres://h/db" ||
		s.ReadyURL != "http://127.0.0.1:9/healthz" || s.ReadyTimeout != 7*time.Second {
		t.Errorf("SpecFor = %+v", s)
	}
	tg.Lifecycle = nil
	if _, err := SpecFor(tg); err == nil {
		t.Error("SpecFor without lifecycle: no error")
	}
}
