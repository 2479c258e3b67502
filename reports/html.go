package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
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
	// row hands the problem-row template a guarantee and whether the table
	// has a race column.
	"row":  func(g htmlGuarantee, race bool) problemRow { return problemRow{G: g, Race: race} },
	"barh": func() int { return tlBarH },
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
	return writeHTML(w, Redact(r, nil))
}

// writeHTML renders results that are already scrubbed (Write scrubs once for
// all four files).
func writeHTML(w io.Writer, r *Results) error {
	if err := htmlTemplate.Execute(w, newHTMLPage(visibleControls(r))); err != nil {
		return fmt.Errorf("write index.html: %w", err)
	}
	return nil
}

type htmlPage struct {
	R       *Results
	Summary Summary
	Verdict string
	// Failed, Errored, Passed and NotApplicable are Guarantees grouped as
	// the overview shows them: what failed first, not applicable folded.
	Failed, Errored, Passed, NotApplicable []htmlGuarantee
	// ProblemRace and PassedRace say whether a failed or errored guarantee,
	// and a passed one, raced: only then has its table a race column.
	ProblemRace, PassedRace bool
	// VerdictClass is the CSS class suffix for the verdict banner.
	VerdictClass string
	Started      string
	Finished     string
	Duration     string
	Env          [][2]string
	Guarantees   []htmlGuarantee
	// HasSink is set when some scenario drew a downstream call: the legend
	// then explains the sink's marks.
	HasSink bool
}

type htmlGuarantee struct {
	Guarantee
	Open      bool
	Scenarios []htmlScenario
	// EventTypes are the event types involved in a failure or an error.
	EventTypes []string
	// RaceLabel ("race forced", "race left to timing") is shown beside the
	// verdict, and in the body with RaceText, how the race ran; RaceClass
	// styles them; Until is the command that hunts a race left to timing.
	RaceLabel, RaceText, RaceClass, Until string
}

// problemRow is one row of the overview's table of what failed.
type problemRow struct {
	G    htmlGuarantee
	Race bool
}

type htmlScenario struct {
	Scenario
	Timeline *svgTimeline
}

func newHTMLPage(r *Results) htmlPage {
	p := htmlPage{R: r, Summary: Summarize(r.Guarantees), Duration: fmtMS(r.DurationMS)}
	p.Verdict = VerdictTitle(r.RunVerdict())
	p.VerdictClass = strings.Fields(p.Verdict)[0]
	if r.Stopped() {
		p.Verdict, p.VerdictClass = r.OutcomeTitle(), "ERROR"
	}
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
	v := groupByVerdict(r.Guarantees)
	for _, group := range []struct {
		gs   []Guarantee
		into *[]htmlGuarantee
	}{{v.Failed, &p.Failed}, {v.Errored, &p.Errored}, {v.Passed, &p.Passed}, {v.NotApplicable, &p.NotApplicable}} {
		for _, g := range group.gs {
			hg := newHTMLGuarantee(g)
			for _, s := range hg.Scenarios {
				p.HasSink = p.HasSink || len(s.Sink) > 0
			}
			*group.into = append(*group.into, hg)
			p.Guarantees = append(p.Guarantees, hg)
		}
	}
	raced := func(g htmlGuarantee) bool { return g.Race != nil }
	p.ProblemRace = slices.ContainsFunc(p.Failed, raced) || slices.ContainsFunc(p.Errored, raced)
	p.PassedRace = slices.ContainsFunc(p.Passed, raced)
	return p
}

// newHTMLGuarantee lays out one guarantee: its timelines, and for one that
// failed or errored the event types involved; its race for every one.
func newHTMLGuarantee(g Guarantee) htmlGuarantee {
	hg := htmlGuarantee{Guarantee: g, Open: g.Status == StatusFailed || g.Status == StatusError}
	for _, s := range g.Scenarios {
		hg.Scenarios = append(hg.Scenarios, htmlScenario{Scenario: s, Timeline: newTimeline(s.Timeline, s.Sink...)})
	}
	if hg.Open {
		hg.EventTypes = EventTypes(g)
	}
	if g.Race != nil {
		hg.RaceLabel, hg.RaceText, hg.RaceClass = raceLabel(g), g.Race.How, "timing"
		if g.Race.Forced {
			hg.RaceClass = "forced"
		} else {
			hg.Until = untilItFails(g)
		}
	}
	return hg
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
	tlSinkW  = 5 // a downstream call: a mark at its arrival
)

