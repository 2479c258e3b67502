package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// Outcome is what an attempt is known to have achieved, in Jepsen's three values.
type Outcome string

const (
	// OutcomeAcknowledged: the provider got a response it counts as success.
	OutcomeAcknowledged Outcome = "acknowledged"
	// OutcomeFailed: the provider got a failure response, or the request was never
	// fully written, so the receiver cannot have processed it.
	OutcomeFailed Outcome = "failed"
	// OutcomeUnknown: the request was written in full but the answer was lost or
	// never came (lost acknowledgement, timeout, reset after writing).
	OutcomeUnknown Outcome = "unknown"
)

// Error classes recorded in Attempt.ErrorClass.
const (
	ErrClassTimeout  = "timeout"
	ErrClassReset    = "reset"
	ErrClassRefused  = "refused"
	ErrClassTLS      = "tls"
	ErrClassTooLarge = "too_large"
	ErrClassOther    = "other"
	// ErrClassEarlyResponse: a success answer came before the request was
	// written in full, so it cannot acknowledge the delivery.
	ErrClassEarlyResponse = "early_response"
)

// Attempt is one HTTP delivery attempt as it happened.
type Attempt struct {
	// Scenario is the index (1-based) of the scenario that made the attempt in a
	// certification run's history; 0 outside one.
	Scenario int `json:"scenario,omitempty"`
	// Role is the caller's name for what the attempt was sent as (e.g. "copy",
	// "redelivery"), so a checker can tell attempts of one scenario apart.
	Role      string       `json:"role,omitempty"`
	Key       profiles.Key `json:"key"`
	EventType string       `json:"event_type"`
	// Step is the plan step index (or the caller's label for Send/SendCopies).
	Step int `json:"step"`
	// Attempt is the provider's attempt number, 1 for the first delivery.
	Attempt int `json:"attempt"`
	// Copy is the copy index within a barrier release (0 when there is one copy).
	Copy       int    `json:"copy"`
	DeliveryID string `json:"delivery_id,omitempty"`
	// StartNS and EndNS are monotonic nanoseconds since the run started.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// VirtualNS is the provider-clock offset of the start since the run started
	// (StartNS × TimeScale).
	VirtualNS int64     `json:"virtual_ns"`
	WallStart time.Time `json:"wall_start"`
	// SignedAt is the timestamp the signature carries (may be old for stale replays).
	SignedAt  time.Time `json:"signed_at"`
	BytesSent int64     `json:"bytes_sent"`
	// BodyBytes is the size of the request body sent (after any padding or
	// fault); BytesSent counts the request line and headers too.
	BodyBytes int `json:"body_bytes,omitempty"`
	// PadTo is the body size the step asked for (Step.PadTo), 0 when unpadded.
	PadTo int `json:"pad_to,omitempty"`
	// Status is the HTTP status, 0 when no response was read.
	Status          int    `json:"status"`
	ResponseExcerpt string `json:"response_excerpt,omitempty"`
	ErrorClass      string `json:"error_class,omitempty"`
	// Error is the transport error text (never contains secrets: the simulator
	// only reports network errors and its own messages).
	Error   string   `json:"error,omitempty"`
	Faults  []string `json:"faults,omitempty"`
	Verdict string   `json:"verdict"`
	Outcome Outcome  `json:"outcome"`
	// RetryAfterNS is the Retry-After the response asked for, when present.
	RetryAfterNS int64 `json:"retry_after_ns,omitempty"`
	// ConnectTries is how many connection tries the attempt needed when it was
	// more than one: refused or unanswered handshakes, and fresh connections
	// after the receiver took no byte of the request, retried as a provider's
	// HTTP client does.
	ConnectTries int `json:"connect_tries,omitempty"`
}

// Duration returns the attempt's real duration.
func (a Attempt) Duration() time.Duration { return time.Duration(a.EndNS - a.StartNS) }

// Release describes one barrier release of several copies of a delivery.
type Release struct {
	Scenario int          `json:"scenario,omitempty"`
	Step     int          `json:"step"`
	Attempt  int          `json:"attempt"`
	Key      profiles.Key `json:"key"`
	Copies   int          `json:"copies"`
	// Released counts the copies held (their connection confirmed) and released
	// together when the barrier fell.
	Released int `json:"released"`
	// Late counts the copies the barrier fell without: each completed its own
	// request, on its connection or a fresh one.
	Late int `json:"late,omitempty"`
	// PreopenNS is how long the barrier stood, opening and confirming copies.
	PreopenNS int64 `json:"preopen_ns,omitempty"`
	// FellBecause says why it fell: all_settled, stalled, deadline, cancelled.
	FellBecause string `json:"fell_because,omitempty"`
	// SpreadNS is max − min of the instants the copies finished writing their
	// request (the final byte), in nanoseconds.
	SpreadNS int64 `json:"spread_ns"`
	// StartNS is when the barrier fell, ns since the run started.
	StartNS int64 `json:"start_ns"`
}

