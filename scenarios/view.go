package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// view is what a checker reads of one scenario — its record, attempts,
// observations and downstream calls — and where it writes deviations. A
// checker judges from the history alone: nothing here touches a receiver.
type view struct {
	sc       history.Scenario
	common   commonFacts
	attempts []history.Attempt
	obs      []history.Observation
	sink     []history.Sink
	// apiCalls are the receiver's calls to the provider API.
	apiCalls []history.APICall

	devs      []Deviation
	notes     []string
	errReason string
	// blind are the checks for a second application the effects reads could
	// not make (effects.go).
	blind []blindCheck
}

func newView(rec history.Scenario, attempts []history.Attempt, obs []history.Observation, sink []history.Sink) *view {
	v := &view{sc: rec, attempts: attempts, obs: obs, sink: sink}
	if err := decodeFacts(rec.Facts, &v.common); err != nil {
		v.fail("history: %s facts: %v", rec.Guarantee, err)
	}
	return v
}

func (v *view) deviate(code Code, format string, args ...any) {
	v.devs = append(v.devs, Deviation{Code: code.ID, Text: fmt.Sprintf(format, args...)})
}

func (v *view) note(format string, args ...any) {
	v.notes = append(v.notes, fmt.Sprintf(format, args...))
}

// fail marks the scenario as not judgeable: something the checker needs is
// missing from the history.
func (v *view) fail(format string, args ...any) {
	if v.errReason == "" {
		v.errReason = fmt.Sprintf(format, args...)
	}
}

// async reports whether the scenario recorded that the receiver applies events
// after its 2xx.
func (v *view) async() bool { return v.common.Acceptance == "async" }

