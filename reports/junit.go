package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The JUnit XML shapes follow the de-facto schema CI systems read (the one Ginkgo's
// reporters/junit_report.go writes): testsuites > testsuite > testcase with optional
// failure, error or skipped.
type junitTestSuites struct {
	XMLName   xml.Name         `xml:"testsuites"`
	Name      string           `xml:"name,attr"`
	Tests     int              `xml:"tests,attr"`
	Failures  int              `xml:"failures,attr"`
	Errors    int              `xml:"errors,attr"`
	Skipped   int              `xml:"skipped,attr"`
	Time      string           `xml:"time,attr"`
	Timestamp string           `xml:"timestamp,attr,omitempty"`
	Suites    []junitTestSuite `xml:"testsuite"`
}

type junitTestSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr,omitempty"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitTestCase `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut *junitCDATA   `xml:"system-out,omitempty"`
}

type junitCDATA struct {
	Text string `xml:",cdata"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	// CDATA keeps multi-line evidence readable in the raw file; xmlText removes the
	// characters XML cannot carry at all, which CDATA does not escape.
	Body string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// family is the guarantee's family, or the ID's prefix when the family is empty.
func family(g Guarantee) string {
	if g.Family != "" {
		return g.Family
	}
	if i := strings.IndexByte(g.ID, '-'); i > 0 {
		return g.ID[:i]
	}
	return g.ID
}

// WriteJUnit writes r as JUnit XML: one testsuite per guarantee family (in order of
// first appearance), one testcase per guarantee. A failed guarantee carries a
// <failure> with its reason and every piece of evidence, an error an <error>, a
// not-applicable one <skipped message="reason">. Well-known secret patterns are
// scrubbed.
func WriteJUnit(w io.Writer, r *Results) error {
	if r == nil {
		return fmt.Errorf("write junit.xml: results are nil")
	}
	return writeJUnit(w, Redact(r, nil))
}

// writeJUnit renders results that are already scrubbed (Write scrubs once for
// all four files).
func writeJUnit(w io.Writer, r *Results) error {
	ts := ""
	if !r.StartedAt.IsZero() {
		ts = r.StartedAt.UTC().Format(time.RFC3339)
	}
	props := []junitProperty{
		{"run_id", junitText(r.RunID)},
		{"seed", strconv.FormatInt(r.Seed, 10)},
		{"target", junitText(r.Target.Name)},
		{"base_url", junitText(r.Target.BaseURL)},
		{"profiles", junitText(strings.Join(r.Profiles, ","))},
		{"tool_version", junitText(r.Tool.Version)},
	}
	doc := junitTestSuites{Name: junitText(toolName(r)), Time: seconds(r.DurationMS), Timestamp: ts}
	index := map[string]int{}
	var suiteMS []int64
	for _, g := range r.Guarantees {
		fam := family(g)
		i, ok := index[fam]
		if !ok {
			i = len(doc.Suites)
			index[fam] = i
			doc.Suites = append(doc.Suites, junitTestSuite{Name: junitText(fam), Package: "hookcert", Timestamp: ts, Properties: props})
			suiteMS = append(suiteMS, 0)
		}
		s := &doc.Suites[i]
		suiteMS[i] += g.DurationMS
		tc := junitTestCase{
			Name:      junitText(testcaseName(g)),
			Classname: junitText("hookcert." + fam),
			Time:      seconds(g.DurationMS),
		}
		if out := scenarioText(g); out != "" {
			tc.SystemOut = &junitCDATA{Text: junitText(out)}
		}
		switch g.Status {
		case StatusFailed:
			tc.Failure = &junitProblem{Message: junitText(g.Reason), Type: "failed", Body: junitText(problemText(g))}
			s.Failures++
			doc.Failures++
		case StatusError:
			tc.Error = &junitProblem{Message: junitText(g.Reason), Type: "error", Body: junitText(problemText(g))}
			s.Errors++
			doc.Errors++
		case StatusNotApplicable:
			tc.Skipped = &junitSkipped{Message: junitText(g.Reason)}
			s.Skipped++
			doc.Skipped++
		}
		s.Tests++
		doc.Tests++
		s.Cases = append(s.Cases, tc)
	}
	for i := range doc.Suites {
		doc.Suites[i].Time = seconds(suiteMS[i])
	}
	if r.Outcome == RunConfigError || r.Outcome == RunUnreachable {
		// A run that could not start is one error to a CI system, not a pass
		// with no tests.
		doc.Suites = append(doc.Suites, junitTestSuite{Name: "hookcert", Package: "hookcert", Tests: 1, Errors: 1, Time: seconds(r.DurationMS),
			Timestamp: ts, Properties: props, Cases: []junitTestCase{{Name: r.Outcome, Classname: "hookcert.run", Time: seconds(r.DurationMS),
				Error: &junitProblem{Message: junitText(strings.SplitN(r.Error, "\n", 2)[0]), Type: r.Outcome, Body: junitText(r.Error)}}}})
		doc.Tests++
		doc.Errors++
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit.xml: %w", err)
	}
	return nil
}

func toolName(r *Results) string {
	if r.Tool.Name != "" {
		return r.Tool.Name
	}
	return "hookcert"
}

func testcaseName(g Guarantee) string {
	if g.Title == "" {
		return g.ID
	}
	return g.ID + ": " + g.Title
}

// problemText is the body of a failure or error: reason, deviation codes,
// the event types involved, how its race ran, every piece of evidence, and the
// command that reproduces it.
func problemText(g Guarantee) string {
	var b strings.Builder
	b.WriteString(g.Reason)
	b.WriteString("\n")
	if len(g.Codes) > 0 {
		b.WriteString("\nDeviation codes: " + strings.Join(g.Codes, ", ") + "\n")
	}
	if ts := EventTypes(g); len(ts) > 0 {
		b.WriteString("Event types: " + strings.Join(ts, ", ") + "\n")
	}
	if race := RaceText(g); race != "" {
		b.WriteString(sentence(race))
		if !g.Race.Forced {
			b.WriteString(" (rerun with: " + untilItFails(g) + ")")
		}
		b.WriteString("\n")
	}
	if len(g.Evidence) > 0 {
		b.WriteString("\nEvidence:\n")
		for _, e := range g.Evidence {
			b.WriteString("- ")
			b.WriteString(strings.ReplaceAll(e, "\n", "\n  "))
			b.WriteString("\n")
		}
	}
	if g.Repro != "" {
		b.WriteString("\nReproduce: ")
		b.WriteString(g.Repro)
		b.WriteString("\n")
	}
	return b.String()
}

// scenarioText lists scenario verdicts, deviations and notes for <system-out>.
func scenarioText(g Guarantee) string {
	var b strings.Builder
	for _, s := range g.Scenarios {
		fmt.Fprintf(&b, "scenario %q: %s (%d attempts, %d observations)\n", s.Name, s.Status.Label(), len(s.Timeline), len(s.Observed))
		for _, d := range s.Deviations {
			fmt.Fprintf(&b, "  deviation: %s\n", d)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	return b.String()
}

// junitText prepares text from the run (much of it a receiver's words) for the
// file: control characters become visible escapes (escapeControls), newlines stay,
// and nothing XML cannot carry is left.
func junitText(s string) string {
	return xmlText(escapeControls(strings.ReplaceAll(s, "\r\n", "\n"), true))
}

// xmlText replaces characters outside the XML 1.0 Char production (control
// characters other than tab, newline and carriage return, lone surrogates, U+FFFE,
// U+FFFF) with U+FFFD, so evidence quoting a binary response cannot break the file.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}
