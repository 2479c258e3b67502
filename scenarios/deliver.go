package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// record files attempts under this scenario and role in the run's history.
func (s *session) record(role string, recs ...history.Attempt) []history.Attempt {
	for i := range recs {
		recs[i].Scenario, recs[i].Role = s.index, role
	}
	s.run.addAttempts(recs...)
	return recs
}

// deliver runs one plan against ep — the simulator's one path for deliveries —
// and files its attempts under role. Each event becomes one step; consecutive
// steps go at the same time when together is set. each, when set, hears of every
// attempt as it ends. The attempts come back in step order.
func (s *session) deliver(ep Endpoint, role string, evs []profiles.Event, step simulator.Step, together bool, each func(history.Attempt)) []history.Attempt {
	recs, _ := s.deliverPlan(ep, role, evs, step, together, each)
	return recs
}

// deliverPlan is deliver that also returns the plan's barrier releases.
func (s *session) deliverPlan(ep Endpoint, role string, evs []profiles.Event, step simulator.Step, together bool, each func(history.Attempt)) ([]history.Attempt, []history.Release) {
	s.mu.Lock()
	s.plans++
	name := fmt.Sprintf("%s/%d", s.g.ID, s.plans)
	s.mu.Unlock()
	// The plan's seed (delivery IDs) comes from what it sends, not from the
	// scenario's random source: deliveries made concurrently draw nothing, so
	// they cannot change what the scenario draws next.
	sh := fnv.New64a()
	fmt.Fprintf(sh, "%s|%s|%d|%v", s.g.ID, role, step.Attempt, step.Faults.List())
	for _, ev := range evs {
		// The object ID too: an event whose ID the profile derives (Adyen) has none.
		fmt.Fprintf(sh, "|%s|%s|%s|%d", ev.ID, ev.Type, ev.ObjectID, ev.Version)
	}
	seed := int64(sh.Sum64() >> 1)
	plan := &simulator.Plan{Name: name, Seed: seed}
	for i, ev := range evs {
		ev = s.render(ep, ev)
		en := fmt.Sprintf("e%d", i)
		plan.Events = append(plan.Events, simulator.EventSpec{Name: en, ID: ev.ID, Source: ev.Source, Account: ev.Account,
			Type: ev.Type, ObjectID: ev.ObjectID, Version: ev.Version, Amount: ev.Amount, Currency: ev.Currency, Status: ev.Status,
			Object: ev.Object, Created: ev.Created})
		st := step
		st.Event, st.WithPrevious = en, together && i > 0
		plan.Steps = append(plan.Steps, st)
	}
	r := s.run.runner(ep)
	h, err := r.RunNotify(s.ctx, plan, each)
	if err != nil && s.ctx.Err() == nil {
		// Bad input to the simulator is the harness's problem, not the receiver's.
		s.abort("the harness could not build the deliveries of %s: %v", name, err)
	}
	recs := h.Attempts
	s.mu.Lock()
	s.lastSend = time.Now()
	s.mu.Unlock()
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Step < recs[j].Step })
	s.harnessSide(recs...)
	if err != nil {
		s.abort("interrupted: %v", context.Cause(s.ctx))
	}
	for i := range h.Releases {
		h.Releases[i].Scenario = s.index
		h.Releases[i].StartNS += int64(r.Started().Sub(s.run.start))
		s.run.addRelease(h.Releases[i])
	}
	return s.record(role, s.run.align(r, recs...)...), h.Releases
}

func (s *session) send(ep Endpoint, ev profiles.Event, role string, o simulator.SendOptions) history.Attempt {
	recs := s.deliver(ep, role, []profiles.Event{ev}, stepOf(o), false, nil)
	if len(recs) != 1 {
		s.abort("delivering %s: %d attempts recorded, want 1", ev.ID, len(recs))
	}
	return recs[0]
}

// copies releases n copies of one delivery together (a barrier release).
func (s *session) copies(ep Endpoint, ev profiles.Event, n int, role string, o simulator.SendOptions) ([]history.Attempt, history.Release) {
	st := stepOf(o)
	st.Copies = n
	recs, rels := s.deliverPlan(ep, role, []profiles.Event{ev}, st, false, nil)
	if len(rels) != 1 {
		s.abort("delivering %d copies of %s: %d barrier releases recorded, want 1", n, ev.ID, len(rels))
	}
	return recs, rels[0]
}

// parallel sends each event once, all at the same time, and returns the records in
// the order of evs.
func (s *session) parallel(ep Endpoint, evs []profiles.Event, role string, o simulator.SendOptions) []history.Attempt {
	return s.deliver(ep, role, evs, stepOf(o), true, nil)
}

func stepOf(o simulator.SendOptions) simulator.Step {
	return simulator.Step{Attempt: o.Attempt, Faults: o.Faults, Timeout: simulator.Duration(o.Timeout), PadTo: o.PadTo}
}

// harnessSide aborts when an attempt ended because the run itself was stopped:
// that is no verdict on the receiver.
func (s *session) harnessSide(recs ...history.Attempt) {
	if err := s.ctx.Err(); err != nil {
		for _, a := range recs {
			if a.Outcome != history.OutcomeAcknowledged {
				s.abort("interrupted: %v", context.Cause(s.ctx))
			}
		}
	}
}
