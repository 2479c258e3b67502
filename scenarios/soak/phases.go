package soak

import (
	"fmt"
	"time"

	"github.com/hookcert/hookcert/reports"
)

// Phase names in results.json.
const (
	PhaseWarmup  = "warmup"
	PhaseMeasure = "measure"
	PhaseDrain   = "drain"
	PhaseSettle  = "settle"
)

// Phases split a soak's traffic: a warm-up before the measured duration and a
// drain after it, with traffic as in it. Thresholds are judged on the measure
// phase alone, so neither the receiver's cold start (connection pools, caches,
// the JIT of a receiver that has one) nor the last attempts cut short when
// traffic stops weigh on them.
type Phases struct {
	Warmup, Measure, Drain time.Duration
}

// Traffic is how long traffic runs: the three phases end to end.
func (p Phases) Traffic() time.Duration { return p.Warmup + p.Measure + p.Drain }

// Validate checks the phases' lengths; the flag names are the user's.
func (p Phases) Validate() error {
	switch {
	case p.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %s", p.Warmup)
	case p.Drain < 0:
		return fmt.Errorf("--drain must not be negative, got %s", p.Drain)
	case p.Measure <= 0:
		return fmt.Errorf("--duration (the measure phase) must be positive, got %s", p.Measure)
	}
	return nil
}

// phasesOf lays the phases on the soak's clock from how it was asked to run
// and when traffic really stopped, and returns the measure phase's window in
// nanoseconds. Without a drain the measure phase lasts until traffic stopped;
// a soak interrupted early cuts its phases short.
func phasesOf(o reports.SoakRun, trafficNS int64, settle reports.SoakSettle) ([]reports.SoakPhase, int64, int64, error) {
	parse := func(name, v string) (int64, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("history meta.run options.%s: %q is not a duration", name, v)
		}
		return int64(d), nil
	}
	w, err := parse("warmup", o.Warmup)
	if err != nil {
		return nil, 0, 0, err
	}
	dr, err := parse("drain", o.Drain)
	if err != nil {
		return nil, 0, 0, err
	}
	m, err := parse("duration", o.Duration)
	if err != nil {
		return nil, 0, 0, err
	}
	from, to := min(w, trafficNS), trafficNS
	if dr > 0 {
		to = min(w+m, trafficNS)
	}
	var ps []reports.SoakPhase
	add := func(name string, a, b int64) {
		if b > a {
			ps = append(ps, reports.SoakPhase{Name: name, StartMS: a / 1e6, EndMS: b / 1e6})
		}
	}
	add(PhaseWarmup, 0, from)
	add(PhaseMeasure, from, to)
	add(PhaseDrain, to, trafficNS)
	add(PhaseSettle, trafficNS, trafficNS+settle.DurationMS*1e6)
	return ps, from, to, nil
}
