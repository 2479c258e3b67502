package scenarios

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// concurrentACK2 is the load under which ACK-2 measures acknowledgement time
// on the strictest endpoint; burstACK2 the burst every other profile gets.
const (
	concurrentACK2 = 64
	burstACK2      = 8
)

// ACK-1 without failpoints: rounds of concurrent deliveries, each killed after a
// seeded number of acknowledgements.
const (
	roundsACK1   = 3
	perRoundACK1 = 16
)

// Phases and roles the ACK checkers read.
const (
	PhaseAfterRestart    = "after-restart"
	PhaseAfterRedelivery = "after-redelivery"
	PhaseBad             = "bad"
	PhaseUnknownType     = "unknown-type"

	PhaseControl  = "control"
	PhaseBoundary = "boundary"

	RoleLoad        = "load"
	RoleControl     = "control"
	RoleBadPrefix   = "bad:"
	RoleUnknownType = "unknown-type"
	// RoleBoundaryPrefix starts the role of a legitimate delivery at the edge of
	// a limit or tolerance; the rest describes it.
	RoleBoundaryPrefix = "boundary:"
)

func init() {
	register("ACK-1", "every acknowledged event survives a kill right after its 2xx", func(s *session) {
		ep := s.primary()
		if ok, _ := s.env.has("failpoints"); ok {
			// Deterministic: the receiver kills itself right after flushing the 2xx.
			for range 2 {
				ev := s.effectEvent(ep)
				k := s.key(ep, ev)
				s.arm(fpAfterResponse, k.EventID)
				a := s.send(ep, ev, RoleLoad, simulator.SendOptions{})
				s.crashedRestart(fpAfterResponse)
				s.ack1Check([]profiles.Event{ev}, []history.Attempt{a}, ep)
			}
			return
		}
		s.note("no failpoints capability: SIGKILL after a seeded number of acknowledgements, %d rounds of %d concurrent deliveries", roundsACK1, perRoundACK1)
		for round := 1; round <= roundsACK1; round++ {
			s.ack1Round(ep, round)
		}
	})

	register("ACK-2", "every delivery is acknowledged within the profile's timeout under 64 concurrent deliveries", func(s *session) {
		// 64 deliveries at once, shared among the profiles (the first endpoint
		// of each: accounts of one profile share the code path), each held to
		// its own endpoint's timeout.
		type group struct {
			ep      Endpoint
			timeout time.Duration
			what    string
			evs     []profiles.Event
		}
		var groups []*group
		seen := map[string]bool{}
		for _, ep := range s.endpoints() {
			if seen[ep.Profile.ID()] {
				continue
			}
			seen[ep.Profile.ID()] = true
			timeout, model := ep.ackTimeout()
			if timeout <= 0 {
				s.note("%s: no acknowledgement timeout documented or declared (ack_timeout)", ep.name())
				continue
			}
			what := "documented by " + ep.Profile.ID()
			if model {
				what = "hookcert's model: " + ep.Profile.ID() + " documents none; set ack_timeout on the endpoint to hold it to yours"
			}
			groups = append(groups, &group{ep: ep, timeout: timeout, what: what})
		}
		if len(groups) == 0 {
			s.notApplicable("no endpoint's profile documents an acknowledgement timeout and none declares ack_timeout")
		}
		// The full load goes to the strictest timeout, where a receiver that
		// queues fails for certain; every other profile then gets a smaller
		// concurrent burst against its own.
		sort.SliceStable(groups, func(i, j int) bool { return groups[i].timeout < groups[j].timeout })
		for i, g := range groups {
			n := concurrentACK2
			if i > 0 {
				n = burstACK2
			}
			for range n {
				g.evs = append(g.evs, s.effectEvent(g.ep))
			}
		}
		for _, g := range groups {
			s.fact(FactTimeoutOf+g.ep.source()+"/"+g.ep.Account, g.timeout)
			recs := s.parallel(g.ep, g.evs, RoleLoad, simulator.SendOptions{Timeout: g.timeout})
			p50, p99, max := latencies(recs)
			s.note("%d concurrent deliveries to %s: p50 %s, p99 %s, max %s (timeout %s, %s)", len(recs), g.ep.name(),
				p50.Round(time.Microsecond), p99.Round(time.Microsecond), max.Round(time.Microsecond), g.timeout, g.what)
		}
	})

	register("ACK-3", "a bad signature gets a 4xx and leaves nothing", func(s *session) {
		// All at once: a receiver that never answers costs one timeout, not one
		// per delivery and endpoint.
		var jobs []func()
		for _, ep := range s.env.Endpoints {
			for _, f := range []struct {
				name   string
				faults simulator.Faults
			}{
				{"tampered body", simulator.Faults{Tamper: true}},
				{"wrong secret", simulator.Faults{WrongSecret: true}},
				{"missing signature", simulator.Faults{MissingSignature: true}},
			} {
				jobs = append(jobs, s.badDelivery(ep, ep.Profile.ID()+" "+f.name, f.faults))
			}
			jobs = append(jobs, s.control(ep))
		}
		s.together(jobs...)
	})

	register("ACK-4", "a stale signed timestamp gets a 4xx and leaves nothing", func(s *session) {
		// Both sides of the tolerance: beyond it is refused; inside it — a little
		// old, or a little ahead as a provider's clock may be — is accepted.
		var jobs []func()
		for _, ep := range s.env.Endpoints {
			if !signsTimestamp(ep) {
				continue
			}
			tol := *ep.Profile.Facts().Tolerance
			stale := 2*tol + time.Minute
			inside := tol / 2
			jobs = append(jobs, s.badDelivery(ep, ep.Profile.ID()+" delivery signed "+stale.String()+" ago (tolerance "+tol.String()+")",
				simulator.Faults{StaleBy: simulator.Duration(stale)}), s.control(ep),
				s.boundary(ep, ep.Profile.ID()+" signed "+inside.String()+" ago, inside the tolerance", simulator.SendOptions{Faults: simulator.Faults{StaleBy: simulator.Duration(inside)}}),
				s.boundary(ep, ep.Profile.ID()+" signed "+skewACK4.String()+" ahead (clock skew), inside the tolerance", simulator.SendOptions{Faults: simulator.Faults{AheadBy: simulator.Duration(skewACK4)}}))
		}
		s.together(jobs...)
	})

	register("ACK-5", "malformed JSON, a missing event ID or an oversized body gets a 4xx and leaves nothing", func(s *session) {
		var jobs []func()
		for _, ep := range s.endpoints() {
			limit := s.bodyLimit(ep)
			for _, f := range []struct {
				name   string
				faults simulator.Faults
			}{
				{"malformed JSON", simulator.Faults{MalformedJSON: true}},
				{"missing event ID", simulator.Faults{MissingID: true}},
				{fmt.Sprintf("oversized body (%d bytes, twice the %d-byte limit)", 2*limit, limit), simulator.Faults{OversizeBytes: 2 * limit}},
			} {
				jobs = append(jobs, s.badDelivery(ep, ep.name()+" "+f.name, f.faults))
			}
			jobs = append(jobs, s.control(ep))
		}
		s.together(jobs...)
	})

	register("ACK-6", "a valid event of an unhandled type is acknowledged and changes nothing", func(s *session) {
		u := s.unhandledRole()
		var jobs []func()
		for _, ep := range s.env.Endpoints {
			ev := s.event(ep, u.Type, s.newID(prefixOr(u.IDPrefix)))
			k := s.key(ep, ev)
			jobs = append(jobs, func() {
				s.send(ep, ev, RoleUnknownType, simulator.SendOptions{})
				s.effects(k, PhaseUnknownType)
			},
				// The positive control: "changes nothing" means something only if
				// a handled event on the same endpoint does change the state.
				s.control(ep))
		}
		s.together(jobs...)
	})

	register("ACK-7", "a legitimate body just under the size limit is acknowledged and applied", func(s *session) {
		var jobs []func()
		for _, ep := range s.endpoints() {
			limit := s.bodyLimit(ep)
			size := limit - largeMarginACK7
			jobs = append(jobs, s.boundary(ep, fmt.Sprintf("%s %d-byte body (limit %d)", ep.name(), size, limit), simulator.SendOptions{PadTo: size}))
		}
		s.together(jobs...)
	})
}

