//go:build unix

package process

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// A receiver that prints its secrets when it fails to start: neither the error
// (with its last-output tail) nor Output carries them, listed or not.
func TestSecretsNeverLeaveTheProcess(t *testing.T) {
	const (
		listed   = "whsec_Li5tedSecretValue0123456789"
		unlisted = "UnlistedSigningKey0123456789"
		pw       = "planted-db-pw-123"
	)
	spec, _ := helperSpec(t, "leak")
	spec.Env["HELPER_SECRET"] = listed
	spec.Env["HELPER_UNLISTED"] = unlisted
	spec.Env["HELPER_PW"] = pw
	spec.Env["DATABASE_URL"] = "postgres://app:" + pw + "@127.0.0.1:5432/db"
	spec.Secrets = []string{listed, pw}
	// The command line carries one too; the "[hookcert] started" line echoes it.
	spec.Command = append(spec.Command, "--", "--token="+listed)
	p, err := Start(context.Background(), spec)
	if err == nil {
		t.Fatal("no error")
	}
	if p != nil {
		t.Fatal("a Process for a failed start")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exited with status 3") || !strings.Contains(msg, "config: secret="+scrub.Redacted) ||
		!strings.Contains(msg, "whsec_"+scrub.Redacted) {
		t.Errorf("error lacks the scrubbed tail:\n%s", msg)
	}
	for _, s := range []string{listed, unlisted, pw, strings.TrimPrefix(listed, "whsec_")} {
		if strings.Contains(msg, s) {
			t.Errorf("error carries %q:\n%s", s, msg)
		}
	}
}

func TestOutputAndRestartScrubbed(t *testing.T) {
	const sec = "s3cret-in-the-output"
	spec, _ := helperSpec(t, "serve")
	spec.Secrets = []string{sec}
	spec.Command = append(spec.Command, "--", "--secret="+sec)
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	// The restart fails (the helper mode is changed to one that exits), and its
	// error carries a tail of the previous run's output too.
	p.spec.Env["HOOKCERT_PROCESS_HELPER"] = "exit"
	err = p.Restart(context.Background())
	if err == nil {
		t.Fatal("restart: no error")
	}
	for name, text := range map[string]string{"Output": p.Output(), "Tail": p.Tail(100), "restart error": err.Error()} {
		if strings.Contains(text, sec) {
			t.Errorf("%s carries the secret:\n%s", name, text)
		}
		if !strings.Contains(text, "--secret="+scrub.Redacted) {
			t.Errorf("%s lacks the scrubbed command line:\n%s", name, text)
		}
	}
}

// The front of the kept output, cut by the limit, can hold the end of a secret
// the scrubber no longer recognises: that partial line is not returned.
func TestCutLineDropped(t *testing.T) {
	r := &ring{limit: 24}
	_, _ = r.Write([]byte("key whsec_ABCDEFGHIJKLMNOP\nnext line\n"))
	got := r.kept()
	if strings.Contains(got, "KLMNOP") || !strings.HasSuffix(got, "next line\n") {
		t.Errorf("kept = %q", got)
	}
}

func TestSpecForSecrets(t *testing.T) {
	src := `target:
  name: r
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: acct_A, path: /w, secret: whsec_endpointsecret}]
  lifecycle:
    command: [./receiver]
    env: {DATABASE_URL: "{{.DatabaseURL}}", API_TOKEN: tok-123456, LOG_LEVEL: debug}
    ready: {http: /healthz}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM e WHERE event_id=$3
        effects: SELECT count(*) FROM l WHERE event_id=$3
`
	tg, err := targetfile.Parse([]byte(src), targetfile.Vars{ListenAddr: "127.0.0.1:9", DatabaseURL: "postgres://u:dbpw-42@h/db"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := SpecFor(tg)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.Secrets, " ")
	for _, want := range []string{"whsec_endpointsecret", "dbpw-42", "tok-123456"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets %q lack %q", s.Secrets, want)
		}
	}
	if strings.Contains(got, "debug") {
		t.Errorf("Secrets %q hold an ordinary env value", s.Secrets)
	}
}

// A value {{env}} passes from the harness's environment reaches the receiver
// in its environment only, and never shows in its captured output, whatever
// the variable's name.
func TestEnvPassedValueScrubbed(t *testing.T) {
	const value = "harness-only-value-8c1f"
	t.Setenv("HC_PROCESS_TEST_VALUE", value)
	src := `target:
  name: r
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: acct_A, path: /w, secret: whsec_endpointsecret}]
  lifecycle:
    command: [/bin/sh, -c, 'echo "connect""ing with $SHOP_SETTING"; exec sleep 30']
    env: {SHOP_SETTING: '{{env "HC_PROCESS_TEST_VALUE"}}'}
    ready: {http: /healthz}
  observe:
    postgres:
      url: postgres://h/db
      queries:
        event_rows: SELECT count(*) FROM e WHERE event_id=$3
        effects: SELECT count(*) FROM l WHERE event_id=$3
`
	tg, err := targetfile.Parse([]byte(src), targetfile.Vars{ListenAddr: "127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := SpecFor(tg)
	if err != nil {
		t.Fatal(err)
	}
	spec.ReadyURL = "" // ready once started: the shell answers no HTTP
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = p.Kill() }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), "connecting with") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := p.Output()
	if !strings.Contains(out, "connecting with [REDACTED]") || strings.Contains(out, value) {
		t.Errorf("output = %q", out)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID())); err == nil && strings.Contains(string(b), value) {
		t.Errorf("the value is on the command line: %q", b)
	}
	// The shell execs sleep after printing: while that exec runs, /proc/PID/environ
	// reads empty, so read it again until the new image is in place.
	var environ string
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID()))
		if err != nil {
			t.Skipf("this system does not show a process's environment in /proc (every other check ran): %v", err)
		}
		environ = string(b)
		if strings.Contains(environ, "SHOP_SETTING="+value) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(environ, "SHOP_SETTING="+value) {
		t.Errorf("the receiver did not get the value in its environment")
	}
}

// A harness killed by SIGKILL takes its receiver with it (Linux: Pdeathsig).
func TestReceiverDiesWithTheHarness(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to tell a live process from a zombie")
	}
	childAddr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	harness := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	harness.Env = append(os.Environ(), "HOOKCERT_PROCESS_HELPER=harness", "HELPER_CHILD_ADDR="+childAddr)
	stdout, err := harness.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = harness.Process.Kill(); _ = harness.Wait() })
	sc := bufio.NewScanner(stdout)
	pid := 0
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "receiver pid "); ok {
			pid, _ = strconv.Atoi(n)
			break
		}
		t.Log(sc.Text())
	}
	if pid <= 0 {
		t.Fatal("the harness never reported its receiver")
	}
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // if the test fails
	if !alive(pid) {
		t.Fatalf("receiver %d not running while the harness is", pid)
	}
	if err := harness.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = harness.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("receiver %d still running 5s after its harness was SIGKILLed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	portClosed(t, childAddr)
}

// alive reports whether pid is a process that has not exited: a zombie waiting
// for a reaper (the receiver is reparented when its harness dies, and not every
// init reaps) is not, once all its threads are gone. The leader shows Z while
// other threads are still exiting and holding its sockets.
func alive(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, tk := range tasks {
		b, err := os.ReadFile(dir + "/" + tk.Name() + "/stat")
		if err != nil {
			continue
		}
		// tid (comm) state ...: comm may hold spaces, so read after the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X' {
			return true
		}
	}
	return false
}
