package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/soak"
)

// soakPlan is what the soak records about its phases and thresholds beside
// the engine's options.
type soakPlan struct {
	repro      string
	phases     soak.Phases
	thresholds []string
}

// applySoakSpec reads --spec and takes each of its keys whose flag was not
// given on the command line: the command line wins, as a CI job overriding
// one setting of a shared spec expects. --threshold flags replace the spec's
// thresholds rather than add to them.
func applySoakSpec(fs *pflag.FlagSet, f *soakFlags) error {
	if f.spec == "" {
		return nil
	}
	data, err := os.ReadFile(f.spec)
	if err != nil {
		return usageErr("--spec: %v", err)
	}
	sp, err := soak.ParseSpec(f.spec, data)
	if err != nil {
		return usageErr("--spec: %v", err)
	}
	take := func(key string) bool {
		return sp.Set[key] && !fs.Changed(strings.TrimPrefix(soak.SpecFlag(key), "--"))
	}
	if take("duration") {
		f.duration = sp.Duration
	}
	if take("warmup") {
		f.warmup = sp.Warmup
	}
	if take("drain") {
		f.drain = sp.Drain
	}
	if take("concurrency") {
		f.concurrency = sp.Concurrency
	}
	if take("rate") {
		f.rate = sp.Rate
	}
	if take("dup_rate") {
		f.dupRate = sp.DupRate
	}
	if take("lost_ack_rate") {
		f.lostAckRate = sp.LostAckRate
	}
	if take("nemesis") {
		f.nemesis = sp.Nemesis
	}
	if take("pause_for") {
		f.pauseFor = sp.PauseFor
	}
	if take("settle_bound") {
		f.settleBound, f.settleBoundSet = sp.SettleBound, true
	}
	if take("seed") {
		f.seed = sp.Seed
	}
	if sp.Set["thresholds"] && !fs.Changed("threshold") {
		f.thresholds = sp.Thresholds
	}
	return nil
}

// soakReproPhases is the part of the rerun command that repeats the phases
// and thresholds (the spec's included: the command stands alone).
func soakReproPhases(f *soakFlags) string {
	var c string
	if f.warmup > 0 {
		c += " --warmup " + f.warmup.String()
	}
	if f.drain > 0 {
		c += " --drain " + f.drain.String()
	}
	for _, t := range f.thresholds {
		c += " --threshold '" + t + "'"
	}
	return c
}

// breachedList names the breached thresholds with what was measured.
func breachedList(s *reports.Soak) string {
	var parts []string
	for _, t := range s.Thresholds {
		if t.Verdict == reports.ThresholdFail {
			parts = append(parts, fmt.Sprintf("%s (measured %s)", t.Threshold, thresholdValue(t.Measured, t.Unit)))
		}
	}
	return strings.Join(parts, ", ")
}

func thresholdValue(v float64, unit string) string {
	switch unit {
	case "ms":
		if v < 1 {
			return fmt.Sprintf("%.3f ms", v)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "%":
		return fmt.Sprintf("%.2f%%", v)
	}
	return fmt.Sprintf("%.1f%s", v, unit)
}

// printSoakMeasure prints the phases and the measure phase's figures when the
// soak had phases or thresholds, and each threshold's verdict.
func printSoakMeasure(out io.Writer, p painter, s *reports.Soak) {
	m := s.Measure
	if m == nil || (s.Options.Warmup == "" && s.Options.Drain == "" && len(s.Thresholds) == 0) {
		return
	}
	var ps []string
	for _, ph := range s.Phases {
		ps = append(ps, fmt.Sprintf("%s %.1f–%.1fs", ph.Name, float64(ph.StartMS)/1000, float64(ph.EndMS)/1000))
	}
	fmt.Fprintf(out, "  phases: %s\n", strings.Join(ps, ", "))
	fmt.Fprintf(out, "  measure phase: %d attempts, %.1f deliveries/s, %.1f acks/s, failed %.2f%%, latency p50 %.1f ms, p90 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		m.Attempts, m.DeliveriesPerS, m.AcksPerS, m.FailedPct, m.Latency.P50MS, m.Latency.P90MS, m.Latency.P95MS, m.Latency.P99MS, m.Latency.MaxMS)
	if len(s.Thresholds) == 0 {
		return
	}
	fmt.Fprintf(out, "  thresholds (measure phase):\n")
	for _, t := range s.Thresholds {
		switch t.Verdict {
		case reports.ThresholdPass:
			fmt.Fprintf(out, "    %s %s: measured %s\n", p.status("PASS"), t.Threshold, thresholdValue(t.Measured, t.Unit))
		case reports.ThresholdFail:
			fmt.Fprintf(out, "    %s %s: measured %s\n", p.status("FAIL"), t.Threshold, thresholdValue(t.Measured, t.Unit))
		default:
			fmt.Fprintf(out, "    %s %s: %s\n", p.status("ERROR"), t.Threshold, t.Reason)
		}
	}
}
