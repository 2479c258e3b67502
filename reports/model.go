package reports

import (
	"fmt"
	"time"
)

// Schema identifies the results.json format. A reader refuses any other value, so a
// change that is not backwards compatible must bump it.
const Schema = "hookcert.results/v1"

// Status is the verdict on one guarantee or one scenario.
type Status string

// The four verdicts. A guarantee whose capability the target does not declare is
// not_applicable, never passed; error means the harness could not judge it.
const (
	StatusPassed        Status = "passed"
	StatusFailed        Status = "failed"
	StatusNotApplicable Status = "not_applicable"
	StatusError         Status = "error"
)

// Valid reports whether s is one of the four verdicts.
func (s Status) Valid() bool {
	switch s {
	case StatusPassed, StatusFailed, StatusNotApplicable, StatusError:
		return true
	}
	return false
}

// Label is the short upper-case text used in tables (PASS, FAIL, N/A, ERROR).
func (s Status) Label() string {
	switch s {
	case StatusPassed:
		return "PASS"
	case StatusFailed:
		return "FAIL"
	case StatusNotApplicable:
		return "N/A"
	case StatusError:
		return "ERROR"
	}
	return "UNKNOWN"
}

// Outcomes of one delivery attempt as the simulated provider saw it.
const (
	OutcomeAcknowledged = "acknowledged" // a success response reached the provider
	OutcomeFailed       = "failed"       // a non-success response, a timeout or a transport error
	OutcomeUnknown      = "unknown"      // the request was sent but the answer was lost (lost-ack fault)
)

// Results is everything one certification run produced. It is the content of
// results.json. It must never hold secrets: endpoint secrets and database passwords
// stay in the target configuration.
type Results struct {
	Schema      string            `json:"schema"`
	Tool        ToolInfo          `json:"tool"`
	RunID       string            `json:"run_id"`
	Seed        int64             `json:"seed"`
	StartedAt   time.Time         `json:"started_at,omitzero"`
	FinishedAt  time.Time         `json:"finished_at,omitzero"`
	DurationMS  int64             `json:"duration_ms"`
	Target      TargetInfo        `json:"target"`
	Profiles    []string          `json:"profiles"`
	Summary     Summary           `json:"summary"`
	Guarantees  []Guarantee       `json:"guarantees"`
	Environment map[string]string `json:"environment,omitempty"`
	// Interrupted is set when the run was stopped (a signal, a deadline) before
	// every selected guarantee was judged; those left are errors.
	Interrupted bool `json:"interrupted,omitempty"`
	// Verdict is the outcome of a run that judged: VerdictPassed,
	// VerdictFailed, VerdictError or VerdictNone (RunVerdict), the same
	// answer as the exit status. Write fills it in; it is optional, so every
	// earlier hookcert.results/v1 file stays valid, and empty when Outcome is set.
	Verdict string `json:"verdict,omitempty"`
	// Outcome is set when the run stopped before it judged anything (then
	// Guarantees is empty): RunConfigError, RunUnreachable or
	// RunNothingSelected; Error says what, secrets removed. A run that judged
	// its guarantees leaves both empty: the verdicts say what happened. Both
	// are optional, so every earlier hookcert.results/v1 file stays valid.
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
	Soak    *Soak  `json:"soak,omitempty"`
}

// Verdicts of a run that judged (Results.Verdict), one per exit status of
// the commands that judge: 0, 1, 5 and 4.
const (
	// VerdictPassed: something passed, nothing failed, nothing was left unjudged.
	VerdictPassed = "passed"
	// VerdictFailed: some guarantee failed (or a soak lost or duplicated a
	// key), whatever else happened.
	VerdictFailed = "failed"
	// VerdictError: nothing failed, but something could not be judged (an
	// error verdict, an interrupted run, a soak that could not read every key).
	VerdictError = "error"
	// VerdictNone: nothing was judged, every selected guarantee not applicable.
	VerdictNone = "no_verdict"
)

// VerdictTitle is a run verdict as headlines write it: PASSED, FAILED, ERROR,
// NO VERDICT (Summary.Verdict's words).
func VerdictTitle(v string) string {
	switch v {
	case VerdictPassed:
		return "PASSED"
	case VerdictFailed:
		return "FAILED"
	case VerdictError:
		return "ERROR"
	}
	return "NO VERDICT"
}

// RunVerdict is the verdict of a run that judged, computed from its
// guarantees (or its soak section); "" for a run that stopped before judging.
func (r *Results) RunVerdict() string {
	switch {
	case r.Stopped():
		return ""
	case r.Soak != nil && len(r.Guarantees) == 0:
		switch {
		case r.Soak.Lost > 0 || r.Soak.Duplicated > 0:
			return VerdictFailed
		case !r.Soak.Passed || r.Soak.Unjudged > 0 || r.Interrupted:
			return VerdictError
		}
		return VerdictPassed
	}
	s := Summarize(r.Guarantees)
	switch {
	case s.Failed > 0:
		return VerdictFailed
	case s.Error > 0 || r.Interrupted:
		return VerdictError
	case s.Passed > 0:
		return VerdictPassed
	}
	return VerdictNone
}