// Gate is one lock gate a scenario held: the harness locked one of the
// receiver's tables, sent deliveries that must race, counted the receiver's
// sessions that queued on the lock (or behind one that did, on a lock of the
// receiver's own), and released them together. It is the proof that a race
// was forced rather than left to timing.
type Gate struct {
	Scenario int `json:"scenario,omitempty"`
	// Table is the locked table.
	Table string `json:"table"`
	// Racers is how many deliveries (or workers) were to meet there.
	Racers int `json:"racers"`
	// AtGate and Behind are the receiver sessions held at the moment the most
	// were: waiting on the lock, and waiting on a lock one of those holds.
	// Only sessions whose transaction began after the lock was taken count:
	// an earlier one is not this scenario's.
	AtGate int `json:"at_gate"`
	Behind int `json:"behind,omitempty"`
	// Foreign is the most sessions seen waiting on the lock at once whose
	// transaction began before it was taken (another scenario's work).
	Foreign int `json:"foreign,omitempty"`
	// Refused is set when every delivery was refused before it could reach the
	// table, so nothing could race.
	Refused bool `json:"refused,omitempty"`
	// StartNS is when the lock was taken and ReleasedNS when it was released,
	// nanoseconds since the run started.
	StartNS    int64 `json:"start_ns"`
	ReleasedNS int64 `json:"released_ns"`
}

// Held is how many receiver sessions the gate held at once.
func (g Gate) Held() int { return g.AtGate + g.Behind }

// Schema versions the JSON Lines history. A reader refuses other versions
// rather than misread them.
const Schema = "hookcert.history/v1"

// Meta describes a run. It never holds a secret.
type Meta struct {
	// Schema is Schema; written by WriteJSONL.
	Schema    string    `json:"schema,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	Seed      int64     `json:"seed"`
	Profile   string    `json:"profile"`
	TargetURL string    `json:"target_url"`
	Plan      string    `json:"plan,omitempty"`
	TimeScale float64   `json:"time_scale"`
	Started   time.Time `json:"started"`
	// Finished is when the run ended (zero while it runs).
	Finished time.Time `json:"finished,omitzero"`
	// Run is the caller's own description of the run (a certification keeps its
	// target, options and environment here), kept verbatim.
	Run json.RawMessage `json:"run,omitempty"`
}

// Observation is one read of the receiver's state, recorded beside the attempts
// so that a checker can judge from the history alone.
type Observation struct {
	Scenario int `json:"scenario,omitempty"`
	// Query is the target query that was run (event_rows, effects, object, …).
	Query string `json:"query"`
	// Params are its parameters in order ($1 source, $2 account, $3 event ID, $4
	// object ID).
	Params []string `json:"params"`
	// Phase is the scenario's name for the moment of the read (e.g. "after").
	Phase string `json:"phase,omitempty"`
	// Found is false when the query returned no row.
	Found bool `json:"found"`
	// Count, Version, Status and Present are the columns the query returned.
	Count   int64  `json:"count,omitempty"`
	Version int64  `json:"version,omitempty"`
	Status  string `json:"status,omitempty"`
	Present bool   `json:"present,omitempty"`
	// Error is why the read failed, when it did.
	Error string `json:"error,omitempty"`
	// AtNS is when the read returned, nanoseconds since the run started.
	AtNS int64 `json:"at_ns"`
}

// Scenario states in a history.
const (
	// ScenarioRan: the scenario delivered and observed; a checker judges it.
	ScenarioRan = "ran"
	// ScenarioNotApplicable: the target lacks what the scenario needs.
	ScenarioNotApplicable = "not_applicable"
	// ScenarioError: something on the harness's side stopped the scenario.
	ScenarioError = "error"
)

// Scenario is one scenario of a certification run: which guarantee it
// judges, how it ended on the harness's side, and what it noted and set aside
// for its checker.
type Scenario struct {
	Index     int    `json:"index"`
	Guarantee string `json:"guarantee"`
	Name      string `json:"name"`
	State     string `json:"state"`
	// Reason says why the scenario is not applicable or errored.
	Reason  string `json:"reason,omitempty"`
	StartNS int64  `json:"start_ns"`
	EndNS   int64  `json:"end_ns"`
	// Notes are measurements worth a reader's eye (release spread, gate waiters).
	Notes []string `json:"notes,omitempty"`
	// Facts are values the scenario fixed that its checker needs (declared TTLs,
	// the newest version sent, keys purged on purpose).
	Facts map[string]string `json:"facts,omitempty"`
}

// Sink is one call the harness's downstream sink received from the
// receiver, attributed to the event whose ID its body carried.
type Sink struct {
	Scenario int `json:"scenario,omitempty"`
	// EventID is the event the call was attributed to.
	EventID string `json:"event_id"`
	// Seq numbers the sink's calls from 1 in arrival order.
	Seq int `json:"seq"`
	// Key is the call's operation key ("" when it carried none).
	Key string `json:"key,omitempty"`
	// Status answered (0 when the response was lost or withheld) and Outcome:
	// applied, replayed, failed, lost, key_reused, bad_request.
	Status  int    `json:"status"`
	Outcome string `json:"outcome"`
	// AtNS is when the call arrived, nanoseconds since the run started.
	AtNS int64 `json:"at_ns"`
}

// APICall is one call the receiver made to the harness's provider API
// (GET of an object it was sent an event about).
type APICall struct {
	Scenario int `json:"scenario,omitempty"`
	// Seq numbers the API's calls from 1 in arrival order.
	Seq    int    `json:"seq"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Provider and Object are the route's ("" when the path matched none).
	Provider string `json:"provider,omitempty"`
	Object   string `json:"object,omitempty"`
	// Status answered; Fault is the injected fault ("404", "429", "503",
	// "slow:250ms"; "" when none); Key is the ordering key of the version
	// answered (0 when none was).
	Status int    `json:"status"`
	Fault  string `json:"fault,omitempty"`
	Key    int64  `json:"key,omitempty"`
	// AtNS is when the call arrived, nanoseconds since the run started.
	AtNS int64 `json:"at_ns"`
}

