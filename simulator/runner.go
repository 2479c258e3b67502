package simulator

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// DefaultResponseReadLimit bounds how much of a response body is read.
const DefaultResponseReadLimit = 64 << 10

// maxResponseHeaderBytes bounds response headers.
const maxResponseHeaderBytes = 64 << 10

// Target is the receiver endpoint a runner delivers to.
type Target struct {
	// URL is the endpoint for this profile and account.
	URL     string
	Profile profiles.Profile
	// Secrets sign deliveries (several during a secret roll). Never logged.
	Secrets []string
	// Account is the account scope of the endpoint, used for events that do not
	// name one.
	Account string
	// TLSConfig is used for https URLs (nil: system roots).
	TLSConfig *tls.Config
}

// Options tune a runner.
type Options struct {
	// ResponseReadLimit bounds the bytes read of each response body (default 64 KiB);
	// a longer body is cut and recorded with error class too_large.
	ResponseReadLimit int64
}

// Runner delivers events to one target and records what happened. It is safe for
// concurrent use. Close releases its idle connections.
type Runner struct {
	target Target
	u      *url.URL
	opts   Options
	pool   *connPool
	start  time.Time
	rec    *recorder
	clock  Clock
	// facts are the profile's, read once: Facts() builds a fresh copy per call.
	facts profiles.Facts
	// reqHead is the request line and Host header, the same for every request.
	reqHead []byte
	// lastExcerpt is the last response excerpt (see excerpt).
	lastExcerpt atomic.Pointer[excerptText]
}

