package cli

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
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

// The suite runs once per process (Ginkgo) and demo starts the reference from its
// own executable, so demo runs as the real binary, built once.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func hookcertBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookcert-cli-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "hookcert")
		if out, err := exec.Command("go", "build", "-o", binPath, "github.com/hookcert/hookcert/cmd/hookcert").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestMain removes the binary built for the tests. The tests that only run
// hookcert as a child process (demos, soaks, certifications in databases of
// their own) run side by side: they mostly wait for the child, so four at
// once, not GOMAXPROCS, unless -parallel is given.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "4")
	}
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// besideOthers runs t beside the package's other such tests: t runs hookcert
// only as a child process, in directories and databases of its own.
func besideOthers(t *testing.T) { t.Parallel() }

func runChild(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(hookcertBinary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return 0, string(out)
}

// A label filter reports only what it selected (never as not applicable), and a
// filter that selects nothing is a usage error.
func TestDemoLabelFilter(t *testing.T) {
	besideOthers(t)
	server := pgtest.ServerURL()
	dir := t.TempDir()
	code, out := runChild(t, "demo", "--database-url", server, "--report-dir", dir, "--seed", "3", "--label-filter", "ACK-6 || ORDER-1")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range res.Guarantees {
		ids = append(ids, g.ID+"="+string(g.Status))
	}
	if got := strings.Join(ids, ","); got != "ACK-6=passed,ORDER-1=passed" {
		t.Fatalf("guarantees reported: %s", got)
	}
	if code, out := runChild(t, "demo", "--database-url", server, "--report-dir", t.TempDir(), "--label-filter", "NOPE-9"); code != ExitNothing || !strings.Contains(out, "no scenario selected") {
		t.Fatalf("empty selection: exit %d, want %d:\n%s", code, ExitNothing, out)
	}
	// Everything selected is not applicable: nothing was certified, and the exit
	// status says so.
	if code, out := runChild(t, "demo", "--database-url", server, "--report-dir", t.TempDir(), "--label-filter", "ATOMIC",
		"--capabilities", "none"); code != ExitNothing || !strings.Contains(out, "nothing was judged") {
		t.Fatalf("all not applicable: exit %d, want %d:\n%s", code, ExitNothing, out)
	}
}
