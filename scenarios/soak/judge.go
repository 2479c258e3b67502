package soak

import (
	"math"
	"sort"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// EvidenceKeys bounds the lost and duplicated keys a report lists.
const EvidenceKeys = 20

// Judge reconciles a soak's history: per event key, its acknowledged, failed
// and unknown attempts against the last event_rows and effects reads of phase
// soak. A key is lost when it was acknowledged and has no event row (or, where
// effects are read, no effect); duplicated with more than one row or effect,
// or an operation the downstream sink applied more than once (downstream.go);
// unknown when never acknowledged but some attempt's outcome is unknown, and of
// those recovered when stored exactly once; never applied when every attempt
// failed and nothing is stored. trafficNS is when traffic stopped (the rates are
// over the traffic phase).
func Judge(h *history.History, trafficNS int64) *reports.Soak {
	type tally struct {
		acked, failed, unknown int
		first                  int
	}
	byKey := map[profiles.Key]*tally{}
	var order []profiles.Key
	out := &reports.Soak{AttemptOutcomes: map[string]int{}, Faults: []reports.SoakFault{}, Series: []reports.SoakPoint{}}
	var lat []float64
	var trafficAttempts, trafficAcks int
	for i, a := range h.Attempts {
		t := byKey[a.Key]
		if t == nil {
			t = &tally{first: i}
			byKey[a.Key] = t
			order = append(order, a.Key)
		}
		out.Attempts++
		out.AttemptOutcomes[string(a.Outcome)]++
		switch a.Outcome {
		case history.OutcomeAcknowledged:
			t.acked++
			lat = append(lat, ms(a.EndNS-a.StartNS))
		case history.OutcomeUnknown:
			t.unknown++
		default:
			t.failed++
		}
		if trafficNS == 0 || a.EndNS <= trafficNS {
			trafficAttempts++
			if a.Outcome == history.OutcomeAcknowledged {
				trafficAcks++
			}
		}
	}
	// The last read of each query per key.
	type read struct {
		count int64
		err   bool
		ok    bool
	}
	rows, effects := map[profiles.Key]read{}, map[profiles.Key]read{}
	// Evidence beside the rows: an unapplied event's inbox state, an
	// event's downstream calls (downstream.go).
	inbox, down := map[profiles.Key]*history.Observation{}, map[profiles.Key]*history.Observation{}
	for i, o := range h.Observations {
		if o.Phase != PhaseSoak || len(o.Params) < 3 {
			continue
		}
		k := profiles.Key{Source: o.Params[0], Account: o.Params[1], EventID: o.Params[2]}
		r := read{count: o.Count, err: o.Error != "", ok: true}
		switch o.Query {
		case "event_rows":
			rows[k] = r
		case "effects":
			effects[k] = r
		case QueryInboxState:
			inbox[k] = &h.Observations[i]
		case QueryDownstream:
			down[k] = &h.Observations[i]
		}
	}
	opKeys := map[string]map[string]bool{}
	for _, c := range h.Sink {
		if opKeys[c.EventID] == nil {
			opKeys[c.EventID] = map[string]bool{}
		}
		opKeys[c.EventID][c.Key] = true
	}
	out.Keys = len(order)
	for _, k := range order {
		t := byKey[k]
		if t.acked > 0 {
			out.Acknowledged++
		}
		rw, eff := rows[k], effects[k]
		if !rw.ok || rw.err || eff.err {
			out.Unjudged++
			continue
		}
		ks := scenarios.KeyString(k) + evidenceNote(inbox[k], down[k], len(opKeys[k.EventID]))
		lost := t.acked > 0 && (rw.count == 0 || (eff.ok && eff.count == 0))
		// Applied more than once downstream: resent under a new operation
		// key, or applied twice by the receiver.
		dup := rw.count > 1 || (eff.ok && eff.count > 1) || (down[k] != nil && down[k].Version > 1)
		if lost {
			out.Lost++
			if len(out.LostKeys) < EvidenceKeys {
				out.LostKeys = append(out.LostKeys, ks)
			}
		}
		if dup {
			out.Duplicated++
			if len(out.DuplicatedKeys) < EvidenceKeys {
				out.DuplicatedKeys = append(out.DuplicatedKeys, ks)
			}
		}
		switch {
		case t.acked == 0 && t.unknown > 0:
			out.Unknown++
			if rw.count == 1 && !dup {
				out.Recovered++
			}
		case t.acked == 0 && rw.count == 0:
			out.NeverApplied++
		}
	}
	out.Passed = out.Lost == 0 && out.Duplicated == 0 && out.Unjudged == 0 && out.Keys > 0
	if trafficNS > 0 {
		secs := float64(trafficNS) / float64(time.Second)
		out.DeliveriesPerS = round1(float64(trafficAttempts) / secs)
		out.AcksPerS = round1(float64(trafficAcks) / secs)
	}
	out.Latency = latency(lat)
	out.Series = series(h.Attempts)
	return out
}

// series buckets the attempts by the second they ended in.
func series(as []history.Attempt) []reports.SoakPoint {
	var pts []reports.SoakPoint
	var lats [][]float64
	for _, a := range as {
		s := int(a.EndNS / int64(time.Second))
		if s < 0 {
			s = 0
		}
		for len(pts) <= s {
			pts = append(pts, reports.SoakPoint{TS: len(pts)})
			lats = append(lats, nil)
		}
		pts[s].Deliveries++
		if a.Outcome == history.OutcomeAcknowledged {
			pts[s].Acknowledged++
			lats[s] = append(lats[s], ms(a.EndNS-a.StartNS))
		} else {
			pts[s].Errors++
		}
	}
	for i := range pts {
		pts[i].P99MS = latency(lats[i]).P99MS
	}
	return pts
}

func latency(v []float64) reports.SoakLatency {
	if len(v) == 0 {
		return reports.SoakLatency{}
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return round1(v[max(0, min(i, len(v)-1))])
	}
	return reports.SoakLatency{P50MS: q(0.5), P99MS: q(0.99), MaxMS: round1(v[len(v)-1])}
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func round1(v float64) float64 { return math.Round(v*10) / 10 }
