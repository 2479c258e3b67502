package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/stripe/stripe-go/v85/webhook"
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
	h, err := history.ReadJSONL(bytes.NewReader(b))
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

// dryRunRequest is one request section of --dry-run's output.
type dryRunRequest struct {
	line   string
	header http.Header
	body   []byte
}

func parseDryRun(t *testing.T, out string) []dryRunRequest {
	t.Helper()
	var reqs []dryRunRequest
	for _, sec := range strings.Split(out, "\n# step ")[1:] {
		lines := strings.Split(sec, "\n")
		q := dryRunRequest{line: lines[1], header: http.Header{}}
		i := 2
		for ; lines[i] != ""; i++ {
			k, v, _ := strings.Cut(lines[i], ": ")
			q.header.Add(k, v)
		}
		q.body = []byte(lines[i+1])
		reqs = append(reqs, q)
	}
	return reqs
}

func TestFireDryRunSendsNothingAndPrintsTheRequest(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	const object = `{"id":"in_42","object":"invoice","amount_due":1999}`
	code, out, errOut := fire("--profile", "stripe", "--url", srv.URL+"/webhooks/stripe/acct_A", "--secret", fireSecret,
		"--event-type", "invoice.paid", "--object", object, "--created", "2025-06-01T12:30:00Z", "--pad-to", "2000",
		"--copies", "4", "--seed", "5", "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if hits.Load() != 0 {
		t.Fatalf("dry run sent %d requests", hits.Load())
	}
	if strings.Contains(out+errOut, fireSecret) {
		t.Fatal("secret printed")
	}
	reqs := parseDryRun(t, out)
	if len(reqs) != 1 || !strings.Contains(out, "4 copies") || !strings.Contains(out, "padded to 2000") {
		t.Fatalf("stdout:\n%s", out)
	}
	q := reqs[0]
	if q.line != "POST "+srv.URL+"/webhooks/stripe/acct_A" || q.header.Get("Content-Length") != "2000" ||
		q.header.Get("Host") != strings.TrimPrefix(srv.URL, "http://") || q.header.Get("Content-Type") != "application/json" || len(q.body) != 2000 {
		t.Fatalf("request line %q, headers %v, body %d bytes", q.line, q.header, len(q.body))
	}
	// What was printed is the real request: stripe-go accepts it.
	ev, err := webhook.ConstructEventWithOptions(q.body, q.header.Get("Stripe-Signature"), fireSecret, webhook.ConstructEventOptions{IgnoreTolerance: true})
	if err != nil {
		t.Fatalf("printed request does not verify: %v", err)
	}
	if string(ev.Data.Raw) != object || ev.Created != 1748781000 {
		t.Fatalf("data.object %s, created %d", ev.Data.Raw, ev.Created)
	}

	// A secret an event field happens to carry is still not printed.
	code, out, _ = fire("--profile", "stripe", "--url", srv.URL, "--secret", fireSecret, "--event-id", "evt_"+fireSecret, "--dry-run")
	if code != ExitOK || strings.Contains(out, fireSecret) || !strings.Contains(out, "evt_[REDACTED]") {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
}

func TestFireDryRunPlanFile(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(`
seed: 3
events:
  - name: inv
    type: invoice.paid
    object: {id: in_1, total: 5}
steps:
  - {name: big, event: inv, pad_to: 4096}
  - {event: inv, faults: {ahead_by: 10m}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := fire("--profile", "github", "--url", "http://127.0.0.1:1/hooks", "--secret", fireSecret, "--plan", plan, "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	reqs := parseDryRun(t, out)
	if len(reqs) != 2 || len(reqs[0].body) != 4096 || string(reqs[1].body) != `{"id":"in_1","total":5}` ||
		!strings.Contains(out, "faults ahead_by:10m0s") || !strings.Contains(out, "seed 3") || strings.Contains(out, fireSecret) {
		t.Fatalf("stdout:\n%s", out)
	}
	if reqs[1].header.Get("X-Hub-Signature-256") == "" {
		t.Fatalf("headers %v", reqs[1].header)
	}

	usage := map[string][]string{
		"--copies cannot be combined with --plan":   {"--plan", plan, "--copies", "2"},
		"--plan: load plan":                         {"--plan", filepath.Join(dir, "missing.yaml")},
		"--stale-timestamp and --ahead-timestamp":   {"--stale-timestamp", "1m", "--ahead-timestamp", "1m"},
		"--created must be an RFC 3339 time":        {"--created", "yesterday"},
		"events[0].object: must be a JSON object":   {"--object", "[1]"},
		"--pad-to must not be negative":             {"--pad-to", "-1"},
		"steps[0].pad_to and faults.oversize_bytes": {"--pad-to", "9000", "--oversize", "9000"},
		"pad_to: must be at least the body size":    {"--pad-to", "10", "--dry-run"},
	}
	for want, args := range usage {
		code, _, e := fire(append([]string{"--profile", "stripe", "--url", "http://127.0.0.1:1/", "--secret", fireSecret}, args...)...)
		if code != ExitUsage || !strings.Contains(e, want) || strings.Contains(e, fireSecret) {
			t.Errorf("args %v: exit %d, stderr %q; want exit 2 mentioning %q", args, code, e, want)
		}
	}
}

func TestFireObjectAndPadToDeliver(t *testing.T) {
	srv, valid := stripeReceiver(t)
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	code, out, errOut := fire("--profile", "stripe", "--url", srv.URL, "--secret", fireSecret, "--object", `{"id":"in_9"}`,
		"--pad-to", "5000", "--seed", "1", "--history", hist)
	if code != ExitOK || valid.Load() != 1 {
		t.Fatalf("exit %d, %d valid\nstdout:\n%s\nstderr:\n%s", code, valid.Load(), out, errOut)
	}
	h := readHistory(t, hist)
	if a := h.Attempts[0]; a.BodyBytes != 5000 || a.PadTo != 5000 || len(a.Faults) != 0 {
		t.Fatalf("attempt %+v", a)
	}
}

// dryRunKey is the event ID of --dry-run's first step.
func dryRunKey(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := fire(append([]string{"--profile", "stripe", "--url", "http://127.0.0.1:1/", "--secret", fireSecret, "--dry-run"}, args...)...)
	if code != ExitOK {
		t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	_, rest, ok := strings.Cut(out, " key ")
	key, _, _ := strings.Cut(rest, ",")
	if !ok || !strings.HasPrefix(key, "evt_") {
		t.Fatalf("no event key in:\n%s", out)
	}
	return key
}

// Two invocations with one --seed deliver two events, not one event twice;
// --deterministic-ids derives the IDs a plan with that seed would.
func TestFireEventIDsFreshUnlessDeterministic(t *testing.T) {
	a, b := dryRunKey(t, "--seed", "7"), dryRunKey(t, "--seed", "7")
	if a == b {
		t.Errorf("two invocations with --seed 7 made the same event ID %s", a)
	}
	want := simulator.NewEventID(7, "stripe", 0)
	for i := 0; i < 2; i++ {
		if got := dryRunKey(t, "--seed", "7", "--deterministic-ids"); got != want {
			t.Errorf("--deterministic-ids: event ID %s, want the plan's %s", got, want)
		}
	}
	if got := dryRunKey(t, "--seed", "7", "--event-id", "evt_given"); got != "evt_given" {
		t.Errorf("--event-id: %s", got)
	}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(plan, []byte("seed: 7\nevents: [{name: e, type: charge.succeeded}]\nsteps: [{event: e}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if a, b := dryRunKey(t, "--plan", plan), dryRunKey(t, "--plan", plan); a == b || a == want {
		t.Errorf("a plan file run twice: event IDs %s and %s (seeded: %s)", a, b, want)
	}
	if got := dryRunKey(t, "--plan", plan, "--deterministic-ids"); got != want {
		t.Errorf("a plan file with --deterministic-ids: %s, want %s", got, want)
	}
}

// The body of a non-2xx answer is printed, once per distinct answer,
// without the secret or anything that would drive the terminal.
func TestFirePrintsRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"error":"unknown account acct_A","secret_tried":"`+fireSecret+"\"}\x1b[31m\u202e\n")
	}))
	defer srv.Close()
	code, out, _ := fire("--profile", "stripe", "--url", srv.URL, "--secret", fireSecret, "--copies", "3")
	// Which copy was answered first is the scheduler's choice.
	want := regexp.MustCompile(`\nanswer 422 \(copy [0-2], attempt 1, and 2 more alike\): \{"error":"unknown account acct_A","secret_tried":"\[REDACTED\]"\}\\x1b\[31m\\u202e\n`)
	if code != ExitFailed || !want.MatchString(out) || strings.Contains(out, fireSecret) || strings.ContainsRune(out, 0x1b) {
		t.Errorf("exit %d, stdout:\n%s\nwant it to contain:\n%s", code, out, want)
	}
}

