package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// within fails the test if f does not return in d: the inputs below used to make the
// writers loop until memory ran out, and a hang should fail with a message rather
// than at the package timeout.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

func TestTimelineExtremeTimes(t *testing.T) {
	cases := map[string][]Attempt{
		"start near MaxInt64": {
			{EventID: "e", Attempt: 1, StartNS: 1000, EndNS: 2000, Outcome: OutcomeAcknowledged},
			{EventID: "e", Attempt: 2, StartNS: math.MaxInt64 - 1, EndNS: math.MaxInt64, Outcome: OutcomeFailed},
		},
		"only MaxInt64": {{EventID: "e", Attempt: 1, StartNS: math.MaxInt64, EndNS: math.MaxInt64, Outcome: OutcomeFailed}},
		"MinInt64 start, MaxInt64 end": {
			{EventID: "e", Attempt: 1, StartNS: math.MinInt64, EndNS: math.MaxInt64, Outcome: OutcomeAcknowledged},
		},
		"negative unfinished": {{EventID: "e", Attempt: 1, StartNS: -5, EndNS: math.MinInt64, Outcome: OutcomeUnknown}},
	}
	for name, as := range cases {
		t.Run(name, func(t *testing.T) {
			var tl *svgTimeline
			within(t, 5*time.Second, "newTimeline", func() { tl = newTimeline(as) })
			if len(tl.Ticks) < 2 || len(tl.Ticks) > maxTicks+1 {
				t.Errorf("%d ticks, want 2..%d", len(tl.Ticks), maxTicks+1)
			}
			for _, tk := range tl.Ticks {
				if math.IsNaN(tk.X) || tk.X < tlLabelW-0.01 || tk.X > tlLabelW+tlPlotW+0.01 {
					t.Errorf("tick %q at x=%v, outside the plot", tk.Label, tk.X)
				}
			}
			for _, r := range tl.Rows {
				if math.IsNaN(r.X) || math.IsNaN(r.W) || r.X < tlLabelW-0.01 || r.X+r.W > tlLabelW+tlPlotW+tlMinBar+0.01 || r.W < tlMinBar {
					t.Errorf("bar %s at x=%v w=%v, outside the plot", r.Who, r.X, r.W)
				}
			}
			r := fixture()
			r.Guarantees[0].Scenarios[0].Timeline = as
			var buf bytes.Buffer
			within(t, 10*time.Second, "WriteHTML", func() {
				if err := WriteHTML(&buf, r); err != nil {
					t.Error(err)
				}
			})
			if !strings.Contains(buf.String(), "out of range, drawn clamped") {
				t.Error("the clamped attempt's tooltip does not say its times were out of range")
			}
		})
	}
	for _, c := range []struct {
		ns   int64
		want string
	}{{math.MinInt64, "-9223372036.85s"}, {math.MaxInt64, "9223372036.85s"}, {-850, "-850ns"}} {
		if got := fmtNS(c.ns); got != c.want {
			t.Errorf("fmtNS(%d) = %q, want %q", c.ns, got, c.want)
		}
	}
	for _, span := range []int64{1, 6, 7, 999, math.MaxInt64 / 2, math.MaxInt64} {
		s := niceStep(span)
		n := span / s
		if span%s != 0 {
			n++
		}
		if s <= 0 || n > 6 {
			t.Errorf("niceStep(%d) = %d: %d intervals", span, s, n)
		}
	}
}

func TestTimelineRowsCapped(t *testing.T) {
	as := make([]Attempt, maxTimelineRows+250)
	for i := range as {
		as[i] = Attempt{EventID: "e", Attempt: i + 1, StartNS: int64(i) * 1000, EndNS: int64(i)*1000 + 500, Outcome: OutcomeFailed}
	}
	r := fixture()
	r.Guarantees[0].Scenarios[0].Timeline = as
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	others := 0
	for _, g := range r.Guarantees[1:] {
		for _, s := range g.Scenarios {
			others += len(s.Timeline)
		}
	}
	if n := strings.Count(page, `<rect class="bar `); n != maxTimelineRows+others {
		t.Errorf("%d bars, want %d (capped) + %d", n, maxTimelineRows, others)
	}
	if !strings.Contains(page, "… and 250 more attempts in results.json") {
		t.Error("the page does not say how many attempts it left out")
	}
}

func TestResultsSizeCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: its size is what counts, and ReadResults must not read it.
	const size = 300 << 20
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadResults(p)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadResults(300 MiB) = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{p, fmt.Sprint(size), "300 MiB", fmt.Sprint(MaxResultsBytes), "64 MiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// A stream gives no size: DecodeResults stops reading one byte past the limit.
	src := &countingReader{r: io.MultiReader(strings.NewReader(`{"schema": "`+Schema+`", "run_id": "`), neverEnding('x'))}
	_, err = DecodeResults(src)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("DecodeResults(endless stream) = %v, want ErrTooLarge naming the limit", err)
	}
	if src.n > MaxResultsBytes+1 {
		t.Errorf("DecodeResults read %d bytes, want at most the limit + 1", src.n)
	}
	// Exactly at the limit is accepted as far as size goes (this one is bad JSON).
	at := bytes.Repeat([]byte(" "), MaxResultsBytes)
	if _, err := DecodeResults(bytes.NewReader(at)); errors.Is(err, ErrTooLarge) {
		t.Errorf("content of exactly MaxResultsBytes refused as too large: %v", err)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadResultsTrailingContent(t *testing.T) {
	good := fixtureJSON(t, fixture())
	for name, content := range map[string]string{
		"second object": good + `{"schema": "x"}`,
		"garbage":       good + "garbage",
	} {
		if _, err := DecodeResults(strings.NewReader(content)); err == nil {
			t.Errorf("%s after the results: accepted", name)
		}
	}
}

// hostile is text a receiver could send back: terminal escapes, a bidi override that
// reorders what a reader sees, NUL, a lone carriage return, invalid UTF-8 and a line
// separator.
const hostile = "ok\x1b[2J\x1b[31mred\u202egnp.exe\x00\rover\xff\u2028next"

// noRawControls reports the first raw control character (other than \n and \t).
func noRawControls(s string) string {
	for i, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if isControl(r) || (r == '\uFFFD' && s[i] == 0xff) {
			return fmt.Sprintf("%U at byte %d", r, i)
		}
	}
	return ""
}

func TestMarkdownControlCharactersEscaped(t *testing.T) {
	r := fixture()
	g := &r.Guarantees[0]
	g.Reason = hostile
	g.Title = hostile
	g.Promise = hostile
	g.Evidence = append(g.Evidence, "body: "+hostile)
	g.Repro = "hookcert repro " + hostile
	r.Target.Name = hostile
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if bad := noRawControls(md); bad != "" {
		t.Errorf("summary.md holds a raw control character: %s", bad)
	}
	// Escaped and visible: in paragraphs the backslash is itself escaped, in code
	// blocks it is literal.
	for _, want := range []string{
		`ok\\x1b\[2J\\x1b\[31mred\\u202egnp.exe\\x00\\rover\\xff\\u2028next`,
		"body: ok\\x1b[2J\\x1b[31mred\\u202egnp.exe\\x00\\rover\\xff\\u2028next",
		"hookcert repro ok\\x1b[2J",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownReasonCannotStartABlock(t *testing.T) {
	for reason, want := range map[string]string{
		"- not a list":   `\- not a list`,
		"+ not a list":   `\+ not a list`,
		"---":            `\---`,
		"===":            `\===`,
		"12. not a list": `12\. not a list`,
		"3) not a list":  `3\) not a list`,
		"    not code":   "not code",
		"# not heading":  `\# not heading`,
		"> not a quote":  `\> not a quote`,
		"2024 was fine.": "2024 was fine.",
	} {
		r := fixture()
		r.Guarantees[0].Reason = reason
		var buf bytes.Buffer
		if err := WriteMarkdown(&buf, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "\n\n"+want+"\n\n") {
			t.Errorf("reason %q: no paragraph %q in:\n%s", reason, want, buf.String())
		}
	}
}

func TestMarkdownLongTextCut(t *testing.T) {
	r := fixture()
	long := strings.Repeat("é", 3000) // 6000 bytes, two per rune
	r.Guarantees[0].Reason = long
	r.Guarantees[0].Evidence = []string{long}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if strings.Contains(md, long) {
		t.Error("a 6000-byte reason is written whole")
	}
	if n := strings.Count(md, "… (4000 more bytes in results.json)"); n != 2 {
		t.Errorf("%d cut marks, want 2 (reason, evidence):\n%s", n, md)
	}
	if strings.ContainsRune(md, '\uFFFD') {
		t.Error("a cut split a character")
	}
}

func TestJUnitControlCharactersEscaped(t *testing.T) {
	r := fixture()
	r.Guarantees[0].Reason = hostile
	r.Guarantees[0].Evidence = []string{hostile}
	r.Guarantees[0].Title = hostile
	r.RunID = hostile
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	if bad := noRawControls(buf.String()); bad != "" {
		t.Errorf("junit.xml holds a raw control character: %s", bad)
	}
	var j junit
	if err := xml.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	const want = `ok\x1b[2J\x1b[31mred\u202egnp.exe\x00\rover\xff\u2028next`
	f := j.Suites[0].Cases[0].Failure
	if f == nil || f.Message != want || !strings.Contains(f.Body, want) || !strings.Contains(j.Suites[0].Cases[0].Name, want) {
		t.Errorf("failure = %+v, want message and body %q", f, want)
	}
}
