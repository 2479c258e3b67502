package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
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

// deliver sends evs to ep — the simulator's one path for the suite's
// deliveries — and files their attempts under role: each event once (copies
// of it released together by a barrier when copies > 1), one after another,
// or all at the same time when together is set. each, when set, hears of
// every attempt as it ends. The attempts come back in the order of evs, on
// the run's clock, with the barrier releases.
func (s *session) deliver(ep Endpoint, role string, evs []profiles.Event, sh simulator.Shape, copies int, together bool, each func(history.Attempt)) ([]history.Attempt, []history.Release) {
	s.mu.Lock()
	s.plans++
	name := fmt.Sprintf("%s/%d", s.g.ID, s.plans)
	s.mu.Unlock()
	// The seed (delivery IDs) comes from what is sent, not from the
	// scenario's random source: deliveries made concurrently draw nothing, so
	// they cannot change what the scenario draws next.
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%d|%v", s.g.ID, role, sh.Attempt, sh.Faults.List())
	for _, ev := range evs {
		// The object ID too: an event whose ID the profile derives (Adyen) has none.
		fmt.Fprintf(h, "|%s|%s|%s|%d", ev.ID, ev.Type, ev.ObjectID, ev.Version)
	}
	seed := int64(h.Sum64() >> 1)
	ds := make([]simulator.Delivery, len(evs))
	for i, ev := range evs {
		ds[i] = simulator.Delivery{Event: s.render(ep, ev), Shape: sh, Copies: copies, Together: together && i > 0}
		// The provider's object moves on as it sends the event.
		s.apiModel(role, ds[i].Event)
		// Every event delivered has its object known, so an effects read
		// (reconciliation's too) binds $4 whether or not the scenario kept
		// its key.
		s.trackObject(profiles.EventKey(ep.Profile, ds[i].Event), ev.ObjectID, ev.Type)
	}
	recs, rels, err := s.run.runner(ep).Deliver(s.ctx, seed, ds, each)
	if err != nil && s.ctx.Err() == nil {
		// Bad input to the simulator is the harness's problem, not the receiver's.
		s.abort("the harness could not build the deliveries of %s: %v", name, err)
	}
	s.mu.Lock()
	s.lastSend = time.Now()
	s.mu.Unlock()
	s.harnessSide(recs...)
	if err != nil {
		s.abort("interrupted: %v", context.Cause(s.ctx))
	}
	for i := range rels {
		rels[i].Scenario = s.index
		s.run.addRelease(rels[i])
	}
	return s.record(role, recs...), rels
}

// send delivers ev once.
func (s *session) send(ep Endpoint, ev profiles.Event, role string, sh simulator.Shape) history.Attempt {
	recs, _ := s.deliver(ep, role, []profiles.Event{ev}, sh, 1, false, nil)
	if len(recs) != 1 {
		s.abort("delivering %s: %d attempts recorded, want 1", ev.ID, len(recs))
	}
	return recs[0]
}

// copies releases n copies of one delivery together (a barrier release).
func (s *session) copies(ep Endpoint, ev profiles.Event, n int, role string, sh simulator.Shape) ([]history.Attempt, history.Release) {
	recs, rels := s.deliver(ep, role, []profiles.Event{ev}, sh, n, false, nil)
	if len(rels) != 1 {
		s.abort("delivering %d copies of %s: %d barrier releases recorded, want 1", n, ev.ID, len(rels))
	}
	return recs, rels[0]
}

// parallel sends each event once, all at the same time, and returns the records in
// the order of evs.
func (s *session) parallel(ep Endpoint, evs []profiles.Event, role string, sh simulator.Shape) []history.Attempt {
	recs, _ := s.deliver(ep, role, evs, sh, 1, true, nil)
	return recs
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
