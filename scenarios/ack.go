package scenarios

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// concurrentACK2 is the load under which ACK-2 measures acknowledgement time.
const concurrentACK2 = 64

var _ = Describe("ACK: acknowledge what is durable, refuse what is invalid", Label("ACK"), func() {
	It("ACK-1 every acknowledged event survives a kill right after its 2xx", labels("ACK-1"), func(ctx SpecContext) {
		s := begin(ctx, "ACK-1")
		ep := s.primary()
		if ok, _ := s.env.has("failpoints"); ok {
			// Deterministic: the receiver kills itself right after flushing the 2xx.
			for range 2 {
				typ := typeCash
				ev := s.event(ep, typ, s.newID("cbtxn"))
				k := s.key(ep, ev)
				s.arm(fpAfterResponse, k.EventID)
				a := s.send(ep, ev, simulator.SendOptions{})
				s.crashedRestart()
				if !is2xx(a.Status) {
					s.deviate("event %s was not acknowledged before the kill: %s", k.EventID, describe(a))
					continue
				}
				s.expectRows(k, 1, "acknowledged, then killed and restarted")
				s.expectEffects(k, 1, "acknowledged, then killed and restarted")
			}
			s.verdict()
			return
		}
		// Without failpoints: SIGKILL the moment the first 2xx of many arrives.
		s.note("no failpoints capability: killing on the first 2xx of %d concurrent deliveries", 32)
		evs := make([]profiles.Event, 32)
		for i := range evs {
			evs[i] = s.event(ep, typeCash, s.newID("cbtxn"))
		}
		var once sync.Once
		out := make([]simulator.AttemptRecord, len(evs))
		var wg sync.WaitGroup
		for i, ev := range evs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer GinkgoRecover()
				a, err := s.runner(ep).Send(s.ctx, ev, simulator.SendOptions{Copy: i})
				if err != nil {
					return
				}
				out[i] = a
				if is2xx(a.Status) {
					once.Do(func() { _ = s.env.Controller.Kill() })
				}
			}()
		}
		wg.Wait()
		s.rec.attempts(out...)
		s.restart()
		acked := 0
		for i, a := range out {
			if is2xx(a.Status) {
				acked++
				k := s.key(ep, evs[i])
				s.expectRows(k, 1, "acknowledged before the kill")
				s.expectEffects(k, 1, "acknowledged before the kill")
			}
		}
		s.note("%d of %d deliveries were acknowledged before the kill", acked, len(evs))
		s.verdict()
	})

	It("ACK-2 every delivery is acknowledged within the profile's timeout under 64 concurrent deliveries", labels("ACK-2"), func(ctx SpecContext) {
		s := begin(ctx, "ACK-2")
		ep, timeout, ok := s.env.shortestTimeout()
		if !ok {
			Skip("not applicable: no endpoint's profile documents an acknowledgement timeout")
		}
		evs := make([]profiles.Event, concurrentACK2)
		for i := range evs {
			evs[i] = s.event(ep, typeCash, s.newID("cbtxn"))
		}
		recs := s.parallel(ep, evs, simulator.SendOptions{Timeout: timeout})
		for _, a := range recs {
			if a.Outcome != simulator.OutcomeAcknowledged {
				s.deviate("%s: not acknowledged within %s (%s timeout): %s after %s", a.Key.EventID, timeout, ep.Profile.ID(), describe(a), a.Duration().Round(time.Millisecond))
			}
		}
		p50, p99, max := latencies(recs)
		s.note("%d concurrent deliveries to %s: p50 %s, p99 %s, max %s (timeout %s)", len(recs), ep.Profile.ID(), p50.Round(time.Microsecond), p99.Round(time.Microsecond), max.Round(time.Microsecond), timeout)
		s.verdict()
	})

	It("ACK-3 a bad signature gets a 4xx and leaves nothing", labels("ACK-3"), func(ctx SpecContext) {
		s := begin(ctx, "ACK-3")
		for _, ep := range s.env.Endpoints {
			for _, f := range []struct {
				name   string
				faults simulator.Faults
			}{
				{"tampered body", simulator.Faults{Tamper: true}},
				{"wrong secret", simulator.Faults{WrongSecret: true}},
				{"missing signature", simulator.Faults{MissingSignature: true}},
			} {
				ev := s.event(ep, typeCash, s.newID("cbtxn"))
				k := s.key(ep, ev)
				a := s.send(ep, ev, simulator.SendOptions{Faults: f.faults})
				s.expect4xx(ep.Profile.ID()+" "+f.name, a)
				s.expectRows(k, 0, ep.Profile.ID()+" "+f.name)
				s.expectEffects(k, 0, ep.Profile.ID()+" "+f.name)
			}
		}
		s.verdict()
	})

	It("ACK-4 a stale signed timestamp gets a 4xx and leaves nothing", labels("ACK-4"), func(ctx SpecContext) {
		s := begin(ctx, "ACK-4")
		for _, ep := range s.env.Endpoints {
			if !signsTimestamp(ep) {
				continue
			}
			tol := *ep.Profile.Facts().Tolerance
			ev := s.event(ep, typeCash, s.newID("cbtxn"))
			k := s.key(ep, ev)
			stale := 2*tol + time.Minute
			a := s.send(ep, ev, simulator.SendOptions{Faults: simulator.Faults{StaleBy: simulator.Duration(stale)}})
			s.expect4xx(ep.Profile.ID()+" delivery signed "+stale.String()+" ago (tolerance "+tol.String()+")", a)
			s.expectRows(k, 0, ep.Profile.ID()+" stale timestamp")
			s.expectEffects(k, 0, ep.Profile.ID()+" stale timestamp")
		}
		s.verdict()
	})

	It("ACK-5 malformed JSON, a missing event ID or an oversized body gets a 4xx and leaves nothing", labels("ACK-5"), func(ctx SpecContext) {
		s := begin(ctx, "ACK-5")
		ep := s.primary()
		limit := s.env.MaxBodyBytes
		if limit <= 0 {
			limit = 1 << 20
		}
		for _, f := range []struct {
			name   string
			faults simulator.Faults
		}{
			{"malformed JSON", simulator.Faults{MalformedJSON: true}},
			{"missing event ID", simulator.Faults{MissingID: true}},
			{"oversized body", simulator.Faults{OversizeBytes: 2 * limit}},
		} {
			ev := s.event(ep, typeCash, s.newID("cbtxn"))
			k := s.key(ep, ev)
			a := s.send(ep, ev, simulator.SendOptions{Faults: f.faults})
			s.expect4xx(f.name, a)
			s.expectRows(k, 0, f.name)
			s.expectEffects(k, 0, f.name)
			if f.faults.MissingID {
				empty := k
				empty.EventID = ""
				s.expectRows(empty, 0, "missing event ID (stored under an empty ID)")
			}
		}
		s.verdict()
	})

	It("ACK-6 a valid event of an unhandled type is acknowledged and changes nothing", labels("ACK-6"), func(ctx SpecContext) {
		s := begin(ctx, "ACK-6")
		for _, ep := range s.env.Endpoints {
			ev := s.event(ep, typeUnknown, s.newID("obj"))
			k := s.key(ep, ev)
			a := s.send(ep, ev, simulator.SendOptions{})
			if !is2xx(a.Status) {
				sched := simulator.ScheduleFor(ep.Profile, nil)
				s.deviate("%s: an unhandled event type was answered %s; the provider retries it (up to %d attempts over %s)", ep.Profile.ID(), describe(a), sched.MaxAttempts, sched.Total())
			}
			s.expectEffects(k, 0, ep.Profile.ID()+" unhandled event type")
		}
		s.verdict()
	})
})
