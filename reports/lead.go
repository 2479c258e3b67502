package reports

import (
	"slices"
	"strings"
)

// What every rendered report leads with: the guarantees that failed, then
// those that could not be judged, each with what a reader needs to act on it
// (its deviation codes, the event types it delivered, whether the failure
// depended on timing); the passes after them; the not-applicable ones last.

// verdictGroups are a run's guarantees in the order reports show them.
type verdictGroups struct {
	Failed, Errored, Passed, NotApplicable []Guarantee
}

func groupByVerdict(gs []Guarantee) verdictGroups {
	var v verdictGroups
	for _, g := range gs {
		switch g.Status {
		case StatusFailed:
			v.Failed = append(v.Failed, g)
		case StatusError:
			v.Errored = append(v.Errored, g)
		case StatusPassed:
			v.Passed = append(v.Passed, g)
		default:
			v.NotApplicable = append(v.NotApplicable, g)
		}
	}
	return v
}

// EventTypes are the event types involved in g's failure or error: those of
// the events its deviations name, else every type its failing scenarios
// delivered, else every type it delivered. Results written before attempts
// recorded their type give none.
func EventTypes(g Guarantee) []string {
	var failing, all []Attempt
	for _, s := range g.Scenarios {
		all = append(all, s.Timeline...)
		if s.Status == StatusFailed || s.Status == StatusError {
			failing = append(failing, s.Timeline...)
		}
	}
	if len(failing) == 0 {
		failing = all
	}
	text := strings.Join(g.Evidence, "\n") + "\n" + g.Reason
	for _, s := range g.Scenarios {
		text += "\n" + strings.Join(s.Deviations, "\n")
	}
	var named, any []string
	for _, a := range failing {
		if a.EventType == "" {
			continue
		}
		any = append(any, a.EventType)
		if a.EventID != "" && strings.Contains(text, a.EventID) {
			named = append(named, a.EventType)
		}
	}
	if len(named) > 0 {
		any = named
	}
	slices.Sort(any)
	return slices.Compact(any)
}

// RaceText says how g's concurrent deliveries met: forced (the failure does
// not depend on timing) or left to timing (a pass may have been luck, a
// failure may not come back on the first rerun). "" when g sends nothing at
// once.
func RaceText(g Guarantee) string {
	switch {
	case g.Race == nil:
		return ""
	case g.Race.Forced:
		return joinNonEmpty(": ", "race forced", g.Race.How)
	}
	// How may already say so ("left to timing: no lock gate …").
	return joinNonEmpty(": ", "the race was left to timing", strings.TrimPrefix(g.Race.How, "left to timing: "))
}

// raceLabel is RaceText in two words, for tables and badges.
func raceLabel(g Guarantee) string {
	switch {
	case g.Race == nil:
		return ""
	case g.Race.Forced:
		return "race forced"
	}
	return "race left to timing"
}

// untilItFails is the command that hunts a race left to timing: the
// guarantee's repro command rerun with seeds N, N+1, … until it fails.
func untilItFails(g Guarantee) string {
	if strings.HasPrefix(g.Repro, "hookcert repro ") {
		return g.Repro + " --until-it-fails"
	}
	return "hookcert repro " + g.ID + " --until-it-fails"
}

// sentence is s with its first letter upper-case (RaceText starts a line).
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}