// History is everything that happened in a run.
type History struct {
	Meta         Meta          `json:"meta"`
	Scenarios    []Scenario    `json:"scenarios,omitempty"`
	Attempts     []Attempt     `json:"attempts"`
	Releases     []Release     `json:"releases"`
	Observations []Observation `json:"observations,omitempty"`
	// Sink holds the downstream calls the receiver made (capability outbox).
	Sink []Sink `json:"sink,omitempty"`
	// Gates are the lock gates the scenarios held.
	Gates []Gate `json:"gates,omitempty"`
	// APICalls are the receiver's calls to the provider API (capability refetch).
	APICalls []APICall `json:"api_calls,omitempty"`
}

// OutcomeCounts counts attempts per outcome.
func (h *History) OutcomeCounts() map[Outcome]int {
	m := map[Outcome]int{}
	for _, a := range h.Attempts {
		m[a.Outcome]++
	}
	return m
}

// DeliveryResult is the final state of one delivery chain: one copy of one step's
// event, followed through its retries.
type DeliveryResult struct {
	Step     int          `json:"step"`
	Copy     int          `json:"copy"`
	Key      profiles.Key `json:"key"`
	Attempts int          `json:"attempts"`
	Final    Outcome      `json:"final"`
}

// Deliveries groups attempts by (step, copy, key) and reports each chain's last
// outcome, ordered by step then copy.
func (h *History) Deliveries() []DeliveryResult {
	type k struct {
		step, copy int
		key        profiles.Key
	}
	idx := map[k]int{}
	var out []DeliveryResult
	last := map[k]int{}
	for _, a := range h.Attempts {
		kk := k{a.Step, a.Copy, a.Key}
		i, ok := idx[kk]
		if !ok {
			i = len(out)
			idx[kk] = i
			out = append(out, DeliveryResult{Step: a.Step, Copy: a.Copy, Key: a.Key})
		}
		out[i].Attempts++
		if a.Attempt >= last[kk] {
			last[kk] = a.Attempt
			out[i].Final = a.Outcome
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Copy < out[j].Copy
	})
	return out
}

// AllAcknowledged reports whether every delivery chain ended acknowledged (false
// for an empty history).
func (h *History) AllAcknowledged() bool {
	d := h.Deliveries()
	if len(d) == 0 {
		return false
	}
	for _, r := range d {
		if r.Final != OutcomeAcknowledged {
			return false
		}
	}
	return true
}

