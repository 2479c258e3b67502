package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A soak's results.json keeps its soak section through a read, and soak.html
// draws both charts with every fault window, loads nothing, and is scrubbed.
func TestWriteSoak(t *testing.T) {
	dir := t.TempDir()
	r := &Results{Schema: Schema, Tool: ToolInfo{Name: "hookcert", Version: "devel"}, RunID: "r1", Seed: 4,
		Target: TargetInfo{Name: "shop <b>"}, Profiles: []string{"stripe"}, Guarantees: []Guarantee{},
		Soak: &Soak{Keys: 3, Acknowledged: 3, Lost: 1, LostKeys: []string{"(stripe, acct_A, evt_1)"}, AttemptOutcomes: map[string]int{"acknowledged": 4},
			Latency: SoakLatency{P50MS: 2, P99MS: 9.5, MaxMS: 12}, Options: SoakRun{Duration: "3s", Concurrency: 2, Nemesis: "kill=1s"},
			Faults: []SoakFault{{Kind: "kill", StartMS: 1000, EndMS: 1200, Detail: "SIGKILL"}, {Kind: "pg-terminate", StartMS: 2000, EndMS: 2001, Detail: "sk_live_abcdefghijklmnop1234"}},
			Series: []SoakPoint{{TS: 0, Deliveries: 3, Acknowledged: 2, P99MS: 9}, {TS: 1, Deliveries: 1, Acknowledged: 1, Errors: 1, P99MS: 4}},
			Repro:  "hookcert soak --demo --seed 4"}}
	if _, err := WriteSoak(dir, r, Options{Secrets: []string{"s3cret"}}); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(filepath.Join(dir, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if back.Soak == nil || back.Soak.Lost != 1 || len(back.Soak.Faults) != 2 || back.Soak.Latency.P99MS != 9.5 {
		t.Fatalf("soak section after a round trip: %+v", back.Soak)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileSoakHTML))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{"FAIL", "<svg", "Throughput", "p99 latency", "(stripe, acct_A, evt_1)", "shop &lt;b&gt;", "hookcert soak --demo --seed 4"} {
		if !strings.Contains(html, want) {
			t.Errorf("soak.html lacks %q", want)
		}
	}
	if n := strings.Count(html, `fill-opacity="0.3"><title>`); n != 4 {
		t.Errorf("%d shaded fault windows, want 2 per chart", n)
	}
	for _, bad := range []string{"src=", "href=", "<script", "sk_live_abcdefghijklmnop1234"} {
		if strings.Contains(html, bad) {
			t.Errorf("soak.html contains %q", bad)
		}
	}
}
