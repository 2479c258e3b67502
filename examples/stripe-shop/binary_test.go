package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// binary builds stripe-shop once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stripe-shop-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "stripe-shop")
		buildOut, buildErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The binary started exactly as target.yaml's lifecycle starts it: it creates
// its schema, serves every endpoint of the file, stops gracefully on SIGTERM
// (finishing a delivery in flight), and purges with the file's purge command.
// Neither the database password nor a secret shows in its output.
func TestBinaryAsTheTargetFileRunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the binary")
	}
	bin := binary(t)
	tf, _ := readTarget(t)
	secrets := endpointSecrets(t, tf)
	dbURL := testDatabase(t)
	u, _ := url.Parse(dbURL)
	const password = "pw-never-printed"
	u.User = url.UserPassword(u.User.Username(), password) // trust auth ignores it
	dbURL = u.String()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	vars := map[string]string{"Port": port, "DatabaseURL": dbURL, "ListenAddr": "127.0.0.1:" + port}
	lc := tf.Target.Lifecycle
	if lc.Command[0] != "./bin/stripe-shop" {
		t.Fatalf("lifecycle.command runs %q; the README builds ./bin/stripe-shop", lc.Command[0])
	}
	var args []string
	for _, a := range lc.Command[1:] {
		args = append(args, render(t, a, vars))
	}
	env := os.Environ()
	for k, v := range lc.Env {
		env = append(env, k+"="+render(t, v, vars))
	}
	var out syncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + lc.Ready.HTTP); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", out.String())
		}
	}

	sh := &shop{t: t, dbURL: dbURL}
	pool, err := openPool(context.Background(), dbURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	sh.pool = pool
	post := func(path, secret string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", sign(body, secret, time.Now()))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("POST %s: %v", path, err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, ep := range tf.Target.Endpoints {
		secret := secrets[modeOf(ep.Source)+"/"+ep.Account][0]
		if got := post(ep.Path, secret, event(uniq("evt"), "charge.succeeded", now(), chargeObj(uniq("ch"), 1, ""))); got != 200 {
			t.Errorf("%s: %d", ep.Path, got)
		}
	}
	if n := sh.count(`SELECT count(*) FROM stripe_events`); n != len(tf.Target.Endpoints) {
		t.Errorf("%d event rows, want %d", n, len(tf.Target.Endpoints))
	}

	// SIGTERM while a delivery waits on a lock: the delivery still commits
	// and gets its 200, then the process exits 0.
	ep := tf.Target.Endpoints[0]
	status := make(chan int, 1)
	release := lockTable(t, sh, "ledger", 1, func() {
		go func() {
			status <- post(ep.Path, secrets[modeOf(ep.Source)+"/"+ep.Account][0], event(uniq("evt"), "charge.succeeded", now(), chargeObj(uniq("ch"), 1, "")))
		}()
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	release()
	if got := <-status; got != 200 {
		t.Errorf("delivery in flight at SIGTERM: %d, want 200", got)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after SIGTERM")
	}

	// The purge command, as of 31 days from now: every key goes.
	asOf := time.Now().Add(31 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
	vars["AsOf"] = asOf
	pc := tf.Target.Retention.Purge.Command
	var pargs []string
	for _, a := range pc[1:] {
		pargs = append(pargs, render(t, a, vars))
	}
	purgeCmd := exec.Command(bin, pargs...)
	purgeCmd.Env = env
	pout, err := purgeCmd.CombinedOutput()
	if err != nil {
		t.Fatalf("purge: %v\n%s", err, pout)
	}
	if n := sh.count(`SELECT count(*) FROM stripe_events`); n != 0 {
		t.Errorf("%d event rows after a purge past the key TTL (%s)", n, pout)
	}
	all := out.String() + string(pout)
	for _, leak := range append([]string{password}, secretsOf(secrets)...) {
		if strings.Contains(all, leak) {
			t.Errorf("the output shows %q:\n%s", leak, all)
		}
	}
}

func secretsOf(m mapSecrets) []string {
	var out []string
	for _, s := range m {
		out = append(out, s...)
	}
	return out
}

func TestBinaryRefusesBadConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the binary")
	}
	bin := binary(t)
	for _, c := range []struct {
		args []string
		env  []string
		want int
	}{
		{[]string{"serve", "--defect", "late_overwrite"}, []string{"SHOP_DATABASE_URL=postgres://x@127.0.0.1:1/x"}, 2},
		{[]string{"serve"}, []string{"SHOP_DATABASE_URL=", "DATABASE_URL="}, 2},
		{[]string{"serve", "--secret-env", "live/acct_a=whsec_abc"}, nil, 2},
		{[]string{"purge", "--as-of", "yesterday"}, []string{"SHOP_DATABASE_URL=postgres://x@127.0.0.1:1/x"}, 2},
		{[]string{"frobnicate"}, nil, 2},
		{[]string{"serve", "--database-url", "postgres://u:hunter2@127.0.0.1:1/x"}, nil, 1},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.want {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, c.want, out)
		}
		if strings.Contains(string(out), "hunter2") {
			t.Errorf("%v: the output shows the password:\n%s", c.args, out)
		}
	}
}
