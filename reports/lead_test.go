package reports

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// summary.md leads with what failed: failures, then what could not be
// judged, each with its codes, the event types involved and how its race ran;
// then the passes in one table; the not-applicable ones last, folded.
func TestSummaryLeadsWithFailures(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	var order []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			order = append(order, line)
		}
	}
	want := []string{
		"## Failed (2)", "### FAIL DEDUP-1: Concurrent duplicates converge", "### FAIL DEDUP-3: Duplicates under load",
		"## Could not be judged (1)", "### ERROR ATOMIC-1: Crash before commit leaves nothing",
		"## Passed (2)", "## Not applicable (1)",
	}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("sections %q\nwant %q", order, want)
	}
	for _, w := range []string{
		"- Deviation codes: `dedup.effects`, `dedup.not_acked`\n",
		"- Event types: `charge.succeeded`\n",
		"- Race forced: lock gate on ledger\\_entries held 4 of 4 sessions — the failure does not depend on timing",
		// The evidence names evt_4: its type, not the other event's.
		"- Event types: `charge.refunded`\n",
		"- The race was left to timing: no lock gating declared: 2 copies met by timing alone — rerun with `hookcert repro DEDUP-3 --seed 42 --config target.yaml --until-it-fails`\n",
		"| ID | Guarantee | Time |\n|---|---|---|\n| DEDUP-2 | Redelivery after a lost acknowledgement | 2.2 s |\n",
		"<details>\n<summary>1 guarantee needs what the target does not declare — never counted as passed</summary>\n\n- **INBOX-1** Exactly once across competing workers: target does not declare capability \"inbox\"\n\n</details>\n",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("summary.md lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "customer.updated") {
		t.Error("an event type the failure did not involve is named")
	}
}

// index.html shows each guarantee's race beside its verdict, and leads its
// overview with what failed.
func TestHTMLRaceBesideVerdict(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, w := range []string{
		`<span class="badge s-failed">FAIL</span><span class="race r-forced">race forced</span> <b class="mono">DEDUP-1</b>`,
		`<span class="badge s-failed">FAIL</span><span class="race r-timing">race left to timing</span> <b class="mono">DEDUP-3</b>`,
		`rerun with <code>hookcert repro DEDUP-3 --seed 42 --config target.yaml --until-it-fails</code>`,
		`<b>Deviation codes:</b> <code>dedup.effects</code>, <code>dedup.not_acked</code>`,
		`<b>Event types:</b> <code>charge.refunded</code>`,
		`state=&#34;done&#34;, attempts=1`,
	} {
		if !strings.Contains(page, w) {
			t.Errorf("index.html lacks %q", w)
		}
	}
	failed, passed := strings.Index(page, "<h3>What failed"), strings.Index(page, "<h3>Passed (2)</h3>")
	if failed < 0 || passed < failed || strings.Index(page, `id="g-DEDUP-3"`) > strings.Index(page, `id="g-DEDUP-2"`) {
		t.Error("the overview and the sections do not lead with what failed")
	}
}

func TestEventTypes(t *testing.T) {
	at := func(id, typ string) Attempt { return Attempt{EventID: id, EventType: typ} }
	for _, c := range []struct {
		name string
		g    Guarantee
		want []string
	}{
		{"named by the evidence", Guarantee{Evidence: []string{"rows of e2 = 2"}, Scenarios: []Scenario{{Status: StatusFailed, Timeline: []Attempt{at("e1", "a"), at("e2", "b"), at("e2", "b")}}}}, []string{"b"}},
		{"named by nothing: the failing scenarios'", Guarantee{Reason: "lost", Scenarios: []Scenario{
			{Status: StatusPassed, Timeline: []Attempt{at("e0", "z")}},
			{Status: StatusError, Timeline: []Attempt{at("e1", "b"), at("e2", "a")}}}}, []string{"a", "b"}},
		{"recorded before types were", Guarantee{Scenarios: []Scenario{{Status: StatusFailed, Timeline: []Attempt{at("e1", "")}}}}, nil},
	} {
		if got := EventTypes(c.g); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
