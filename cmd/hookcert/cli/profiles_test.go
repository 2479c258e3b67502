package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// acmeProfiles declares a provider hookcert does not know: HMAC-SHA256 over
// "<t>:<id>:<body>", the event ID in a header, t inside the signature header.
const acmeProfiles = `# Acme, as its documentation describes it.
profiles:
  - id: acme
    name: Acme
    # The event ID is in a header, not the body.
    body:
      envelope: '{"type": {{json .Type}}, "data": {{.Object}}}'
      object_path: $.data
    event_id: {header: Acme-Event-Id}
    event_type: {json_path: $.type}
    timestamp: {tolerance: 5m, source: acme docs}
    signature:
      algorithm: hmac-sha256
      signed: "{{.Timestamp}}:{{.ID}}:{{.Body}}"
      header: Acme-Signature
      format: "t={{.Timestamp}},s={{.Signature}}"
      source: acme docs
    delivery: {timeout: 10s}
    ids: {event: "evt_{{base62 24}}"}
    sources: [acme docs]
`

const acmeSecret = "acme_cli_test_secret_0123456789"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// acmeReceiver verifies Acme's signature as Acme documents it, independently
// of hookcert, and records the event IDs of the valid deliveries.
func acmeReceiver(t *testing.T) (*httptest.Server, *atomic.Value) {
	t.Helper()
	var ids atomic.Value
	ids.Store([]string{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ts, sig string
		for _, part := range strings.Split(r.Header.Get("Acme-Signature"), ",") {
			k, v, _ := strings.Cut(part, "=")
			switch k {
			case "t":
				ts = v
			case "s":
				sig = v
			}
		}
		mac := hmac.New(sha256.New, []byte(acmeSecret))
		mac.Write([]byte(ts + ":" + r.Header.Get("Acme-Event-Id") + ":"))
		mac.Write(body)
		if got, _ := hex.DecodeString(sig); ts == "" || !hmac.Equal(got, mac.Sum(nil)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		ids.Store(append(ids.Load().([]string), r.Header.Get("Acme-Event-Id")))
	}))
	t.Cleanup(srv.Close)
	return srv, &ids
}

func TestFireDeclaredProfile(t *testing.T) {
	srv, ids := acmeReceiver(t)
	file := writeFile(t, "acme.yaml", acmeProfiles)
	t.Setenv("HOOKCERT_SECRET", acmeSecret)
	code, out, errOut := fire("--profile", "acme", "--profile-file", file, "--url", srv.URL+"/acme", "--event-type", "credit.granted", "--copies", "2")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	got := ids.Load().([]string)
	if len(got) != 2 || got[0] != got[1] || !strings.HasPrefix(got[0], "evt_") || len(got[0]) != len("evt_")+24 {
		t.Errorf("the receiver verified %v: want two copies of one evt_ + 24 base-62 event ID (the declared ids.event)", got)
	}
	if !strings.Contains(out, "profile acme") {
		t.Errorf("output does not name the profile:\n%s", out)
	}

	// The same profile read from a target file's profiles: section: its
	// target section is not checked (its secrets need not be set).
	config := writeFile(t, "target.yaml", acmeProfiles+"target:\n  name: acme\n  endpoints:\n    - {profile: acme, secret_env: NOT_SET_FOR_FIRE}\n")
	code, out, errOut = fire("--profile", "acme", "--config", config, "--url", srv.URL+"/acme", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "Acme-Signature: t=") || strings.Contains(out, acmeSecret) {
		t.Errorf("--config --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "acme"}, `--profile: profile "acme": unknown; valid profiles: adyen`},
		{[]string{"--profile", "acmee", "--profile-file", file}, `--profile: profile "acmee": unknown; valid profiles: acme, adyen`},
		{[]string{"--profile", "acme", "--profile-file", file, "--config", config}, "--profile-file and --config both declare profiles: give one"},
		{[]string{"--profile", "acme", "--profile-file", writeFile(t, "none.yaml", "target: {}\n")}, "declares no profiles"},
		{[]string{"--profile", "acme", "--profile-file", writeFile(t, "bad.yaml", strings.Replace(acmeProfiles, "hmac-sha256", "hmac-md5", 1))},
			"profiles[0].signature.algorithm (line 13): "},
	} {
		code, out, errOut := fire(append(tc.args, "--url", srv.URL)...)
		msg := out + errOut
		if code != ExitUsage || !strings.Contains(msg, tc.want) {
			t.Errorf("fire %v: exit %d, want %d and %q\n%s", tc.args, code, ExitUsage, tc.want, msg)
		}
	}
}

func TestGuaranteesForProfile(t *testing.T) {
	// GitHub signs no timestamp and carries its delivery ID in a header.
	code, out := runMain("guarantees", "--profile", "github")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	line := func(id string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, id+" ") {
				return l
			}
		}
		return ""
	}
	for id, want := range map[string]string{
		"ACK-4":    "no       needs signed-timestamp: no endpoint's profile signs a timestamp",
		"DEDUP-5":  "applies  -",
		"DEDUP-1":  "applies  -",
		"DEDUP-3":  "applies  needs multi-account",
		"ATOMIC-1": "applies  needs crash, stop-in-transaction",
	} {
		if l := line(id); !strings.Contains(l, want) {
			t.Errorf("%s: %q, want it to say %q\n%s", id, l, want, out)
		}
	}
	if !strings.HasPrefix(out, "profile github (GitHub, built in): ") {
		t.Errorf("heading: %s", strings.SplitN(out, "\n", 2)[0])
	}

	// Stripe signs a timestamp but carries its event ID in the body.
	_, out = runMain("guarantees", "--profile", "stripe")
	if l := line("ACK-4"); !strings.Contains(l, "applies") {
		t.Errorf("stripe ACK-4: %q", l)
	}
	if l := line("DEDUP-5"); !strings.Contains(l, "no       needs header-event-id") {
		t.Errorf("stripe DEDUP-5: %q", l)
	}

	// A declared profile: Acme signs a timestamp and sends its ID in a header.
	file := writeFile(t, "acme.yaml", acmeProfiles)
	code, out = runMain("guarantees", "--profile", "acme", "--profile-file", file, "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var res struct {
		Profile    string
		Declared   bool
		Guarantees []profileVerdict
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Profile != "acme" || !res.Declared {
		t.Errorf("json: %+v", res)
	}
	for _, v := range res.Guarantees {
		if (v.ID == "ACK-4" || v.ID == "DEDUP-5") && !v.Applies {
			t.Errorf("acme: %s does not apply: %s", v.ID, v.Why)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile-file", file}, "give --profile ID"},
		{[]string{"--profile", "nope"}, `profile "nope": unknown`},
		{[]string{"--profile", "github", "--format", "markdown"}, "--format markdown prints the catalogue"},
	} {
		if code, out := runMain(append([]string{"guarantees"}, tc.args...)...); code != ExitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("guarantees %v: exit %d\n%s", tc.args, code, out)
		}
	}
}