// Outcomes of a run that stopped before it judged anything (Results.Outcome),
// one per exit status of hookcert certify: 2, 3 and 4.
const (
	// RunConfigError: the target file or the options are wrong, or the
	// target's setup hook failed.
	RunConfigError = "configuration_error"
	// RunUnreachable: the target could not be reached, or its receiver or
	// database could not be started or reached.
	RunUnreachable = "unreachable"
	// RunNothingSelected: the label filter and focus select no guarantee.
	RunNothingSelected = "nothing_selected"
)

// Stopped reports whether the run stopped before it judged anything.
func (r *Results) Stopped() bool { return r.Outcome != "" }

// OutcomeTitle is the headline of a run that stopped (Outcome), "" otherwise.
func (r *Results) OutcomeTitle() string {
	switch r.Outcome {
	case RunConfigError:
		return "CONFIGURATION ERROR"
	case RunUnreachable:
		return "TARGET UNREACHABLE"
	case RunNothingSelected:
		return "NOTHING SELECTED"
	}
	return ""
}

// ToolInfo names the program that produced the results.
type ToolInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// TargetInfo describes the receiver under test, without its secrets.
type TargetInfo struct {
	Name         string         `json:"name"`
	BaseURL      string         `json:"base_url"`
	Endpoints    []EndpointInfo `json:"endpoints,omitempty"`
	Capabilities []string       `json:"capabilities,omitempty"`
	// Observer is the kind of store the receiver's state was read from
	// (postgres, mysql, redis, command, http).
	Observer string `json:"observer,omitempty"`
}

// EndpointInfo is one delivery endpoint of the target: a (profile, account) pair.
type EndpointInfo struct {
	Profile string `json:"profile"`
	Account string `json:"account"`
	Path    string `json:"path"`
}

// Summary counts the guarantees by verdict.
type Summary struct {
	Passed        int `json:"passed"`
	Failed        int `json:"failed"`
	NotApplicable int `json:"not_applicable"`
	Error         int `json:"error"`
	Total         int `json:"total"`
}

// Summarize counts gs by status.
func Summarize(gs []Guarantee) Summary {
	var s Summary
	for _, g := range gs {
		switch g.Status {
		case StatusPassed:
			s.Passed++
		case StatusFailed:
			s.Failed++
		case StatusNotApplicable:
			s.NotApplicable++
		case StatusError:
			s.Error++
		}
		s.Total++
	}
	return s
}

// Verdict is the overall result of a run: FAILED if any guarantee failed, else ERROR
// if any could not be judged, else PASSED if at least one passed, else NO VERDICT
// (nothing was applicable, which certifies nothing).
func (s Summary) Verdict() string {
	switch {
	case s.Failed > 0:
		return "FAILED"
	case s.Error > 0:
		return "ERROR"
	case s.Passed > 0:
		return "PASSED"
	}
	return "NO VERDICT"
}

