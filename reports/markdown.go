package reports

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxMarkdownEvidence caps the evidence lines per guarantee in summary.md: GitHub
// limits a step summary to 1 MiB, and results.json keeps every line anyway.
const maxMarkdownEvidence = 50

// WriteMarkdown writes a summary fit for a GitHub Actions step summary that
// leads with what failed: a badge line (Badge), a headline with the counts
// and overall verdict, then a section per failed guarantee and per guarantee
// that could not be judged (reason, deviation codes, the event types
// involved, how its race was run, evidence, the repro command), then the
// passed guarantees in one compact table, then the not-applicable ones folded
// into one list with their reasons. Well-known secret patterns are scrubbed.
func WriteMarkdown(w io.Writer, r *Results) error {
	if r == nil {
		return fmt.Errorf("write summary.md: results are nil")
	}
	return writeMarkdown(w, Redact(r, nil))
}

// Badge is a shields.io static badge for s, as one line of Markdown: the
// counts that are not zero, failures first ("1 failed · 23 passed · 2 not
// applicable"; not-applicable guarantees are counted but never passes),
// green only for a PASSED verdict. It is text: rendering it uses no network,
// the page that shows it fetches the image, and the alt text says the same.
func Badge(s Summary) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{s.Failed, "failed"}, {s.Error, "error"}, {s.Passed, "passed"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	color := "lightgrey"
	switch s.Verdict() {
	case "PASSED":
		color = "brightgreen"
	case "FAILED":
		color = "red"
	case "ERROR":
		color = "orange"
	default:
		parts = []string{"nothing judged"}
	}
	if s.NotApplicable > 0 {
		parts = append(parts, fmt.Sprintf("%d not applicable", s.NotApplicable))
	}
	return badgeLine(strings.Join(parts, " · "), color)
}

// runBadge is Badge, or for a run that stopped before it judged anything, why
// (red, but grey when nothing was selected: no receiver was at fault).
func runBadge(r *Results, s Summary) string {
	if !r.Stopped() {
		return Badge(s)
	}
	color := "red"
	if r.Outcome == RunNothingSelected {
		color = "lightgrey"
	}
	return badgeLine(strings.ToLower(r.OutcomeTitle()), color)
}

func badgeLine(msg, color string) string {
	return fmt.Sprintf("![hookcert: %s](https://img.shields.io/badge/hookcert-%s-%s)", msg, badgeText(msg), color)
}

// badgeText escapes one field of a shields.io badge path: "-" and "_" separate
// and space fields there, so they are doubled, then the result is path-escaped.
func badgeText(s string) string {
	s = strings.NewReplacer("-", "--", "_", "__").Replace(s)
	return url.PathEscape(s)
}

// writeMarkdown renders results that are already scrubbed (Write scrubs once for
// all four files).
func writeMarkdown(w io.Writer, r *Results) error {
	bw := bufio.NewWriter(w)
	s := Summarize(r.Guarantees)
	target := r.Target.Name
	if target == "" {
		target = r.Target.BaseURL
	}
	fmt.Fprintf(bw, "%s\n\n", runBadge(r, s))
	if r.Stopped() {
		return writeStoppedMarkdown(bw, r, target)
	}
	fmt.Fprintf(bw, "# hookcert certification: %s\n\n", VerdictTitle(r.RunVerdict()))
	fmt.Fprintf(bw, "**%d failed, %d error, %d passed, %d not applicable** of %d guarantees",
		s.Failed, s.Error, s.Passed, s.NotApplicable, s.Total)
	if target != "" {
		fmt.Fprintf(bw, " for target %s", mdInline(target))
	}
	fmt.Fprintf(bw, " (seed %d", r.Seed)
	if r.RunID != "" {
		fmt.Fprintf(bw, ", run %s", mdInline(r.RunID))
	}
	if len(r.Profiles) > 0 {
		fmt.Fprintf(bw, ", profiles %s", mdInline(strings.Join(r.Profiles, ", ")))
	}
	fmt.Fprintf(bw, ", %s).\n\n", fmtMS(r.DurationMS))
	if r.Interrupted {
		bw.WriteString("The run was interrupted: what it could not judge is an error, never a pass.\n\n")
	}

	v := groupByVerdict(r.Guarantees)
	if len(v.Failed) > 0 {
		fmt.Fprintf(bw, "## Failed (%d)\n\n", len(v.Failed))
		for _, g := range v.Failed {
			writeProblemMarkdown(bw, g)
		}
	}
	if len(v.Errored) > 0 {
		fmt.Fprintf(bw, "## Could not be judged (%d)\n\n", len(v.Errored))
		for _, g := range v.Errored {
			writeProblemMarkdown(bw, g)
		}
	}
	writePassedMarkdown(bw, v.Passed)
	writeNotApplicableMarkdown(bw, v.NotApplicable)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary.md: %w", err)
	}
	return nil
}

