package simulator

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The engine is the one path every multi-delivery call takes: a plan (Run,
// RunNotify, Preview) and Runner.Deliver both come down to a list of
// deliveries, so both render, label, identify and time attempts alike.

// delivery is one delivery as the engine makes it: a resolved event and how to
// send it.
type delivery struct {
	ev     profiles.Event
	shape  Shape
	copies int // ≥ 1; more than one goes out through a barrier release
	// together starts the delivery with the previous one (Step.WithPrevious).
	together bool
	// wait is the provider-time pause before the delivery's group (Step.Wait).
	wait  time.Duration
	retry bool
	// replayOf is the delivery this one replays (-1: none); original resends
	// with the signed time of its first attempt (Replay.OriginalTimestamp).
	replayOf int
	original bool
}

// engine makes deliveries in order: consecutive together deliveries form a
// group that goes at the same time, and a group starts (after its first
// delivery's wait) once the previous group's first attempts ended.
type engine struct {
	r     *Runner
	seed  int64
	clock Clock
	// sched is followed by the deliveries that retry.
	sched Schedule
	// timeout is the default per-attempt timeout (Plan.Timeout; 0: the
	// profile's, then DefaultTimeout).
	timeout time.Duration
	// field names the deliveries in errors ("plan: steps").
	field string
	// attempt hears of every attempt as it ends, retries included, and
	// release of every barrier release; both from the goroutine that made it.
	attempt func(history.Attempt)
	release func(history.Release)
}

// made is what one delivery's first attempts made: one record per copy, and
// the barrier release when there were copies.
type made struct {
	firsts []history.Attempt
	rel    *history.Release
}

// ready is one delivery's first attempt, prepared.
type ready struct {
	i       int
	d       delivery
	at      profiles.Attempt
	p       *prepared
	timeout time.Duration
}

// run makes ds and returns what each delivery's first attempts made (nothing
// for a delivery whose group did not go). Every delivery of a group is
// prepared before any is sent, so one that cannot be rendered sends nothing of
// its group: the error names it. Cancelling ctx stops between groups. run
// returns once the retries it started ended.
func (e *engine) run(ctx context.Context, ds []delivery) ([]made, error) {
	out := make([]made, len(ds))
	var retries sync.WaitGroup
	defer retries.Wait()
	for i := 0; i < len(ds); {
		// A group: this delivery and the ones after it that start with it.
		j := i + 1
		for j < len(ds) && ds[j].together {
			j++
		}
		if err := e.clock.Sleep(ctx, ds[i].wait); err != nil {
			break
		}
		group := make([]ready, 0, j-i)
		for k := i; k < j; k++ {
			var orig time.Time
			if d := ds[k]; d.replayOf >= 0 && len(out[d.replayOf].firsts) > 0 {
				// Written by an earlier group, whose goroutines ended.
				orig = out[d.replayOf].firsts[0].SignedAt
			}
			g, err := e.prepare(k, ds[k], orig)
			if err != nil {
				return out, err
			}
			group = append(group, g)
		}
		var wg sync.WaitGroup
		for _, g := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[g.i] = e.first(ctx, g, &retries)
			}()
		}
		// Only one goroutine in a group of one: the common case stays sequential.
		wg.Wait()
		if ctx.Err() != nil {
			break
		}
		i = j
	}
	return out, nil
}

// prepare prepares the first attempt of delivery k. orig is the signed time of
// the replayed delivery's first attempt, for a replay with its original
// timestamp.
func (e *engine) prepare(k int, d delivery, orig time.Time) (ready, error) {
	var signedAt time.Time
	if d.original {
		signedAt = orig
	}
	at := e.r.newAttempt(e.seed, d.ev, d.shape.Attempt, k, 0, "", signedAt, d.shape.Faults)
	p, err := prepare(e.r.target.Profile, &e.r.facts, e.r.target.Secrets, d.ev, at, d.shape.Faults, d.shape.PadTo)
	if err != nil {
		return ready{}, fmt.Errorf("%s[%d]: %w", e.field, k, err)
	}
	return ready{k, d, at, p, e.r.timeoutFor(cmp.Or(d.shape.Timeout.D(), e.timeout))}, nil
}

// first sends g's first attempts, reports them, and starts following their
// retries when the delivery retries.
func (e *engine) first(ctx context.Context, g ready, retries *sync.WaitGroup) made {
	var m made
	lostAck := g.d.shape.Faults.LostAck
	if g.d.copies == 1 {
		m.firsts = []history.Attempt{e.r.single(ctx, g.d.ev, g.at, g.p, lostAck, g.timeout, g.i, 0, e.clock)}
	} else {
		var rel history.Release
		m.firsts, rel = e.r.copies(ctx, g.d.ev, g.at, g.p, lostAck, g.timeout, g.i, g.d.copies, e.clock)
		m.rel = &rel
		e.release(rel)
	}
	for _, a := range m.firsts {
		e.attempt(a)
	}
	if g.d.retry {
		for _, a := range m.firsts {
			c := chain{r: e.r, attempt: e.attempt, ev: g.d.ev, sched: e.sched, clock: e.clock, step: g.i, copy: a.Copy,
				timeout: g.timeout, seed: e.seed, padTo: g.d.shape.PadTo}
			retries.Add(1)
			go func() {
				defer retries.Done()
				c.follow(ctx, a)
			}()
		}
	}
	return m
}
