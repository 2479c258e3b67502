package simulator

import (
	"context"
	"fmt"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// chain follows one delivery's retries.
type chain struct {
	r *Runner
	// attempt is told of every retry as it ends.
	attempt func(history.Attempt)
	ev      profiles.Event
	sched   Schedule
	clock   Clock
	step    int
	copy    int
	timeout time.Duration
	seed    int64
	padTo   int
}

// follow makes the retries after first and returns their records (also recorded).
func (c chain) follow(ctx context.Context, first history.Attempt) []history.Attempt {
	var out []history.Attempt
	rng := seededRand(c.seed, fmt.Sprintf("retry/%d/%d/%s", c.step, c.copy, c.ev.ID))
	resign := c.r.facts.ResignsOnRetry
	last := first
	for {
		if last.Outcome == history.OutcomeAcknowledged || last.Verdict == profiles.Stop.String() {
			return out
		}
		elapsed := time.Duration(last.VirtualNS - first.VirtualNS)
		wait, ok := c.sched.Next(last.Attempt+1, elapsed, time.Duration(last.RetryAfterNS), rng)
		if !ok {
			return out
		}
		// The wait counts from the end of the previous attempt, as providers
		// schedule the next try after seeing the failure.
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return out
		}
		n := last.Attempt + 1
		var signedAt time.Time
		if !resign {
			// Providers that do not re-sign resend the original signature.
			signedAt = first.SignedAt
		}
		// Faults are the first attempt's only; the padding is the payload's.
		at := c.r.newAttempt(c.seed, c.ev, n, c.step, c.copy, "", signedAt, Faults{})
		p, err := prepare(c.r.target.Profile, &c.r.facts, c.r.target.Secrets, c.ev, at, Faults{}, c.padTo)
		if err != nil {
			return out
		}
		last = c.r.single(ctx, c.ev, at, p, "", c.timeout, c.step, c.copy, c.clock)
		c.attempt(last)
		out = append(out, last)
		if ctx.Err() != nil {
			return out
		}
	}
}