// writeProblemMarkdown is one failed or errored guarantee: what went wrong,
// its codes, the event types involved, its race, evidence and repro command.
func writeProblemMarkdown(bw *bufio.Writer, g Guarantee) {
	fmt.Fprintf(bw, "### %s %s: %s\n\n", g.Status.Label(), mdInline(g.ID), mdInline(g.Title))
	if g.Reason != "" {
		fmt.Fprintf(bw, "%s\n\n", mdPara(mdTruncate(g.Reason)))
	}
	var facts []string
	if g.Promise != "" {
		facts = append(facts, "Promise: "+mdInline(g.Promise))
	}
	if len(g.Codes) > 0 {
		facts = append(facts, "Deviation codes: "+mdCodes(g.Codes))
	}
	if ts := EventTypes(g); len(ts) > 0 {
		facts = append(facts, "Event types: "+mdCodes(ts))
	}
	if race := RaceText(g); race != "" {
		line := mdInline(sentence(race))
		switch {
		case g.Race.Forced && g.Status == StatusFailed:
			line += " — the failure does not depend on timing: its repro command fails again"
		case !g.Race.Forced:
			line += " — rerun with " + mdCode(untilItFails(g))
		}
		facts = append(facts, line)
	}
	for _, f := range facts {
		bw.WriteString("- " + f + "\n")
	}
	if len(facts) > 0 {
		bw.WriteString("\n")
	}
	if len(g.Evidence) > 0 {
		shown := g.Evidence
		if len(shown) > maxMarkdownEvidence {
			shown = shown[:maxMarkdownEvidence]
		}
		fmt.Fprintf(bw, "Evidence (%d):\n\n", len(g.Evidence))
		// One "- " item per piece of evidence, continuation lines indented, so a
		// multi-line item cannot pass for two.
		items := make([]string, len(shown))
		for i, e := range shown {
			items[i] = "- " + strings.ReplaceAll(mdTruncate(e), "\n", "\n  ")
		}
		text := strings.Join(items, "\n")
		if more := len(g.Evidence) - len(shown); more > 0 {
			text += fmt.Sprintf("\n… and %d more in results.json", more)
		}
		writeFence(bw, "text", text)
	}
	if g.Repro != "" {
		bw.WriteString("Reproduce:\n\n")
		writeFence(bw, "sh", mdTruncate(g.Repro))
	}
}

// writePassedMarkdown is the passed guarantees in one compact table; the
// race column appears when one of them raced, since a pass whose race was
// left to timing may have been luck.
func writePassedMarkdown(bw *bufio.Writer, gs []Guarantee) {
	if len(gs) == 0 {
		return
	}
	races := slices.ContainsFunc(gs, func(g Guarantee) bool { return g.Race != nil })
	fmt.Fprintf(bw, "## Passed (%d)\n\n", len(gs))
	if races {
		bw.WriteString("| ID | Guarantee | Race | Time |\n|---|---|---|---|\n")
	} else {
		bw.WriteString("| ID | Guarantee | Time |\n|---|---|---|\n")
	}
	for _, g := range gs {
		race := ""
		if races {
			race = " " + mdCell(raceLabel(g)) + " |"
		}
		fmt.Fprintf(bw, "| %s | %s |%s %s |\n", mdCell(g.ID), mdCell(g.Title), race, fmtMS(g.DurationMS))
	}
	bw.WriteString("\n")
}

