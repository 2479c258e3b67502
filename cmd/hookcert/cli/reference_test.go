package cli

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
)

// TestHelperReferenceServe is not a test: it is the child process of
// TestReferenceServeProcess, running the real command line.
func TestHelperReferenceServe(t *testing.T) {
	if os.Getenv("HOOKCERT_HELPER_ARGS") == "" {
		t.Skip("helper process for TestReferenceServeProcess")
	}
	os.Exit(Main(strings.Split(os.Getenv("HOOKCERT_HELPER_ARGS"), "\x1f"), os.Stdout, os.Stderr))
}

func startServe(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReferenceServe$")
	cmd.Env = append(os.Environ(), "HOOKCERT_HELPER_ARGS="+strings.Join(args, "\x1f"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, &out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealthy(t *testing.T, base string, out *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("reference serve never became healthy:\n%s", out)
}

// The real process: default endpoints printed, a signed delivery accepted, the
// defect announced, and SIGTERM ends it cleanly with exit status 0.
func TestReferenceServeProcess(t *testing.T) {
	addr := freeAddr(t)
	cmd, out := startServe(t, "reference", "serve", "--listen", addr, "--database-url", pgtest.Database(t), "--defect", "slow-ack")
	base := "http://" + addr
	waitHealthy(t, base, out)

	// stripe acct_A with its documented public test secret (printed at start).
	body := []byte(`{"id":"evt_cli_1","object":"event","type":"customer_cash_balance_transaction.created","data":{"object":{"id":"cb_1","amount":5}}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte("whsec_test_secret"))
	fmt.Fprintf(m, "%s.%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/stripe/acct_A", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "processed") {
		t.Fatalf("signed delivery: %d %s", resp.StatusCode, b)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, out)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGTERM:\n%s", out)
	}
	log := out.String()
	for _, want := range []string{"PUBLIC TEST SECRETS", "DEFECT ACTIVE: slow-ack"} {
		if !strings.Contains(log, want) {
			t.Errorf("output lacks %q:\n%s", want, log)
		}
	}
}

func TestReferenceServeUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"reference", "serve", "--defect", "nope"},
		{"reference", "serve", "--max-body-bytes", "0"},
		{"reference", "serve", "--log-format", "xml"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}
