package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookcert/hookcert/reports"
)

// Verdicts turns the scenarios' outcomes into one verdict per guarantee, in
// catalogue order. A guarantee with no outcome (filtered out) is left out.
// repro renders the command that reproduces one guarantee's verdict.
func Verdicts(outcomes []SpecOutcome, runStart time.Time, repro func(id string) string) []reports.Guarantee {
	byID := map[string][]SpecOutcome{}
	for _, o := range outcomes {
		if o.Guarantee != "" {
			byID[o.Guarantee] = append(byID[o.Guarantee], o)
		}
	}
	var out []reports.Guarantee
	for _, g := range catalogue {
		os := byID[g.ID]
		if len(os) == 0 {
			continue
		}
		rg := reports.Guarantee{ID: g.ID, Family: g.Family, Title: g.Title, Promise: g.Promise}
		if repro != nil {
			rg.Repro = repro(g.ID)
		}
		var failed, errored, skipped, passed int
		for _, o := range os {
			rg.DurationMS += o.Duration.Milliseconds()
			sc := reports.Scenario{Name: o.Name}
			switch o.State {
			case "passed":
				passed++
				sc.Status = reports.StatusPassed
			case "failed":
				failed++
				sc.Status = reports.StatusFailed
			case "skipped":
				skipped++
				sc.Status = reports.StatusNotApplicable
			default:
				errored++
				sc.Status = reports.StatusError
			}
			if r := o.Record; r != nil {
				sc.Deviations = r.Deviations
				sc.Notes = r.Notes
				sc.Timeline = timeline(r, runStart)
				for _, ob := range r.Observed {
					sc.Observed = append(sc.Observed, reports.Observation{Query: ob.Query, Key: ob.Of, Values: []string{ob.Value}, AtNS: ob.At.Sub(runStart).Nanoseconds()})
				}
				rg.Evidence = append(rg.Evidence, r.Deviations...)
			}
			switch o.State {
			case "skipped":
				if rg.Reason == "" {
					rg.Reason = strings.TrimPrefix(o.Message, "not applicable: ")
				}
			case "failed", "error":
				if len(sc.Deviations) == 0 {
					rg.Evidence = append(rg.Evidence, firstLine(o.Message))
				}
			}
			rg.Scenarios = append(rg.Scenarios, sc)
		}
		switch {
		case failed > 0:
			rg.Status = reports.StatusFailed
			rg.Reason = fmt.Sprintf("%d deviation(s) from the promise; first: %s", len(rg.Evidence), firstOr(rg.Evidence, "see the scenario"))
		case errored > 0:
			rg.Status = reports.StatusError
			rg.Reason = "the harness could not judge it: " + firstOr(rg.Evidence, "see the scenario")
		case skipped > 0 && passed == 0:
			rg.Status = reports.StatusNotApplicable
		default:
			rg.Status = reports.StatusPassed
			rg.Reason = ""
		}
		out = append(out, rg)
	}
	return out
}

func timeline(r *Record, runStart time.Time) []reports.Attempt {
	out := make([]reports.Attempt, 0, len(r.Attempts))
	for _, a := range r.Attempts {
		if a.WallStart.IsZero() {
			continue
		}
		start := a.WallStart.Sub(runStart).Nanoseconds()
		out = append(out, reports.Attempt{
			EventID: a.Key.EventID, Attempt: a.Attempt, Copy: a.Copy,
			StartNS: start, EndNS: start + (a.EndNS - a.StartNS),
			HTTPStatus: a.Status, Outcome: string(a.Outcome), Faults: a.Faults,
			ErrorClass: a.ErrorClass, DeliveryID: a.DeliveryID,
		})
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimPrefix(s, "error: ")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func firstOr(xs []string, def string) string {
	if len(xs) == 0 {
		return def
	}
	return xs[0]
}