// FactTimeoutOf prefixes ACK-2's timeout per endpoint ("timeout:<source>/<account>").
const FactTimeoutOf = "timeout:"

// skewACK4 is how far ahead of the receiver's clock ACK-4 signs a delivery that
// must still be accepted: well inside every profile's tolerance.
const skewACK4 = time.Minute

// largeMarginACK7 is how far under the limit ACK-7's body stays: room for the
// limit being counted on the body alone or with a little framing.
const largeMarginACK7 = 1024

// bodyLimit is the largest body a receiver must accept on ep: the target's
// declared limit (else the 1 MiB default).
func (s *session) bodyLimit(ep Endpoint) int {
	if s.env.MaxBodyBytes > 0 {
		return s.env.MaxBodyBytes
	}
	return 1 << 20
}

// boundary builds one legitimate delivery at the edge of a limit or tolerance
// and returns the job that sends it and reads that it was applied once.
func (s *session) boundary(ep Endpoint, what string, o simulator.SendOptions) func() {
	ev := s.effectEvent(ep)
	k := s.key(ep, ev)
	return func() {
		s.send(ep, ev, RoleBoundaryPrefix+what, o)
		s.state(k, PhaseBoundary, 1)
	}
}

// ackTimeout is the timeout ACK-2 holds ep to, and whether it is hookcert's
// model rather than a documented or declared value.
func (ep Endpoint) ackTimeout() (time.Duration, bool) {
	if ep.AckTimeout > 0 {
		return ep.AckTimeout, ep.AckTimeoutModel
	}
	if t := ep.Profile.Facts().Timeout; t != nil && *t > 0 {
		return *t, false
	}
	return 0, false
}

