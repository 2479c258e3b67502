package check

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
)

// Every read is rendered with the values it returned, not only whether it
// found a row.
func TestObservationValues(t *testing.T) {
	for _, c := range []struct {
		o    history.Observation
		want []string
	}{
		{history.Observation{Query: "event_rows", Found: true, Count: 2}, []string{"2"}},
		{history.Observation{Query: "effects", Found: true}, []string{"0"}},
		{history.Observation{Query: "object_effects", Found: true, Count: 1}, []string{"1"}},
		{history.Observation{Query: "object", Found: true, Version: 3, Status: "active"}, []string{"version=3", `status="active"`}},
		{history.Observation{Query: "object", Found: true, Version: 1748781000}, []string{"version=1748781000"}},
		{history.Observation{Query: "object"}, []string{"no row"}},
		{history.Observation{Query: "state", Found: true, Status: "succeeded"}, []string{`state="succeeded"`}},
		{history.Observation{Query: "payment", Found: true, Status: "failed"}, []string{`state="failed"`}},
		{history.Observation{Query: "payload_present", Found: true}, []string{"payload_present=false"}},
		{history.Observation{Query: "inbox_state", Found: true, Status: "dead", Count: 5}, []string{`state="dead"`, "attempts=5"}},
		{history.Observation{Query: "inbox_state"}, []string{"no row"}},
		{history.Observation{Query: "outbox_state", Found: true, Status: "done", Count: 2}, []string{`state="done"`, "attempts=2"}},
		{history.Observation{Query: "sink_calls", Found: true, Count: 3, Version: 1}, []string{"calls=3", "applied=1"}},
		{history.Observation{Query: "inbox_state", Error: "timeout"}, []string{"error: timeout"}},
		{history.Observation{Query: "from_a_newer_version", Found: true, Count: 4, Status: "x"}, []string{"found=true", "count=4", `status="x"`}},
	} {
		if got := ObservationValues(c.o); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %+v: %q, want %q", c.o.Query, c.o, got, c.want)
		}
	}
	if got := ObservationValue(history.Observation{Query: "inbox_state", Found: true, Status: "done", Count: 1}); got != `state="done" attempts=1` {
		t.Errorf("ObservationValue = %q", got)
	}
}

// Every query the suite records (the names in scenarios/read.go) has its own
// rendering, so a query added later does not fall back to found=.
func TestEveryQueryRendered(t *testing.T) {
	src, err := os.ReadFile("../read.go")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`(?m)^\s*query\w+\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(src), -1)
	if len(names) < 8 {
		t.Fatalf("found %d query names in scenarios/read.go: the pattern no longer matches", len(names))
	}
	for _, m := range names {
		o := history.Observation{Query: m[1], Found: true, Count: 2, Version: 3, Status: "s", Present: true}
		if vs := ObservationValues(o); strings.HasPrefix(vs[0], "found=") {
			t.Errorf("query %s has no rendering of its own: %q", m[1], vs)
		}
	}
}