// docPlan is the complete example of docs/plans.md: the yaml block after its
// "plan: complete" marker.
func docPlan(t *testing.T) (doc, plan string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "plans.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc = string(b)
	_, after, ok := strings.Cut(doc, "<!-- plan: complete")
	_, block, ok2 := strings.Cut(after, "```yaml\n")
	plan, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/plans.md has no yaml block after its "plan: complete" marker`)
	}
	return doc, plan
}

// yamlFields are the YAML names of t's fields, inline structs followed.
func yamlFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline":
			out = append(out, yamlFields(f.Type)...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	return out
}

// docs/plans.md cannot rot: its complete example is a plan fire runs, every
// step as written, and every field of the format is documented.
func TestPlanDocExampleRuns(t *testing.T) {
	doc, src := docPlan(t)
	p, err := simulator.ParsePlan([]byte(src))
	if err != nil {
		t.Fatalf("the example in docs/plans.md does not parse: %v", err)
	}
	fields := append(yamlFields(reflect.TypeFor[simulator.Plan]()), yamlFields(reflect.TypeFor[simulator.Step]())...)
	fields = append(fields, yamlFields(reflect.TypeFor[simulator.Faults]())...)
	fields = append(fields, yamlFields(reflect.TypeFor[simulator.Replay]())...)
	fields = append(fields, yamlFields(reflect.TypeFor[simulator.EventSpec]())...)
	fields = append(fields, "object", "created") // EventSpec's, read by its own UnmarshalYAML
	for _, f := range fields {
		if !strings.Contains(doc, "`"+f+"`") && !strings.Contains(doc, "`"+f+":") {
			t.Errorf("docs/plans.md does not document the plan field %s", f)
		}
	}
	file := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, _ := stripeReceiver(t)
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	code, out, errOut := fire("--profile", "stripe", "--url", srv.URL, "--secret", fireSecret, "--plan", file, "--history", hist)
	if code != ExitOK {
		t.Fatalf("fire --plan docs/plans.md's example: exit %d\n%s%s", code, out, errOut)
	}
	h := readHistory(t, hist)
	perStep := map[int]int{}
	for _, a := range h.Attempts {
		perStep[a.Step]++
		if a.Step == 3 && a.Attempt != 2 {
			t.Errorf("step 3 sent as attempt %d, want 2", a.Attempt)
		}
	}
	if len(perStep) != len(p.Steps) || perStep[0] != 32 || perStep[1] != 1 || len(h.Releases) != 1 || h.Meta.Plan != p.Name {
		t.Errorf("attempts per step %v (want 16 lost acknowledgements and 16 retries, then one each), %d releases, plan %q",
			perStep, len(h.Releases), h.Meta.Plan)
	}
}

// readHistory reads a history fire wrote with --history.
func readHistory(t *testing.T, path string) *history.History {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadJSONL(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