type svgTimeline struct {
	Width, Height int
	PlotX, PlotW  int
	AxisY         int
	Origin        string // the axis origin, as time since run start
	Ticks         []svgTick
	Rows          []svgRow
	// More says how many attempts were left out (maxTimelineRows), at MoreY.
	More  string
	MoreY int
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

// maxTimelineNS bounds the times a timeline draws: about 36 years of nanoseconds,
// far past any run, and small enough that no sum or product below overflows int64.
// A results file is input: a start_ns near MaxInt64 must not wrap the tick loop.
const maxTimelineNS = int64(1) << 60

// maxTimelineRows caps the bars drawn per scenario; results.json keeps every
// attempt, and a page of a million bars helps nobody.
const maxTimelineRows = 1000

func clampNS(ns int64) int64 { return min(max(ns, 0), maxTimelineNS) }

// newTimeline lays out every attempt of a scenario as a horizontal bar on one time
// axis running from the first start to the last end. Times outside
// [0, maxTimelineNS] are drawn clamped and said so in the bar's tooltip.
// Downstream calls to the sink follow the attempts, each a short mark at the
// moment it arrived.
func newTimeline(all []Attempt, sink ...SinkCall) *svgTimeline {
	if len(all) == 0 && len(sink) == 0 {
		return nil
	}
	as := all
	if len(as) > maxTimelineRows {
		as = as[:maxTimelineRows]
	}
	calls := sink
	if len(calls) > maxTimelineRows {
		calls = calls[:maxTimelineRows]
	}
	ax := newTimeAxis(as, calls)
	rows := len(as) + len(calls)
	if len(all) > len(as) || len(sink) > len(calls) {
		rows++ // the "more attempts" line
	}
	tl := &svgTimeline{
		PlotX: tlLabelW, PlotW: tlPlotW, AxisY: tlAxisH - 4,
		Width:  tlLabelW + tlPlotW + tlPadR,
		Height: tlAxisH + rows*tlRowH + 6,
		Origin: fmtNS(ax.t0),
	}
	// Counted, not stepped in time: the loop ends even if a step were wrong.
	for i := int64(0); i <= ax.intervals && i <= maxTicks; i++ {
		tl.Ticks = append(tl.Ticks, svgTick{X: float64(tlLabelW) + float64(i*ax.step)*ax.scale, Label: "+" + fmtNS(i*ax.step)})
	}
	for i, a := range as {
		tl.Rows = append(tl.Rows, attemptRow(a, float64(tlAxisH+i*tlRowH), ax))
	}
	for i, c := range calls {
		tl.Rows = append(tl.Rows, sinkRow(c, float64(tlAxisH+(len(as)+i)*tlRowH), ax))
	}
	var more []string
	if n := len(all) - len(as); n > 0 {
		more = append(more, fmt.Sprintf("%d more attempts", n))
	}
	if n := len(sink) - len(calls); n > 0 {
		more = append(more, fmt.Sprintf("%d more downstream calls", n))
	}
	if len(more) > 0 {
		tl.More = "… and " + strings.Join(more, " and ") + " in results.json"
		tl.MoreY = tlAxisH + (len(as)+len(calls))*tlRowH + tlRowH/2 + 4
	}
	return tl
}

// timeAxis is a timeline's time axis: from t0 to end, intervals ticks of step
// apart, scale user units per nanosecond.
type timeAxis struct {
	t0, end         int64
	step, intervals int64
	scale           float64
}

// newTimeAxis spans the attempts and the sink calls, clamped.
func newTimeAxis(as []Attempt, calls []SinkCall) timeAxis {
	var t0, t1 int64
	if len(as) > 0 {
		t0, t1 = clampNS(as[0].StartNS), clampNS(as[0].StartNS)
	} else {
		t0, t1 = clampNS(calls[0].AtNS), clampNS(calls[0].AtNS)
	}
	for _, a := range as {
		t0 = min(t0, clampNS(a.StartNS))
		t1 = max(t1, clampNS(a.StartNS))
		if a.Finished() {
			t1 = max(t1, clampNS(a.EndNS))
		}
	}
	for _, c := range calls {
		t0, t1 = min(t0, clampNS(c.AtNS)), max(t1, clampNS(c.AtNS))
	}
	span := max(t1-t0, 1)
	step := niceStep(span)
	// Extend the axis to a whole tick so the last bar does not touch the edge.
	intervals := span / step
	if span%step != 0 {
		intervals++
	}
	axisLen := intervals * step
	return timeAxis{t0: t0, end: t0 + axisLen, step: step, intervals: intervals, scale: float64(tlPlotW) / float64(axisLen)}
}

// attemptRow is one attempt's bar at height y.
func attemptRow(a Attempt, y float64, ax timeAxis) svgRow {
	start := clampNS(a.StartNS)
	row := svgRow{Y: y, BarY: y + (tlRowH-tlBarH)/2, TextY: y + tlRowH/2 + 4}
	row.WhoFull = fmt.Sprintf("%s #%d", a.EventID, a.Attempt)
	if a.Copy > 0 {
		row.WhoFull += fmt.Sprintf(" copy %d", a.Copy)
	}
	row.Who = shortWho(row.WhoFull)
	end := ax.end
	if a.Finished() {
		end = clampNS(a.EndNS)
	}
	row.X = float64(tlLabelW) + float64(start-ax.t0)*ax.scale
	row.W = max(float64(end-start)*ax.scale, tlMinBar)
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
		dur = fmtNS(end - start)
	}
	row.Title = fmt.Sprintf("%s: %s, start +%s, duration %s", row.WhoFull, row.Text, fmtNS(start-ax.t0), dur)
	if start != a.StartNS || (a.Finished() && end != a.EndNS) {
		row.Title += fmt.Sprintf(" (recorded start_ns %d, end_ns %d: out of range, drawn clamped)", a.StartNS, a.EndNS)
	}
	if a.ErrorClass != "" {
		row.Title += ", error " + a.ErrorClass
	}
	if a.DeliveryID != "" {
		row.Title += ", delivery " + a.DeliveryID
	}
	return row
}

