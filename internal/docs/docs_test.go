package docs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios"
)

// TestDocsAreCurrent fails while a generated region of the documentation
// differs from what the code gives.
func TestDocsAreCurrent(t *testing.T) {
	stale, err := Stale("../..")
	if err != nil {
		t.Fatal(err)
	}
	for path := range stale {
		rel, _ := filepath.Rel("../..", path)
		t.Errorf("%s is stale: run `make generate` and commit the result", rel)
	}
}

func TestRewrite(t *testing.T) {
	render := func(name, arg string) (string, error) {
		switch name {
		case "n":
			return "42", nil
		case "block":
			return "\nline " + arg + "\n", nil
		}
		return "", errors.New("unknown region")
	}
	in := "a <!-- generated:n -->7<!-- /generated --> b\n<!-- generated:block x -->\nold\n<!-- /generated -->\nc <!-- generated:n -->1<!-- /generated -->\n"
	want := "a <!-- generated:n -->42<!-- /generated --> b\n<!-- generated:block x -->\nline x\n<!-- /generated -->\nc <!-- generated:n -->42<!-- /generated -->\n"
	got, err := Rewrite("f.md", in, render)
	if err != nil || got != want {
		t.Fatalf("Rewrite = %q, %v\nwant %q", got, err, want)
	}
	if again, _ := Rewrite("f.md", got, render); again != got {
		t.Errorf("a second rewrite changed the text: %q", again)
	}
	for _, tc := range []struct{ in, want string }{
		{"x\n\n<!-- generated:nope -->1<!-- /generated -->", "f.md:3: generated:nope: unknown region"},
		{"<!-- generated:n -->1", "f.md:1: generated:n has no <!-- /generated -->"},
		{"<!-- generated:n --> <!-- generated:n -->1<!-- /generated -->", "f.md:1: generated:n is not closed before the next region starts"},
	} {
		if _, err := Rewrite("f.md", tc.in, render); err == nil || err.Error() != tc.want {
			t.Errorf("Rewrite(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestFigures(t *testing.T) {
	render := Figures("../..")
	n, err := render("guarantee-count", "")
	if err != nil || n == "" || n == "0" {
		t.Errorf("guarantee-count = %q, %v", n, err)
	}
	for _, bad := range [][2]string{{"guarantee-count", "x"}, {"nope", ""}, {"file", "../secret"}, {"file", "no/such/file.yaml"}, {"example-passed", "no-such-example"}} {
		if v, err := render(bad[0], bad[1]); err == nil {
			t.Errorf("%s %s = %q, want an error", bad[0], bad[1], v)
		}
	}
	if _, err := render("nope", ""); err == nil || !strings.Contains(err.Error(), "guarantee-count") {
		t.Errorf("an unknown region's error does not list the valid ones: %v", err)
	}
}

// Each example's verdicts split the catalogue in two.
func TestExampleVerdicts(t *testing.T) {
	for dir := range ExampleNotApplicable {
		passed, na, err := ExampleVerdicts(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(passed)+len(na) != len(scenarios.Catalogue()) || len(passed) == 0 {
			t.Errorf("%s: %d passed and %d not applicable of %d guarantees", dir, len(passed), len(na), len(scenarios.Catalogue()))
		}
		if slices.ContainsFunc(passed, func(id string) bool { return slices.Contains(na, id) }) {
			t.Errorf("%s: a guarantee both passes and is not applicable", dir)
		}
	}
	old := ExampleNotApplicable["stripe-shop"]
	defer func() { ExampleNotApplicable["stripe-shop"] = old }()
	ExampleNotApplicable["stripe-shop"] = []string{"DEDUP-99"}
	if _, _, err := ExampleVerdicts("stripe-shop"); err == nil {
		t.Error("an unknown guarantee in an example's list was accepted")
	}
}

// Every named defect of the reference has its row in docs/reference.md.
func TestReferenceDocumentsEveryDefect(t *testing.T) {
	doc, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range reference.Defects() {
		if !strings.Contains(string(doc), "\n| `"+d.Name+"` |") {
			t.Errorf("docs/reference.md has no row for defect %s", d.Name)
		}
	}
}
