package simulator

import (
	"context"
	"fmt"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Delivery is one event Runner.Deliver sends, and how.
type Delivery struct {
	// Event is sent as the caller built it. Fields it leaves empty get the
	// defaults a plan's events get (Plan.Resolve): the profile ID as source,
	// the target's account, an ID and an object ID seeded from the delivery's
	// index, the call's start as creation time, usd for an amount.
	Event profiles.Event
	// Shape is the attempt number, faults, timeout and padding.
	Shape
	// Copies are released together by a barrier over pre-opened connections
	// (0 or 1: one attempt over a keep-alive connection, no release).
	Copies int
	// Together starts the delivery at the same time as the previous one
	// (Step.WithPrevious): consecutive together deliveries form a group, and
	// a group starts once the previous group's first attempts ended.
	Together bool
}

// Deliver sends already-built events in order, without a plan: it makes
// exactly the attempts of a plan with seed whose step k delivers ds[k] (its
// event, Copies, Shape, WithPrevious = Together), with the same delivery IDs
// and the same Step (k) in each record. It follows no retry schedule, replays
// nothing and never waits: each delivery makes its first attempts, one per
// copy.
//
// The attempts come back in delivery order (delivery index, then copy), the
// barrier releases in delivery order too; each, when set, hears of every
// attempt as it ends, from the goroutine that made it, so it must be safe for
// concurrent use. The records are on the runner's clock (Options.Origin).
//
// A delivery that does not validate is an error before anything is sent; one
// its profile cannot render is an error before its group is sent, after the
// groups before it (as in a plan). Cancelling ctx stops between groups: the
// attempts so far come back with ctx's error.
func (r *Runner) Deliver(ctx context.Context, seed int64, ds []Delivery, each func(history.Attempt)) ([]history.Attempt, []history.Release, error) {
	if err := validateDeliveries(ds); err != nil {
		return nil, nil, err
	}
	defs := r.eventDefaults(seed, time.Now())
	in := make([]delivery, len(ds))
	n := 0
	for k, d := range ds {
		in[k] = delivery{ev: defs.fill(k, d.Event), shape: d.Shape, copies: max(d.Copies, 1), together: d.Together, replayOf: -1}
		n += in[k].copies
	}
	if each == nil {
		each = func(history.Attempt) {}
	}
	// Releases are collected from what each delivery made, in delivery order.
	e := &engine{r: r, seed: seed, field: "deliver: deliveries", attempt: each, release: func(history.Release) {}}
	out, err := e.run(ctx, in)
	atts := make([]history.Attempt, 0, n)
	var rels []history.Release
	for _, m := range out {
		atts = append(atts, m.firsts...)
		if m.rel != nil {
			rels = append(rels, *m.rel)
		}
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("deliver: %w", ctx.Err())
	}
	return atts, rels, err
}

// validateDeliveries checks ds as plan validation checks a plan's events and
// steps; errors name the delivery and the rule.
func validateDeliveries(ds []Delivery) error {
	for k, d := range ds {
		f := fmt.Sprintf("deliver: deliveries[%d]", k)
		if err := validateEvent(f+".event", d.Event.Type, d.Event.Version, d.Event.Object); err != nil {
			return err
		}
		if err := validateCopies(f, d.Copies); err != nil {
			return err
		}
		if d.Together && k == 0 {
			return fmt.Errorf("%s.together needs a delivery before it", f)
		}
		if err := d.Shape.validate(f); err != nil {
			return err
		}
	}
	return nil
}
