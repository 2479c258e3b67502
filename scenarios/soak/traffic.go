package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// keyState is one event's deliveries so far.
type keyState struct {
	ep  int
	ev  profiles.Event
	key profiles.Key

	mu       sync.Mutex
	attempts int
	firstV   int64
	acked    bool
}

type job struct {
	ks   *keyState
	n    int
	role string
}

// pacer spaces deliveries 1/Rate apart across the workers. It replaced a
// ticker handing tokens to waiting workers: that woke a goroutine per token
// whether or not a worker took it (100,000 times a second at --rate 100000,
// a rate no receiver here reaches) and handed each token over a channel, two
// wake-ups per delivery where a worker sleeping until its own slot needs one.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time
}

// newPacer is the pacer of o.Rate (nil: unlimited).
func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{interval: time.Duration(float64(time.Second) / rate)}
}

// take reserves the next slot and returns it.
func (p *pacer) take() (at, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now = time.Now()
	at = p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.interval)
	return at, now
}

// charge takes one more slot without waiting for it, for an event sent as two
// copies: --rate bounds deliveries, and the copies are two.
func (p *pacer) charge() { p.take() }

// wait takes the next slot and sleeps until it (on t, the worker's own timer,
// made on first use); false when gen ended first. A slot nobody was ready
// for is not made up later: the rate is a ceiling, not a debt.
func (p *pacer) wait(gen context.Context, t **time.Timer) bool {
	at, now := p.take()
	d := at.Sub(now)
	if d <= 0 {
		return gen.Err() == nil
	}
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-(*t).C:
		return true
	case <-gen.Done():
		(*t).Stop()
		return false
	}
}

// worker w sends its events until gen ends. Its events follow from the seed
// and w alone, and their IDs carry w: a shard running some of the workers sends
// exactly those workers' events of an unsharded soak of the same seed.
func (s *soak) worker(ctx, gen context.Context, pace *pacer, w int, rng *rand.Rand) {
	var timer *time.Timer
	for seq := 0; gen.Err() == nil; {
		if pace != nil && !pace.wait(gen, &timer) {
			return
		}
		if j, ok := s.pop(); ok {
			s.deliver(ctx, j, false, false)
			continue
		}
		s.n.Add(1)
		seq++
		epi := (w + seq) % len(s.env.Endpoints)
		ev, key, err := scenarios.EffectEvent(s.env, s.env.Endpoints[epi], fmt.Sprintf("soak%dw%dn%06x", w, seq, rng.Uint32()&0xffffff), rng.Uint32())
		if err != nil {
			s.fault(reports.SoakFault{Kind: "generator", StartMS: s.since() / 1e6, EndMS: s.since() / 1e6, Error: err.Error()})
			return
		}
		ks := &keyState{ep: epi, ev: ev, key: key}
		s.mu.Lock()
		s.keys = append(s.keys, ks)
		s.mu.Unlock()
		x := rng.Float64()
		dup, lost := x < s.o.DupRate, x >= s.o.DupRate && x < s.o.DupRate+s.o.LostAckRate
		role := RoleFirst
		switch {
		case dup:
			role = RoleCopy
			if pace != nil {
				pace.charge() // two copies are two deliveries
			}
		case lost:
			role = RoleLostAck
		}
		s.deliver(ctx, job{ks: ks, n: 1, role: role}, dup, lost)
	}
}

func (s *soak) pop() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return job{}, false
	}
	j := s.queue[0]
	s.queue = s.queue[1:]
	return j, true
}

func (s *soak) push(j job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.queue = append(s.queue, j)
	}
}

// deliver makes attempt j.n of one event (two concurrent copies with dup, the
// acknowledgement lost with lost), records it, and schedules the provider's
// next attempt when it was not acknowledged (retry).
func (s *soak) deliver(ctx context.Context, j job, dup, lost bool) bool {
	ks, r := j.ks, s.runners[j.ks.ep]
	ep := s.env.Endpoints[ks.ep]
	o := simulator.SendOptions{Shape: simulator.Shape{Attempt: j.n, Timeout: simulator.Duration(ep.AckTimeout)}}
	if lost {
		o.Faults.LostAck = simulator.LostAckClose
	}
	var recs []history.Attempt
	if dup {
		rs, _, err := r.SendCopies(ctx, ks.ev, 2, o)
		if err != nil {
			return false
		}
		recs = rs
	} else {
		rec, err := r.Send(ctx, ks.ev, o)
		if err != nil {
			return false
		}
		recs = []history.Attempt{rec}
	}
	acked := false
	off := s.offsets[ks.ep]
	var last history.Attempt
	for i := range recs {
		a := &recs[i]
		a.Role = j.role
		a.StartNS += off
		a.EndNS += off
		a.VirtualNS = int64(s.clock.Virtual(time.Duration(a.StartNS)))
		s.nAttempts.Add(1)
		if a.Outcome == history.OutcomeAcknowledged {
			acked = true
			s.nAcked.Add(1)
			// A kill waits for an acknowledgement: a crash just after the
			// answer is the one that tells whether it followed the commit.
			// The worker that heard it kills at once: any hand-off to another
			// goroutine widens the gap the crash must fall into.
			if s.killArmed.Load() && s.killAfter.Add(-1) <= 0 && s.killArmed.CompareAndSwap(true, false) {
				at := s.since()
				s.killNow <- killed{at: at, err: (*s.strike.Load())()}
			}
		} else if lost && a.Outcome == history.OutcomeUnknown {
			// The soak dropped this answer itself: unknown by design.
			s.nLostAck.Add(1)
		} else {
			s.nErr.Add(1)
		}
		last = *a
	}
	s.mu.Lock()
	s.attempts.add(recs)
	s.mu.Unlock()
	ks.mu.Lock()
	if j.n == 1 {
		ks.firstV = last.VirtualNS
	}
	ks.attempts = max(ks.attempts, j.n)
	ks.acked = ks.acked || acked
	done, n, elapsed := ks.acked, ks.attempts, time.Duration(last.VirtualNS-ks.firstV)
	ks.mu.Unlock()
	if done || j.role == RoleSettle || last.Verdict == profiles.Stop.String() {
		return acked
	}
	if wait, ok := s.scheds[ks.ep].Next(n+1, elapsed, time.Duration(last.RetryAfterNS), nil); ok {
		next := job{ks: ks, n: n + 1, role: RoleRedelivery}
		time.AfterFunc(s.clock.Real(wait), func() { s.push(next) })
	}
	return acked
}
