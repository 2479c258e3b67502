package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var htmlTemplateText string

var htmlTemplate = template.Must(template.New("index.html").Funcs(template.FuncMap{
	"ns":    fmtNS,
	"join":  strings.Join,
	"label": func(s Status) string { return s.Label() },
	"even":  func(i int) bool { return i%2 == 0 },
	"add":   func(a, b int) int { return a + b },
	"sub":   func(a, b int) int { return a - b },
	"rowh":  func() int { return tlRowH },
	"barh":  func() int { return tlBarH },
}).Parse(htmlTemplateText))

// WriteHTML writes one self-contained page: inline CSS and SVG, no scripts, no
// network. Each guarantee is a collapsible section (open when failed or errored) with
// its status, reason, evidence and repro command; each scenario shows a timeline of
// every delivery attempt beside the observed rows. Well-known secret patterns are
// scrubbed.
func WriteHTML(w io.Writer, r *Results) error {
	if r == nil {
		return fmt.Errorf("write index.html: results are nil")
	}
	r = Redact(r, nil)
	if err := htmlTemplate.Execute(w, newHTMLPage(r)); err != nil {
		return fmt.Errorf("write index.html: %w", err)
	}
	return nil
}

type htmlPage struct {
	R       *Results
	Summary Summary
	Verdict string
	// VerdictClass is the CSS class suffix for the verdict banner.
	VerdictClass string
	Started      string
	Finished     string
	Duration     string
	Env          [][2]string
	Guarantees   []htmlGuarantee
}

type htmlGuarantee struct {
	Guarantee
	Open      bool
	Scenarios []htmlScenario
}

type htmlScenario struct {
	Scenario
	Timeline *svgTimeline
}