// badDelivery builds one invalid delivery now and returns the job that sends it
// and reads that it left nothing (under an empty event ID too, when the fault
// drops the ID: stored under an empty ID is stored all the same).
func (s *session) badDelivery(ep Endpoint, what string, f simulator.Faults) func() {
	ev := s.effectEvent(ep)
	k := s.key(ep, ev)
	return func() {
		s.send(ep, ev, RoleBadPrefix+what, simulator.SendOptions{Faults: f})
		s.rows(k, PhaseBad)
		s.effects(k, PhaseBad)
		if f.MissingID {
			empty := k
			empty.EventID = ""
			s.rows(empty, PhaseBad)
		}
	}
}

// control builds a valid delivery to ep now and returns the job that sends and
// reads it: the positive control of a rejection check. A receiver that refuses
// everything refuses bad input too, and must not pass for it.
func (s *session) control(ep Endpoint) func() {
	ev := s.effectEvent(ep)
	return func() {
		s.send(ep, ev, RoleControl, simulator.SendOptions{})
		s.state(s.key(ep, ev), PhaseControl, 1)
	}
}

// ack1Check reads, after a restart, every acknowledged event of evs, then
// redelivers every event — in flight at the kill or not: a provider resends
// both — and reads them again. A receiver that deduplicates in process memory
// applies the redelivery a second time.
func (s *session) ack1Check(evs []profiles.Event, recs []history.Attempt, ep Endpoint) {
	var ackedKeys, all []profiles.Key
	for i, ev := range evs {
		if acked(recs[i]) {
			ackedKeys = append(ackedKeys, s.key(ep, ev))
		}
		all = append(all, s.key(ep, ev))
	}
	s.states(PhaseAfterRestart, 1, ackedKeys...)
	s.parallel(ep, evs, RoleRedelivery, simulator.SendOptions{Attempt: 2})
	s.states(PhaseAfterRedelivery, 1, all...)
}

// ack1Round sends perRoundACK1 events at once and SIGKILLs the receiver when the
// k-th acknowledgement arrives, k drawn from the seed, then restarts it.
func (s *session) ack1Round(ep Endpoint, round int) {
	evs := make([]profiles.Event, perRoundACK1)
	for i := range evs {
		evs[i] = s.effectEvent(ep)
	}
	s.mu.Lock()
	kth := 1 + s.rng.IntN(perRoundACK1/2)
	s.mu.Unlock()
	var mu sync.Mutex
	acks, killed := 0, false
	var killErr error
	out := s.deliver(ep, RoleLoad, evs, simulator.Step{}, true, func(a history.Attempt) {
		if !acked(a) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if acks++; acks == kth && !killed {
			killed = true
			killErr = s.env.Controller.Kill()
		}
	})
	if killErr != nil {
		s.abort("killing the receiver: %v", killErr)
	}
	switch {
	case acks == 0:
		s.abort("round %d: none of %d deliveries was acknowledged, so there was no acknowledged event to kill after", round, len(evs))
	case !killed:
		// Fewer acknowledgements than drawn: kill after the last of them.
		if err := s.env.Controller.Kill(); err != nil {
			s.abort("killing the receiver: %v", err)
		}
		s.note("round %d: only %d acknowledgement(s) of %d wanted before the kill; killed after the last", round, acks, kth)
	default:
		s.note("round %d: SIGKILL on acknowledgement %d of %d deliveries (%d acknowledged in all)", round, kth, len(evs), acks)
	}
	s.restart()
	s.ack1Check(evs, out, ep)
}

func latencies(recs []history.Attempt) (p50, p99, max time.Duration) {
	if len(recs) == 0 {
		return
	}
	ds := make([]time.Duration, len(recs))
	for i, a := range recs {
		ds[i] = a.Duration()
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[(len(ds)*99)/100], ds[len(ds)-1]
}
