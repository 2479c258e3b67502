package reports

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run that stopped before judging anything still writes every report, saying
// why, with no secret in any of them; results.json reads back.
func TestStoppedRunReports(t *testing.T) {
	dir := t.TempDir()
	r := &Results{Tool: ToolInfo{Name: "hookcert", Version: "test"}, RunID: "r1", Seed: 5,
		Target: TargetInfo{Name: "shop", BaseURL: "http://127.0.0.1:9"}, Outcome: RunConfigError,
		Error: "target.observe.postgres.queries.effects: does not prepare: relation \"ledger\" does not exist (postgres://shop:pw-stopped-1@db/shop)\n" +
			"target.endpoints[0].secret_env: environment variable X is not set or empty"}
	if _, err := Write(dir, r, Options{Secrets: []string{"pw-stopped-1"}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FileJSON, FileJUnit, FileMarkdown, FileHTML} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "pw-stopped-1") {
			t.Errorf("%s holds the password", f)
		}
		if !strings.Contains(string(b), "does not prepare") {
			t.Errorf("%s does not say what happened:\n%s", f, b)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, FileMarkdown))
	if !strings.Contains(string(md), "# hookcert certification: CONFIGURATION ERROR\n\nNothing was judged for target shop (seed 5): target.observe.postgres.queries.effects: does not prepare:") {
		t.Errorf("summary.md:\n%s", md)
	}
	back, err := ReadResults(filepath.Join(dir, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if back.Outcome != RunConfigError || len(back.Guarantees) != 0 || !strings.Contains(back.Error, "environment variable X") {
		t.Errorf("read back: %+v", back)
	}
	var doc junitTestSuites
	b, _ := os.ReadFile(filepath.Join(dir, FileJUnit))
	if err := xml.Unmarshal(b, &doc); err != nil || doc.Errors != 1 || doc.Tests != 1 {
		t.Errorf("junit.xml: %+v %v", doc, err)
	}
}

func TestOutcomeRules(t *testing.T) {
	for _, c := range []struct {
		r    Results
		want string
	}{
		{Results{Schema: Schema, Outcome: "exploded"}, `field outcome: expected one of configuration_error, unreachable, nothing_selected, got "exploded"`},
		{Results{Schema: Schema, Error: "x"}, "field error: set without an outcome"},
		{Results{Schema: Schema, Outcome: RunUnreachable, Guarantees: []Guarantee{{ID: "A", Status: StatusPassed}}, Summary: Summary{Passed: 1, Total: 1}},
			`field outcome: "unreachable" says the run judged nothing, but it has 1 guarantee(s)`},
	} {
		if err := c.r.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("Validate = %v, want %s", err, c.want)
		}
	}
}