// NewRunner checks the target and builds a runner. Errors name the field.
func NewRunner(t Target, o Options) (*Runner, error) {
	if t.Profile == nil {
		return nil, fmt.Errorf("target.profile is required")
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, fmt.Errorf("target.url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target.url must be an absolute http or https URL, got scheme %q host %q", u.Scheme, u.Host)
	}
	if o.ResponseReadLimit <= 0 {
		o.ResponseReadLimit = DefaultResponseReadLimit
	}
	r := &Runner{target: t, u: u, opts: o, start: time.Now(), pool: &connPool{max: MaxCopies}, facts: t.Profile.Facts()}
	r.reqHead = []byte("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	r.rec = &recorder{h: history.History{Meta: r.meta(0, "", 0)}}
	return r, nil
}

// Close releases idle connections.
func (r *Runner) Close() { r.pool.closeAll() }

// History returns what Send and SendCopies recorded so far (Run returns its own
// history).
func (r *Runner) History() *history.History { return r.rec.snapshot() }

// Started is the instant the runner's monotonic clock counts from.
func (r *Runner) Started() time.Time { return r.start }

func (r *Runner) meta(seed int64, plan string, scale float64) history.Meta {
	u := *r.u
	u.User = nil // userinfo may carry credentials
	u.RawQuery, u.ForceQuery = "", false
	return history.Meta{Seed: seed, Profile: r.target.Profile.ID(), TargetURL: u.String(), Plan: plan,
		TimeScale: scale, Started: r.start.UTC()}
}

func (r *Runner) since() int64 { return int64(time.Since(r.start)) }

// SendOptions shape one attempt.
type SendOptions struct {
	// Attempt is the attempt number (default 1).
	Attempt int
	// DeliveryID is the per-attempt delivery ID (default derived from event and attempt).
	DeliveryID string
	Faults     Faults
	// Timeout is the response timeout (default: profile facts, then DefaultTimeout).
	Timeout time.Duration
	// SignedAt is the signed timestamp (default now; Faults.StaleBy is
	// subtracted, Faults.AheadBy added).
	SignedAt time.Time
	// PadTo pads the valid, correctly signed body to exactly this many bytes
	// with JSON whitespace (see Step.PadTo); 0: no padding.
	PadTo int
	// Step and Copy label the record (a caller's own numbering; 0 by default).
	Step int
	Copy int
}

func (r *Runner) timeoutFor(o time.Duration) time.Duration {
	if o > 0 {
		return o
	}
	if f := &r.facts; f.Timeout != nil && *f.Timeout > 0 {
		return *f.Timeout
	}
	return DefaultTimeout
}

func (r *Runner) attemptFor(ev profiles.Event, o *SendOptions) profiles.Attempt {
	if o.Attempt <= 0 {
		o.Attempt = 1
	}
	if o.DeliveryID == "" {
		o.DeliveryID = attemptDeliveryID(0, r.target.Profile.ID(), ev.Source, ev.Account, ev.ID, o.Step, o.Copy, o.Attempt)
	}
	at := profiles.Attempt{N: o.Attempt, DeliveryID: o.DeliveryID, SignedAt: o.SignedAt}
	if at.SignedAt.IsZero() {
		at.SignedAt = time.Now()
	}
	at.SignedAt = at.SignedAt.Add(o.Faults.AheadBy.D() - o.Faults.StaleBy.D())
	return at
}

func (o *SendOptions) validate() error {
	if err := o.Faults.validate("faults"); err != nil {
		return err
	}
	return validatePad("pad_to", o.PadTo, o.Faults)
}

// Send makes one attempt of one event and returns its record (also kept in the
// runner's History). The error is for bad input only; delivery failures are
// recorded outcomes.
func (r *Runner) Send(ctx context.Context, ev profiles.Event, o SendOptions) (history.Attempt, error) {
	at := r.attemptFor(ev, &o)
	if err := o.validate(); err != nil {
		return history.Attempt{}, err
	}
	p, err := prepare(r.target.Profile, &r.facts, r.target.Secrets, ev, at, o.Faults, o.PadTo)
	if err != nil {
		return history.Attempt{}, err
	}
	rec := r.single(ctx, ev, at, p, o.Faults.LostAck, r.timeoutFor(o.Timeout), o.Step, o.Copy, r.clock)
	r.rec.attempt(rec)
	return rec, nil
}

// SendCopies makes n copies of one attempt, released together by a barrier over
// pre-opened connections, and returns their records and the release.
func (r *Runner) SendCopies(ctx context.Context, ev profiles.Event, n int, o SendOptions) ([]history.Attempt, history.Release, error) {
	if n < 1 || n > MaxCopies {
		return nil, history.Release{}, fmt.Errorf("copies must be between 1 and %d, got %d", MaxCopies, n)
	}
	at := r.attemptFor(ev, &o)
	if err := o.validate(); err != nil {
		return nil, history.Release{}, err
	}
	p, err := prepare(r.target.Profile, &r.facts, r.target.Secrets, ev, at, o.Faults, o.PadTo)
	if err != nil {
		return nil, history.Release{}, err
	}
	recs, rel := r.copies(ctx, ev, at, p, o.Faults.LostAck, r.timeoutFor(o.Timeout), o.Step, n, r.clock)
	for _, a := range recs {
		r.rec.attempt(a)
	}
	r.rec.release(rel)
	return recs, rel, nil
}

// chain follows one delivery's retries.
type chain struct {
	r       *Runner
	rec     *recorder
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
		o := SendOptions{Attempt: n, Step: c.step, Copy: c.copy,
			DeliveryID: attemptDeliveryID(c.seed, c.r.target.Profile.ID(), c.ev.Source, c.ev.Account, c.ev.ID, c.step, c.copy, n)}
		if !resign {
			// Providers that do not re-sign resend the original signature.
			o.SignedAt = first.SignedAt
		}
		at := c.r.attemptFor(c.ev, &o)
		// Faults are the first attempt's only; the padding is the payload's.
		p, err := prepare(c.r.target.Profile, &c.r.facts, c.r.target.Secrets, c.ev, at, Faults{}, c.padTo)
		if err != nil {
			return out
		}
		last = c.r.single(ctx, c.ev, at, p, "", c.timeout, c.step, c.copy, c.clock)
		c.rec.attempt(last)
		out = append(out, last)
		if ctx.Err() != nil {
			return out
		}
	}
}

// Run executes a plan and returns its history. Cancelling ctx stops the run
// promptly; the history so far is returned with ctx's error.
func (r *Runner) Run(ctx context.Context, plan *Plan) (*history.History, error) {
	return r.RunNotify(ctx, plan, nil)
}

