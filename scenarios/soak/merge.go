package soak

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Merge joins the histories of a sharded soak's shards into the history of the
// whole soak, which Results judges as it judges one process's. Each key's
// verdict needs only its own attempts and final reads, which one shard holds
// whole, so reconciliation needs no shared clock. What does need one is put on
// one: every shard's times are moved onto the earliest shard's origin (the
// common --start-at makes that move zero), so the per-second series and the
// fault windows line up; latency percentiles come from the raw attempts, so
// they merge exactly. The faults are shard 0's (the only shard that applies
// them) and any a shard recorded of its own (a generator or restart error).
//
// Every shard of the soak must be given once: the same seed, shard count and
// start time, no event key in two shards.
func Merge(hs []*history.History) (*history.History, error) {
	if len(hs) == 0 {
		return nil, errors.New("no history to merge")
	}
	infos := make([]RunInfo, len(hs))
	for i, h := range hs {
		if !IsSoak(h) {
			return nil, fmt.Errorf("history %d: plan %q is not a soak", i+1, h.Meta.Plan)
		}
		if len(h.Meta.Run) == 0 {
			return nil, fmt.Errorf("history %d: meta.run is missing: the soak's run record is not in this history", i+1)
		}
		if err := json.Unmarshal(h.Meta.Run, &infos[i]); err != nil {
			return nil, fmt.Errorf("history %d: meta.run: %w", i+1, err)
		}
	}
	if len(hs) == 1 && infos[0].Shard == nil {
		return hs[0], nil
	}
	// Order by shard index; check the set is one soak's, whole.
	order := make([]int, len(hs))
	for i := range order {
		order[i] = i
		if infos[i].Shard == nil {
			return nil, fmt.Errorf("history %d (seed %d) is not a shard's: only the histories of hookcert soak --shard merge", i+1, hs[i].Meta.Seed)
		}
	}
	sort.Slice(order, func(a, b int) bool { return infos[order[a]].Shard.Index < infos[order[b]].Shard.Index })
	first := infos[order[0]].Shard
	n := first.Count
	for pos, i := range order {
		sh := infos[i].Shard
		switch {
		case hs[i].Meta.Seed != hs[order[0]].Meta.Seed:
			return nil, fmt.Errorf("shard %s has seed %d, shard %s seed %d: the shards of one soak share their seed", sh, hs[i].Meta.Seed, first, hs[order[0]].Meta.Seed)
		case sh.Count != n:
			return nil, fmt.Errorf("shard %s and shard %s: the shards of one soak share their count", sh, first)
		case !sh.StartAt.Equal(first.StartAt):
			return nil, fmt.Errorf("shard %s starts at %s, shard %s at %s: the shards of one soak share --start-at", sh, sh.StartAt.Format(time.RFC3339), first, first.StartAt.Format(time.RFC3339))
		case sh.Index != pos:
			if pos > 0 && infos[order[pos-1]].Shard.Index == sh.Index {
				return nil, fmt.Errorf("shard %s is given twice", sh)
			}
			return nil, fmt.Errorf("shard %d/%d is missing: merging judges the whole soak, which needs every shard's history", pos, n)
		}
	}
	if len(hs) != n {
		return nil, fmt.Errorf("shard %d/%d is missing: merging judges the whole soak, which needs every shard's history", len(hs), n)
	}

	base := hs[order[0]].Meta.Started
	finished := hs[order[0]].Meta.Finished
	for _, h := range hs {
		if h.Meta.Started.Before(base) {
			base = h.Meta.Started
		}
		if h.Meta.Finished.After(finished) {
			finished = h.Meta.Finished
		}
	}
	h0, i0 := hs[order[0]], infos[order[0]]
	out := &history.History{Meta: h0.Meta, Releases: []history.Release{}}
	out.Meta.Started, out.Meta.Finished = base.UTC(), finished.UTC()
	info := RunInfo{Tool: i0.Tool, Target: i0.Target, Profiles: i0.Profiles, Environment: i0.Environment, Options: i0.Options,
		Faults: []reports.SoakFault{}, Shards: n}
	info.Options.Shard, info.Options.Shards = "", n
	info.Settle.Quiescent = true
	owner := map[profiles.Key]int{}
	var repros, errs []string
	for _, i := range order {
		h, in := hs[i], infos[i]
		shift := int64(h.Meta.Started.Sub(base))
		for _, a := range h.Attempts {
			if o, ok := owner[a.Key]; ok && o != in.Shard.Index {
				return nil, fmt.Errorf("event %s was sent by shard %d/%d and shard %s: shards send disjoint events (the same --seed, a distinct --shard index each)", scenarios.KeyString(a.Key), o, n, in.Shard)
			}
			owner[a.Key] = in.Shard.Index
			a.StartNS += shift
			a.EndNS += shift
			a.VirtualNS += int64(float64(shift) * max(1, h.Meta.TimeScale))
			out.Attempts = append(out.Attempts, a)
		}
		for _, o := range h.Observations {
			o.AtNS += shift
			out.Observations = append(out.Observations, o)
		}
		for _, c := range h.Sink {
			c.AtNS += shift
			out.Sink = append(out.Sink, c)
		}
		for _, f := range in.Faults {
			f.StartMS += shift / 1e6
			f.EndMS += shift / 1e6
			if in.Shard.Index != 0 {
				f.Detail = strings.TrimSpace(fmt.Sprintf("shard %s %s", in.Shard, f.Detail))
			}
			info.Faults = append(info.Faults, f)
		}
		// Each shard records the whole soak's concurrency and rate.
		if in.Options.Concurrency != i0.Options.Concurrency || in.Options.Rate != i0.Options.Rate {
			return nil, fmt.Errorf("shard %s ran --concurrency %d --rate %g, shard %s --concurrency %d --rate %g: the shards of one soak share them (they are the whole soak's)",
				in.Shard, in.Options.Concurrency, in.Options.Rate, first, i0.Options.Concurrency, i0.Options.Rate)
		}
		info.TrafficNS = max(info.TrafficNS, in.TrafficNS+shift)
		info.DurationMS = max(info.DurationMS, in.DurationMS+shift/1e6)
		info.Settle.Redelivered += in.Settle.Redelivered
		info.Settle.StillUnacknowledged += in.Settle.StillUnacknowledged
		info.Settle.Quiescent = info.Settle.Quiescent && in.Settle.Quiescent
		info.Settle.DurationMS = max(info.Settle.DurationMS, in.Settle.DurationMS)
		if in.Repro != "" {
			repros = append(repros, in.Repro)
		}
		if in.Error != "" {
			errs = append(errs, fmt.Sprintf("shard %s: %s", in.Shard, in.Error))
		}
	}
	info.Repro, info.Error = strings.Join(repros, " & "), strings.Join(errs, "; ")
	sort.SliceStable(out.Attempts, func(a, b int) bool { return out.Attempts[a].StartNS < out.Attempts[b].StartNS })
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("recording the merged soak: %w", err)
	}
	out.Meta.Run = raw
	return out, nil
}
