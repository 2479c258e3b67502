// Package check is the checker stage: it judges a certification run from its
// history alone — the delivery attempts, the observations of the receiver's
// state and what each scenario noted — and produces results.json. The suite
// that ran the scenarios judges nothing itself, so a stored history can be
// re-judged offline (`hookcert check --from DIR`) with the same outcome, as
// Jepsen's analyze does.
package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// RunInfo is what a certification records about itself in the history's meta
// (history.Meta.Run), so that results.json can be rebuilt from the history.
type RunInfo struct {
	Tool        reports.ToolInfo   `json:"tool"`
	Target      reports.TargetInfo `json:"target"`
	Profiles    []string           `json:"profiles"`
	Environment map[string]string  `json:"environment,omitempty"`
	// Repro maps a guarantee ID to the command that reproduces its verdict.
	Repro map[string]string `json:"repro,omitempty"`
	// Interrupted is set when the run was stopped before it ended.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Deviation is one way the receiver broke a promise, with its stable code.
type Deviation = scenarios.Deviation

// Verdict is the checker's judgement of one scenario.
type Verdict struct {
	Status     reports.Status
	Reason     string
	Deviations []Deviation
	Notes      []string
}

// Judge rebuilds the results of a certification run from its history.
func Judge(h *history.History) (*reports.Results, error) {
	var info RunInfo
	if len(h.Meta.Run) > 0 {
		if err := json.Unmarshal(h.Meta.Run, &info); err != nil {
			return nil, fmt.Errorf("history meta.run: %w", err)
		}
	}
	res := &reports.Results{
		Schema: reports.Schema, Tool: info.Tool, RunID: h.Meta.RunID, Seed: h.Meta.Seed,
		StartedAt: h.Meta.Started, FinishedAt: h.Meta.Finished,
		Target: info.Target, Profiles: info.Profiles, Environment: info.Environment,
		Interrupted: info.Interrupted,
	}
	if !h.Meta.Finished.IsZero() {
		res.DurationMS = h.Meta.Finished.Sub(h.Meta.Started).Milliseconds()
	}
	byScenario := split(h)
	byGuarantee := map[string][]int{}
	for i, sc := range h.Scenarios {
		byGuarantee[sc.Guarantee] = append(byGuarantee[sc.Guarantee], i)
	}
	for _, g := range scenarios.Catalogue() {
		idx := byGuarantee[g.ID]
		if len(idx) == 0 {
			continue
		}
		rg := reports.Guarantee{ID: g.ID, Family: g.Family, Title: g.Title, Promise: g.Promise, Repro: info.Repro[g.ID]}
		var failed, errored, na, passed int
		var errReason, naReason string
		codes := map[string]bool{}
		for _, i := range idx {
			sc := h.Scenarios[i]
			part := byScenario[sc.Index]
			if part == nil {
				part = &Part{}
			}
			v := Scenario(g, sc, part)
			rs := reports.Scenario{Name: sc.Name, Status: v.Status, Notes: v.Notes, Timeline: timeline(part.attempts)}
			for _, c := range part.sink {
				rs.Sink = append(rs.Sink, reports.SinkCall{EventID: c.EventID, Seq: c.Seq, Key: c.Key, Status: c.Status, Outcome: c.Outcome, AtNS: c.AtNS})
			}
			for _, d := range v.Deviations {
				rs.Deviations = append(rs.Deviations, d.Text)
				rs.Codes = append(rs.Codes, d.Code)
				rg.Evidence = append(rg.Evidence, d.Text)
				codes[d.Code] = true
			}
			for _, o := range part.obs {
				rs.Observed = append(rs.Observed, reports.Observation{Query: o.Query, Key: paramsText(o.Params), Values: ObservationValues(o), AtNS: o.AtNS})
			}
			rg.DurationMS += (sc.EndNS - sc.StartNS) / 1e6
			switch v.Status {
			case reports.StatusFailed:
				failed++
			case reports.StatusError:
				errored++
				if errReason == "" {
					errReason = v.Reason
				}
			case reports.StatusNotApplicable:
				na++
				if naReason == "" {
					naReason = v.Reason
				}
			default:
				passed++
			}
			rg.Scenarios = append(rg.Scenarios, rs)
		}
		rg.Race = race(g, h, idx, byScenario)
		for c := range codes {
			rg.Codes = append(rg.Codes, c)
		}
		sort.Strings(rg.Codes)
		switch {
		case failed > 0:
			rg.Status = reports.StatusFailed
			rg.Reason = fmt.Sprintf("%d deviation(s) from the promise; first: %s", len(rg.Evidence), rg.Evidence[0])
		case errored > 0:
			rg.Status = reports.StatusError
			rg.Reason = "the harness could not judge it: " + errReason
		case na > 0 && passed == 0:
			rg.Status = reports.StatusNotApplicable
			rg.Reason = naReason
		default:
			rg.Status = reports.StatusPassed
		}
		res.Guarantees = append(res.Guarantees, rg)
	}
	res.Summary = reports.Summarize(res.Guarantees)
	return res, nil
}

// PartOf returns scenario index's share of h, for Scenario.
func PartOf(h *history.History, index int) *Part { return split(h)[index] }

// Part is one scenario's share of the history.
type Part struct {
	attempts []history.Attempt
	obs      []history.Observation
	releases []history.Release
	sink     []history.Sink
	gates    []history.Gate
	apiCalls []history.APICall
}

func split(h *history.History) map[int]*Part {
	m := map[int]*Part{}
	get := func(i int) *Part {
		p := m[i]
		if p == nil {
			p = &Part{}
			m[i] = p
		}
		return p
	}
	for _, a := range h.Attempts {
		get(a.Scenario).attempts = append(get(a.Scenario).attempts, a)
	}
	for _, o := range h.Observations {
		get(o.Scenario).obs = append(get(o.Scenario).obs, o)
	}
	for _, r := range h.Releases {
		get(r.Scenario).releases = append(get(r.Scenario).releases, r)
	}
	for _, c := range h.Sink {
		get(c.Scenario).sink = append(get(c.Scenario).sink, c)
	}
	for _, g := range h.Gates {
		get(g.Scenario).gates = append(get(g.Scenario).gates, g)
	}
	for _, c := range h.APICalls {
		get(c.Scenario).apiCalls = append(get(c.Scenario).apiCalls, c)
	}
	return m
}

// Scenario judges one scenario of guarantee g from its attempts and observations.
func Scenario(g scenarios.Guarantee, sc history.Scenario, p *Part) Verdict {
	if p == nil {
		p = &Part{}
	}
	switch sc.State {
	case history.ScenarioNotApplicable:
		return Verdict{Status: reports.StatusNotApplicable, Reason: sc.Reason, Notes: sc.Notes}
	case history.ScenarioError:
		return Verdict{Status: reports.StatusError, Reason: sc.Reason, Notes: sc.Notes}
	case history.ScenarioRan:
	default:
		return Verdict{Status: reports.StatusError, Reason: fmt.Sprintf("history: scenario %d has state %q", sc.Index, sc.State), Notes: sc.Notes}
	}
	f := g.CheckCalls(sc, p.attempts, p.obs, p.sink, p.apiCalls)
	out := Verdict{Notes: append(append([]string(nil), sc.Notes...), f.Notes...), Deviations: f.Deviations}
	switch {
	case f.Unjudged != "":
		out.Status, out.Reason = reports.StatusError, f.Unjudged
	case len(f.Deviations) > 0:
		out.Status = reports.StatusFailed
	case f.NotApplicable != "":
		out.Status, out.Reason = reports.StatusNotApplicable, f.NotApplicable
	default:
		out.Status = reports.StatusPassed
	}
	return out
}

func timeline(as []history.Attempt) []reports.Attempt {
	out := make([]reports.Attempt, 0, len(as))
	for _, a := range as {
		out = append(out, reports.Attempt{
			EventID: a.Key.EventID, EventType: a.EventType, Attempt: a.Attempt, Copy: a.Copy,
			StartNS: a.StartNS, EndNS: a.EndNS,
			HTTPStatus: a.Status, Outcome: string(a.Outcome), Faults: a.Faults,
			ErrorClass: a.ErrorClass, DeliveryID: a.DeliveryID,
		})
	}
	return out
}

func paramsText(ps []string) string {
	var keep []string
	for _, p := range ps {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return "(" + strings.Join(keep, ", ") + ")"
}

// ObservationValue renders what a read returned: every column the query
// returned, named (ObservationValues), on one line.
func ObservationValue(o history.Observation) string { return strings.Join(ObservationValues(o), " ") }

// ObservationValues are what a read returned, one value per column the query
// returned, named where a number alone would not say what it is: a count, an
// object's version and status, a lifecycle state, an inbox or outbox message's
// state and attempts, the sink's calls and applied operations. A failed read
// is its error, a read that found no row says so.
func ObservationValues(o history.Observation) []string {
	if o.Error != "" {
		return []string{"error: " + o.Error}
	}
	switch o.Query {
	case "event_rows", "effects", "object_effects":
		return []string{fmt.Sprint(o.Count)}
	case "sink_calls":
		// Not a query of the receiver: the harness's sink, always read.
		return []string{fmt.Sprintf("calls=%d", o.Count), fmt.Sprintf("applied=%d", o.Version)}
	}
	if !o.Found {
		return []string{"no row"}
	}
	switch o.Query {
	case "object":
		vs := []string{fmt.Sprintf("version=%d", o.Version)}
		if o.Status != "" { // a one-column query reads the ordering key alone
			vs = append(vs, fmt.Sprintf("status=%q", o.Status))
		}
		return vs
	case "object_children":
		return []string{fmt.Sprintf("children_key=%d", o.Version)}
	case "state", "payment":
		return []string{fmt.Sprintf("state=%q", o.Status)}
	case "payload_present":
		return []string{fmt.Sprintf("payload_present=%v", o.Present)}
	case "key_ttl":
		if o.Count == -1 {
			return []string{"ttl=never"}
		}
		return []string{fmt.Sprintf("ttl=%s", time.Duration(o.Count)*time.Millisecond)}
	case "inbox_state", "outbox_state":
		return []string{fmt.Sprintf("state=%q", o.Status), fmt.Sprintf("attempts=%d", o.Count)}
	}
	// A query this version does not know (a newer history): every column kept.
	vs := []string{"found=true"}
	if o.Count != 0 {
		vs = append(vs, fmt.Sprintf("count=%d", o.Count))
	}
	if o.Version != 0 {
		vs = append(vs, fmt.Sprintf("version=%d", o.Version))
	}
	if o.Status != "" {
		vs = append(vs, fmt.Sprintf("status=%q", o.Status))
	}
	if o.Present {
		vs = append(vs, "present=true")
	}
	return vs
}