// RunNotify is Run that also calls each, from the goroutine that made it, as
// every attempt ends: a caller can act in the middle of a plan (kill a receiver
// after its n-th acknowledgement, say). each must be safe for concurrent use.
func (r *Runner) RunNotify(ctx context.Context, plan *Plan, each func(history.Attempt)) (*history.History, error) {
	rp, err := plan.Resolve(r.target.Profile.ID(), r.target.Account, time.Now())
	if err != nil {
		return nil, err
	}
	clock := Clock{Scale: plan.TimeScale}
	rec := &recorder{h: history.History{Meta: r.meta(plan.Seed, plan.Name, clock.scale())}, each: each}
	sched := ScheduleFor(r.target.Profile, plan)
	var retries sync.WaitGroup
	var mu sync.Mutex
	firsts := map[string]history.Attempt{} // step name → its first attempt (copy 0)
	for i := 0; i < len(plan.Steps); {
		// A group: this step and the ones after it that start with it.
		j := i + 1
		for j < len(plan.Steps) && plan.Steps[j].WithPrevious {
			j++
		}
		if err := clock.Sleep(ctx, plan.Steps[i].Wait.D()); err != nil {
			break
		}
		// Every step of the group is prepared before any is sent, so a bad step
		// sends nothing of its group.
		group := make([]ready, 0, j-i)
		for k := i; k < j; k++ {
			var orig time.Time
			if s := plan.Steps[k]; s.Replay != nil {
				mu.Lock()
				orig = firsts[s.Replay.Of].SignedAt
				mu.Unlock()
			}
			g, err := r.prepareStep(plan, rp, k, orig)
			if err != nil {
				retries.Wait()
				return rec.snapshot(), err
			}
			group = append(group, g)
		}
		var wg sync.WaitGroup
		for _, g := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := plan.Steps[g.i]
				var recs []history.Attempt
				if n := max(s.Copies, 1); n == 1 {
					recs = []history.Attempt{r.single(ctx, g.ev, g.at, g.p, s.Faults.LostAck, g.timeout, g.i, 0, clock)}
				} else {
					var rel history.Release
					recs, rel = r.copies(ctx, g.ev, g.at, g.p, s.Faults.LostAck, g.timeout, g.i, n, clock)
					rec.release(rel)
				}
				for _, a := range recs {
					rec.attempt(a)
				}
				if s.Name != "" {
					mu.Lock()
					firsts[s.Name] = recs[0]
					mu.Unlock()
				}
				if s.Retry {
					for _, a := range recs {
						c := chain{r: r, rec: rec, ev: g.ev, sched: sched, clock: clock, step: g.i, copy: a.Copy, timeout: g.timeout, seed: plan.Seed, padTo: s.PadTo}
						retries.Add(1)
						go func() {
							defer retries.Done()
							c.follow(ctx, a)
						}()
					}
				}
			}()
		}
		// Only one goroutine in a group of one: the common case stays sequential.
		wg.Wait()
		if ctx.Err() != nil {
			break
		}
		i = j
	}
	retries.Wait()
	h := rec.snapshot()
	if err := ctx.Err(); err != nil {
		return h, fmt.Errorf("run %q: %w", plan.Name, err)
	}
	return h, nil
}

// ready is one step's first attempt, prepared.
type ready struct {
	i       int
	ev      profiles.Event
	at      profiles.Attempt
	p       *prepared
	timeout time.Duration
}

// prepareStep prepares the first attempt of plan step k as Run sends it. orig
// is the signed time of the replayed step's first attempt, for a replay with
// its original timestamp.
func (r *Runner) prepareStep(plan *Plan, rp *ResolvedPlan, k int, orig time.Time) (ready, error) {
	s := plan.Steps[k]
	evName := s.Event
	o := SendOptions{Step: k, Faults: s.Faults, Attempt: max(s.Attempt, 1), PadTo: s.PadTo}
	if s.Replay != nil {
		evName = plan.Steps[stepIndex(plan, s.Replay.Of)].Event
		if s.Replay.OriginalTimestamp {
			o.SignedAt = orig
		}
	}
	ev := rp.Events[evName]
	o.DeliveryID = attemptDeliveryID(plan.Seed, r.target.Profile.ID(), ev.Source, ev.Account, ev.ID, k, 0, o.Attempt)
	timeout := cmp.Or(s.Timeout.D(), plan.Timeout.D())
	at := r.attemptFor(ev, &o)
	p, err := prepare(r.target.Profile, &r.facts, r.target.Secrets, ev, at, s.Faults, s.PadTo)
	if err != nil {
		return ready{}, fmt.Errorf("plan: steps[%d]: %w", k, err)
	}
	return ready{k, ev, at, p, r.timeoutFor(timeout)}, nil
}

func stepIndex(p *Plan, name string) int {
	for i, s := range p.Steps {
		if s.Name == name {
			return i
		}
	}
	return -1
}
