package scenarios

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestGuaranteesDocIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../docs/guarantees.md")
	if err != nil {
		t.Fatalf("docs/guarantees.md: %v (run `go generate ./scenarios`)", err)
	}
	if !bytes.Equal(got, CatalogueMarkdown()) {
		t.Fatal("docs/guarantees.md is stale: run `go generate ./scenarios` and commit the result")
	}
}

func TestCatalogueIsWellFormed(t *testing.T) {
	idRe := regexp.MustCompile(`^(DEDUP|ATOMIC|ACK|ORDER|RETENTION|INBOX|OUTBOX|REFETCH)-[1-9][0-9]*$`)
	known := map[string]bool{}
	for _, c := range capabilityDocs {
		known[c.name] = true
	}
	seen := map[string]bool{}
	for _, g := range Catalogue() {
		if !idRe.MatchString(g.ID) {
			t.Errorf("%s: ID does not match %s", g.ID, idRe)
		}
		if seen[g.ID] {
			t.Errorf("%s: duplicate ID", g.ID)
		}
		seen[g.ID] = true
		if g.Promise == "" || g.Why == "" || g.Title == "" || g.Spec == "" || g.Sends == "" || g.Expects == "" {
			t.Errorf("%s: title, promise, why, spec, sends and expects are required", g.ID)
		}
		if g.judge.run == nil || g.judge.check == nil {
			t.Errorf("%s: no scenario or no checker bound", g.ID)
		}
		if len(g.Codes) == 0 {
			t.Errorf("%s: no deviation code: a check that reports nothing tests nothing", g.ID)
		}
		for _, c := range g.codes {
			if c.ID == "" || c.Meaning == "" {
				t.Errorf("%s: code %q has no meaning", g.ID, c.ID)
			}
			// The setup check is shared by every guarantee that sets up state.
			if !strings.HasPrefix(c.ID, strings.ToLower(g.Family)+".") && c != codeSetupUnmet {
				t.Errorf("%s: code %s is not in its family's namespace", g.ID, c.ID)
			}
		}
		for _, n := range g.Needs {
			if !known[n] {
				t.Errorf("%s: needs undocumented capability %q", g.ID, n)
			}
		}
	}
	if _, err := Lookup("dedup-1"); err != nil {
		t.Errorf("Lookup is case-insensitive: %v", err)
	}
	if _, err := Lookup("NOPE-1"); err == nil {
		t.Error("Lookup(NOPE-1) succeeded")
	}
}
