package docs

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// The table has one row per registered profile, each with seven cells, and a
// value the provider leaves undocumented is written so, never left blank.
func TestProvidersTable(t *testing.T) {
	rows := strings.Split(strings.TrimSpace(ProvidersMarkdown()), "\n")
	if len(rows) != 2+len(profiles.IDs()) {
		t.Fatalf("%d rows, want a header, a rule and %d profiles", len(rows), len(profiles.IDs()))
	}
	for i, id := range profiles.IDs() {
		row := rows[2+i]
		if !strings.Contains(row, "(`"+id+"`)") {
			t.Errorf("row %d is not %s's: %s", i, id, row)
		}
		cells := strings.Split(strings.ReplaceAll(row, `\|`, ""), " | ")
		if len(cells) != 7 {
			t.Errorf("%s: %d cells, want 7: %s", id, len(cells), row)
		}
		for j, c := range cells {
			if strings.TrimSpace(strings.Trim(c, "|")) == "" {
				t.Errorf("%s: cell %d is empty", id, j)
			}
		}
	}
}

func TestRetriesCellSaysWhatIsUndocumented(t *testing.T) {
	h := 72 * time.Hour
	for _, tc := range []struct {
		f    profiles.Facts
		want string
	}{
		{profiles.Facts{}, "ack timeout undocumented; attempts undocumented; horizon undocumented; delays undocumented"},
		{profiles.Facts{Retry: profiles.RetrySchedule{MaxAttempts: 1}}, "ack timeout undocumented; no automatic retries"},
		{profiles.Facts{Retry: profiles.RetrySchedule{Horizon: &h, Delays: []time.Duration{time.Minute, 90 * time.Minute}, MaxAttempts: 3}},
			"ack timeout undocumented; 3 attempts; over 72h; delays 1m, 1h30m"},
	} {
		if got := retriesCell(tc.f); got != tc.want {
			t.Errorf("retriesCell = %q, want %q", got, tc.want)
		}
	}
	if got := cellText("a |\n<hex b>"); got != `a \| &lt;hex b&gt;` {
		t.Errorf("cellText = %q", got)
	}
}

// Every field of a declared profile — the schema of profiles.Contract, read
// from its yaml tags — is documented in docs/target.md's "Declaring a
// provider": a field added to the schema fails here until it is.
func TestTargetDocumentsEveryProfileField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/target.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## Declaring a provider")
	end := strings.Index(text[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("docs/target.md has no \"Declaring a provider\" section")
	}
	section := text[start : start+1+end]
	paths := contractPaths(reflect.TypeOf(profiles.Contract{}), "", map[reflect.Type]bool{})
	if len(paths) < 50 {
		t.Fatalf("only %d fields found in profiles.Contract: %v", len(paths), paths)
	}
	for _, p := range paths {
		if !strings.Contains(section, "`"+p+"`") {
			t.Errorf("docs/target.md, \"Declaring a provider\", does not document `%s`", p)
		}
	}
}

// contractPaths lists the yaml paths of t's fields: a.b for a section's
// field, a[].b for a field of a list's entries; a type that holds itself
// (signature.also) is listed once, not entered again.
func contractPaths(t reflect.Type, prefix string, open map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || open[t] {
		return nil
	}
	open[t] = true
	defer delete(open, t)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		ft, path := f.Type, prefix+name
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			path += "[]"
			ft = ft.Elem()
		}
		out = append(out, path)
		out = append(out, contractPaths(ft, path+".", open)...)
	}
	return out
}
