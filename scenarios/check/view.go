package check

import (
	"fmt"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// view is what a checker reads of one scenario, and where it writes deviations.
type view struct {
	sc       history.Scenario
	g        scenarios.Guarantee
	attempts []history.Attempt
	obs      []history.Observation
	sink     []history.Sink

	devs      []Deviation
	notes     []string
	errReason string
}

func (v *view) deviate(code, format string, args ...any) {
	v.devs = append(v.devs, Deviation{Code: code, Text: fmt.Sprintf(format, args...)})
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

func (v *view) fact(name string) string { return v.sc.Facts[name] }

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

func (v *view) factOr(name, def string) string {
	if x, ok := v.sc.Facts[name]; ok {
		return x
	}
	return def
}

// objectName names the lifecycle object in evidence.
func (v *view) objectName() string { return v.factOr(scenarios.FactObject, "payment") }

// stateReads are the last reads of lifecycle objects' states in phase (the
// "state" query; histories of the built-in domain before it call it "payment").
func (v *view) stateReads(phase string) []history.Observation {
	return append(v.reads(scenarios.QueryState, phase), v.reads("payment", phase)...)
}

// objectState checks every lifecycle object read in phase against the state
// its scenario recorded as wanted (def for histories that record none).
func (v *view) objectState(code, phase, def, what string) {
	for _, o := range v.stateReads(phase) {
		want := v.factOr(scenarios.FactWantState+o.Params[3], def)
		if !o.Found || o.Status != want {
			v.deviate(code, "%s %s: status %q (found %v) %s, want %q", v.objectName(), o.Params[3], o.Status, o.Found, what, want)
		}
	}
}

// objectEffects checks every object's last effect count in phase against its
// recorded want (def when none is recorded).
func (v *view) objectEffects(code, phase string, def int64, what string) {
	rs := v.reads("object_effects", phase)
	if len(rs) == 0 {
		v.fail("history: %s has no object_effects read in phase %q", v.sc.Name, phase)
		return
	}
	for _, o := range rs {
		want := def
		if x, ok := v.sc.Facts[scenarios.FactWantEffects+o.Params[3]]; ok {
			fmt.Sscan(x, &want)
		}
		if o.Count != want {
			v.deviate(code, "%s: object_effects for %s: got %d, want %d", what, paramsText(o.Params), o.Count, want)
		}
	}
}

// countIf is count for a phase the scenario reads only on some paths.
func (v *view) countIf(code, query, phase string, want int64, what string) {
	if len(v.reads(query, phase)) > 0 {
		v.count(code, query, phase, want, what)
	}
}

// acked records a deviation for every attempt of the roles that the provider did
// not count as acknowledged.
func (v *view) acked(code string, roles ...string) {
	for _, r := range roles {
		for _, a := range v.role(r) {
			if a.Outcome != history.OutcomeAcknowledged {
				v.deviate(code, "%s %s (copy %d, attempt %d) was not acknowledged: %s", r, a.Key.EventID, a.Copy, a.Attempt, scenarios.Describe(a))
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
	for _, o := range v.reads(query, phase) {
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
func (v *view) count(code, query, phase string, want int64, what string) {
	rs := v.reads(query, phase)
	if len(rs) == 0 {
		v.fail("history: %s has no %s read in phase %q", v.sc.Name, query, phase)
		return
	}
	for _, o := range rs {
		if o.Count != want {
			v.deviate(code, "%s: %s for %s: got %d, want %d", what, query, paramsText(o.Params), o.Count, want)
		}
	}
}

// state checks the event rows and effects of every key read in phase.
func (v *view) state(code string, phase string, want int64, what string) {
	v.count(code, "event_rows", phase, want, what)
	v.count(code, "effects", phase, want, what)
}

func keyOf(ps []string) profiles.Key {
	k := profiles.Key{}
	if len(ps) > 0 {
		k.Source = ps[0]
	}
	if len(ps) > 1 {
		k.Account = ps[1]
	}
	if len(ps) > 2 {
		k.EventID = ps[2]
	}
	return k
}

func keyParams(k profiles.Key) []string { return []string{k.Source, k.Account, k.EventID, ""} }

// reconcile holds every delivered key's attempts against its rows, as Jepsen's
// queue checker does: an acknowledged event must be there (else lost), no key
// may be there twice (duplicated), and a credit-like event applies at most once.
// Keys whose attempts all ended unknown and that are present count as recovered.
func reconcile(v *view) {
	type tally struct {
		acked, failed, unknown int
		cash                   bool
	}
	expired := map[string]bool{}
	for _, k := range strings.Split(v.fact(scenarios.FactExpired), "\n") {
		if k != "" {
			expired[k] = true
		}
	}
	handled := map[string]bool{}
	for _, t := range vocab.BuiltinVocabulary().HandledTypes() {
		handled[t] = true
	}
	effectType := vocab.TypeCredit
	if hs, ok := v.sc.Facts[scenarios.FactHandled]; ok {
		handled = map[string]bool{}
		for _, t := range strings.Fields(hs) {
			handled[t] = true
		}
		effectType = v.fact(scenarios.FactEffectType)
	}
	var order []profiles.Key
	byKey := map[profiles.Key]*tally{}
	for _, a := range v.attempts {
		if a.Key.EventID == "" || scenarios.BadInput(a.Faults) || !handled[a.EventType] || expired[scenarios.KeyString(a.Key)] {
			continue
		}
		t := byKey[a.Key]
		if t == nil {
			t = &tally{cash: effectType != "" && a.EventType == effectType}
			byKey[a.Key] = t
			order = append(order, a.Key)
		}
		switch a.Outcome {
		case history.OutcomeAcknowledged:
			t.acked++
		case history.OutcomeUnknown:
			t.unknown++
		default:
			t.failed++
		}
	}
	var ok, lost, dup, recovered int
	for _, k := range order {
		t := byKey[k]
		rows, found := v.read("event_rows", scenarios.PhaseReconcile, keyParams(k))
		if !found {
			v.fail("history: %s has no reconciliation read for %s", v.sc.Name, scenarios.KeyString(k))
			return
		}
		switch {
		case t.acked > 0 && rows.Count == 0:
			lost++
			v.deviate("reconcile.lost", "reconciliation: %s lost: acknowledged %d time(s), no event row", scenarios.KeyString(k), t.acked)
		case rows.Count > 1:
			dup++
			v.deviate("reconcile.duplicated", "reconciliation: %s duplicated: %d event rows", scenarios.KeyString(k), rows.Count)
		case t.acked == 0 && t.unknown > 0 && rows.Count == 1:
			recovered++
		default:
			ok++
		}
		if t.cash {
			if eff, found := v.read("effects", scenarios.PhaseReconcile, keyParams(k)); found && eff.Count > 1 {
				v.deviate("reconcile.applied-twice", "reconciliation: %s applied %d times (acknowledged %d, failed %d, unknown %d attempts)", scenarios.KeyString(k), eff.Count, t.acked, t.failed, t.unknown)
			}
		}
	}
	if n := ok + lost + dup + recovered; n > 0 {
		v.note("reconciliation of %d event key(s) against the rows: %d consistent, %d recovered (unknown outcome, present), %d lost, %d duplicated", n, ok, recovered, lost, dup)
	}
}