func newHTMLPage(r *Results) htmlPage {
	p := htmlPage{R: r, Summary: Summarize(r.Guarantees), Duration: fmtMS(r.DurationMS)}
	p.Verdict = p.Summary.Verdict()
	p.VerdictClass = strings.Fields(p.Verdict)[0]
	if !r.StartedAt.IsZero() {
		p.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	if !r.FinishedAt.IsZero() {
		p.Finished = r.FinishedAt.UTC().Format(time.RFC3339)
	}
	for k, v := range r.Environment {
		p.Env = append(p.Env, [2]string{k, v})
	}
	sort.Slice(p.Env, func(i, j int) bool { return p.Env[i][0] < p.Env[j][0] })
	for _, g := range r.Guarantees {
		hg := htmlGuarantee{Guarantee: g, Open: g.Status == StatusFailed || g.Status == StatusError}
		for _, s := range g.Scenarios {
			hg.Scenarios = append(hg.Scenarios, htmlScenario{Scenario: s, Timeline: newTimeline(s.Timeline)})
		}
		p.Guarantees = append(p.Guarantees, hg)
	}
	return p
}

// Timeline geometry, in SVG user units; the SVG scales to its box via viewBox.
const (
	tlLabelW = 200 // left column: who (event, attempt, copy)
	tlPlotW  = 620 // the shared time axis
	tlPadR   = 28
	tlAxisH  = 28
	tlRowH   = 22
	tlBarH   = 14
	tlMinBar = 2 // an instantaneous attempt stays visible
)

type svgTimeline struct {
	Width, Height int
	PlotX, PlotW  int
	AxisY         int
	Origin        string // the axis origin, as time since run start
	Ticks         []svgTick
	Rows          []svgRow
}

type svgTick struct {
	X     float64
	Label string
}

type svgRow struct {
	Y, BarY, TextY float64
	Who, WhoFull   string
	X, W           float64
	Class          string // outcome class: ack, fail, unknown; plus " open" when unfinished
	Text           string // what came back and which faults
	TextX          float64
	Anchor         string // start or end
	TextClass      string // "inside" when drawn on the bar
	Title          string // full detail for the hover tooltip
}

// newTimeline lays out every attempt of a scenario as a horizontal bar on one time
// axis running from the first start to the last end.
func newTimeline(as []Attempt) *svgTimeline {
	if len(as) == 0 {
		return nil
	}
	t0, t1 := as[0].StartNS, as[0].StartNS
	for _, a := range as {
		t0 = min(t0, a.StartNS)
		t1 = max(t1, a.StartNS)
		if a.Finished() {
			t1 = max(t1, a.EndNS)
		}
	}
	span := t1 - t0
	step := niceStep(span)
	// Extend the axis to a whole tick so the last bar does not touch the edge.
	axisEnd := t0 + int64(math.Ceil(float64(max(span, 1))/float64(step)))*step
	scale := float64(tlPlotW) / float64(axisEnd-t0)
	tl := &svgTimeline{
		PlotX: tlLabelW, PlotW: tlPlotW, AxisY: tlAxisH - 4,
		Width:  tlLabelW + tlPlotW + tlPadR,
		Height: tlAxisH + len(as)*tlRowH + 6,
		Origin: fmtNS(t0),
	}
	for t := t0; t <= axisEnd; t += step {
		tl.Ticks = append(tl.Ticks, svgTick{X: float64(tlLabelW) + float64(t-t0)*scale, Label: "+" + fmtNS(t-t0)})
	}
	for i, a := range as {
		y := float64(tlAxisH + i*tlRowH)
		row := svgRow{Y: y, BarY: y + (tlRowH-tlBarH)/2, TextY: y + tlRowH/2 + 4}
		row.WhoFull = fmt.Sprintf("%s #%d", a.EventID, a.Attempt)
		if a.Copy > 0 {
			row.WhoFull += fmt.Sprintf(" copy %d", a.Copy)
		}
		row.Who = row.WhoFull
		if len([]rune(row.Who)) > 28 {
			rs := []rune(row.Who)
			row.Who = string(rs[:13]) + "…" + string(rs[len(rs)-13:])
		}
		end := axisEnd
		if a.Finished() {
			end = a.EndNS
		}
		row.X = float64(tlLabelW) + float64(a.StartNS-t0)*scale
		row.W = max(float64(end-a.StartNS)*scale, tlMinBar)
		switch a.Outcome {
		case OutcomeAcknowledged:
			row.Class = "ack"
		case OutcomeFailed:
			row.Class = "fail"
		default:
			row.Class = "unknown"
		}
		if !a.Finished() {
			row.Class += " open"
		}
		row.Text = attemptText(a)
		// Put the label where there is room: after the bar, before it, or on it.
		switch right := row.X + row.W; {
		case right-float64(tlLabelW) < 0.62*tlPlotW:
			row.TextX, row.Anchor = right+4, "start"
		case row.X-float64(tlLabelW) > 0.38*tlPlotW:
			row.TextX, row.Anchor = row.X-4, "end"
		default:
			row.TextX, row.Anchor, row.TextClass = row.X+4, "start", "inside"
			if a.Outcome == OutcomeUnknown || !a.Finished() {
				row.TextClass = "inside-dark" // white on amber or a faded bar is unreadable
			}
		}
		dur := "unfinished"
		if a.Finished() {
			dur = fmtNS(a.EndNS - a.StartNS)
		}
		row.Title = fmt.Sprintf("%s: %s, start +%s, duration %s", row.WhoFull, row.Text, fmtNS(a.StartNS-t0), dur)
		if a.ErrorClass != "" {
			row.Title += ", error " + a.ErrorClass
		}
		if a.DeliveryID != "" {
			row.Title += ", delivery " + a.DeliveryID
		}
		tl.Rows = append(tl.Rows, row)
	}
	return tl
}

// attemptText says what came back and which faults applied, e.g. "200 acknowledged
// [lost-ack]" or "no response unknown [kill]".
func attemptText(a Attempt) string {
	var b strings.Builder
	if a.HTTPStatus > 0 {
		fmt.Fprintf(&b, "%d ", a.HTTPStatus)
	} else if a.ErrorClass != "" {
		b.WriteString(a.ErrorClass + " ")
	} else {
		b.WriteString("no response ")
	}
	b.WriteString(a.Outcome)
	if len(a.Faults) > 0 {
		b.WriteString(" [" + strings.Join(a.Faults, ", ") + "]")
	}
	return b.String()
}

// niceStep picks a tick step of 1, 2 or 5 times a power of ten giving at most six
// intervals over span nanoseconds.
func niceStep(span int64) int64 {
	if span <= 0 {
		return 1
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if s := m * p; (span+s-1)/s <= 6 || p > math.MaxInt64/100 {
				return s
			}
		}
	}
}

// fmtNS formats nanoseconds compactly: 0, 850ns, 43µs, 1.5ms, 2.25s.
func fmtNS(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	var v float64
	var unit string
	switch {
	case ns == 0:
		return "0"
	case ns < 1_000:
		return fmt.Sprintf("%s%dns", neg, ns)
	case ns < 1_000_000:
		v, unit = float64(ns)/1e3, "µs"
	case ns < 1_000_000_000:
		v, unit = float64(ns)/1e6, "ms"
	default:
		v, unit = float64(ns)/1e9, "s"
	}
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	return neg + s + unit
}
