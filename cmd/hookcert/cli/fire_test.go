package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/hookcert/hookcert/simulator"
)

const fireSecret = "whsec_fire_test_secret_value"

// stripeReceiver verifies with stripe-go and counts valid deliveries.
func stripeReceiver(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var valid atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.ValidatePayload(body, r.Header.Get("Stripe-Signature"), fireSecret); err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		valid.Add(1)
		w.Write([]byte(`{"status":"processed"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &valid
}

func fire(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(append([]string{"fire"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestFireCopiesLostAckRetryEndsAcknowledged(t *testing.T) {
	srv, valid := stripeReceiver(t)
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	t.Setenv("HOOKCERT_SECRET", fireSecret)
	code, out, errOut := fire("--profile", "stripe", "--url", srv.URL+"/webhooks/stripe/acct_A",
		"--event-type", "payment_intent.succeeded", "--copies", "16", "--lost-ack", "--retry",
		"--time-scale", "360000", "--timeout", "5s", "--seed", "7", "--history", hist)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if valid.Load() != 32 {
		t.Fatalf("receiver saw %d valid deliveries, want 16 lost-ack copies + 16 redeliveries", valid.Load())
	}
	for _, want := range []string{"release: 16 of 16 copies released", "attempts 32: acknowledged 16, failed 0, unknown 16", "seed 7", "lost_ack:close"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"stdout": out, "stderr": errOut, "history": string(b)} {
		if strings.Contains(s, fireSecret) {
			t.Fatalf("secret printed in %s", name)
		}
	}
	h, err := simulator.ReadJSONL(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 32 || len(h.Releases) != 1 || h.Meta.Seed != 7 || h.Meta.Profile != "stripe" || !h.AllAcknowledged() {
		t.Fatalf("history: %d attempts, %d releases, meta %+v", len(h.Attempts), len(h.Releases), h.Meta)
	}
}

func TestFireFailuresAndUsage(t *testing.T) {
	srv, _ := stripeReceiver(t)
	base := []string{"--profile", "stripe", "--url", srv.URL, "--secret", fireSecret}

	code, out, _ := fire(append(base, "--tamper")...)
	if code != ExitFailed || !strings.Contains(out, "400") {
		t.Fatalf("tampered delivery: exit %d, stdout:\n%s", code, out)
	}
	code, _, _ = fire(append(base, "--lost-ack=discard")...)
	if code != ExitFailed {
		t.Fatalf("lost ack without retry must end unknown (exit 1), got %d", code)
	}

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	if code, _, e := fire("--profile", "stripe", "--url", dead, "--secret", fireSecret); code != ExitUnreachable {
		t.Fatalf("unreachable receiver: exit %d (%s)", code, e)
	}

	usage := map[string][]string{
		"--copies must be between 1 and 1024":       append(base, "--copies", "2000"),
		"--lost-ack must be close or discard":       append(base, "--lost-ack=maybe"),
		"--secret or env HOOKCERT_SECRET":           {"--profile", "stripe", "--url", srv.URL},
		"--profile: profile \"nope\": unknown":      {"--profile", "nope", "--url", srv.URL, "--secret", "x"},
		"--url: target.url must be an absolute":     {"--profile", "stripe", "--url", "ftp://x", "--secret", "x"},
		"--time-scale must be greater than 0":       append(base, "--time-scale", "0"),
		"invalid argument \"soon\" for \"--timeout": append(base, "--timeout", "soon"),
	}
	t.Setenv("HOOKCERT_SECRET", "")
	for want, args := range usage {
		code, _, e := fire(args...)
		if code != ExitUsage || !strings.Contains(e, want) {
			t.Errorf("args %v: exit %d, stderr %q; want exit 2 mentioning %q", args, code, e, want)
		}
	}
}
