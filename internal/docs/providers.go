package docs

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// ProvidersMarkdown is docs/providers.md's table: one row per registered
// profile (the built-in contracts and the Go-only ones alike), every cell read
// from the profile's Facts and, where it has one, its handshake. A value the
// provider does not document says so; nothing is typed here.
func ProvidersMarkdown() string {
	var b strings.Builder
	b.WriteString("\n| provider | signature | event ID | timestamp & tolerance | handshake | retries | sources |\n|---|---|---|---|---|---|---|\n")
	for _, p := range profiles.All() {
		f := p.Facts()
		cells := []string{
			fmt.Sprintf("%s (`%s`)", f.Name, p.ID()),
			signatureCell(f),
			eventIDCell(f),
			timestampCell(f),
			handshakeCell(p),
			retriesCell(f),
			sourcesCell(f.Sources),
		}
		for i, c := range cells {
			cells[i] = cellText(c)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// cellText keeps a value on its table row and out of Markdown's way: no
// line breaks, no unescaped pipe, no "<hex …>" taken for an HTML tag.
func cellText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

func signatureCell(f profiles.Facts) string {
	where := "in the body"
	if f.SignatureHeader != "" {
		where = "`" + f.SignatureHeader + "`"
	}
	scheme := f.SignatureScheme
	if scheme == "" {
		scheme = "undocumented"
	}
	return where + ": " + scheme
}

func eventIDCell(f profiles.Facts) string {
	switch {
	case f.EventIDHeader != "":
		return "header `" + f.EventIDHeader + "`"
	case f.EventIDJSONPath != "":
		return "body `" + f.EventIDJSONPath + "`"
	case f.EventIDRule != "":
		return "none sent; receivers derive it: " + f.EventIDRule
	}
	return "undocumented"
}

func timestampCell(f profiles.Facts) string {
	if f.Tolerance == nil || *f.Tolerance <= 0 {
		return "no signed timestamp"
	}
	s := "signed; tolerance " + dur(*f.Tolerance)
	if f.ResignsOnRetry {
		s += "; re-signed on each attempt"
	}
	return s
}

func handshakeCell(p profiles.Profile) string {
	h, ok := p.(profiles.Handshaker)
	if !ok {
		return "none"
	}
	hf := h.HandshakeFacts()
	s := hf.Method
	if hf.Summary != "" && !strings.HasPrefix(hf.Summary, hf.Method) {
		s += ": " + hf.Summary
	} else if hf.Summary != "" {
		s = hf.Summary
	}
	if hf.Deadline > 0 {
		s += "; answered within " + dur(hf.Deadline)
	} else {
		s += "; deadline undocumented"
	}
	if hf.Revalidate > 0 {
		s += "; repeated every " + dur(hf.Revalidate)
	}
	return s
}

func retriesCell(f profiles.Facts) string {
	r := f.Retry
	var parts []string
	if f.Timeout != nil && *f.Timeout > 0 {
		parts = append(parts, "ack timeout "+dur(*f.Timeout))
	} else {
		parts = append(parts, "ack timeout undocumented")
	}
	switch {
	case r.MaxAttempts == 1:
		parts = append(parts, "no automatic retries")
	case r.MaxAttempts > 1:
		parts = append(parts, fmt.Sprintf("%d attempts", r.MaxAttempts))
	default:
		parts = append(parts, "attempts undocumented")
	}
	if r.MaxAttempts != 1 {
		if r.Horizon != nil && *r.Horizon > 0 {
			parts = append(parts, "over "+dur(*r.Horizon))
		} else {
			parts = append(parts, "horizon undocumented")
		}
		if len(r.Delays) > 0 {
			ds := make([]string, len(r.Delays))
			for i, d := range r.Delays {
				ds[i] = dur(d)
			}
			parts = append(parts, "delays "+strings.Join(ds, ", "))
			if r.ContinuesUntilHorizon {
				parts = append(parts, "then at an undocumented cadence until the horizon")
			}
		} else {
			parts = append(parts, "delays undocumented")
		}
	}
	return strings.Join(parts, "; ")
}

func sourcesCell(sources []string) string {
	if len(sources) == 0 {
		return "none"
	}
	links := make([]string, len(sources))
	for i, s := range sources {
		if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
			links[i] = fmt.Sprintf("[%d](%s)", i+1, s)
		} else {
			links[i] = s
		}
	}
	return strings.Join(links, " ")
}

// dur prints a duration the way the docs write them: 72h, 5m, 30s, 1h30m.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
