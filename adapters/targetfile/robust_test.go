package targetfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// minimal is a valid file with every required field, for tests to break.
const minimal = `target:
  name: t
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: stripe, account: a, path: /a, secret: s}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM t WHERE event_id=$3
        effects: SELECT count(*) FROM t WHERE event_id=$3
`

// errorLines splits a joined error into its messages.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func TestTypeErrorsWithPathsBesideOtherErrors(t *testing.T) {
	src := `target:
  name: [a, b]
  base_url: http://h
  endpoints:
    - {profile: stripe, account: a, path: /a, secret: s}
    - profile: paypal
      path: {x: 1}
      account: b
      secret: s
  lifecycle: oops
  observe:
    postgres:
      url: postgres://h/db
      event_table: 42
      queries:
        event_rows: [SELECT 1]
        effects: SELECT count(*) FROM t WHERE event_id=$5
  limits: {max_body_bytes: lots}
  capabilities: crash
`
	_, err := Parse([]byte(src), Vars{}, WithProfiles([]string{"stripe", "github"}))
	want := []string{
		"target.name (line 2): must be a string, got a list",
		`target.endpoints[1].profile (line 6): unknown profile "paypal" (valid: github, stripe)`,
		"target.endpoints[1].path (line 7): must be a string, got a mapping",
		"target.lifecycle (line 10): must be a mapping with the fields command, dir, env, ready, stop_grace, worker, got a string",
		`target.observe.postgres.event_table (line 14): must be a table name or schema.table of letters, digits and _ (got "42")`,
		"target.observe.postgres.queries.event_rows (line 16): must be a string, got a list",
		"target.observe.postgres.queries.effects (line 17): must use only parameters $1..$4",
		`target.limits.max_body_bytes (line 18): must be an integer, got "lots"`,
		"target.capabilities (line 19): must be a list of strings, got a string",
	}
	got := errorLines(err)
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("missing %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d errors, want %d (a field with a type error is not also reported as missing):\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	// The file's words, not Go's. (An event_table of 42 is the string "42" as far
	// as types go, and the rule for table names applies.)
	goWords := regexp.MustCompile(`unmarshal|!!|\[\]|map\[|\bint\b|\bstring\b into|raw[A-Z]`)
	for _, g := range got {
		if w := goWords.FindString(g); w != "" {
			t.Errorf("error speaks Go (%q): %s", w, g)
		}
	}
	// In line order.
	last := 0
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *FieldError", e)
		}
		if fe.Line < last {
			t.Errorf("errors out of line order at %v", fe)
		}
		last = fe.Line
	}
}

