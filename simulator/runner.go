package simulator

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
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
	// Origin is the instant the runner's clock counts from (default: when
	// NewRunner was called): the StartNS, EndNS and VirtualNS of its attempts
	// and the StartNS of its releases. A caller that keeps a run of its own
	// passes the run's start, so the records come out on the run's clock and
	// need no shifting.
	Origin time.Time
	// NoHistory leaves Send's and SendCopies' records out of History: for a
	// caller that keeps the returned records itself (a soak), so a long run
	// does not hold every record twice.
	NoHistory bool
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
	// ids and objects shape seeded delivery and object IDs (nil: the generic
	// forms); asserted once, as delivery IDs are made per attempt.
	ids     profiles.DeliveryIDMaker
	objects profiles.ObjectIDMaker
	// reqHead is the request line and Host header, the same for every request.
	reqHead []byte
	// attemptURL is the URL as the receiver sees it (no userinfo, no
	// fragment: neither is sent), for profiles that sign it (Twilio).
	attemptURL string
	// lastExcerpt is the last response excerpt (see excerpt).
	lastExcerpt atomic.Pointer[excerptText]
	// lastPlain is the last plain response read (see plainResponse).
	lastPlain atomic.Pointer[plainResponse]
	// hsClient sends handshakes (handshake.go), made on first use.
	hsOnce   sync.Once
	hsClient *http.Client
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
	start := o.Origin
	if start.IsZero() {
		start = time.Now()
	}
	r := &Runner{target: t, u: u, opts: o, start: start, pool: &connPool{max: MaxCopies}, facts: t.Profile.Facts(),
		ids: deliveryIDMakerOf(t.Profile), objects: objectIDMakerOf(t.Profile)}
	r.reqHead = []byte("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	sent := *u
	sent.User, sent.Fragment, sent.RawFragment = nil, "", ""
	r.attemptURL = sent.String()
	r.rec = &recorder{h: history.History{Meta: r.meta(0, "", 0)}}
	return r, nil
}

// Close releases idle connections.
func (r *Runner) Close() { r.pool.closeAll() }

// History returns what Send and SendCopies recorded so far (Run and Deliver
// return their own records; with Options.NoHistory, nothing).
func (r *Runner) History() *history.History { return r.rec.snapshot() }

// Started is the instant the runner's clock counts from: Options.Origin, else
// the runner's creation.
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
	// Shape is the attempt number (default 1), the faults, the response
	// timeout (default: profile facts, then DefaultTimeout) and the padding.
	Shape
	// DeliveryID is the per-attempt delivery ID (default derived from event and attempt).
	DeliveryID string
	// SignedAt is the signed timestamp (default now; Faults.StaleBy is
	// subtracted, Faults.AheadBy added).
	SignedAt time.Time
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

// attemptFor is the attempt o describes; it fills o's defaults (attempt 1, a
// delivery ID derived from event and attempt).
func (r *Runner) attemptFor(ev profiles.Event, o *SendOptions) profiles.Attempt {
	at := r.newAttempt(0, ev, o.Attempt, o.Step, o.Copy, o.DeliveryID, o.SignedAt, o.Faults)
	o.Attempt, o.DeliveryID = at.N, at.DeliveryID
	return at
}

// newAttempt is the profile's view of one attempt: number n (default 1), the
// delivery ID (default: seeded from seed, the event, step, copy and n), the
// signed time (default now) moved by the clock faults.
func (r *Runner) newAttempt(seed int64, ev profiles.Event, n, step, cp int, deliveryID string, signedAt time.Time, f Faults) profiles.Attempt {
	n = max(n, 1)
	if deliveryID == "" {
		deliveryID = attemptDeliveryID(seed, r.ids, ev.Source, ev.Account, ev.ID, step, cp, n)
	}
	if signedAt.IsZero() {
		signedAt = time.Now()
	}
	return profiles.Attempt{N: n, DeliveryID: deliveryID, SignedAt: signedAt.Add(f.AheadBy.D() - f.StaleBy.D()),
		URL: r.attemptURL, Method: "POST"}
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
	rec := r.single(ctx, ev, at, p, o.Faults.LostAck, r.timeoutFor(o.Timeout.D()), o.Step, o.Copy, r.clock)
	if !r.opts.NoHistory {
		r.rec.attempt(rec)
	}
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
	recs, rel := r.copies(ctx, ev, at, p, o.Faults.LostAck, r.timeoutFor(o.Timeout.D()), o.Step, n, r.clock)
	if !r.opts.NoHistory {
		for _, a := range recs {
			r.rec.attempt(a)
		}
		r.rec.release(rel)
	}
	return recs, rel, nil
}
