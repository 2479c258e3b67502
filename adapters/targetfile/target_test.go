package targetfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

const full = `target:
  name: reference
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: stripe, account: acct_A, path: /webhooks/stripe/acct_A, secret: whsec_inline_AAAA}
    - {profile: stripe, account: acct_B, path: /webhooks/stripe/acct_B, secret_env: HOOKCERT_TEST_SECRET_B}
    - {profile: github, source: github-test, account: org_1, path: /webhooks/github/org_1, secret: gh_inline_CCCC}
  lifecycle:
    command: [./bin/hookcert, reference, serve, --listen, "{{.ListenAddr}}"]
    env: {DATABASE_URL: "{{.DatabaseURL}}", PUBLIC_URL: "{{.BaseURL}}"}
    dir: .
    ready: {http: /healthz, timeout: 10s}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      event_table: public.processed_webhook_events
      effect_table: ledger_entries
      queries:
        event_rows: SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3
        effects:    SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3
        object_effects: SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4
        object:     SELECT version, status FROM subscriptions WHERE account_id=$2 AND object_id=$4
        payment:    SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4
  failpoints: {}
  capabilities: [crash, lock-gating, connection-loss, failpoints, ordering, state-machine, domain-constraint]
`

var testVars = Vars{DatabaseURL: "postgres://app:s3cretpw@127.0.0.1:5432/rx?sslmode=disable", ListenAddr: "127.0.0.1:18080", SinkURL: "http://127.0.0.1:18081"}

