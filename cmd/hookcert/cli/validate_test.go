package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
)

// validate warns about a valid file whose queries cannot tell two accounts
// apart, exits 0 unless --strict, and certify prints the same warnings once
// before it starts; a file that binds the account draws none.
func TestValidateWarnings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "schema.sql"), []byte(
		"CREATE TABLE events (source text, account text, event_id text);\nCREATE TABLE ledger (source text, account text, event_id text);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := func(name, where string) string {
		path := filepath.Join(dir, name)
		src := fmt.Sprintf(`target:
  name: %s
  base_url: http://%s
  endpoints:
    - {profile: stripe, account: acct_A, path: /a, secret: whsec_validate_warn_A}
    - {profile: stripe, account: acct_B, path: /b, secret: whsec_validate_warn_B}
  setup: {sql_file: schema.sql}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM events WHERE %s event_id = $3
        effects: SELECT count(*) FROM ledger WHERE %s event_id = $3
`, name, closedPort(t), where, where)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	db := pgtest.ServerURL()
	merged := target("merged", "source = $1 AND")
	code, out := runMain("validate", "--config", merged, "--database-url", db)
	if code != ExitOK {
		t.Fatalf("validate with warnings: exit %d, want 0\n%s", code, out)
	}
	for _, want := range []string{"warnings (2)", "target.observe.postgres.queries.event_rows: DEDUP-3 (account scope)",
		"target.observe.postgres.queries.effects: DEDUP-3", "the accounts acct_A and acct_B", "fix: bind the column that records the account", "valid ("} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	code, out = runMain("validate", "--config", merged, "--database-url", db, "--strict")
	if code != ExitUsage || !strings.Contains(out, "2 warning(s), and --strict makes them errors") || strings.Contains(out, "valid (") {
		t.Errorf("validate --strict with warnings: exit %d, want %d\n%s", code, ExitUsage, out)
	}
	// certify says it once, before it finds nothing listening (exit 3).
	code, out = runMain("certify", "--config", merged, "--database-url", db, "--report-dir", t.TempDir(), "--label-filter", "DEDUP-3")
	if code != ExitUnreachable || strings.Count(out, "target.observe.postgres.queries.effects: DEDUP-3") != 1 {
		t.Errorf("certify: exit %d, want %d with the warning printed once\n%s", code, ExitUnreachable, out)
	}

	scoped := target("scoped", "source = $1 AND account = $2 AND")
	for _, args := range [][]string{{}, {"--strict"}} {
		code, out = runMain(append([]string{"validate", "--config", scoped, "--database-url", db}, args...)...)
		if code != ExitOK || strings.Contains(out, "warnings") {
			t.Errorf("validate %v of a file binding the account: exit %d, want 0 and no warning\n%s", args, code, out)
		}
	}
}
