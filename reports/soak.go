package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// FileSoakHTML is the soak's page, beside results.json.
const FileSoakHTML = "soak.html"

// Soak is what a `hookcert soak` run measured and found (results.json's soak
// section). Counts of keys are per event key (source, account, event ID).
type Soak struct {
	// Passed is true with no key lost and none duplicated, every key read,
	// and every threshold met.
	Passed     bool    `json:"passed"`
	DurationMS int64   `json:"duration_ms"`
	Options    SoakRun `json:"options"`
	// Keys is how many distinct events were sent.
	Keys int `json:"keys"`
	// Acknowledged: keys acknowledged at least once.
	Acknowledged int `json:"acknowledged"`
	// Lost: acknowledged, never stored (or its effect never applied).
	Lost int `json:"lost"`
	// Duplicated: more than one event row or more than one effect.
	Duplicated int `json:"duplicated"`
	// Unknown: never acknowledged, at least one attempt's outcome unknown.
	Unknown int `json:"unknown"`
	// Recovered: of the unknown, those stored exactly once.
	Recovered int `json:"recovered"`
	// NeverApplied: every attempt failed and nothing is stored.
	NeverApplied int `json:"never_applied"`
	// Unjudged: keys whose reads failed.
	Unjudged int `json:"unjudged,omitempty"`
	// Attempts counts every delivery attempt, by outcome in AttemptOutcomes.
	Attempts        int            `json:"attempts"`
	AttemptOutcomes map[string]int `json:"attempt_outcomes"`
	// DeliveriesPerS and AcksPerS are over the traffic phase.
	DeliveriesPerS float64     `json:"deliveries_per_s"`
	AcksPerS       float64     `json:"acks_per_s"`
	Latency        SoakLatency `json:"latency"`
	Faults         []SoakFault `json:"faults"`
	// Settle is what the end of the run did before it read the state.
	Settle SoakSettle `json:"settle"`
	// Series is one point per second of the traffic and settle phases.
	Series []SoakPoint `json:"series"`
	// LostKeys and DuplicatedKeys are the first keys found (evidence).
	LostKeys       []string `json:"lost_keys,omitempty"`
	DuplicatedKeys []string `json:"duplicated_keys,omitempty"`
	// Repro reruns the soak with the same seed.
	Repro string `json:"repro,omitempty"`
	// Phases are warm-up, measure, drain and settle, in milliseconds since
	// the soak started; thresholds are judged on the measure phase alone.
	Phases []SoakPhase `json:"phases,omitempty"`
	// Measure is what the measure phase measured (the figures thresholds
	// are judged on).
	Measure *SoakMeasure `json:"measure,omitempty"`
	// Thresholds are the verdicts of the thresholds the soak was given.
	Thresholds []SoakThreshold `json:"thresholds,omitempty"`
}

// SoakPhase is one phase of a soak.
type SoakPhase struct {
	Name    string `json:"name"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
}

// SoakMeasure is the measure phase's figures: the attempts that started in it.
type SoakMeasure struct {
	StartMS      int64 `json:"start_ms"`
	EndMS        int64 `json:"end_ms"`
	Attempts     int   `json:"attempts"`
	Acknowledged int   `json:"acknowledged"`
	// Failed attempts were not acknowledged (acknowledgements the soak lost
	// on purpose are not counted); FailedPct is their share of Attempts.
	Failed         int         `json:"failed"`
	FailedPct      float64     `json:"failed_pct"`
	DeliveriesPerS float64     `json:"deliveries_per_s"`
	AcksPerS       float64     `json:"acks_per_s"`
	Latency        SoakLatency `json:"latency"`
}

// SoakThreshold is one threshold's verdict: pass, fail, or error when the
// measure phase gave nothing to judge it on.
type SoakThreshold struct {
	// Threshold is as given, e.g. "p99<250ms".
	Threshold  string  `json:"threshold"`
	Metric     string  `json:"metric"`
	Comparator string  `json:"comparator"`
	Limit      float64 `json:"limit"`
	// Unit of Limit and Measured: ms, /s or %.
	Unit     string  `json:"unit"`
	Measured float64 `json:"measured"`
	Verdict  string  `json:"verdict"`
	Reason   string  `json:"reason,omitempty"`
}

// Soak threshold verdicts.
const (
	ThresholdPass  = "pass"
	ThresholdFail  = "fail"
	ThresholdError = "error"
)

// Breached counts the thresholds that failed.
func (s *Soak) Breached() int {
	n := 0
	for _, t := range s.Thresholds {
		if t.Verdict == ThresholdFail {
			n++
		}
	}
	return n
}

// SoakRun is how the soak was asked to run.
type SoakRun struct {
	Duration    string  `json:"duration"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
	DupRate     float64 `json:"dup_rate"`
	LostAckRate float64 `json:"lost_ack_rate"`
	Nemesis     string  `json:"nemesis,omitempty"`
	// Shard is the slice one process of a sharded soak sent ("1/4"); Shards the
	// number of shards a merged judgement covers.
	Shard  string `json:"shard,omitempty"`
	Shards int    `json:"shards,omitempty"`
	// Warmup and Drain are the phases before and after the measured
	// Duration, with traffic as in it.
	Warmup string `json:"warmup,omitempty"`
	Drain  string `json:"drain,omitempty"`
	// Thresholds are as given (--threshold or the spec file).
	Thresholds []string `json:"thresholds,omitempty"`
	// NemesisLeftOut names each fault of the default schedule the target
	// could not take, with why.
	NemesisLeftOut []string `json:"nemesis_left_out,omitempty"`
}

