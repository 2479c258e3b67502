package soak

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
)

// A Threshold is a pass/fail criterion on the measure phase, written as k6
// writes one: metric, comparator, value ("p99<250ms", "rate>800/s",
// "failed<1%").
type Threshold struct {
	// Text is the threshold as given, spaces removed.
	Text string
	// Metric is pN (a latency percentile), max, avg, rate, ack_rate or failed.
	Metric string
	// Comparator is <, <=, > or >=.
	Comparator string
	// Limit is in Unit: ms for latency, /s for rates, % for failed.
	Limit float64
	Unit  string
	// pct is N of a pN metric.
	pct float64
}

// ThresholdSyntax is the rule a threshold's error quotes.
const ThresholdSyntax = "write METRIC COMPARATOR VALUE, e.g. p99<250ms, rate>800/s, failed<1%; " +
	"metrics: p50, p90, p95, p99 (any pN with 0<N<100), max, avg (latency of acknowledged attempts, a duration: 250ms, 1.5s, 800us), " +
	"rate (deliveries/s), ack_rate (acknowledgements/s) (per second or per minute: 800/s, 48000/m), " +
	"failed (share of attempts not acknowledged: 1% or 0.01); comparators <, <=, >, >="

// ParseThreshold parses one threshold strictly; the error says what is wrong
// and the rule.
func ParseThreshold(s string) (Threshold, error) {
	text := strings.Join(strings.Fields(s), "")
	if text == "" {
		return Threshold{}, fmt.Errorf("empty threshold: %s", ThresholdSyntax)
	}
	i := strings.IndexAny(text, "<>=!")
	if i < 0 {
		return Threshold{}, fmt.Errorf("no comparator: %s", ThresholdSyntax)
	}
	metric, rest := text[:i], text[i:]
	j := 0
	for j < len(rest) && strings.ContainsRune("<>=!", rune(rest[j])) {
		j++
	}
	op, value := rest[:j], rest[j:]
	t := Threshold{Text: text, Comparator: op}
	switch op {
	case "<", "<=", ">", ">=":
	default:
		return Threshold{}, fmt.Errorf("comparator %q is not one of <, <=, >, >= (a measured figure is never exactly a limit)", op)
	}
	if metric == "" {
		return Threshold{}, fmt.Errorf("no metric before %q: %s", op, ThresholdSyntax)
	}
	if value == "" {
		return Threshold{}, fmt.Errorf("no value after %q: %s", op, ThresholdSyntax)
	}
	// k6 writes percentiles p(99); take both.
	if strings.HasPrefix(metric, "p(") && strings.HasSuffix(metric, ")") {
		metric = "p" + metric[2:len(metric)-1]
	}
	t.Metric = metric
	var err error
	switch {
	case metric == "max" || metric == "avg" || (strings.HasPrefix(metric, "p") && len(metric) > 1):
		if metric[0] == 'p' {
			t.pct, err = strconv.ParseFloat(metric[1:], 64)
			if err != nil || !(t.pct > 0 && t.pct < 100) || math.IsNaN(t.pct) {
				return Threshold{}, fmt.Errorf("metric %q: a percentile is pN with N between 0 and 100 exclusive, e.g. p99 or p99.9", metric)
			}
		}
		d, perr := time.ParseDuration(value)
		if perr != nil {
			return Threshold{}, fmt.Errorf("%s: value %q is not a duration (a latency limit needs its unit: 250ms, 1.5s, 800us)", metric, value)
		}
		if d <= 0 {
			return Threshold{}, fmt.Errorf("%s: value %q must be positive", metric, value)
		}
		t.Limit, t.Unit = float64(d)/1e6, "ms"
	case metric == "rate" || metric == "ack_rate":
		num, per, ok := strings.Cut(value, "/")
		scale := map[string]float64{"s": 1, "m": 1.0 / 60}[per]
		if !ok || scale == 0 {
			return Threshold{}, fmt.Errorf("%s: value %q needs its unit, per second or per minute: 800/s, 48000/m", metric, value)
		}
		v, perr := strconv.ParseFloat(num, 64)
		if perr != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Threshold{}, fmt.Errorf("%s: %q is not a non-negative number", metric, num)
		}
		t.Limit, t.Unit = v*scale, "/s"
	case metric == "failed":
		var v float64
		if num, ok := strings.CutSuffix(value, "%"); ok {
			v, err = strconv.ParseFloat(num, 64)
		} else {
			v, err = strconv.ParseFloat(value, 64)
			v *= 100
		}
		if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
			return Threshold{}, fmt.Errorf("failed: value %q is not a share: a percentage 0%%–100%% (1%%) or a fraction 0–1 (0.01)", value)
		}
		t.Limit, t.Unit = v, "%"
	default:
		return Threshold{}, fmt.Errorf("unknown metric %q: %s", metric, ThresholdSyntax)
	}
	return t, nil
}

