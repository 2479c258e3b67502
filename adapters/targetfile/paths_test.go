package targetfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pathsFile has every path the loader resolves: the receiver's program and
// working directory, a purge command and a setup script.
const pathsFile = `target:
  name: paths
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: stripe, account: acct_A, path: /a, secret: whsec_paths}
  lifecycle:
    command: [./bin/shop, serve, --listen, ./not-the-program]
    %s
    ready: {http: /healthz}
  setup:
    sql_file: schema/shop.sql
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM t WHERE event_id=$3
        effects: SELECT count(*) FROM t WHERE event_id=$3
  retention:
    key_ttl: 30d
    payload_ttl: 1d
    purge:
      command: [bin/shop, purge, --as-of, "{{.AsOf}}"]
`

func writeTarget(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPathsResolveAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "schema"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schema", "shop.sql"), []byte("SELECT 1;"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dirLine, wantDir string }{
		{"", dir},       // default: the file's directory
		{"dir: .", dir}, // relative: under it
		{"dir: work", filepath.Join(dir, "work")}, // the program stays the file's
		{"dir: /srv/shop", "/srv/shop"},           // absolute: as written
	} {
		p := writeTarget(t, dir, strings.Replace(pathsFile, "%s", c.dirLine, 1))
		tg, err := Load(p, testVars)
		if err != nil {
			t.Fatalf("%q: %v", c.dirLine, err)
		}
		l := tg.Lifecycle
		if l.Dir != c.wantDir || l.Command[0] != filepath.Join(dir, "bin", "shop") || l.Command[3] != "./not-the-program" {
			t.Errorf("%q: dir %q, command %q", c.dirLine, l.Dir, l.Command)
		}
		if got := tg.Retention.Purge.Command[0]; got != filepath.Join(dir, "bin", "shop") {
			t.Errorf("%q: purge program %q", c.dirLine, got)
		}
		if tg.Setup == nil || tg.Setup.SQLFile != filepath.Join(dir, "schema", "shop.sql") || tg.Setup.Timeout != DefaultSetupTimeout {
			t.Errorf("%q: setup %+v", c.dirLine, tg.Setup)
		}
		if tg.Dir != dir {
			t.Errorf("Dir = %q", tg.Dir)
		}
	}
}

