package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func writeFixture(t *testing.T, r *Results, opts Options) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hookcert-report")
	paths, err := Write(dir, r, opts)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return dir, paths
}

func TestGoldenFiles(t *testing.T) {
	dir, paths := writeFixture(t, fixture(), Options{})
	want := []string{FileJSON, FileJUnit, FileMarkdown, FileHTML}
	if len(paths) != len(want) {
		t.Fatalf("Write returned %d paths, want %d: %v", len(paths), len(want), paths)
	}
	for i, name := range want {
		if paths[i] != filepath.Join(dir, name) {
			t.Errorf("path %d = %s, want %s", i, paths[i], filepath.Join(dir, name))
		}
		got, err := os.ReadFile(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden."+name)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		exp, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./reports -update to create it)", err)
		}
		if !bytes.Equal(got, exp) {
			t.Errorf("%s differs from %s (run with -update after checking the change):\n%s", name, golden, firstDiff(exp, got))
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		t.Errorf("dir holds %d entries, want %d (temporary files left behind?)", len(entries), len(want))
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + x + "\n  got:  " + y
		}
	}
	return "(no line differs)"
}

func TestSecretsNeverWritten(t *testing.T) {
	const listed = `s3cr3t-T0k&n<"x">`                              // given in Options.Secrets
	const signing = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"        // not listed: a pattern
	const dbURL = "postgres://hookcert:hunter2pw@127.0.0.1:5432/db" // password not listed
	r := fixture()
	g := &r.Guarantees[0]
	g.Reason = "signature check failed with secret " + listed
	g.Evidence = append(g.Evidence, "receiver logged "+listed, "receiver logged key "+signing, "dsn "+dbURL, "dsn host=db password='hunter2pw' user=x")
	g.Repro += " --database-url " + dbURL
	s := &g.Scenarios[0]
	s.Notes = append(s.Notes, "note "+listed)
	s.Deviations = append(s.Deviations, "deviation "+listed)
	s.Timeline[0].ErrorClass = "err " + listed
	s.Timeline[1].Faults = append(s.Timeline[1].Faults, listed)
	s.Timeline[2].DeliveryID = listed
	s.Observed[0].Values = []string{listed}
	r.Target.BaseURL = "http://user:" + listed + "@127.0.0.1:8080"
	r.Environment["DATABASE_URL"] = dbURL
	r.Environment[listed] = "key"
	before := fixtureJSON(t, r)

	dir, paths := writeFixture(t, r, Options{Secrets: []string{listed, ""}})
	forbidden := []string{
		listed, html.EscapeString(listed), xmlEscape(listed), `s3cr3t-T0k\u0026n`, "s3cr3t-T0k",
		signing, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "hunter2pw",
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range forbidden {
			if bytes.Contains(data, []byte(f)) {
				t.Errorf("%s contains secret form %q", filepath.Base(p), f)
			}
		}
		if !bytes.Contains(data, []byte(Redacted)) {
			t.Errorf("%s has no %s marker: the secrets were dropped rather than redacted?", filepath.Base(p), Redacted)
		}
	}
	// Scrubbing works on a copy: the caller's results keep their values.
	if after := fixtureJSON(t, r); after != before {
		t.Error("Write modified its input")
	}
	got, err := ReadResults(filepath.Join(dir, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	if got.Target.BaseURL != "http://user:"+Redacted+"@127.0.0.1:8080" {
		t.Errorf("base_url = %q", got.Target.BaseURL)
	}
	if want := "whsec_" + Redacted; !strings.Contains(strings.Join(got.Guarantees[0].Evidence, "\n"), want) {
		t.Errorf("evidence lacks %q: %q", want, got.Guarantees[0].Evidence)
	}
}

func fixtureJSON(t *testing.T, r *Results) string {
	t.Helper()
	var b bytes.Buffer
	// WriteJSON scrubs patterns, so compare with plain encoding of the struct.
	if err := jsonEncode(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// withVerdict is the fixture's JSON with its verdict set to v.
func withVerdict(t *testing.T, v string) string {
	r := fixture()
	r.Verdict = v
	return fixtureJSON(t, r)
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func TestScrubPatterns(t *testing.T) {
	s := newScrubber([]string{"whsec_abcdefghijkl"})
	cases := []struct{ in, want string }{
		{"key whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD done", "key whsec_[REDACTED] done"},
		{"sk whsk_AAAABBBB", "sk whsk_[REDACTED]"},
		{"postgres://app:pa55@db:5432/x?sslmode=disable", "postgres://app:[REDACTED]@db:5432/x?sslmode=disable"},
		{"postgresql://app:@db/x", "postgresql://app:[REDACTED]@db/x"},
		{"postgres://app@db/x", "postgres://app@db/x"}, // no password, nothing to hide
		{"host=db password=pa55 user=x", "host=db password=[REDACTED] user=x"},
		{"host=db password='p a s s' user=x", "host=db password=[REDACTED] user=x"},
		{"host=db PASSWORD=pa55 user=x", "host=db PASSWORD=[REDACTED] user=x"},
		{"bare abcdefghijkl from a lib without prefix", "bare [REDACTED] from a lib without prefix"},
		{"whsec_... is the format", "whsec_... is the format"},
		{"http://127.0.0.1:8080/healthz", "http://127.0.0.1:8080/healthz"},
	}
	for _, c := range cases {
		if got := s.scrub(c.in); got != c.want {
			t.Errorf("scrub(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// junit mirrors the JUnit XML shape independently of the writer's types.
type junit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Props    []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Class   string `xml:"classname,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitParsesWithCounts(t *testing.T) {
	r := fixture()
	// Characters XML cannot carry, and a CDATA terminator, must not break the file.
	r.Guarantees[0].Evidence = append(r.Guarantees[0].Evidence, "binary \x00\x1b body ]]> end")
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var j junit
	if err := xml.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if j.Tests != 6 || j.Failures != 2 || j.Errors != 1 || j.Skipped != 1 {
		t.Errorf("totals tests=%d failures=%d errors=%d skipped=%d, want 6/2/1/1", j.Tests, j.Failures, j.Errors, j.Skipped)
	}
	var names []string
	for _, s := range j.Suites {
		names = append(names, s.Name)
		if s.Tests != len(s.Cases) {
			t.Errorf("suite %s: tests=%d but %d testcases", s.Name, s.Tests, len(s.Cases))
		}
	}
	if want := []string{"DEDUP", "ATOMIC", "ORDER", "INBOX"}; !reflect.DeepEqual(names, want) {
		t.Errorf("suites %v, want %v", names, want)
	}
	dedup := j.Suites[0]
	if dedup.Tests != 3 || dedup.Failures != 2 {
		t.Errorf("DEDUP suite tests=%d failures=%d, want 3/2", dedup.Tests, dedup.Failures)
	}
	f := dedup.Cases[0].Failure
	if f == nil {
		t.Fatal("DEDUP-1 has no <failure>")
	}
	if f.Message != r.Guarantees[0].Reason {
		t.Errorf("failure message %q, want the reason %q", f.Message, r.Guarantees[0].Reason)
	}
	for _, e := range r.Guarantees[0].Evidence {
		// Control characters are written as visible escapes, not dropped.
		e = strings.NewReplacer("\x00", `\x00`, "\x1b", `\x1b`, "\n", "\n  ").Replace(e)
		if !strings.Contains(f.Body, e) {
			t.Errorf("failure body lacks evidence %q", e)
		}
	}
	if !strings.Contains(f.Body, r.Guarantees[0].Repro) {
		t.Error("failure body lacks the repro command")
	}
	if dedup.Cases[1].Failure != nil || dedup.Cases[1].Skipped != nil || dedup.Cases[1].Error != nil {
		t.Error("passed DEDUP-2 carries a failure, error or skipped element")
	}
	if e := j.Suites[1].Cases[0].Error; e == nil || e.Message != r.Guarantees[2].Reason {
		t.Errorf("ATOMIC-1 error = %+v", e)
	}
	if s := j.Suites[3].Cases[0].Skipped; s == nil || s.Message != r.Guarantees[4].Reason {
		t.Errorf("INBOX-1 skipped = %+v", s)
	}
	props := map[string]string{}
	for _, p := range dedup.Props {
		props[p.Name] = p.Value
	}
	if props["seed"] != "42" {
		t.Errorf("seed property %q", props["seed"])
	}
}

func TestJSONRoundTrip(t *testing.T) {
	dir, _ := writeFixture(t, fixture(), Options{})
	got, err := ReadResults(filepath.Join(dir, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := fixture()
	want.Verdict = VerdictFailed // Write fills it in
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the results:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestReadResultsRejectsBadFiles(t *testing.T) {
	good := fixtureJSON(t, fixture())
	cases := []struct {
		name, content string
		want          []string // every piece must be in the error
	}{
		{"other schema", strings.Replace(good, Schema, "hookcert.results/v9", 1), []string{"schema", `expected "hookcert.results/v1"`, "v9"}},
		{"no schema", `{"seed": 1}`, []string{"schema", "missing", Schema}},
		{"not json", `<html>`, []string{"parse results"}},
		{"bad status", strings.Replace(good, `"status": "passed"`, `"status": "ok"`, 1), []string{"guarantees[1].status", "DEDUP-2", `"ok"`}},
		{"bad outcome", strings.Replace(good, `"outcome": "unknown"`, `"outcome": "lost"`, 1), []string{"timeline[0].outcome", `"lost"`}},
		{"summary mismatch", strings.Replace(good, `"passed": 2`, `"passed": 3`, 1), []string{"summary"}},
		{"verdict mismatch", withVerdict(t, VerdictPassed), []string{"field verdict", `the guarantees say "failed"`, `"passed"`}},
		{"verdict of a stopped run", `{"schema": "` + Schema + `", "outcome": "unreachable", "verdict": "error", "guarantees": []}`, []string{"field verdict", "must be empty when outcome is set"}},
		{"unknown field", strings.Replace(good, `"seed"`, `"sede"`, 1), []string{"sede"}},
		{"empty id", strings.Replace(good, `"id": "ORDER-1"`, `"id": ""`, 1), []string{"guarantees[3].id", "empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.content == good {
				t.Fatal("replacement did not apply; the case tests nothing")
			}
			p := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadResults(p)
			if err == nil {
				t.Fatal("ReadResults accepted a bad file")
			}
			for _, w := range append(c.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := ReadResults(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("ReadResults of a missing file succeeded")
	}
}

func TestMarkdownTableCellsEscaped(t *testing.T) {
	var buf bytes.Buffer
	r := fixture()
	r.Guarantees[1].Title = "a | b\nc <b>bold</b> `x`"
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	rows, cells := 0, 0
	for _, line := range strings.Split(md, "\n") {
		// Unescaped pipes: borders plus separators, as many as the header's.
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		switch {
		case strings.HasPrefix(line, "| ID "):
			cells = n
		case strings.HasPrefix(line, "| "):
			rows++
			if n != cells {
				t.Errorf("row has %d cell separators, want %d: %s", n, cells, line)
			}
		}
	}
	if want := len(groupByVerdict(r.Guarantees).Passed); rows != want {
		t.Errorf("%d table rows, want one per passed guarantee (%d)", rows, want)
	}
	if !strings.Contains(md, `a \| b<br>c \<b\>bold\</b\> \`+"`x\\`") {
		t.Errorf("title cell not escaped as expected:\n%s", md)
	}
	if _, rest, _ := strings.Cut(md, "\n\n"); !strings.HasPrefix(md, "![hookcert: ") || !strings.HasPrefix(rest, "# hookcert certification: FAILED\n") {
		t.Errorf("badge and headline: %q", strings.SplitN(md, "\n", 4)[:3])
	}
	// The evidence holding ``` must sit in a longer fence so it cannot end the block.
	if !strings.Contains(md, "````text\n") {
		t.Error("evidence with a ``` run is not in a longer fence")
	}
	if strings.Contains(md, "## PASS") || strings.Contains(md, "## N/A") {
		t.Error("sections for passed or not-applicable guarantees")
	}
}

func TestHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	r := fixture()
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url(", `href="http`, "<script>alert(1)"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("evidence with markup is not escaped as text")
	}
	attempts := 0
	for _, g := range r.Guarantees {
		for _, s := range g.Scenarios {
			attempts += len(s.Timeline)
		}
	}
	if n := strings.Count(page, `<rect class="bar `); n != attempts {
		t.Errorf("%d bars, want one per attempt (%d)", n, attempts)
	}
	// One section per judged guarantee, the failed and errored ones open; the
	// not-applicable ones in one folded list.
	v := groupByVerdict(r.Guarantees)
	if n, want := strings.Count(page, `<details class="g `), len(r.Guarantees)-len(v.NotApplicable); n != want {
		t.Errorf("%d collapsible sections, want %d", n, want)
	}
	if n, want := strings.Count(page, " open>"), len(v.Failed)+len(v.Errored); n != want {
		t.Errorf("%d sections open, want %d (the failed and the errored ones)", n, want)
	}
	if n := strings.Count(page, `<details class="na"`); n != 1 || !strings.Contains(page, `not declare capability &#34;inbox&#34;`) {
		t.Errorf("%d folded lists of not-applicable guarantees, want 1 with the reasons", n)
	}
	for _, want := range []string{`class="bar unknown"`, `class="bar unknown open"`, `class="bar fail"`, "lost-ack", "release spread 43µs", "version=3"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestTimelineGeometry(t *testing.T) {
	tl := newTimeline([]Attempt{
		{EventID: "e", Attempt: 1, StartNS: 1000, EndNS: 3000, Outcome: OutcomeAcknowledged},
		{EventID: "e", Attempt: 2, StartNS: 5000, EndNS: 0, Outcome: OutcomeUnknown},
		{EventID: "e", Attempt: 3, StartNS: 7000, EndNS: 7000, Outcome: OutcomeFailed},
	})
	if tl.Rows[0].X != tlLabelW {
		t.Errorf("first bar starts at %v, want the axis origin %d", tl.Rows[0].X, tlLabelW)
	}
	if end := tl.Rows[1].X + tl.Rows[1].W; math.Abs(end-(tlLabelW+tlPlotW)) > 0.01 {
		t.Errorf("unfinished bar ends at %v, want the axis end %d", end, tlLabelW+tlPlotW)
	}
	if tl.Rows[2].W != tlMinBar {
		t.Errorf("instant attempt width %v, want %d", tl.Rows[2].W, tlMinBar)
	}
	if !(tl.Rows[0].X < tl.Rows[1].X && tl.Rows[1].X < tl.Rows[2].X) {
		t.Error("bars are not in time order on the axis")
	}
	if got := tl.Ticks[len(tl.Ticks)-1].X; math.Abs(got-(tlLabelW+tlPlotW)) > 0.01 {
		t.Errorf("last tick at %v, want the axis end", got)
	}
	for _, c := range []struct {
		ns   int64
		want string
	}{{0, "0"}, {850, "850ns"}, {43_000, "43µs"}, {1_500_000, "1.5ms"}, {2_250_000_000, "2.25s"}} {
		if got := fmtNS(c.ns); got != c.want {
			t.Errorf("fmtNS(%d) = %q, want %q", c.ns, got, c.want)
		}
	}
	for _, c := range []struct{ span, want int64 }{{6, 1}, {7, 2}, {13, 5}, {250_000_000, 50_000_000}} {
		if got := niceStep(c.span); got != c.want {
			t.Errorf("niceStep(%d) = %d, want %d", c.span, got, c.want)
		}
	}
}

func TestWriteRejectsInvalidResults(t *testing.T) {
	r := fixture()
	r.Summary.Total = 99
	if _, err := Write(t.TempDir(), r, Options{}); err == nil || !strings.Contains(err.Error(), "summary") {
		t.Errorf("Write with inconsistent summary: err = %v", err)
	}
	r = fixture()
	r.Schema = ""
	if _, err := Write(t.TempDir(), r, Options{}); err != nil {
		t.Errorf("Write with empty schema: %v", err)
	}
}

func jsonEncode(b *bytes.Buffer, r *Results) error {
	enc := json.NewEncoder(b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// Downstream calls are marks after the attempts, on the same axis, with their
// status and operation key; a call the receiver never got an answer to is
// drawn hollow. A page with such a call explains the marks in its legend.
func TestTimelineDrawsSinkCalls(t *testing.T) {
	tl := newTimeline([]Attempt{{EventID: "e", Attempt: 1, StartNS: 1000, EndNS: 3000, Outcome: OutcomeAcknowledged}},
		SinkCall{EventID: "e", Seq: 1, Key: "op-e", Status: 0, Outcome: "lost", AtNS: 2000},
		SinkCall{EventID: "e", Seq: 2, Key: "op-e", Status: 200, Outcome: "replayed", AtNS: 9000})
	if len(tl.Rows) != 3 {
		t.Fatalf("%d rows, want 1 attempt and 2 calls", len(tl.Rows))
	}
	lost, ok := tl.Rows[1], tl.Rows[2]
	if lost.Class != "sink sinkfail" || ok.Class != "sink" || !(tl.Rows[0].X < lost.X && lost.X < ok.X) {
		t.Errorf("calls drawn as %q at %v and %q at %v", lost.Class, lost.X, ok.Class, ok.X)
	}
	if !strings.Contains(lost.Title, "operation key op-e") || lost.Text != "downstream no answer lost" || ok.Text != "downstream 200 replayed" {
		t.Errorf("call texts %q / %q / %q", lost.Title, lost.Text, ok.Text)
	}
	if end := ok.X + ok.W; end > tlLabelW+tlPlotW+0.01 {
		t.Errorf("last call ends at %v, past the axis end %d", end, tlLabelW+tlPlotW)
	}
	if tl := newTimeline(nil, SinkCall{EventID: "e", Seq: 1, Status: 201, Outcome: "applied", AtNS: 5}); tl == nil || len(tl.Rows) != 1 {
		t.Errorf("a scenario with calls and no attempts draws %+v", tl)
	}
	r := fixture()
	r.Guarantees[0].Scenarios[0].Sink = []SinkCall{{EventID: "e", Seq: 1, Status: 200, Outcome: "applied", AtNS: 1}}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `class="bar sink"`) || !strings.Contains(b.String(), "downstream call to the harness") {
		t.Error("the page draws no sink mark or does not explain it")
	}
	b.Reset()
	if err := WriteHTML(&b, fixture()); err != nil || strings.Contains(b.String(), "downstream call to the harness") {
		t.Errorf("a page without calls explains sink marks (err %v)", err)
	}
}

// The run's verdict is the exit status in words: a failure wins over an
// error, an error (or an interruption) over a pass, and a run with nothing
// judged has no verdict. A soak is judged by its keys.
func TestRunVerdict(t *testing.T) {
	gs := func(ss ...Status) []Guarantee {
		var out []Guarantee
		for i, s := range ss {
			out = append(out, Guarantee{ID: fmt.Sprint("G-", i), Status: s})
		}
		return out
	}
	for _, c := range []struct {
		name string
		r    Results
		want string
	}{
		{"passed", Results{Guarantees: gs(StatusPassed, StatusNotApplicable)}, VerdictPassed},
		{"failed and errored", Results{Guarantees: gs(StatusPassed, StatusError, StatusFailed)}, VerdictFailed},
		{"errored", Results{Guarantees: gs(StatusPassed, StatusError)}, VerdictError},
		{"interrupted", Results{Guarantees: gs(StatusPassed), Interrupted: true}, VerdictError},
		{"interrupted with a failure", Results{Guarantees: gs(StatusFailed), Interrupted: true}, VerdictFailed},
		{"nothing applicable", Results{Guarantees: gs(StatusNotApplicable)}, VerdictNone},
		{"stopped", Results{Outcome: RunUnreachable}, ""},
		{"soak passed", Results{Soak: &Soak{Passed: true, Keys: 3}}, VerdictPassed},
		{"soak lost a key", Results{Soak: &Soak{Keys: 3, Lost: 1, Unjudged: 1}}, VerdictFailed},
		{"soak could not read", Results{Soak: &Soak{Keys: 3, Unjudged: 1}}, VerdictError},
		{"soak could not judge", Results{Soak: &Soak{Keys: 3}}, VerdictError},
	} {
		if got := c.r.RunVerdict(); got != c.want {
			t.Errorf("%s: RunVerdict = %q, want %q", c.name, got, c.want)
		}
	}
}

// A results.json written before the verdict field existed still reads.
func TestResultsWithoutVerdictStillRead(t *testing.T) {
	r, err := DecodeResults(strings.NewReader(fixtureJSON(t, fixture())))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "" || r.RunVerdict() != VerdictFailed {
		t.Errorf("verdict %q, RunVerdict %q", r.Verdict, r.RunVerdict())
	}
}