// ParseThresholds parses each threshold, naming the one that is wrong.
func ParseThresholds(ss []string) ([]Threshold, error) {
	var out []Threshold
	for _, s := range ss {
		t, err := ParseThreshold(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// measurement is the measure phase's figures and its acknowledged latencies
// (milliseconds, sorted).
type measurement struct {
	m      reports.SoakMeasure
	lat    []float64
	length time.Duration
}

// measure collects the attempts that started in [fromNS, toNS): they are the
// measure phase's, whenever they ended. An acknowledgement the soak lost on
// purpose is not a failure of the receiver's.
func measure(h *history.History, fromNS, toNS int64) measurement {
	out := measurement{m: reports.SoakMeasure{StartMS: fromNS / 1e6, EndMS: toNS / 1e6}, length: time.Duration(toNS - fromNS)}
	for _, a := range h.Attempts {
		if a.StartNS < fromNS || a.StartNS >= toNS {
			continue
		}
		switch {
		case a.Outcome == history.OutcomeAcknowledged:
			out.m.Acknowledged++
			out.lat = append(out.lat, ms(a.EndNS-a.StartNS))
		case a.Role == RoleLostAck && a.Outcome == history.OutcomeUnknown:
		default:
			out.m.Failed++
		}
		out.m.Attempts++
	}
	sort.Float64s(out.lat)
	if out.m.Attempts > 0 {
		out.m.FailedPct = round3(100 * float64(out.m.Failed) / float64(out.m.Attempts))
	}
	if out.length > 0 {
		secs := out.length.Seconds()
		out.m.DeliveriesPerS = round1(float64(out.m.Attempts) / secs)
		out.m.AcksPerS = round1(float64(out.m.Acknowledged) / secs)
	}
	if len(out.lat) > 0 {
		out.m.Latency = reports.SoakLatency{P50MS: round1(quantile(out.lat, 50)), P90MS: round1(quantile(out.lat, 90)),
			P95MS: round1(quantile(out.lat, 95)), P99MS: round1(quantile(out.lat, 99)), MaxMS: round1(out.lat[len(out.lat)-1])}
	}
	return out
}

// quantile is the nearest-rank pth percentile of sorted v (as Judge's).
func quantile(v []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// judgeThresholds holds each threshold against the measure phase. A figure
// the phase cannot give (no acknowledged attempt for a latency, no attempt
// for failed, a phase that never ran) is an error, never a pass.
func judgeThresholds(ts []Threshold, m measurement) []reports.SoakThreshold {
	var out []reports.SoakThreshold
	for _, t := range ts {
		r := reports.SoakThreshold{Threshold: t.Text, Metric: t.Metric, Comparator: t.Comparator, Limit: round3(t.Limit), Unit: t.Unit}
		var v float64
		switch {
		case m.length <= 0:
			r.Verdict, r.Reason = reports.ThresholdError, "the measure phase never ran"
		case t.Unit == "ms" && len(m.lat) == 0:
			r.Verdict, r.Reason = reports.ThresholdError, "no attempt was acknowledged in the measure phase: no latency to judge"
		case t.Metric == "failed" && m.m.Attempts == 0:
			r.Verdict, r.Reason = reports.ThresholdError, "no attempt started in the measure phase"
		}
		if r.Verdict != "" {
			out = append(out, r)
			continue
		}
		switch t.Metric {
		case "max":
			v = m.lat[len(m.lat)-1]
		case "avg":
			for _, x := range m.lat {
				v += x
			}
			v /= float64(len(m.lat))
		case "rate":
			v = float64(m.m.Attempts) / m.length.Seconds()
		case "ack_rate":
			v = float64(m.m.Acknowledged) / m.length.Seconds()
		case "failed":
			v = 100 * float64(m.m.Failed) / float64(m.m.Attempts)
		default:
			v = quantile(m.lat, t.pct)
		}
		r.Measured = round3(v)
		r.Verdict = reports.ThresholdFail
		if holds(v, t.Comparator, t.Limit) {
			r.Verdict = reports.ThresholdPass
		}
		out = append(out, r)
	}
	return out
}

func holds(v float64, op string, limit float64) bool {
	switch op {
	case "<":
		return v < limit
	case "<=":
		return v <= limit
	case ">":
		return v > limit
	case ">=":
		return v >= limit
	}
	return false
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
