package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/reports"
)

func TestReportRerendersStoredResults(t *testing.T) {
	src := t.TempDir()
	r := &reports.Results{
		Schema: reports.Schema, Seed: 7,
		Tool: reports.ToolInfo{Name: "hookcert", Version: "test"},
		Guarantees: []reports.Guarantee{
			{ID: "DEDUP-1", Family: "DEDUP", Title: "dup", Status: reports.StatusFailed, Reason: "2 effects", Evidence: []string{"effects = 2"}},
			{ID: "INBOX-1", Family: "INBOX", Title: "inbox", Status: reports.StatusNotApplicable, Reason: "no inbox"},
		},
	}
	r.Summary = reports.Summarize(r.Guarantees)
	if _, err := reports.Write(src, r, reports.Options{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rendered")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"report", "--from", filepath.Join(src, "results.json"), "--out", out}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	for _, name := range []string{"results.json", "junit.xml", "summary.md", "index.html"} {
		p := filepath.Join(out, name)
		if !strings.Contains(stdout.String(), p) {
			t.Errorf("stdout does not list %s: %q", p, stdout.String())
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("DEDUP-1")) {
			t.Errorf("%s does not mention DEDUP-1", name)
		}
	}
	// Re-rendering is stable: the JSON it writes is the JSON it read.
	a, _ := os.ReadFile(filepath.Join(src, "results.json"))
	b, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if !bytes.Equal(a, b) {
		t.Error("re-rendered results.json differs from the source")
	}
}

func TestReportBadFileIsUsageError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "results.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"hookcert.results/v0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"wrong schema": {"report", "--from", bad, "--out", filepath.Join(dir, "o1")},
		"missing file": {"report", "--from", filepath.Join(dir, "nope.json"), "--out", filepath.Join(dir, "o2")},
		"stray arg":    {"report", "extra"},
		"unknown flag": {"report", "--frm", bad},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(args, &stdout, &stderr); code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr.String())
			}
			if stderr.Len() == 0 {
				t.Error("no error message on stderr")
			}
		})
	}
	var stdout, stderr bytes.Buffer
	Main(cases["wrong schema"], &stdout, &stderr)
	if msg := stderr.String(); !strings.Contains(msg, "schema") || !strings.Contains(msg, reports.Schema) {
		t.Errorf("error does not name the field and expected value: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "o1")); !os.IsNotExist(err) {
		t.Error("output directory created for a bad input file")
	}
}
