package reports

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// maxMarkdownEvidence caps the evidence lines per guarantee in summary.md: GitHub
// limits a step summary to 1 MiB, and results.json keeps every line anyway.
const maxMarkdownEvidence = 50

// WriteMarkdown writes a summary fit for a GitHub Actions step summary: a headline
// with the counts and overall verdict, a table of every guarantee, then a section
// per failed or errored guarantee with its evidence and the repro command in code
// blocks. Well-known secret patterns are scrubbed.
func WriteMarkdown(w io.Writer, r *Results) error {
	if r == nil {
		return fmt.Errorf("write summary.md: results are nil")
	}
	r = Redact(r, nil)
	bw := bufio.NewWriter(w)
	s := Summarize(r.Guarantees)
	target := r.Target.Name
	if target == "" {
		target = r.Target.BaseURL
	}
	fmt.Fprintf(bw, "# hookcert certification: %s\n\n", s.Verdict())
	fmt.Fprintf(bw, "**%d passed, %d failed, %d error, %d not applicable** of %d guarantees",
		s.Passed, s.Failed, s.Error, s.NotApplicable, s.Total)
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

	bw.WriteString("| ID | Status | Promise | Reason |\n|---|---|---|---|\n")
	for _, g := range r.Guarantees {
		fmt.Fprintf(bw, "| %s | %s | %s | %s |\n", mdCell(g.ID), g.Status.Label(), mdCell(g.Promise), mdCell(g.Reason))
	}
	bw.WriteString("\n")

	for _, g := range r.Guarantees {
		if g.Status != StatusFailed && g.Status != StatusError {
			continue
		}
		fmt.Fprintf(bw, "## %s %s: %s\n\n", g.Status.Label(), mdInline(g.ID), mdInline(g.Title))
		if g.Reason != "" {
			fmt.Fprintf(bw, "%s\n\n", mdInline(g.Reason))
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
				items[i] = "- " + strings.ReplaceAll(e, "\n", "\n  ")
			}
			text := strings.Join(items, "\n")
			if more := len(g.Evidence) - len(shown); more > 0 {
				text += fmt.Sprintf("\n… and %d more in results.json", more)
			}
			writeFence(bw, "text", text)
		}
		if g.Repro != "" {
			bw.WriteString("Reproduce:\n\n")
			writeFence(bw, "sh", g.Repro)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary.md: %w", err)
	}
	return nil
}

// writeFence writes text in a fenced code block whose fence is longer than any
// backtick run inside it, so the content cannot close the block early.
func writeFence(w *bufio.Writer, lang, text string) {
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

// mdInline escapes text for use inside a paragraph or heading, folding newlines.
func mdInline(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\r':
		case c == '\n':
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

// mdCell escapes text for a GFM table cell: like mdInline, but a newline becomes
// <br> so multi-line text stays in its cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
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