// writeNotApplicableMarkdown is the not-applicable guarantees folded into
// one list with their reasons: what the target would have to declare.
func writeNotApplicableMarkdown(bw *bufio.Writer, gs []Guarantee) {
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(bw, "## Not applicable (%d)\n\n", len(gs))
	fmt.Fprintf(bw, "<details>\n<summary>%d %s what the target does not declare — never counted as passed</summary>\n\n",
		len(gs), plural(len(gs), "guarantee needs", "guarantees need"))
	for _, g := range gs {
		line := "- **" + mdInline(g.ID) + "** " + mdInline(g.Title)
		if g.Reason != "" {
			line += ": " + mdInline(mdTruncate(g.Reason))
		}
		bw.WriteString(line + "\n")
	}
	bw.WriteString("\n</details>\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// mdCode is s as an inline code span: control characters escaped, newlines
// folded, and a fence longer than any backtick run inside it.
func mdCode(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(escapeControls(s, true))
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func mdCodes(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = mdCode(s)
	}
	return strings.Join(out, ", ")
}

// writeFence writes text in a fenced code block whose fence is longer than any
// backtick run inside it, so the content cannot close the block early.
// Control characters are written as escapes (a code block shows them raw).
func writeFence(w *bufio.Writer, lang, text string) {
	text = escapeControls(strings.ReplaceAll(text, "\r\n", "\n"), true)
	n, run := 3, 0
	for _, c := range text {
		if c == '`' {
			run++
			if run >= n {
				n = run + 1
			}
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", n)
	fmt.Fprintf(w, "%s%s\n%s\n%s\n\n", fence, lang, strings.TrimRight(text, "\n"), fence)
}

// mdPunct is the ASCII punctuation that would start Markdown or inline HTML. Every
// ASCII punctuation character may be backslash-escaped in CommonMark, so escaping
// these renders them literally.
const mdPunct = "\\`*_[]<>|~&#!"

// maxMarkdownText caps one reason, cell or evidence item in summary.md, in bytes;
// a longer text is cut at a character boundary and says how much is left out.
const maxMarkdownText = 2000

// mdTruncate cuts s to maxMarkdownText bytes at a rune boundary.
func mdTruncate(s string) string {
	if len(s) <= maxMarkdownText {
		return s
	}
	cut := maxMarkdownText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes in results.json)", s[:cut], len(s)-cut)
}

// isControl reports the runes escapeControls writes as escapes: C0 and C1 control
// characters, DEL, line and paragraph separators, zero-width and byte-order marks,
// and the bidirectional overrides and isolates that can make text read differently
// from what it is.
func isControl(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7F && r <= 0x9F,
		r >= 0x200B && r <= 0x200F, r >= 0x2028 && r <= 0x202E,
		r >= 0x2066 && r <= 0x2069, r == 0xFEFF:
		return true
	}
	return false
}

// escapeControls writes control characters (isControl) and invalid UTF-8 bytes as
// visible escapes (\x1b, \u202e, \r), so that text a receiver sent cannot drive a
// terminal, hide or reorder words, or break a line where the writer did not.
// keepLines keeps newlines and tabs as they are.
func escapeControls(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || isControl(r) && !(keepLines && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\r':
			b.WriteString("\\r")
		case r == '\t':
			b.WriteString("\\t")
		case r == '\n':
			b.WriteString("\\n")
		case r < 0x80 && isControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		case isControl(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// OneLine is s with its control, invisible and bidirectional characters and
// invalid bytes written as visible escapes, newlines included: text a
// receiver sent, printed on one line of a terminal, can neither drive it nor
// read differently from what it is.
func OneLine(s string) string { return escapeControls(s, false) }

// mdInline escapes text for use inside a paragraph or heading, folding newlines and
// writing other control characters as escapes.
func mdInline(s string) string {
	var b strings.Builder
	for _, c := range escapeControls(strings.ReplaceAll(s, "\r\n", "\n"), true) {
		switch {
		case c == '\n' || c == '\t':
			b.WriteByte(' ')
		case strings.ContainsRune(mdPunct, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mdPara is mdInline for text that starts a paragraph: leading blanks (an indented
// code block) are dropped, and a leading "-", "+", "=" or "1." cannot start a list, a
// rule or a heading underline.
func mdPara(s string) string {
	s = strings.TrimLeft(mdInline(s), " ")
	if s != "" && strings.ContainsRune("-+=", rune(s[0])) {
		return "\\" + s
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
		return s[:i] + "\\" + s[i:]
	}
	return s
}

// mdCell escapes text for a GFM table cell: like mdInline, but a newline becomes
// <br> so multi-line text stays in its cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(mdTruncate(s), "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = mdInline(l)
	}
	return strings.Join(lines, "<br>")
}

// fmtMS formats a millisecond duration for people.
func fmtMS(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	}
	return fmt.Sprintf("%dm%02ds", ms/60_000, (ms/1000)%60)
}

// writeStoppedMarkdown is the summary of a run that judged nothing: the
// headline, one line saying why, and the error in full when it has more lines.
func writeStoppedMarkdown(bw *bufio.Writer, r *Results, target string) error {
	fmt.Fprintf(bw, "# hookcert certification: %s\n\n", r.OutcomeTitle())
	first, rest, _ := strings.Cut(strings.TrimSpace(r.Error), "\n")
	line := "Nothing was judged"
	if target != "" {
		line += " for target " + mdInline(target)
	}
	fmt.Fprintf(bw, "%s (seed %d): %s\n\n", line, r.Seed, mdPara(mdTruncate(first)))
	if strings.TrimSpace(rest) != "" {
		writeFence(bw, "text", mdTruncate(strings.TrimSpace(r.Error)))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary.md: %w", err)
	}
	return nil
}
