package soak

import (
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	sp, err := ParseSpec("soak.yaml", []byte(`duration: 20s
concurrency: 32
rate: 800
dup_rate: 0.2
nemesis: kill=5s,pg-terminate=7s
seed: 42
phases:
  warmup: 5s
  drain: 2s
thresholds:
  - p99<250ms
  - "rate>800/s"
`))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Duration != 20*time.Second || sp.Concurrency != 32 || sp.Rate != 800 || sp.DupRate != 0.2 || sp.Nemesis != "kill=5s,pg-terminate=7s" ||
		sp.Seed != 42 || sp.Warmup != 5*time.Second || sp.Drain != 2*time.Second || strings.Join(sp.Thresholds, " ") != "p99<250ms rate>800/s" {
		t.Errorf("spec %+v", sp)
	}
	if !sp.Set["warmup"] || !sp.Set["thresholds"] || sp.Set["lost_ack_rate"] {
		t.Errorf("set %v", sp.Set)
	}
	for _, c := range []struct{ in, says string }{
		{"", "empty spec file"},
		{"- 1\n", "soak.yaml:1: the spec is a mapping"},
		{"duration: 20s\ndurration: 5s\n", `soak.yaml:2: unknown key "durration" (known: concurrency, dup_rate`},
		{"duration: 20s\nduration: 5s\n", "soak.yaml:2: duration: repeated key (first at line 1)"},
		{"duration: 20\n", `soak.yaml:1: duration: "20" is not a duration`},
		{"duration: 0s\n", "soak.yaml:1: duration: must be positive"},
		{"concurrency: many\n", `soak.yaml:1: concurrency: "many" is not a whole number`},
		{"concurrency: 1.5\n", `is not a whole number`},
		{"rate: fast\n", `soak.yaml:1: rate: "fast" is not a number`},
		{"nemesis: [kill]\n", "soak.yaml:1: nemesis: must be a string"},
		{"phases: 5s\n", "soak.yaml:1: phases: must be a mapping"},
		{"phases:\n  warmup: 1s\n  cooldown: 2s\n", "soak.yaml:3: unknown key phases.cooldown"},
		{"phases:\n  drain: -1s\n", "soak.yaml:2: phases.drain: must not be negative"},
		{"thresholds: p99<1s\n", "soak.yaml:1: thresholds: must be a list"},
		{"thresholds:\n  - p99<1s\n  - p99<\n", `soak.yaml:3: thresholds[1]: "p99<": no value`},
		{"thresholds:\n  - 5\n", "soak.yaml:2: thresholds[0]: must be a string"},
		{"duration: [\n", "soak.yaml: yaml:"},
	} {
		_, err := ParseSpec("soak.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: error %v, want it to say %q", c.in, err, c.says)
		}
	}
	// Every error is reported, not only the first.
	_, err = ParseSpec("soak.yaml", []byte("durration: 1s\nrate: x\n"))
	if err == nil || !strings.Contains(err.Error(), "durration") || !strings.Contains(err.Error(), "rate") {
		t.Errorf("both errors: %v", err)
	}
}