// role returns the attempts sent as any of roles; a role ending in ":"
// matches as a prefix.
func (v *view) role(roles ...string) []history.Attempt {
	var out []history.Attempt
	for _, a := range v.attempts {
		for _, role := range roles {
			if a.Role == role || (strings.HasSuffix(role, ":") && strings.HasPrefix(a.Role, role)) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// objectName names the lifecycle object in evidence (histories of the
// built-in domain before declared vocabularies record none: a payment).
func (v *view) objectName() string {
	if v.common.Object != "" {
		return v.common.Object
	}
	return "payment"
}

// stateReads are the last reads of lifecycle objects' states in phase (the
// "state" query, "state:<object>" for every object after the first; histories
// of the built-in domain before it call it "payment").
func (v *view) stateReads(phase string) []history.Observation {
	return append(v.roleReads(queryState, phase), v.reads("payment", phase)...)
}

// roleReads are reads(query, phase) of every role's query of that name: the
// first role's (query), then the others' (query:<label>), in history order.
func (v *view) roleReads(query, phase string) []history.Observation {
	out := v.reads(query, phase)
	var labels []string
	for _, o := range v.obs {
		if vocab.BaseQuery(o.Query) == query && o.Query != query && o.Phase == phase && !slices.Contains(labels, o.Query) {
			labels = append(labels, o.Query)
		}
	}
	for _, q := range labels {
		out = append(out, v.reads(q, phase)...)
	}
	return out
}

// readsOf are reads(query, phase) of one object ($4).
func (v *view) readsOf(query, phase, objectID string) []history.Observation {
	var out []history.Observation
	for _, o := range v.reads(query, phase) {
		if len(o.Params) == 4 && o.Params[3] == objectID {
			out = append(out, o)
		}
	}
	return out
}

// objectNameOf names the lifecycle object a state read is of: its role's
// label, else the first object's name.
func (v *view) objectNameOf(o history.Observation) string {
	if l := vocab.QueryLabel(o.Query); l != "" {
		return l
	}
	return v.objectName()
}

// objectState checks every lifecycle object read in phase against the state
// its scenario recorded as wanted (def for histories that record none).
func (v *view) objectState(code Code, phase string, want map[string]string, def, what string) {
	for _, o := range v.stateReads(phase) {
		w, ok := want[o.Params[3]]
		if !ok {
			w = def
		}
		if !o.Found || o.Status != w {
			v.deviate(code, "%s %s reads %s %s, want %q", v.objectNameOf(o), o.Params[3], readText(o), what, w)
		}
	}
}

// objectEffects checks every object's last effect count in phase against its
// recorded want (def when none is recorded).
func (v *view) objectEffects(code Code, phase string, want map[string]int64, def int64, what string) {
	rs := v.roleReads(queryObjectEffects, phase)
	if len(rs) == 0 {
		v.fail("history: %s has no object_effects read in phase %q", v.sc.Name, phase)
		return
	}
	blind := v.common.ObjectEffectsBlind != ""
	for _, o := range rs {
		w, ok := want[o.Params[3]]
		if !ok {
			w = def
		}
		switch {
		case blind && (o.Count > 0) != (w > 0):
			v.deviate(code, "%s: %s for %s: the effect's state reads %d, want it %s", what, o.Query, paramsText(o.Params), o.Count, map[bool]string{true: "set", false: "unset"}[w > 0])
		case !blind && o.Count != w:
			v.deviate(code, "%s: %s for %s: got %d, want %d", what, o.Query, paramsText(o.Params), o.Count, w)
		}
	}
	if blind {
		// A state shows whether an effect applied, not how often: only that
		// part is judged here.
		v.note("%s: object effects judged as applied or not only: %s", what, v.common.ObjectEffectsBlind)
	}
}

// countIf is count for a phase the scenario reads only on some paths.
func (v *view) countIf(code Code, query, phase string, want int64, what string) {
	if len(v.reads(query, phase)) > 0 {
		v.count(code, query, phase, want, what)
	}
}

// acked records a deviation for every attempt of the roles that the provider did
// not count as acknowledged.
func (v *view) acked(code Code, roles ...string) {
	for _, r := range roles {
		for _, a := range v.role(r) {
			if a.Outcome != history.OutcomeAcknowledged {
				v.deviate(code, "%s %s (copy %d, attempt %d) was not acknowledged: %s", r, a.Key.EventID, a.Copy, a.Attempt, Describe(a))
			}
		}
	}
}

// reads returns, per parameter set in first-read order, the last read of query
// in phase: what the scenario settled on.
func (v *view) reads(query, phase string) []history.Observation {
	idx := map[string]int{}
	var out []history.Observation
	for _, o := range v.obs {
		if o.Query != query || o.Phase != phase {
			continue
		}
		k := strings.Join(o.Params, "\x00")
		if i, ok := idx[k]; ok {
			out[i] = o
			continue
		}
		idx[k] = len(out)
		out = append(out, o)
	}
	return out
}

// read returns the last read of query in phase for the given parameters. An
// empty object ID in params matches any: an effects read carries the event's
// object, which the key alone does not name.
func (v *view) read(query, phase string, params []string) (history.Observation, bool) {
	// Any role's query of that name: a key is read by its own role's.
	for _, o := range v.roleReads(query, phase) {
		if sameParams(o.Params, params) {
			return o, true
		}
	}
	return history.Observation{}, false
}

func sameParams(got, want []string) bool {
	if len(got) == 4 && len(want) == 4 && want[3] == "" {
		got = got[:3]
		want = want[:3]
	}
	return strings.Join(got, "\x00") == strings.Join(want, "\x00")
}

// count records a deviation for every key whose last count of query in phase is
// not want. A scenario that ran but never read the phase cannot be judged.
func (v *view) count(code Code, query, phase string, want int64, what string) {
	rs := v.roleReads(query, phase)
	if len(rs) == 0 {
		v.fail("history: %s has no %s read in phase %q", v.sc.Name, query, phase)
		return
	}
	for _, o := range rs {
		if o.Count != want {
			v.deviate(code, "%s: %s for %s: got %d, want %d", what, o.Query, paramsText(o.Params), o.Count, want)
		}
	}
}

// state checks the event rows and effects of every key read in phase; for an
// object-version receiver, every object read (objectStored).
func (v *view) state(code Code, phase string, want int64, what string) {
	if v.objectVersion() {
		v.objectStored(code, phase, want, what)
		return
	}
	v.count(code, queryEventRows, phase, want, what)
	v.count(code, queryEffects, phase, want, what)
}

// paramsText renders a read's parameters for evidence, leaving out empty ones.
func paramsText(ps []string) string {
	var keep []string
	for _, p := range ps {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return "(" + strings.Join(keep, ", ") + ")"
}

// Describe names an attempt's result for evidence.
func Describe(a history.Attempt) string {
	d := fmt.Sprintf("status %d", a.Status)
	if a.Status == 0 {
		d = "no response"
	}
	if a.ErrorClass != "" {
		d += " (" + a.ErrorClass + ")"
	}
	if a.Outcome == history.OutcomeUnknown && a.Status != 0 {
		d += ", outcome unknown"
	}
	if ex := strings.TrimSpace(a.ResponseExcerpt); ex != "" {
		if len(ex) > 120 {
			ex = ex[:120] + "…"
		}
		d += ": " + ex
	}
	return d
}

// KeyString renders an event key for evidence.
func KeyString(k profiles.Key) string {
	return fmt.Sprintf("(%s, %s, %s)", k.Source, k.Account, k.EventID)
}

func keyParams(k profiles.Key) []string { return []string{k.Source, k.Account, k.EventID, ""} }

func objParams(source, account, objectID string) []string {
	return []string{source, account, "", objectID}
}