// jsonLine is one line of the JSON Lines form: a kind tag and one record.
type jsonLine struct {
	Kind        string       `json:"kind"`
	Meta        *Meta        `json:"meta,omitempty"`
	Scenario    *Scenario    `json:"scenario,omitempty"`
	Attempt     *Attempt     `json:"attempt,omitempty"`
	Release     *Release     `json:"release,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	Sink        *Sink        `json:"sink,omitempty"`
	Gate        *Gate        `json:"gate,omitempty"`
	APICall     *APICall     `json:"api_call,omitempty"`
}

// WriteJSONL writes the history as JSON Lines: one "meta" line (schema
// Schema), then one line per scenario, attempt, release, observation, sink
// call, lock gate and provider API call.
func (h *History) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	meta := h.Meta
	meta.Schema = Schema
	if err := enc.Encode(jsonLine{Kind: "meta", Meta: &meta}); err != nil {
		return fmt.Errorf("write history meta: %w", err)
	}
	for i := range h.Scenarios {
		if err := enc.Encode(jsonLine{Kind: "scenario", Scenario: &h.Scenarios[i]}); err != nil {
			return fmt.Errorf("write history scenario %d: %w", i, err)
		}
	}
	for i := range h.Attempts {
		if err := enc.Encode(jsonLine{Kind: "attempt", Attempt: &h.Attempts[i]}); err != nil {
			return fmt.Errorf("write history attempt %d: %w", i, err)
		}
	}
	for i := range h.Releases {
		if err := enc.Encode(jsonLine{Kind: "release", Release: &h.Releases[i]}); err != nil {
			return fmt.Errorf("write history release %d: %w", i, err)
		}
	}
	for i := range h.Observations {
		if err := enc.Encode(jsonLine{Kind: "observation", Observation: &h.Observations[i]}); err != nil {
			return fmt.Errorf("write history observation %d: %w", i, err)
		}
	}
	for i := range h.Sink {
		if err := enc.Encode(jsonLine{Kind: "sink", Sink: &h.Sink[i]}); err != nil {
			return fmt.Errorf("write history sink call %d: %w", i, err)
		}
	}
	for i := range h.Gates {
		if err := enc.Encode(jsonLine{Kind: "gate", Gate: &h.Gates[i]}); err != nil {
			return fmt.Errorf("write history gate %d: %w", i, err)
		}
	}
	for i := range h.APICalls {
		if err := enc.Encode(jsonLine{Kind: "api_call", APICall: &h.APICalls[i]}); err != nil {
			return fmt.Errorf("write history api call %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// ReadJSONL loads a history written by WriteJSONL. Unknown fields and kinds are
// errors naming the line, so a corrupt or foreign file is not half-read silently.
func ReadJSONL(r io.Reader) (*History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	h := &History{}
	line, sawMeta := 0, false
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var l jsonLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		switch l.Kind {
		case "meta":
			if l.Meta == nil {
				return nil, fmt.Errorf("history line %d: kind meta without a meta object", line)
			}
			if l.Meta.Schema != "" && l.Meta.Schema != Schema {
				return nil, fmt.Errorf("history line %d: schema %q is not %q (written by another version of hookcert)", line, l.Meta.Schema, Schema)
			}
			h.Meta, sawMeta = *l.Meta, true
			h.Meta.Schema = ""
		case "scenario":
			if l.Scenario == nil {
				return nil, fmt.Errorf("history line %d: kind scenario without a scenario object", line)
			}
			h.Scenarios = append(h.Scenarios, *l.Scenario)
		case "observation":
			if l.Observation == nil {
				return nil, fmt.Errorf("history line %d: kind observation without an observation object", line)
			}
			h.Observations = append(h.Observations, *l.Observation)
		case "attempt":
			if l.Attempt == nil {
				return nil, fmt.Errorf("history line %d: kind attempt without an attempt object", line)
			}
			h.Attempts = append(h.Attempts, *l.Attempt)
		case "release":
			if l.Release == nil {
				return nil, fmt.Errorf("history line %d: kind release without a release object", line)
			}
			h.Releases = append(h.Releases, *l.Release)
		case "sink":
			if l.Sink == nil {
				return nil, fmt.Errorf("history line %d: kind sink without a sink object", line)
			}
			h.Sink = append(h.Sink, *l.Sink)
		case "gate":
			if l.Gate == nil {
				return nil, fmt.Errorf("history line %d: kind gate without a gate object", line)
			}
			h.Gates = append(h.Gates, *l.Gate)
		case "api_call":
			if l.APICall == nil {
				return nil, fmt.Errorf("history line %d: kind api_call without an api_call object", line)
			}
			h.APICalls = append(h.APICalls, *l.APICall)
		default:
			return nil, fmt.Errorf("history line %d: kind %q is not one of meta, scenario, attempt, release, observation, sink, gate, api_call", line, l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	if !sawMeta {
		return nil, fmt.Errorf("read history: no meta line")
	}
	return h, nil
}