// sinkRow is one downstream call's mark at height y.
func sinkRow(c SinkCall, y float64, ax timeAxis) svgRow {
	at := clampNS(c.AtNS)
	row := svgRow{Y: y, BarY: y + (tlRowH-tlBarH)/2, TextY: y + tlRowH/2 + 4, Class: "sink"}
	row.WhoFull = fmt.Sprintf("%s sink call %d", c.EventID, c.Seq)
	row.Who = shortWho(row.WhoFull)
	// The mark starts at the arrival, or ends at the axis end for the last.
	row.X = min(float64(tlLabelW)+float64(at-ax.t0)*ax.scale, float64(tlLabelW+tlPlotW-tlSinkW))
	row.W = tlSinkW
	if c.Status == 0 || c.Status >= 300 {
		row.Class += " sinkfail"
	}
	status := "no answer"
	if c.Status != 0 {
		status = fmt.Sprint(c.Status)
	}
	row.Text = "downstream " + status + " " + c.Outcome
	if right := row.X + row.W; right-float64(tlLabelW) < 0.62*tlPlotW {
		row.TextX, row.Anchor = right+4, "start"
	} else {
		row.TextX, row.Anchor = row.X-4, "end"
	}
	row.Title = fmt.Sprintf("%s: %s, at +%s", row.WhoFull, row.Text, fmtNS(at-ax.t0))
	if c.Key != "" {
		row.Title += ", operation key " + c.Key
	}
	if at != c.AtNS {
		row.Title += fmt.Sprintf(" (recorded at_ns %d: out of range, drawn clamped)", c.AtNS)
	}
	return row
}

// shortWho fits a row's label in the left column: past 28 characters, its
// first and last 13 around an ellipsis (the full label is in the tooltip).
func shortWho(who string) string {
	if len([]rune(who)) > 28 {
		rs := []rune(who)
		return string(rs[:13]) + "…" + string(rs[len(rs)-13:])
	}
	return who
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

// maxTicks bounds the tick marks of one axis (niceStep gives at most six intervals).
const maxTicks = 12

// niceStep picks a tick step of 1, 2 or 5 times a power of ten giving at most six
// intervals over span nanoseconds. No intermediate value overflows int64.
func niceStep(span int64) int64 {
	if span <= 0 {
		return 1
	}
	for p := int64(1); p <= 1e18; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			s := m * p
			n := span / s
			if span%s != 0 {
				n++
			}
			if n <= 6 {
				return s
			}
		}
	}
	return 5e18
}

// fmtNS formats nanoseconds compactly: 0, 850ns, 43µs, 1.5ms, 2.25s.
func fmtNS(n int64) string {
	neg := ""
	// The magnitude as uint64: -MinInt64 does not fit an int64.
	ns := uint64(n)
	if n < 0 {
		neg, ns = "-", uint64(-(n+1))+1
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