// init --profile-file proposes a target for a declared provider: the file
// carries the declaration as written (comments kept), and loads.
func TestInitDeclaredProfile(t *testing.T) {
	dbURL := pgtest.Database(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE acme_events (account text, event_id text, PRIMARY KEY (account, event_id));
		CREATE TABLE wallet_credits (id bigserial PRIMARY KEY, account text, event_id text)`); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "acme.yaml", acmeProfiles)
	out := filepath.Join(t.TempDir(), "target.yaml")
	code, msg := runMain("init", "--database-url", dbURL, "--profile", "acme", "--profile-file", file, "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"profiles:\n  - id: acme\n", "    # The event ID is in a header, not the body.\n", "- profile: acme\n", "secret_env: ACME_WEBHOOK_SECRET"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("proposed file lacks %q:\n%s", want, b)
		}
	}
	t.Setenv("ACME_WEBHOOK_SECRET", acmeSecret)
	tg, err := targetfile.Inspect(b, profiles.IDs())
	if err != nil {
		t.Fatalf("the proposed file does not load: %v\n%s", err, b)
	}
	if _, err := tg.LookupProfile("acme"); err != nil {
		t.Errorf("acme: %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil || doc["profiles"] == nil {
		t.Errorf("no profiles section: %v", err)
	}
	if code, msg := runMain("init", "--database-url", dbURL, "--profile", "acme", "--out", out, "--force"); code != ExitUsage || !strings.Contains(msg, `--profile: unknown profile "acme" (valid: adyen`) {
		t.Errorf("acme without --profile-file: exit %d\n%s", code, msg)
	}
}

// validate renders and prints a signed sample delivery of each declared
// profile, and reports a broken declaration with its field and line.
func TestValidateDeclaredProfile(t *testing.T) {
	t.Setenv("HOOKCERT_TEST_ACME_SECRET", acmeSecret)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "schema.sql"), []byte(
		"CREATE TABLE events (account text, event_id text);\nCREATE TABLE credits (account text, event_id text);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := acmeProfiles + `target:
  name: acme
  base_url: http://` + closedPort(t) + `
  endpoints:
    - {profile: acme, account: acct_A, path: /acme/acct_A, secret_env: HOOKCERT_TEST_ACME_SECRET}
  setup: {sql_file: schema.sql}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM events WHERE account = $2 AND event_id = $3
        effects: SELECT count(*) FROM credits WHERE account = $2 AND event_id = $3
  events:
    effect: {type: credit.granted}
`
	config := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(config, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runMain("validate", "--config", config, "--database-url", pgtest.ServerURL())
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"profiles declared: acme", "sample delivery of declared profile acme (Acme; as sent to /acme/acct_A, signed with its secret):",
		"  Acme-Signature: t=", "  Acme-Event-Id: evt_", `  {"type":"credit.granted","data":{`} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, acmeSecret) {
		t.Error("the secret is printed")
	}
	if err := os.WriteFile(config, []byte(strings.Replace(src, "algorithm: hmac-sha256", "algorithm: hmac-md5", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = runMain("validate", "--config", config, "--database-url", pgtest.ServerURL())
	if code != ExitUsage || !strings.Contains(out, "profiles[0].signature.algorithm (line 13): ") {
		t.Errorf("broken declaration: exit %d\n%s", code, out)
	}
}
