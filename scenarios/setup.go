package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/vocab"
)

// Setup verification: a scenario that brings a lifecycle object to a state
// before the event it judges reads that state first. A setup event the
// receiver acknowledged and did not apply is then reported as what it is, and
// the later event, whose precondition never held, is not judged: blaming it
// for a forbidden transition would state the wrong reason.

// codeSetupUnmet is every setting-up guarantee's: the receiver acknowledged a
// valid setup event and the object does not show it.
var codeSetupUnmet = Code{"setup.unmet", "a setup event was acknowledged but not applied: the object is not in the state its setup brings it to, so the event the scenario judges was not sent"}

// phaseSetup is the read of an object's state once its setup has settled.
const phaseSetup = "setup"

// setUp makes obj exist and drives it through path, then verifies that it is
// in the state path leads to; false when it is not (the scenario must then
// skip the event it would judge on obj).
func (s *session) setUp(ep Endpoint, l *vocab.Lifecycle, obj string, path []vocab.Transition) bool {
	as := s.create(ep, l, obj)
	as = append(as, s.drive(ep, obj, path)...)
	return s.verifySetup(ep, l, obj, endState(l, path), as)
}

// driveOn drives obj, already verified in state from, on through path, and
// verifies it again.
func (s *session) driveOn(ep Endpoint, l *vocab.Lifecycle, obj, from string, path []vocab.Transition) bool {
	as := s.drive(ep, obj, path)
	want := from
	if len(path) > 0 {
		want = path[len(path)-1].To
	}
	return s.verifySetup(ep, l, obj, want, as)
}

// endState is the state path leads a fresh object to.
func endState(l *vocab.Lifecycle, path []vocab.Transition) string {
	if len(path) == 0 {
		return l.Initial
	}
	return path[len(path)-1].To
}

// verifySetup reads obj's state until it is want (an asynchronous receiver
// may still be applying its setup), and records what the checker needs: the
// state needed and the setup events sent. A setup event that was refused is
// read once: nothing will apply it.
func (s *session) verifySetup(ep Endpoint, l *vocab.Lifecycle, obj, want string, setup []history.Attempt) bool {
	ids := words{}
	refused := false
	for _, a := range setup {
		ids = append(ids, a.Key.EventID)
		refused = refused || !acked(a)
	}
	s.common(func(c *commonFacts) {
		if c.SetupState == nil {
			c.SetupState, c.SetupEvents = map[string]string{}, map[string]words{}
		}
		c.SetupState[obj] = want
		// A later stage of one object's setup adds to what came before.
		c.SetupEvents[obj] = append(c.SetupEvents[obj], ids...)
	})
	met := func() int {
		if st, found := s.lifecycleStateOf(ep, l, obj, phaseSetup); found && st == want {
			return 1
		}
		return 0
	}
	var ok bool
	if refused {
		ok = met() == 1
	} else {
		ok = s.settle(1, met) == 1
	}
	if !ok {
		s.note("%s %s did not reach %s through its setup: the event judged on it was not sent", l.Object, obj, want)
	}
	return ok
}

// setupUnmet judges the setup read of every object the scenario verified, and
// returns the objects whose setup did not hold: their later events must not
// be judged. Setup events all acknowledged, the state not reached: a
// deviation (setup.unmet), naming each event, its answer and the state read.
// A setup event refused: the guarantee's own acknowledgement check reports
// it (every scenario that sets up state holds its setup events to 2xx), so
// only a note says why the object was not judged further.
func (v *view) setupUnmet() map[string]bool {
	unmet := map[string]bool{}
	if len(v.common.SetupState) == 0 {
		return unmet
	}
	byID := map[string]history.Attempt{}
	for _, a := range v.role(roleSetup) {
		if _, seen := byID[a.Key.EventID]; !seen || acked(a) {
			byID[a.Key.EventID] = a
		}
	}
	read := map[string]history.Observation{}
	for _, o := range v.stateReads(phaseSetup) {
		read[o.Params[3]] = o
	}
	for _, obj := range slices.Sorted(maps.Keys(v.common.SetupState)) {
		want := v.common.SetupState[obj]
		o, ok := read[obj]
		if !ok {
			v.fail("history: no setup read of %s %s (phase %q)", v.objectName(), obj, phaseSetup)
			unmet[obj] = true
			continue
		}
		if o.Found && o.Status == want {
			continue
		}
		unmet[obj] = true
		var sent, refused []string
		for _, id := range v.common.SetupEvents[obj] {
			a, ok := byID[id]
			if !ok {
				v.fail("history: setup event %s of %s %s was never sent", id, v.objectName(), obj)
				continue
			}
			d := fmt.Sprintf("%s %s (%s)", a.EventType, id, Describe(a))
			sent = append(sent, d)
			if !acked(a) {
				refused = append(refused, d)
			}
		}
		if len(refused) > 0 {
			v.note("%s %s reads %s after its setup, which needed %q: setup event %s was refused, so its later event was not judged",
				v.objectName(), obj, readText(o), want, strings.Join(refused, ", "))
			continue
		}
		how := "created by its fixture"
		if len(sent) > 0 {
			how = "setup events " + strings.Join(sent, ", ") + " all acknowledged"
		}
		v.deviate(codeSetupUnmet, "%s %s: %s, but it reads %s, not %q: a setup event was lost, so the event the scenario judges was not sent",
			v.objectName(), obj, how, readText(o), want)
	}
	return unmet
}

// readText renders what a state read returned for evidence: the state, or
// that no row was found.
func readText(o history.Observation) string {
	if !o.Found {
		return "no row"
	}
	return fmt.Sprintf("%q", o.Status)
}