// SoakLatency is the acknowledged attempts' latency.
type SoakLatency struct {
	P50MS float64 `json:"p50_ms"`
	P90MS float64 `json:"p90_ms,omitempty"`
	P95MS float64 `json:"p95_ms,omitempty"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// SoakFault is one fault the nemesis applied, its window in milliseconds since
// the soak started.
type SoakFault struct {
	Kind    string `json:"kind"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
	// Aim is what an aimed fault waited for before it struck (ack: the n-th
	// acknowledgement; commit: the receiver's sessions waiting inside their
	// transactions on a table the harness locked; timeout: the provider's
	// acknowledgement timeout), "" for a fault on a timer alone.
	Aim string `json:"aim,omitempty"`
	// InFlight is what an aimed fault caught mid-way: acknowledged events not
	// stored after a kill at an acknowledgement, sessions cut inside their
	// transaction at a commit, deliveries outstanding past the timeout of a
	// pause. Hit says it caught something (InFlight > 0).
	InFlight int  `json:"in_flight,omitempty"`
	Hit      bool `json:"hit,omitempty"`
}

// SoakSettle describes the settling after traffic stopped.
type SoakSettle struct {
	// Redelivered keys were not acknowledged when traffic stopped.
	Redelivered int `json:"redelivered"`
	// StillUnacknowledged after the bound.
	StillUnacknowledged int   `json:"still_unacknowledged"`
	DurationMS          int64 `json:"duration_ms"`
	// Quiescent is false when the receiver still had work in flight at the bound.
	Quiescent bool `json:"quiescent"`
}

// SoakPoint is one second of the run.
type SoakPoint struct {
	TS           int     `json:"t_s"`
	Deliveries   int     `json:"deliveries"`
	Acknowledged int     `json:"acknowledged"`
	Errors       int     `json:"errors"`
	P99MS        float64 `json:"p99_ms"`
}

