package simulator

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// DefaultRetryDelays is used when neither the profile nor the plan gives retry
// delays (Stripe, for one, publishes none). It is the example schedule of the
// Standard Webhooks spec v1.0.0: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h,
// 24 h (source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md,
// providers.yaml standard_webhooks.retries.example_delays_seconds).
var DefaultRetryDelays = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// DefaultTimeout is the per-attempt timeout when neither the profile nor the plan
// gives one: the low end of the Standard Webhooks recommendation ("somewhere
// between 15 and 30s", providers.yaml standard_webhooks.timeout_note).
const DefaultTimeout = 15 * time.Second

// Clock compresses provider time: Scale provider seconds pass per real second.
// A Scale of 0 or 1 is real time. Only waits are compressed (see package doc).
type Clock struct {
	Scale float64
}

func (c Clock) scale() float64 {
	if c.Scale <= 0 {
		return 1
	}
	return c.Scale
}

// Real converts a provider-time wait into the real time it takes.
func (c Clock) Real(virtual time.Duration) time.Duration {
	return time.Duration(float64(virtual) / c.scale())
}

// Virtual converts real elapsed time into provider time.
func (c Clock) Virtual(real time.Duration) time.Duration {
	return time.Duration(float64(real) * c.scale())
}

// Sleep waits for the real equivalent of a provider-time duration, or until ctx
// ends.
func (c Clock) Sleep(ctx context.Context, virtual time.Duration) error {
	d := c.Real(virtual)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Schedule is the retry policy the runner applies to one delivery.
type Schedule struct {
	// Delays[i] is the provider-time wait before attempt i+2.
	Delays []time.Duration
	// MaxAttempts counts the first attempt.
	MaxAttempts int
	// Horizon stops retries once this much provider time has passed since the
	// first attempt (0: no horizon).
	Horizon time.Duration
	// Jitter spreads each delay by ±Jitter.
	Jitter float64
	// HonourRetryAfter lets a Retry-After response header lengthen the next wait
	// (profile fact HonoursRetryAfter unless the plan overrides it).
	HonourRetryAfter bool
	// RepeatLast keeps retrying at the last delay until Horizon once Delays are
	// used up (profiles whose provider continues at an undocumented cadence,
	// e.g. Adyen's retry queue).
	RepeatLast bool
	// Modelled is true when the delays are the profile's model of an unpublished
	// schedule (RetrySchedule.Modelled), not published intervals.
	Modelled bool
	// Undocumented is true when the delays are DefaultRetryDelays because neither
	// profile nor plan gave any.
	Undocumented bool
}

// ScheduleFor derives the schedule from the profile's facts and the plan's
// overrides (plan wins).
func ScheduleFor(p profiles.Profile, plan *Plan) Schedule {
	f := p.Facts()
	s := Schedule{MaxAttempts: f.Retry.MaxAttempts, HonourRetryAfter: f.HonoursRetryAfter}
	s.Delays, s.Modelled = f.Retry.Effective()
	if len(s.Delays) == 0 {
		s.Delays, s.Modelled = nil, false
	}
	if f.Retry.Horizon != nil {
		s.Horizon = *f.Retry.Horizon
		s.RepeatLast = f.Retry.ContinuesUntilHorizon && len(s.Delays) > 0
	}
	if plan != nil {
		if len(plan.RetryDelays) > 0 {
			s.Delays = make([]time.Duration, len(plan.RetryDelays))
			for i, d := range plan.RetryDelays {
				s.Delays[i] = d.D()
			}
			s.Modelled, s.RepeatLast = false, false
		}
		if plan.MaxAttempts > 0 {
			s.MaxAttempts = plan.MaxAttempts
		}
		s.Jitter = plan.Jitter
		if plan.HonourRetryAfter != nil {
			s.HonourRetryAfter = *plan.HonourRetryAfter
		}
	}
	if s.Delays == nil {
		s.Delays, s.Undocumented = DefaultRetryDelays, true
	}
	switch {
	case s.RepeatLast && s.MaxAttempts == 0:
		// Bounded by the horizon alone.
	case s.RepeatLast:
	case s.MaxAttempts == 0 || s.MaxAttempts > len(s.Delays)+1:
		s.MaxAttempts = len(s.Delays) + 1
	}
	return s
}

// Next returns the provider-time wait before attempt next (2, 3, …) and whether
// that attempt happens. elapsed is provider time since the first attempt;
// retryAfter is what the last response asked for (0 when nothing).
func (s Schedule) Next(next int, elapsed, retryAfter time.Duration, rng *rand.Rand) (time.Duration, bool) {
	if next < 2 || (s.MaxAttempts > 0 && next > s.MaxAttempts) || len(s.Delays) == 0 {
		return 0, false
	}
	i := next - 2
	if i >= len(s.Delays) {
		if !s.RepeatLast {
			return 0, false
		}
		i = len(s.Delays) - 1
	}
	d := s.Delays[i]
	if s.Jitter > 0 && rng != nil {
		d = time.Duration(float64(d) * (1 + s.Jitter*(2*rng.Float64()-1)))
	}
	if s.HonourRetryAfter && retryAfter > d {
		d = retryAfter
	}
	if s.Horizon > 0 && elapsed+d > s.Horizon {
		return 0, false
	}
	return d, true
}

// Total is the provider-time sum of the listed delays (no jitter, no repeats).
func (s Schedule) Total() time.Duration {
	var t time.Duration
	for i := 0; i < len(s.Delays) && (s.MaxAttempts == 0 || i < s.MaxAttempts-1); i++ {
		t += s.Delays[i]
	}
	return t
}

// parseRetryAfter reads a Retry-After header (0 when absent or unparsable).
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	d, _ := profiles.RetryAfter(h, now)
	return d
}