func TestShapeErrors(t *testing.T) {
	cases := map[string]struct{ src, want string }{
		"top level list":  {"- a\n- b\n", "(top level) (line 1): must be a mapping with the fields profiles, target, got a list"},
		"target scalar":   {"target: 5\n", "target (line 1): must be a mapping with the fields acceptance, base_url, capabilities,"},
		"endpoints map":   {"target:\n  endpoints: {profile: x}\n", "target.endpoints (line 2): must be a list of mappings, got a mapping"},
		"endpoint string": {"target:\n  endpoints: [stripe]\n", "target.endpoints[0] (line 2): must be a mapping with the fields account, ack_timeout, key_ttl,"},
		"env list":        {"target:\n  lifecycle: {command: [x], env: [A=1], ready: {http: /h}}\n", "target.lifecycle.env (line 2): must be a mapping of names to strings, got a list"},
		"env value map":   {"target:\n  lifecycle:\n    command: [x]\n    env: {A: {b: 1}}\n", "target.lifecycle.env.A (line 4): must be a string, got a mapping"},
		"command string":  {"target:\n  lifecycle: {command: ./run, ready: {http: /h}}\n", "target.lifecycle.command (line 2): must be a list of strings, got a string"},
		"repeated key":    {"target:\n  name: a\n  name: b\n", "target.name (line 3): repeated key (first at line 2)"},
		"key not a name":  {"target:\n  [a]: b\n", "target (line 2): keys must be plain names, got a list"},
		"bad merge":       {"target:\n  <<: [1]\n", "target (line 2): << must merge a mapping, got a number"},
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

func TestMergeKeysAndAliases(t *testing.T) {
	src := `x-endpoint: &ep {profile: stripe, secret: s}
target:
  name: t
  base_url: http://h
  endpoints:
    - {<<: *ep, account: a, path: /a}
    - {<<: *ep, account: b, path: /b, secret: other}
  observe:
    postgres:
      url: postgres://h/db
      queries:
        event_rows: &q SELECT count(*) FROM t WHERE event_id=$3
        effects: *q
`
	// x-endpoint is not a field: the anchor holder itself is reported, nothing else.
	_, err := Parse([]byte(src), Vars{})
	if got := errorLines(err); len(got) != 1 || !strings.HasPrefix(got[0], "x-endpoint (line 1): unknown field in (top level)") {
		t.Fatalf("errors = %q", got)
	}
	src = strings.Replace(src, "x-endpoint: &ep {profile: stripe, secret: s}\ntarget:\n", "target:\n  name: t\n", 1)
	src = strings.Replace(src, "  name: t\n  base_url", "  base_url", 1)
	src = strings.Replace(src, "    - {<<: *ep, account: a, path: /a}", "    - &ep {profile: stripe, secret: s, account: a, path: /a}", 1)
	tg, err := Parse([]byte(src), Vars{})
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if e, ok := tg.Endpoint("stripe", "b"); !ok || e.Secret.Reveal() != "other" || e.Path != "/b" {
		t.Errorf("merged endpoint = %+v, %v", e, ok)
	}
	if tg.Store.Queries.Effects != tg.Store.Queries.EventRows {
		t.Error("the aliased query differs")
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("target:\n  capabilities: *a11\n")
	done := make(chan error, 1)
	go func() { _, err := Parse([]byte(b.String()), Vars{}); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Parse of 10^12 aliased values did not return")
	}
}

func TestMultipleDocuments(t *testing.T) {
	_, err := Parse([]byte(minimal+"---\ntarget:\n  name: other\n"), testVars)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 12 || !strings.Contains(err.Error(), "a second YAML document starts here") {
		t.Errorf("two documents: err = %v", err)
	}
	if _, err := Parse([]byte("---\n"+minimal+"...\n"), testVars); err != nil {
		t.Errorf("one document with explicit markers: %v", err)
	}
	if _, err := Parse([]byte(minimal+"---\n"), testVars); err != nil {
		t.Errorf("a trailing --- with nothing after it: %v", err)
	}
	if _, err := Parse([]byte(minimal+"---\n- [\n"), testVars); err == nil || !strings.Contains(err.Error(), "invalid YAML") {
		t.Errorf("broken second document: err = %v", err)
	}
}

func TestSizeCap(t *testing.T) {
	big := []byte(minimal + "#" + strings.Repeat("x", MaxFileBytes) + "\n")
	if _, err := Parse(big, testVars); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(len(big))) {
		t.Errorf("Parse(%d bytes) = %v, want ErrTooLarge with the size", len(big), err)
	}
	if err := Validate(big, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Validate(%d bytes) = %v, want ErrTooLarge", len(big), err)
	}
	exact := []byte(minimal + "#" + strings.Repeat("x", MaxFileBytes-len(minimal)-2) + "\n")
	if len(exact) != MaxFileBytes {
		t.Fatalf("exact is %d bytes", len(exact))
	}
	if _, err := Parse(exact, testVars); err != nil {
		t.Errorf("a file of exactly MaxFileBytes: %v", err)
	}
	// A 200 MB file (sparse: its size is what counts) is refused before it is read.
	p := filepath.Join(t.TempDir(), "target.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(200 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(p, testVars)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Load(200 MB) = %v", err)
	}
	for _, w := range []string{p, "209715200 bytes", "limit 1048576 bytes (1 MiB)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestUnknownProfilesWithLines(t *testing.T) {
	src := strings.Replace(minimal, "    - {profile: stripe, account: a, path: /a, secret: s}\n",
		"    - {profile: stripe, account: a, path: /a, secret: s}\n    - {profile: strpe, account: a, path: /b, secret: s}\n", 1)
	src = strings.Replace(src, "  name: t\n", "", 1)
	_, err := Parse([]byte(src), testVars, WithProfiles([]string{"stripe", "github"}))
	got := errorLines(err)
	if len(got) != 2 || got[0] != "target (line 1): required" && !strings.HasPrefix(got[0], "target.name") ||
		got[1] != `target.endpoints[1].profile (line 5): unknown profile "strpe" (valid: github, stripe)` {
		t.Errorf("errors = %q", got)
	}
	if _, err := Parse([]byte(minimal), testVars, WithProfiles([]string{"stripe"})); err != nil {
		t.Errorf("known profile: %v", err)
	}
	if _, err := Parse([]byte(minimal), testVars, WithProfiles(nil)); err != nil {
		t.Errorf("no profile list: %v", err)
	}
}

func TestValidateBeforeProvisioning(t *testing.T) {
	t.Setenv("HOOKCERT_TEST_SECRET_B", "whsec_env_BBBB")
	if err := Validate([]byte(full), []string{"stripe", "github"}); err != nil {
		t.Errorf("Validate(full) = %v", err)
	}
	// Every template variable is stood in for: none is reported as unset.
	src := minimal + "  lifecycle: {command: [x, \"{{.Port}}\", \"{{.BaseURL}}\"], ready: {http: /h}}\n"
	if err := Validate([]byte(src), nil); err != nil {
		t.Errorf("Validate(templates) = %v", err)
	}
	// What the file gets wrong is reported, the same as Parse reports it.
	bad := strings.Replace(minimal, "path: /a", "path: a", 1) + "  capabilities: [crash]\n"
	verr := Validate([]byte(bad), []string{"github"})
	_, perr := Parse([]byte(bad), testVars, WithProfiles([]string{"github"}))
	if verr == nil || perr == nil || verr.Error() != perr.Error() {
		t.Errorf("Validate = %v\nParse = %v", verr, perr)
	}
	if n := len(errorLines(verr)); n != 3 {
		t.Errorf("%d errors, want 3 (path, profile, capability):\n%v", n, verr)
	}
	// Paths from different templates may collide only by the stand-in values;
	// identical templates always do.
	two := strings.Replace(minimal, "    - {profile: stripe, account: a, path: /a, secret: s}\n",
		"    - {profile: stripe, account: a, path: \"/x/{{.Port}}\", secret: s}\n    - {profile: stripe, account: b, path: /x/65535, secret: s}\n", 1)
	if err := Validate([]byte(two), nil); err != nil {
		t.Errorf("paths equal only with the stand-in port: %v", err)
	}
	same := strings.Replace(two, "path: /x/65535", `path: "/x/{{.Port}}"`, 1)
	if err := Validate([]byte(same), nil); err == nil || !strings.Contains(err.Error(), "duplicate path") {
		t.Errorf("identical path templates: err = %v", err)
	}
}

// TestErrorsNeverQuoteThePassword renders the database URL, with its password,
// into every field whose error quotes the rendered value.
func TestErrorsNeverQuoteThePassword(t *testing.T) {
	const pw = "s3cretpw"
	vars := Vars{DatabaseURL: "postgres://app:" + pw + "@127.0.0.1:5432/rx?sslmode=disable", ListenAddr: "127.0.0.1:1"}
	src := `target:
  name: t
  base_url: "{{.DatabaseURL}}"
  endpoints:
    - {profile: stripe, account: a, path: "{{.DatabaseURL}}", secret: s}
    - {profile: stripe, account: b, path: "/{{urlquery .DatabaseURL}} x", secret: s}
    - {profile: stripe, account: c, path: '/x y{{printf "%q" .DatabaseURL}}', secret: s}
    - {profile: stripe, account: d, path: "host=h password=hunter22 x", secret: s}
  lifecycle: {command: [x], ready: {http: "{{.DatabaseURL}}"}}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM t WHERE event_id=$3
        effects: SELECT count(*) FROM t WHERE event_id=$3
  failpoints: {path: "{{.DatabaseURL}}"}
  retention:
    key_ttl: 1h
    payload_ttl: 1h
    purge: {http: {path: "{{.DatabaseURL}}"}}
`
	_, err := Parse([]byte(src), vars)
	if n := len(errorLines(err)); n != 8 {
		t.Fatalf("%d errors, want one per field:\n%v", n, err)
	}
	msg := err.Error()
	for _, bad := range []string{pw, "hunter22"} {
		if strings.Contains(msg, bad) {
			t.Errorf("an error quotes the password %q:\n%s", bad, msg)
		}
	}
	if !strings.Contains(msg, "postgres://app:xxxxx@127.0.0.1:5432/rx") {
		t.Errorf("errors do not show the redacted URL:\n%s", msg)
	}
}

func TestObserverTimeouts(t *testing.T) {
	tg, err := Parse([]byte(minimal), testVars)
	if err != nil {
		t.Fatal(err)
	}
	if p := tg.Store; p.ConnectTimeout != DefaultConnectTimeout || p.StatementTimeout != DefaultStatementTimeout || p.LockTimeout != DefaultLockTimeout {
		t.Errorf("defaults = %s %s %s", p.ConnectTimeout, p.StatementTimeout, p.LockTimeout)
	}
	set := strings.Replace(minimal, "      queries:\n", "      connect_timeout: 2s\n      statement_timeout: 1500ms\n      lock_timeout: 1m\n      queries:\n", 1)
	tg, err = Parse([]byte(set), testVars)
	if err != nil {
		t.Fatal(err)
	}
	if p := tg.Store; p.ConnectTimeout != 2*time.Second || p.StatementTimeout != 1500*time.Millisecond || p.LockTimeout != time.Minute {
		t.Errorf("set = %s %s %s", p.ConnectTimeout, p.StatementTimeout, p.LockTimeout)
	}
	bad := strings.Replace(minimal, "      queries:\n", "      connect_timeout: soon\n      statement_timeout: 2h\n      lock_timeout: 1500us\n      queries:\n", 1)
	bad = strings.Replace(bad, "url: \"{{.DatabaseURL}}\"", "url: \"{{.DatabaseURL}}\"\n      event_table: [x]", 1)
	_, err = Parse([]byte(bad), testVars)
	got := errorLines(err)
	want := []string{
		"target.observe.postgres.event_table (line 9): must be a string, got a list",
		`target.observe.postgres.connect_timeout (line 10): must be a duration like 30s or 1m (got "soon")`,
		"target.observe.postgres.statement_timeout (line 11): must be at most 1h0m0s (got 2h)",
		"target.observe.postgres.lock_timeout (line 12): must be whole milliseconds (got 1500us)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSummaryCommandRedacted(t *testing.T) {
	src := minimal + "  lifecycle: {command: [rx, \"--db={{.DatabaseURL}}\", \"host=h password=hunter22\"], ready: {http: /h}}\n"
	tg, err := Parse([]byte(src), testVars)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(tg.Summary().Command, " ")
	if strings.Contains(got, "s3cretpw") || strings.Contains(got, "hunter22") || !strings.Contains(got, "--db=postgres://app:xxxxx@127.0.0.1:5432/rx") {
		t.Errorf("summary command = %q", got)
	}
}
