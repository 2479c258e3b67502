package docs

import (
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