// WriteSoak writes a soak's results.json and soak.html into dir, scrubbed of
// secrets, and returns the paths.
func WriteSoak(dir string, r *Results, opts Options) ([]string, error) {
	if r == nil || r.Soak == nil {
		return nil, fmt.Errorf("write soak report: no soak results")
	}
	clean, err := prepare(r, opts)
	if err != nil {
		return nil, fmt.Errorf("write soak report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write soak report: %w", err)
	}
	var js, page bytes.Buffer
	if err := writeJSON(&js, clean); err != nil {
		return nil, err
	}
	if err := SoakHTML(&page, clean); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{FileJSON, js.Bytes()}, {FileSoakHTML, page.Bytes()}} {
		p := filepath.Join(dir, f.name)
		if err := writeFileAtomic(p, f.data); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// SoakHTML renders the soak page: the verdict, the counts, and throughput and
// p99 latency over time with each fault window shaded, as inline SVG (the page
// loads nothing).
func SoakHTML(w *bytes.Buffer, r *Results) error {
	s := r.Soak
	d := soakPage{R: r, S: s}
	d.Throughput = soakChart("Throughput (per second)", "/s", s, []soakSeries{
		{"deliveries", "#6b7280", func(p SoakPoint) float64 { return float64(p.Deliveries) }},
		{"acknowledged", "#15803d", func(p SoakPoint) float64 { return float64(p.Acknowledged) }},
		{"errors", "#b91c1c", func(p SoakPoint) float64 { return float64(p.Errors) }},
	})
	d.Latency = soakChart("p99 latency of acknowledged deliveries", " ms", s, []soakSeries{
		{"p99", "#1d4ed8", func(p SoakPoint) float64 { return p.P99MS }},
	})
	for _, t := range s.Thresholds {
		if t.Verdict == ThresholdFail {
			d.Breached++
		}
	}
	return soakTmpl.Execute(w, d)
}

type soakPage struct {
	R                   *Results
	S                   *Soak
	Throughput, Latency template.HTML
	Breached            int
}

// phaseShaded says whether a phase is shaded on the charts: every phase but
// the measure phase, which thresholds are judged on and is left clear.
func phaseShaded(name string) bool { return name != "measure" }

type soakSeries struct {
	name, colour string
	v            func(SoakPoint) float64
}

// faultColour gives each nemesis kind its shade.
func faultColour(kind string) string {
	switch kind {
	case "kill":
		return "#ef4444"
	case "pg-terminate":
		return "#f59e0b"
	case "pause":
		return "#3b82f6"
	}
	return "#9ca3af"
}

// soakChart draws one time chart: lines per series, fault windows shaded
// behind them, axes in seconds and the series' unit.
func soakChart(title, unit string, s *Soak, series []soakSeries) template.HTML {
	const W, H, left, right, top, bottom = 1100.0, 260.0, 60.0, 20.0, 34.0, 36.0
	pw, ph := W-left-right, H-top-bottom
	tmax := 1.0
	for _, p := range s.Series {
		tmax = math.Max(tmax, float64(p.TS+1))
	}
	for _, f := range s.Faults {
		tmax = math.Max(tmax, float64(f.EndMS)/1000)
	}
	vmax := 0.0
	for _, p := range s.Series {
		for _, se := range series {
			vmax = math.Max(vmax, se.v(p))
		}
	}
	vmax = niceCeil(vmax)
	x := func(t float64) float64 { return left + t/tmax*pw }
	y := func(v float64) float64 { return top + ph - v/vmax*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="%s">`, W, H, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%.0f" y="20" class="ct">%s</text>`, left, template.HTMLEscapeString(title))
	// Phases first (the measure phase clear, the others hatched grey and
	// named), then fault windows, so the lines stay on top.
	if len(s.Phases) > 1 {
		for _, p := range s.Phases {
			x0, x1 := x(float64(p.StartMS)/1000), x(float64(p.EndMS)/1000)
			if phaseShaded(p.Name) {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#6b7280" fill-opacity="0.14"><title>%s phase %.1fs–%.1fs</title></rect>`,
					x0, top, math.Max(x1-x0, 1), ph, p.Name, float64(p.StartMS)/1000, float64(p.EndMS)/1000)
			}
			if x1-x0 > 40 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="ph">%s</text>`, (x0+x1)/2, top+12, p.Name)
			}
		}
	}
	// Fault windows at least 3 px wide so an instant fault still shows.
	for _, f := range s.Faults {
		x0, x1 := x(float64(f.StartMS)/1000), x(float64(f.EndMS)/1000)
		if x1-x0 < 3 {
			x1 = x0 + 3
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" fill-opacity="0.3"><title>%s at %.1fs (%d ms)</title></rect>`,
			x0, top, x1-x0, ph, faultColour(f.Kind), template.HTMLEscapeString(f.Kind), float64(f.StartMS)/1000, f.EndMS-f.StartMS)
	}
	// Grid and axes.
	for i := 0; i <= 4; i++ {
		v := vmax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" class="grid"/><text x="%.0f" y="%.1f" class="yl">%s</text>`,
			left, W-right, y(v), y(v), left-6, y(v)+4, template.HTMLEscapeString(fmtNum(v)+unit))
	}
	step := math.Max(1, niceCeil(tmax/10))
	for t := 0.0; t <= tmax+1e-9; t += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="xl">%ss</text>`, x(t), H-bottom+18, fmtNum(t))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" class="axis"/>`, left, W-right, top+ph, top+ph)
	// Lines at each second's middle.
	for _, se := range series {
		var pts []string
		for _, p := range s.Series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(p.TS)+0.5), y(se.v(p))))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, se.colour, strings.Join(pts, " "))
		}
	}
	// Legend, right-aligned: the series, then the fault kinds that occur.
	type entry struct {
		name, colour string
		fault        bool
	}
	var legend []entry
	for _, se := range series {
		legend = append(legend, entry{se.name, se.colour, false})
	}
	seen := map[string]bool{}
	for _, f := range s.Faults {
		if !seen[f.Kind] {
			seen[f.Kind] = true
			legend = append(legend, entry{f.Kind, faultColour(f.Kind), true})
		}
	}
	lx := W - right
	for i := len(legend) - 1; i >= 0; i-- {
		e := legend[i]
		// About 7 px per character, the swatch and a gap.
		lx -= float64(len(e.name))*7 + 30
		if e.fault {
			fmt.Fprintf(&b, `<rect x="%.0f" y="10" width="12" height="12" fill="%s" fill-opacity="0.35"/>`, lx, e.colour)
		} else {
			fmt.Fprintf(&b, `<rect x="%.0f" y="14" width="12" height="4" fill="%s"/>`, lx, e.colour)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="21" class="lg">%s</text>`, lx+16, template.HTMLEscapeString(e.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped names
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

var soakTmpl = template.Must(template.New("soak").Funcs(template.FuncMap{
	"sec":    func(ms int64) string { return fmt.Sprintf("%.2fs", float64(ms)/1000) },
	"f1":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"sub":    func(a, b int64) int64 { return a - b },
	"colour": faultColour,
	"num": func(v float64) string {
		if math.Abs(v) < 1 && v != 0 {
			return fmt.Sprintf("%.3f", v)
		}
		return fmt.Sprintf("%.1f", v)
	},
	"unit": func(u string) string {
		if u == "ms" {
			return " ms"
		}
		return u
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hookcert soak — {{.R.Target.Name}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111827;margin:24px auto;max-width:1140px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}.sub{color:#4b5563;margin:0 0 16px}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;font-weight:700;color:#fff}
.pass{background:#15803d}.fail{background:#b91c1c}.err{background:#b45309}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{border:1px solid #e5e7eb;border-radius:6px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:22px}.card span{color:#4b5563;font-size:13px}
.bad b{color:#b91c1c}
.chart{border:1px solid #e5e7eb;border-radius:6px;margin:12px 0;padding:4px}
svg text{font:12px system-ui,sans-serif;fill:#374151}svg .ct{font-size:14px;font-weight:600;fill:#111827}
svg .yl{text-anchor:end}svg .ph{text-anchor:middle;font-size:11px;fill:#4b5563;font-style:italic}svg .xl{text-anchor:middle}svg .grid{stroke:#e5e7eb}svg .axis{stroke:#6b7280}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #e5e7eb;padding:4px 10px;text-align:left;font-size:14px}
th{background:#f9fafb}code{font:13px ui-monospace,monospace}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;opacity:.6}
</style></head><body>
<h1>Soak: {{.R.Target.Name}} <span class="verdict {{if .S.Passed}}pass">PASS{{else}}fail">FAIL{{end}}</span>{{if .Breached}} <span class="verdict fail">{{.Breached}} threshold{{if gt .Breached 1}}s{{end}} breached</span>{{end}}</h1>
<p class="sub">{{if .S.Options.Warmup}}warm-up {{.S.Options.Warmup}}, {{end}}{{.S.Options.Duration}}{{if or .S.Options.Warmup .S.Options.Drain}} measured{{end}}{{if .S.Options.Drain}}, drain {{.S.Options.Drain}}{{end}} at concurrency {{.S.Options.Concurrency}}{{if .S.Options.Rate}}, rate {{.S.Options.Rate}}/s{{end}}; duplicates {{.S.Options.DupRate}}, lost acknowledgements {{.S.Options.LostAckRate}}{{if .S.Options.Nemesis}}; nemesis <code>{{.S.Options.Nemesis}}</code>{{end}} — seed {{.R.Seed}}, run {{.R.RunID}}</p>
<div class="cards">
<div class="card"><b>{{.S.Keys}}</b><span>events sent</span></div>
<div class="card"><b>{{.S.Acknowledged}}</b><span>acknowledged</span></div>
<div class="card{{if .S.Lost}} bad{{end}}"><b>{{.S.Lost}}</b><span>lost</span></div>
<div class="card{{if .S.Duplicated}} bad{{end}}"><b>{{.S.Duplicated}}</b><span>duplicated</span></div>
<div class="card"><b>{{.S.Unknown}}</b><span>unknown ({{.S.Recovered}} recovered)</span></div>
<div class="card"><b>{{.S.NeverApplied}}</b><span>never applied</span></div>
<div class="card"><b>{{f1 .S.AcksPerS}}</b><span>acks/s ({{f1 .S.DeliveriesPerS}} deliveries/s)</span></div>
<div class="card"><b>{{f1 .S.Latency.P99MS}} ms</b><span>p99 (p50 {{f1 .S.Latency.P50MS}}, max {{f1 .S.Latency.MaxMS}})</span></div>
</div>
{{if .S.Thresholds}}<h2>Thresholds (measure phase{{with .S.Measure}}, {{sec .StartMS}}–{{sec .EndMS}}{{end}})</h2>
<table><tr><th>threshold</th><th>metric</th><th>limit</th><th>measured</th><th>verdict</th></tr>
{{range .S.Thresholds}}<tr><td><code>{{.Threshold}}</code></td><td>{{.Metric}}</td><td>{{.Comparator}} {{num .Limit}}{{unit .Unit}}</td><td>{{if eq .Verdict "error"}}{{.Reason}}{{else}}{{num .Measured}}{{unit .Unit}}{{end}}</td><td><span class="verdict {{if eq .Verdict "pass"}}pass{{else if eq .Verdict "fail"}}fail{{else}}err{{end}}">{{.Verdict}}</span></td></tr>
{{end}}</table>{{end}}
{{with .S.Measure}}{{if gt (len $.S.Phases) 2}}<p>Measure phase {{sec .StartMS}}–{{sec .EndMS}}: {{.Attempts}} attempts, {{f1 .DeliveriesPerS}} deliveries/s, {{f1 .AcksPerS}} acks/s, {{.FailedPct}}% failed; latency p50 {{f1 .Latency.P50MS}} ms, p90 {{f1 .Latency.P90MS}}, p95 {{f1 .Latency.P95MS}}, p99 {{f1 .Latency.P99MS}}, max {{f1 .Latency.MaxMS}} ms. {{range $.S.Phases}}{{.Name}} {{sec .StartMS}}–{{sec .EndMS}}; {{end}}</p>{{end}}{{end}}
<div class="chart">{{.Throughput}}</div>
<div class="chart">{{.Latency}}</div>
{{if .S.LostKeys}}<h2>Lost keys (acknowledged, never stored)</h2><ul>{{range .S.LostKeys}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .S.DuplicatedKeys}}<h2>Duplicated keys</h2><ul>{{range .S.DuplicatedKeys}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<h2>Faults applied ({{len .S.Faults}})</h2>
{{if .S.Faults}}<table><tr><th>fault</th><th>at</th><th>lasted</th><th>detail</th></tr>
{{range .S.Faults}}<tr><td><span class="sw" style="background:{{colour .Kind}}"></span>{{.Kind}}</td><td>{{sec .StartMS}}</td><td>{{sub .EndMS .StartMS}} ms</td><td>{{.Detail}}{{if .Error}} <b>error:</b> {{.Error}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>none</p>{{end}}
<h2>Settling</h2>
<p>{{.S.Settle.Redelivered}} key(s) not acknowledged when traffic stopped were redelivered; {{.S.Settle.StillUnacknowledged}} still unacknowledged at the bound; {{if .S.Settle.Quiescent}}the receiver was quiescent{{else}}the receiver still had work in flight{{end}} after {{sec .S.Settle.DurationMS}}.
{{.S.Attempts}} attempts in all: {{range $k, $v := .S.AttemptOutcomes}}{{$v}} {{$k}}; {{end}}</p>
{{if .S.Repro}}<p>Reproduce: <code>{{.S.Repro}}</code></p>{{end}}
</body></html>
`))
