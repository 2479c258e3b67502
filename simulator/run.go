package simulator

import (
	"context"
	"fmt"
	"time"

	"github.com/hookcert/hookcert/history"
)

// Run executes a plan and returns its history. Cancelling ctx stops the run
// promptly; the history so far is returned with ctx's error.
func (r *Runner) Run(ctx context.Context, plan *Plan) (*history.History, error) {
	return r.RunNotify(ctx, plan, nil)
}

// RunNotify is Run that also calls each, from the goroutine that made it, as
// every attempt ends: a caller can act in the middle of a plan (kill a receiver
// after its n-th acknowledgement, say). each must be safe for concurrent use.
func (r *Runner) RunNotify(ctx context.Context, plan *Plan, each func(history.Attempt)) (*history.History, error) {
	rp, err := plan.resolve(r.eventDefaults(plan.Seed, time.Now()))
	if err != nil {
		return nil, err
	}
	clock := Clock{Scale: plan.TimeScale}
	rec := &recorder{h: history.History{Meta: r.meta(plan.Seed, plan.Name, clock.scale())}, each: each}
	e := &engine{r: r, seed: plan.Seed, clock: clock, sched: ScheduleFor(r.target.Profile, plan),
		timeout: plan.Timeout.D(), field: "plan: steps", attempt: rec.attempt, release: rec.release}
	if _, err := e.run(ctx, rp.deliveries()); err != nil {
		return rec.snapshot(), err
	}
	h := rec.snapshot()
	if err := ctx.Err(); err != nil {
		return h, fmt.Errorf("run %q: %w", plan.Name, err)
	}
	return h, nil
}
