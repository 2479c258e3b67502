package soak

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
)

// Plan is the history's meta.plan of a soak.
const Plan = "soak"

// RunInfo is what a soak records about itself in its history's meta
// (history.Meta.Run) beside the attempts and the final reads: the target,
// how the soak was asked to run, when traffic stopped, what the nemesis and the
// settling did. With it, Results rebuilds results.json from the history alone,
// live and offline (`hookcert check --from DIR`) alike.
type RunInfo struct {
	Tool        reports.ToolInfo   `json:"tool"`
	Target      reports.TargetInfo `json:"target"`
	Profiles    []string           `json:"profiles"`
	Environment map[string]string  `json:"environment,omitempty"`
	Options     reports.SoakRun    `json:"options"`
	// TrafficNS is when traffic stopped, nanoseconds since the soak started.
	TrafficNS int64               `json:"traffic_ns"`
	Faults    []reports.SoakFault `json:"faults"`
	Settle    reports.SoakSettle  `json:"settle"`
	// Repro reruns the soak with its seed.
	Repro string `json:"repro,omitempty"`
	// DurationMS is the whole command's wall time, from before the receiver
	// started to the verdict.
	DurationMS int64 `json:"duration_ms"`
	// Error is why the soak could not judge (interrupted, reads cut short).
	Error string `json:"error,omitempty"`
	// Shard is the slice of the traffic a sharded soak's process sent; Shards
	// the number of shard histories Merge joined into this one.
	Shard  *ShardInfo `json:"shard,omitempty"`
	Shards int        `json:"shards,omitempty"`
}

// IsSoak reports whether h is a soak's history.
func IsSoak(h *history.History) bool { return h.Meta.Plan == Plan }

// Results judges a soak's history (Judge) and rebuilds its results.json from it
// and the RunInfo in its meta. A soak that could not judge (RunInfo.Error) does
// not pass.
func Results(h *history.History) (*reports.Results, error) {
	if !IsSoak(h) {
		return nil, fmt.Errorf("history plan %q is not a soak", h.Meta.Plan)
	}
	if len(h.Meta.Run) == 0 {
		return nil, errors.New("history meta.run is missing: the soak's run record (faults, settling, traffic end) is not in this history")
	}
	var info RunInfo
	if err := json.Unmarshal(h.Meta.Run, &info); err != nil {
		return nil, fmt.Errorf("history meta.run: %w", err)
	}
	ts, err := ParseThresholds(info.Options.Thresholds)
	if err != nil {
		return nil, fmt.Errorf("history meta.run options.thresholds: %w", err)
	}
	phases, from, to, err := phasesOf(info.Options, info.TrafficNS, info.Settle)
	if err != nil {
		return nil, err
	}
	sk := Judge(h, info.TrafficNS)
	sk.Faults = append(sk.Faults, info.Faults...)
	sk.Settle, sk.Repro, sk.Options, sk.DurationMS = info.Settle, info.Repro, info.Options, info.DurationMS
	// Thresholds are judged on the measure phase alone; a threshold breached
	// or left unjudged fails the soak as a lost event does (the exit status
	// tells them apart).
	m := measure(h, from, to)
	sk.Phases, sk.Measure, sk.Thresholds = phases, &m.m, judgeThresholds(ts, m)
	for _, t := range sk.Thresholds {
		if t.Verdict != reports.ThresholdPass {
			sk.Passed = false
		}
	}
	if info.Error != "" {
		sk.Passed = false
	}
	res := &reports.Results{
		Schema: reports.Schema, Tool: info.Tool, RunID: h.Meta.RunID, Seed: h.Meta.Seed,
		StartedAt: h.Meta.Started, FinishedAt: h.Meta.Finished, DurationMS: info.DurationMS,
		Target: info.Target, Profiles: info.Profiles, Guarantees: []reports.Guarantee{},
		Environment: info.Environment, Soak: sk,
	}
	if res.Profiles == nil {
		res.Profiles = []string{}
	}
	return res, nil
}