// Parse without a base directory leaves paths as written: they resolve against
// the harness's working directory, as before.
func TestParseLeavesPathsRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("schema", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("schema", "shop.sql"), []byte("SELECT 1;"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := Parse([]byte(strings.Replace(pathsFile, "%s", "dir: .", 1)), testVars)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Lifecycle.Dir != "." || tg.Lifecycle.Command[0] != "./bin/shop" || tg.Retention.Purge.Command[0] != "bin/shop" ||
		tg.Setup.SQLFile != "schema/shop.sql" || tg.Dir != "" {
		t.Errorf("lifecycle %+v, purge %q, setup %+v, dir %q", tg.Lifecycle, tg.Retention.Purge.Command, tg.Setup, tg.Dir)
	}
	tg, err = Parse([]byte(strings.Replace(pathsFile, "%s", "", 1)), testVars, WithBaseDir("/etc/shop"))
	if err == nil {
		t.Fatalf("setup script under /etc/shop: no error (%+v)", tg.Setup)
	}
	if !strings.Contains(err.Error(), "target.setup.sql_file (line 11): cannot read /etc/shop/schema/shop.sql: no such file or directory") {
		t.Errorf("err = %v", err)
	}
}

func TestResolveProgram(t *testing.T) {
	for _, c := range []struct{ dir, in, want string }{
		{"/f", "./bin/x", "/f/bin/x"},
		{"/f", "bin/x", "/f/bin/x"},
		{"/f", "../x", "/x"},
		{"/f", "python3", "python3"},
		{"/f", "/usr/bin/env", "/usr/bin/env"},
		{"", "./bin/x", "./bin/x"},
	} {
		if got := ResolveProgram(c.dir, c.in); got != c.want {
			t.Errorf("ResolveProgram(%q, %q) = %q, want %q", c.dir, c.in, got, c.want)
		}
	}
}

const envFile = `target:
  name: env
  base_url: http://{{.ListenAddr}}
  endpoints:
    - {profile: stripe, account: acct_A, path: /a, secret: whsec_env}
  lifecycle:
    command: [/bin/shop, serve]
    env:
      SHOP_DB_PASSWORD: '{{env "HC_TEST_DB_PASSWORD"}}'
      SHOP_DSN: 'postgres://shop:{{env "HC_TEST_DB_PASSWORD"}}@db/shop'
      SHOP_MODE: '{{env "HC_TEST_MODE"}}'
    ready: {http: /healthz}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM t WHERE event_id=$3
        effects: SELECT count(*) FROM t WHERE event_id=$3
`

func TestEnvInLifecycleEnv(t *testing.T) {
	t.Setenv("HC_TEST_DB_PASSWORD", "pw-from-the-harness")
	t.Setenv("HC_TEST_MODE", "on")
	tg, err := Parse([]byte(envFile), testVars)
	if err != nil {
		t.Fatal(err)
	}
	env := tg.Lifecycle.Env
	if env["SHOP_DB_PASSWORD"] != "pw-from-the-harness" || env["SHOP_DSN"] != "postgres://shop:pw-from-the-harness@db/shop" || env["SHOP_MODE"] != "on" {
		t.Errorf("env = %v", map[string]string(env))
	}
	// "on" is too short to scrub without blanking ordinary words.
	if got := tg.EnvSecrets(); len(got) != 2 || got[0] != "pw-from-the-harness" || got[1] != "pw-from-the-harness" {
		t.Errorf("EnvSecrets = %q", got)
	}
	for _, s := range []string{tg.Summary().String(), fmtAll(tg)} {
		if strings.Contains(s, "pw-from-the-harness") {
			t.Errorf("the value is printed: %s", s)
		}
	}

	os.Unsetenv("HC_TEST_MODE")
	_, err = Parse([]byte(envFile), testVars)
	want := `target.lifecycle.env.SHOP_MODE (line 11): {{env "HC_TEST_MODE"}}: environment variable HC_TEST_MODE is not set in the harness's environment`
	if err == nil || err.Error() != want {
		t.Errorf("unset variable: %v\nwant %s", err, want)
	}
	// Validate, before anything is provisioned, says the same.
	if err := Validate([]byte(envFile), nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate: %v", err)
	}
}

func TestEnvRefusedOutsideEnvValues(t *testing.T) {
	t.Setenv("HC_TEST_DB_PASSWORD", "pw-from-the-harness")
	cmdRule := "{{env}} is not allowed in a command's arguments: every user of the machine can read them (ps). Pass the variable through target.lifecycle.env, whose values may use {{env \"NAME\"}}"
	for _, c := range []struct{ from, to, want string }{
		{`[/bin/shop, serve]`, `[/bin/shop, serve, '--password={{env "HC_TEST_DB_PASSWORD"}}']`,
			"target.lifecycle.command[2] (line 7): " + cmdRule},
		{`    ready: {http: /healthz}`, "    ready: {http: /healthz}\n    dir: '{{env \"HOME\"}}'",
			"target.lifecycle.dir (line 13): {{env}} may be used only in target.lifecycle.env values"},
		{`url: "{{.DatabaseURL}}"`, `url: '{{env "HC_TEST_DB_PASSWORD"}}'`,
			"target.observe.postgres.url (line 15): {{env}} may be used only in target.lifecycle.env values"},
		{`  observe:`, "  fixtures:\n    c: {command: [/bin/shop, '{{env \"HC_TEST_DB_PASSWORD\"}}']}\n  observe:",
			"target.fixtures.c.command[1] (line 14): " + cmdRule},
		{`  observe:`, "  setup:\n    command: [/bin/shop, migrate, '{{env \"HC_TEST_DB_PASSWORD\"}}']\n  observe:",
			"target.setup.command[2] (line 14): " + cmdRule},
	} {
		src := strings.Replace(envFile, c.from, c.to, 1)
		_, err := Parse([]byte(src), testVars)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.to, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw-from-the-harness") {
			t.Errorf("%s: the error quotes the value: %v", c.to, err)
		}
	}
}

func TestSetupRules(t *testing.T) {
	t.Setenv("HC_TEST_DB_PASSWORD", "pw-from-the-harness")
	t.Setenv("HC_TEST_MODE", "on")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "schema.sql"), []byte("SELECT 1;"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := envFile
	for _, c := range []struct{ setup, want string }{
		{"  setup: {}", "target.setup (line 19): set exactly one of sql_file"},
		{"  setup: {sql_file: schema.sql, command: [x]}", "target.setup (line 19): set exactly one of sql_file and command (got both)"},
		{"  setup: {sql_file: missing.sql}", "target.setup.sql_file (line 19): cannot read " + filepath.Join(dir, "missing.sql") + ": no such file or directory"},
		{"  setup: {sql_file: .}", "target.setup.sql_file (line 19): " + dir + " is not a regular file"},
		{"  setup: {command: [x], timeout: 2h}", "target.setup.timeout (line 19): must be at most 1h0m0s (got 2h)"},
		{"  setup: {command: ['']}", "target.setup.command[0] (line 19): the program must not be empty"},
	} {
		_, err := Parse([]byte(base+c.setup+"\n"), testVars, WithBaseDir(dir))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.setup, err, c.want)
		}
	}
	tg, err := Parse([]byte(base+"  setup: {command: [./bin/shop, migrate, --dir, ./migrations], timeout: 30s}\n"), testVars, WithBaseDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if s := tg.Setup; s.Kind() != "command" || s.Command[0] != filepath.Join(dir, "bin", "shop") || s.Command[3] != "./migrations" || s.Timeout.Seconds() != 30 {
		t.Errorf("setup = %+v", s)
	}
}

// fmtAll prints a target every way a log line might.
func fmtAll(tg *Target) string {
	var b strings.Builder
	for _, f := range []string{"%v", "%+v", "%#v"} {
		b.WriteString(fmt.Sprintf(f, tg.Lifecycle.Env))
		b.WriteString(fmt.Sprintf(f, *tg.Lifecycle))
	}
	j, _ := json.Marshal(tg.Lifecycle)
	b.Write(j)
	return b.String()
}