func TestParseFull(t *testing.T) {
	t.Setenv("HOOKCERT_TEST_SECRET_B", "whsec_env_BBBB")
	tg, err := Parse([]byte(full), testVars)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if tg.BaseURL != "http://127.0.0.1:18080" {
		t.Errorf("BaseURL = %q", tg.BaseURL)
	}
	e, ok := tg.Endpoint("stripe", "acct_B")
	if !ok || e.Secret.Reveal() != "whsec_env_BBBB" || e.SecretEnv != "HOOKCERT_TEST_SECRET_B" {
		t.Errorf("endpoint acct_B = %+v, %v (secret %q)", e, ok, e.Secret.Reveal())
	}
	if e.Source != "stripe" {
		t.Errorf("default source = %q, want the profile", e.Source)
	}
	if g, _ := tg.Endpoint("github", "org_1"); g.Source != "github-test" {
		t.Errorf("github source = %q", g.Source)
	}
	if _, ok := tg.Endpoint("stripe", "acct_C"); ok {
		t.Error("found an endpoint that is not configured")
	}
	if got := tg.URL(e.Path); got != "http://127.0.0.1:18080/webhooks/stripe/acct_B" {
		t.Errorf("URL = %q", got)
	}
	if got := tg.Profiles(); !reflect.DeepEqual(got, []string{"github", "stripe"}) {
		t.Errorf("Profiles = %v", got)
	}
	if n := len(tg.EndpointsFor("stripe")); n != 2 {
		t.Errorf("EndpointsFor(stripe) = %d endpoints", n)
	}
	l := tg.Lifecycle
	if l == nil || l.Command[4] != "127.0.0.1:18080" || l.Env["DATABASE_URL"] != testVars.DatabaseURL ||
		l.Env["PUBLIC_URL"] != "http://127.0.0.1:18080" || l.ReadyPath != "/healthz" ||
		l.ReadyTimeout != 10*time.Second || l.StopGrace != DefaultStopGrace {
		t.Errorf("lifecycle = %+v", l)
	}
	if tg.Store.URL.Reveal() != testVars.DatabaseURL || tg.Store.EventTable != "public.processed_webhook_events" {
		t.Errorf("postgres = %v %q", tg.Store.URL, tg.Store.EventTable)
	}
	if tg.FailpointsPath != DefaultFailpointsPath {
		t.Errorf("FailpointsPath = %q", tg.FailpointsPath)
	}
	if !tg.Has(Crash) || !tg.Has(DomainConstraint) || tg.Has(Inbox) {
		t.Errorf("Has: capabilities = %v", tg.Capabilities)
	}
	if err := tg.CheckProfiles([]string{"stripe"}); err == nil || !strings.Contains(err.Error(), `target.endpoints[2].profile: unknown profile "github" (valid: stripe)`) {
		t.Errorf("CheckProfiles = %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	t.Setenv("HOOKCERT_TEST_SECRET_B", "whsec_env_BBBB")
	p := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(p, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := Load(p, testVars)
	if err != nil || tg.Source != p {
		t.Fatalf("Load = %v, %v", tg, err)
	}
	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"), testVars)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}

// TestAllErrorsAtOnce: one file with many mistakes reports each of them, with field
// path, rule and line.
func TestAllErrorsAtOnce(t *testing.T) {
	src := `target:
  base_url: ftp://example
  endpoints:
    - {profile: stripe, account: acct_A, path: /a, secret: whsec_x}
    - {profile: stripe, account: acct_B, path: b}
    - {profile: stripe, account: acct_A, path: /a, secret: s, secret_env: X}
  observe:
    postgres:
      url: "{{.Nope}}"
      event_table: "x; drop table y"
      effect_table: "ledger-entries"
      queries:
        event_rows: SELECT count(*) FROM t WHERE source=$1 AND account_id=$2 AND event_id=$3
        effects: SELECT count(*) FROM t WHERE event_id=$3 AND z=$5
        object: SELECT 1 FROM t WHERE account_id=$2
  capabilities: [crash, ordering, x, lock-gating, ordering, state-machine]
`
	_, err := Parse([]byte(src), Vars{})
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"target.name (line 1): required",
		`target.base_url (line 2): must be an http:// or https:// URL (got "ftp://example")`,
		`target.endpoints[1].path (line 5): must start with "/" (got "b")`,
		"target.endpoints[1].secret (line 5): required (or secret_env)",
		"target.endpoints[2].secret (line 6): set only one of secret and secret_env",
		`target.endpoints[2] (line 6): duplicate endpoint for source "stripe" and account "acct_A" (also target.endpoints[0]; give one a different source)`,
		`target.endpoints[2].path (line 6): duplicate path "/a" (also target.endpoints[0])`,
		"target.observe.postgres.url (line 9): unknown template variable {{.Nope}} (valid: BaseURL, DatabaseURL, ListenAddr, Port, ProviderAPIURL, SinkURL)",
		"target.observe.postgres.event_table (line 10): must be a table name or schema.table",
		"target.observe.postgres.effect_table (line 11): must be a table name or schema.table",
		"target.observe.postgres.queries.effects (line 14): must use only parameters $1..$4 ($1 source, $2 account, $3 event ID, $4 object ID): parameter $5 is out of range $1..$4",
		"target.observe.postgres.queries.object (line 15): must reference $4 (the object ID)",
		`target.capabilities[0] (line 16): capability "crash" needs target.lifecycle, which is missing`,
		`target.capabilities[2] (line 16): unknown capability "x" (valid: crash, lock-gating, connection-loss, failpoints, ordering, state-machine, domain-constraint, deletion, retention, inbox, outbox, refetch)`,
		`target.capabilities[4] (line 16): duplicate capability "ordering" (also target.capabilities[1])`,
		`target.capabilities[5] (line 16): capability "state-machine" needs target.observe.postgres.queries.payment, which is missing`,
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("missing error %q", w)
		}
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Error("errors are not *FieldError")
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != len(want) {
		t.Errorf("%d errors, want %d:\n%s", n, len(want), msg)
	}
	if strings.Contains(msg, "whsec_x") {
		t.Error("an error message contains a secret")
	}
}

func TestUnknownFieldsAndShape(t *testing.T) {
	cases := map[string]struct{ src, want string }{
		"unknown field": {"target:\n  name: x\n  bse_url: http://h\n",
			`target.bse_url (line 3): unknown field in target (valid: acceptance, base_url, capabilities, endpoints, events, failpoints, fixtures, idempotency, inbox, lifecycle, limits, name, observe, outbox, provider_api, retention, setup)`},
		"unknown query": {"target:\n  observe:\n    postgres:\n      queries:\n        events: SELECT 1\n",
			`target.observe.postgres.queries.events (line 5): unknown field in target.observe.postgres.queries`},
		"unknown top": {"targets: {}\n", `targets (line 1): unknown field in (top level) (valid: profiles, target)`},
		"empty":       {"", "target: required (the file is empty)"},
		"bad yaml":    {"target: [\n", "invalid YAML"},
		"no observe":  {"target:\n  name: x\n", "target.observe.postgres (line 1): required"},
		"lock-gating without table": {"target:\n  capabilities: [lock-gating]\n",
			`target.capabilities[0] (line 2): capability "lock-gating" needs target.observe.postgres.event_table, which is missing`},
		"bad duration": {"target:\n  lifecycle: {command: [x], ready: {http: /h, timeout: soon}}\n",
			`target.lifecycle.ready.timeout (line 2): must be a duration like 30s or 1m (got "soon")`},
		"unset var": {"target:\n  base_url: http://{{.ListenAddr}}\n",
			"target.base_url (line 2): template variable {{.ListenAddr}} is not set by the harness for this run"},
		"secret env unset": {"target:\n  endpoints: [{profile: stripe, account: a, path: /p, secret_env: HOOKCERT_TEST_UNSET_VAR}]\n",
			"target.endpoints[0].secret_env (line 2): environment variable HOOKCERT_TEST_UNSET_VAR is not set or empty"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), Vars{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// TestSecretsNeverPrinted prints the loaded target every usual way and looks for
// any secret value or the database password.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Setenv("HOOKCERT_TEST_SECRET_B", "whsec_env_BBBB")
	tg, err := Parse([]byte(full), testVars)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%v %+v %#v %s %q %x %d\n", tg, *tg, *tg, tg.Endpoints, tg.Endpoints[0].Secret, tg.Endpoints[0].Secret, tg.Endpoints[0].Secret)
	fmt.Fprintln(&out, tg.Store.URL, tg.Endpoints[1])
	fmt.Fprintf(&out, "%v %+v %#v %s\n", tg.Lifecycle, *tg.Lifecycle, *tg.Lifecycle, tg.Lifecycle.Env)
	j, _ := json.Marshal(tg)
	out.Write(j)
	sj, _ := json.Marshal(tg.Summary())
	out.Write(sj)
	out.WriteString(tg.Summary().String())
	slog.New(slog.NewJSONHandler(&out, nil)).Info("t", "secret", tg.Endpoints[0].Secret, "target", tg)
	slog.New(slog.NewTextHandler(&out, nil)).Info("t", "secret", tg.Endpoints[1].Secret)
	for _, s := range []string{"whsec_inline_AAAA", "whsec_env_BBBB", "gh_inline_CCCC", "s3cretpw"} {
		if strings.Contains(out.String(), s) {
			t.Errorf("secret %q printed in:\n%s", s, out.String())
		}
	}
	if !strings.Contains(out.String(), "[redacted]") || !strings.Contains(string(sj), `"secret_from":"env:HOOKCERT_TEST_SECRET_B"`) {
		t.Errorf("unexpected rendering:\n%s", out.String())
	}
	if got := tg.Summary().DatabaseURL; got != "postgres://app:xxxxx@127.0.0.1:5432/rx?sslmode=disable" {
		t.Errorf("summary DatabaseURL = %q", got)
	}
	if got := redactURL("host=h password=pw user=u"); got != "host=h password=xxxxx user=u" {
		t.Errorf("redactURL(dsn) = %q", got)
	}
	if got := redactURL("postgres://h/db?password=pw"); strings.Contains(got, "pw") {
		t.Errorf("redactURL(query) = %q", got)
	}
}

func TestCompactParams(t *testing.T) {
	cases := []struct {
		in, out string
		used    []int
	}{
		{"SELECT version, status FROM s WHERE account_id=$2 AND object_id=$4",
			"SELECT version, status FROM s WHERE account_id=$1 AND object_id=$2", []int{2, 4}},
		{"SELECT count(*) FROM t WHERE a=$3 AND b='$1' AND c=\"$2x\" AND d=$$ $9 $$ AND e=$q$ $7 $q$ -- $5\n AND f=$3 /* $6 */",
			"SELECT count(*) FROM t WHERE a=$1 AND b='$1' AND c=\"$2x\" AND d=$$ $9 $$ AND e=$q$ $7 $q$ -- $5\n AND f=$1 /* $6 */", []int{3}},
		{"SELECT 'it''s $2', $1", "SELECT 'it''s $2', $1", []int{1}},
		{"SELECT 1", "SELECT 1", nil},
	}
	for _, c := range cases {
		out, used, err := CompactParams(c.in)
		if err != nil || out != c.out || !reflect.DeepEqual(used, c.used) {
			t.Errorf("CompactParams(%q) = %q, %v, %v; want %q, %v", c.in, out, used, err, c.out, c.used)
		}
	}
	for _, bad := range []string{"SELECT $0", "SELECT $5", "SELECT 'open", "SELECT /* open", "SELECT $a$ open"} {
		if _, _, err := CompactParams(bad); err == nil {
			t.Errorf("CompactParams(%q): no error", bad)
		}
	}
}

// TestDocumentedExample keeps docs/target.md honest: its complete example loads.
func TestDocumentedExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/target.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok0 := strings.Cut(string(doc), "## Complete example: the hookcert reference receiver")
	_, rest, ok := strings.Cut(section, "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok0 || !ok || !ok2 {
		t.Fatal("no complete yaml example in docs/target.md")
	}
	t.Setenv("STRIPE_SECRET_ACCT_B", "whsec_test_secret_acct_B")
	tg, err := Parse([]byte(example), testVars)
	if err != nil {
		t.Fatalf("documented example: %v", err)
	}
	for _, c := range Capabilities {
		// The reference receiver never calls a provider API: its example
		// declares no refetch ("The provider API contract" shows one, and
		// TestRefetchExampleLoads loads examples/refetch-receiver's file).
		if !Reserved(c) && !tg.Has(c) && c != Refetch {
			t.Errorf("the example does not declare %s", c)
		}
	}
}

// TestInboxOutboxContract: the capabilities need their sections, async
// acceptance and {{.SinkURL}}; bad values name the field and the rule.
func TestInboxOutboxContract(t *testing.T) {
	base := `target:
  name: t
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: a, path: /w, secret: whsec_x}]
  lifecycle: {command: [rx, "%s"], ready: {http: /healthz}}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries: {event_rows: "SELECT 1 WHERE $3 <> ''", effects: "SELECT 1 WHERE $3 <> ''"}
%s  capabilities: [inbox, outbox]
`
	cases := []struct{ arg, extra, want string }{
		{"{{.SinkURL}}", "", `target.capabilities[0]: capability "inbox" needs target.inbox, which is missing`},
		{"{{.SinkURL}}", "  acceptance: {mode: async}\n  inbox: {lease: 2s}\n", "target.inbox.state: required"},
		{"{{.SinkURL}}", "  inbox: {lease: 2s, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n", "needs target.acceptance.mode async"},
		{"x", "  acceptance: {mode: async}\n  inbox: {lease: 2s, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n  outbox: {}\n", "needs the receiver to be given {{.SinkURL}}"},
		{"{{.SinkURL}}", "  acceptance: {mode: async}\n  inbox: {lease: 10m, max_attempts: 0, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n  outbox: {}\n", "target.inbox.lease: must be at most 5m0s"},
		{"{{.SinkURL}}", "  acceptance: {mode: async}\n  inbox: {lease: 1s, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n  outbox: {max_attempts: 3}\n", "target.outbox.state: required with max_attempts"},
		{"{{.SinkURL}}", "  acceptance: {mode: async}\n  inbox: {lease: 1s, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n  outbox: {key_header: \"bad header\"}\n", "target.outbox.key_header: must be an HTTP header name"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(fmt.Sprintf(base, c.arg, c.extra)), testVars)
		if err == nil || !strings.Contains(regexp.MustCompile(` \(line \d+\)`).ReplaceAllString(err.Error(), ""), c.want) {
			t.Errorf("%q / %q: err = %v, want it to contain %q", c.arg, c.extra, err, c.want)
		}
	}
	ok := fmt.Sprintf(base, "{{.SinkURL}}", "  acceptance: {mode: async}\n  inbox: {lease: 2s, max_attempts: 4, table: inbox, state: \"SELECT 'done', 1 WHERE $3 <> ''\"}\n  outbox: {key_header: x-op-key, max_attempts: 3, state: \"SELECT 'sent', 1 WHERE $3 <> ''\"}\n")
	tg, err := Parse([]byte(ok), testVars)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Inbox.Lease != 2*time.Second || tg.Inbox.MaxAttempts != 4 || tg.Inbox.Table != "inbox" || tg.Outbox.KeyHeader != "X-Op-Key" || tg.Outbox.MaxAttempts != 3 ||
		tg.Store.Queries.InboxState == "" || tg.Store.Queries.OutboxState == "" || tg.Lifecycle.Command[1] != "http://127.0.0.1:18081" {
		t.Errorf("parsed %+v %+v %+v", tg.Inbox, tg.Outbox, tg.Lifecycle.Command)
	}
}

// TestLifecycleWorker: a separate worker command renders like the receiver's,
// takes its env over the receiver's, and is refused where nothing would kill it
// alone or with a bad process count.
func TestLifecycleWorker(t *testing.T) {
	base := `target:
  name: t
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: a, path: /w, secret: whsec_x}]
  lifecycle:
    command: [rx, serve]
    env: {DB: "{{.DatabaseURL}}", MODE: web}
    ready: {http: /healthz}
    worker: %s
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries: {event_rows: "SELECT 1 WHERE $3 <> ''", effects: "SELECT 1 WHERE $3 <> ''"}
  acceptance: {mode: async}
  inbox: {lease: 2s, state: "SELECT 'done', 1 WHERE $3 <> ''"}
  capabilities: [%s]
`
	cases := []struct{ worker, caps, want string }{
		{"{command: [rx, work]}", "crash", `target.lifecycle.worker: needs capability "inbox" or "outbox"`},
		{"{env: {MODE: worker}}", "inbox", "target.lifecycle.worker.command: required (the worker program and its arguments)"},
		{"{command: [rx, work], processes: 0}", "inbox", "target.lifecycle.worker.processes: must be between 1 and 8, got 0"},
		{"{command: [rx, work], processes: 9}", "inbox", "target.lifecycle.worker.processes: must be between 1 and 8, got 9"},
		{"{command: [rx, work], env: {1X: y}}", "inbox", "target.lifecycle.worker.env.1X: must be an environment variable name"},
		{"{command: [rx, work], replicas: 2}", "inbox", "target.lifecycle.worker.replicas"},
		{"{command: [rx, \"{{.Nope}}\"]}", "inbox", "target.lifecycle.worker.command[1]"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(fmt.Sprintf(base, c.worker, c.caps)), testVars)
		if err == nil || !strings.Contains(regexp.MustCompile(` \(line \d+\)`).ReplaceAllString(err.Error(), ""), c.want) {
			t.Errorf("%s / %s: err = %v, want it to contain %q", c.worker, c.caps, err, c.want)
		}
	}
	tg, err := Parse([]byte(fmt.Sprintf(base, `{command: [rx, work, "--listen={{.ListenAddr}}"], env: {MODE: worker}, processes: 3}`, "inbox")), testVars)
	if err != nil {
		t.Fatal(err)
	}
	w := tg.Lifecycle.Worker
	if w == nil || w.Processes != 3 || len(w.Command) != 3 || w.Command[2] != "--listen="+testVars.ListenAddr ||
		w.Env["MODE"] != "worker" || w.Env["DB"] != testVars.DatabaseURL || tg.Lifecycle.Env["MODE"] != "web" || w.Dir != tg.Lifecycle.Dir {
		t.Errorf("worker = %+v (lifecycle env %v)", w, tg.Lifecycle.Env)
	}
	s := tg.Summary()
	if s.WorkerProcesses != 3 || !strings.Contains(s.String(), "worker ") || strings.Contains(s.String(), testVars.DatabaseURL) {
		t.Errorf("summary = %s", s)
	}
	tg, err = Parse([]byte(fmt.Sprintf(base, "{command: [rx, work]}", "inbox")), testVars)
	if err != nil || tg.Lifecycle.Worker.Processes != 1 {
		t.Errorf("default processes: %v, %+v", err, tg.Lifecycle.Worker)
	}
}