// Guarantee is the verdict on one documented promise, with its evidence.
type Guarantee struct {
	ID      string `json:"id"`
	Family  string `json:"family"`
	Title   string `json:"title"`
	Promise string `json:"promise"`
	Status  Status `json:"status"`
	// Reason is one line: why it failed, errored or is not applicable.
	Reason string `json:"reason,omitempty"`
	// Evidence lists every deviation found, not only the first.
	Evidence []string `json:"evidence,omitempty"`
	// Codes are the distinct deviation codes of the evidence, sorted.
	Codes      []string `json:"codes,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	// Repro is the command that reproduces this verdict.
	Repro string `json:"repro,omitempty"`
	// Race is set for a guarantee that sends deliveries at the same time: whether
	// the harness forced the race or left it to timing.
	Race      *Race      `json:"race,omitempty"`
	Scenarios []Scenario `json:"scenarios,omitempty"`
}

// Race says how a guarantee's concurrent deliveries met. Forced means the
// harness held the receiver at a lock gate (or released the copies through a
// barrier) and the history proves every racer was held, so a failure does not
// depend on timing and its repro fails again; otherwise the race was left to
// timing and How says why.
type Race struct {
	Forced bool `json:"forced"`
	// How is one line: "lock gate on ledger_entries held 2 of 2 sessions".
	How string `json:"how"`
}

// Scenario is one run of a plan against the target, judged on its own.
type Scenario struct {
	Name       string   `json:"name"`
	Status     Status   `json:"status"`
	Deviations []string `json:"deviations,omitempty"`
	// Codes holds the stable code of each deviation, in the same order.
	Codes    []string  `json:"codes,omitempty"`
	Timeline []Attempt `json:"timeline,omitempty"`
	// Sink holds the downstream calls the receiver made to the harness's sink
	// during the scenario (capability outbox), on the timeline's axis.
	Sink     []SinkCall    `json:"sink,omitempty"`
	Observed []Observation `json:"observed,omitempty"`
	// Notes are measurements worth a reader's eye, e.g. "release spread 43µs".
	Notes []string `json:"notes,omitempty"`
}

// Attempt is one delivery attempt of one event copy. Times are monotonic nanoseconds
// since the start of the run, so attempts of one scenario share an axis.
type Attempt struct {
	EventID string `json:"event_id"`
	// EventType is the event's type as delivered (absent from results written
	// before it was recorded).
	EventType string `json:"event_type,omitempty"`
	Attempt   int    `json:"attempt"`
	// Copy numbers concurrent duplicates of the same attempt (0 when there is one).
	Copy    int   `json:"copy"`
	StartNS int64 `json:"start_ns"`
	// EndNS is 0 or less than StartNS when the attempt never finished (e.g. the
	// receiver was killed while it waited).
	EndNS int64 `json:"end_ns"`
	// HTTPStatus is the response status code, 0 when none arrived.
	HTTPStatus int `json:"http_status"`
	// Outcome is OutcomeAcknowledged, OutcomeFailed or OutcomeUnknown.
	Outcome    string   `json:"outcome"`
	Faults     []string `json:"faults,omitempty"`
	ErrorClass string   `json:"error_class,omitempty"`
	DeliveryID string   `json:"delivery_id,omitempty"`
}

// SinkCall is one call the receiver made to the harness's downstream sink,
// attributed to the event whose ID its body carried (docs/history.md).
type SinkCall struct {
	EventID string `json:"event_id"`
	// Seq numbers the sink's calls from 1 in arrival order.
	Seq int    `json:"seq"`
	Key string `json:"key,omitempty"`
	// Status is the answer's status, 0 when it was lost or withheld.
	Status  int    `json:"status"`
	Outcome string `json:"outcome"`
	AtNS    int64  `json:"at_ns"`
}

// Finished reports whether the attempt has an end time.
func (a Attempt) Finished() bool { return a.EndNS >= a.StartNS && a.EndNS > 0 }

// Observation is one value the observer read from the target's state.
type Observation struct {
	Query  string   `json:"query"`
	Key    string   `json:"key"`
	Values []string `json:"values"`
	// AtNS is when it was read, in nanoseconds since the start of the run.
	AtNS int64 `json:"at_ns"`
}

// Validate checks what a reader of results relies on. Errors name the field and the
// rule it breaks.
func (r *Results) Validate() error {
	if r == nil {
		return fmt.Errorf("results: nil")
	}
	if r.Schema != Schema {
		return fmt.Errorf("field schema: expected %q, got %q", Schema, r.Schema)
	}
	if r.DurationMS < 0 {
		return fmt.Errorf("field duration_ms: must not be negative, got %d", r.DurationMS)
	}
	switch r.Outcome {
	case "":
		if r.Error != "" {
			return fmt.Errorf("field error: set without an outcome")
		}
	case RunConfigError, RunUnreachable, RunNothingSelected:
		if len(r.Guarantees) > 0 {
			return fmt.Errorf("field outcome: %q says the run judged nothing, but it has %d guarantee(s)", r.Outcome, len(r.Guarantees))
		}
		if r.Verdict != "" {
			return fmt.Errorf("field verdict: must be empty when outcome is set (the run judged nothing), got %q", r.Verdict)
		}
	default:
		return fmt.Errorf("field outcome: expected one of %s, %s, %s, got %q", RunConfigError, RunUnreachable, RunNothingSelected, r.Outcome)
	}
	seen := make(map[string]int, len(r.Guarantees))
	for i, g := range r.Guarantees {
		if g.ID == "" {
			return fmt.Errorf("field guarantees[%d].id: must not be empty", i)
		}
		if j, dup := seen[g.ID]; dup {
			return fmt.Errorf("field guarantees[%d].id: %q already used by guarantees[%d]", i, g.ID, j)
		}
		seen[g.ID] = i
		if !g.Status.Valid() {
			return fmt.Errorf("field guarantees[%d].status (%s): expected one of passed, failed, not_applicable, error, got %q", i, g.ID, g.Status)
		}
		for k, s := range g.Scenarios {
			if s.Status != "" && !s.Status.Valid() {
				return fmt.Errorf("field guarantees[%d].scenarios[%d].status: expected one of passed, failed, not_applicable, error, got %q", i, k, s.Status)
			}
			for n, a := range s.Timeline {
				switch a.Outcome {
				case OutcomeAcknowledged, OutcomeFailed, OutcomeUnknown:
				default:
					return fmt.Errorf("field guarantees[%d].scenarios[%d].timeline[%d].outcome: expected one of acknowledged, failed, unknown, got %q", i, k, n, a.Outcome)
				}
			}
		}
	}
	if want := Summarize(r.Guarantees); r.Summary != want {
		return fmt.Errorf("field summary: counts %+v do not match the guarantees (%+v)", r.Summary, want)
	}
	if r.Verdict != "" && r.Outcome == "" {
		if want := r.RunVerdict(); r.Verdict != want {
			return fmt.Errorf("field verdict: the guarantees say %q, got %q (one of %s, %s, %s, %s)", want, r.Verdict, VerdictPassed, VerdictFailed, VerdictError, VerdictNone)
		}
	}
	return nil
}
