package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// retentionMargin is how far "just inside" and "just past" a TTL the purges are
// asked for: wide enough for the receiver's clock to differ a little from the
// harness's, narrow enough to tell a TTL from a different one.
const retentionMargin = time.Hour

// horizon is a profile's documented redelivery horizon, with where it comes from.
type horizon struct {
	retry, manual time.Duration
	total         time.Duration
	documented    bool
	source        string
}

func horizonOf(p profiles.Profile) horizon {
	f := p.Facts()
	var h horizon
	var parts []string
	if f.Retry.Horizon != nil {
		h.retry, h.documented = *f.Retry.Horizon, true
		parts = append(parts, fmt.Sprintf("automatic retries for %s (%s)", h.retry, f.Retry.Source))
	} else {
		parts = append(parts, "automatic retry horizon undocumented")
	}
	if f.ManualRedeliveryWindow != nil {
		h.manual, h.documented = *f.ManualRedeliveryWindow, true
		src := "profile sources"
		if len(f.Sources) > 0 {
			src = f.Sources[0]
		}
		parts = append(parts, fmt.Sprintf("manual resend up to %s after creation (%s)", h.manual, src))
	} else if f.ManualRedelivery != nil && !*f.ManualRedelivery {
		parts = append(parts, "no manual resend")
	} else {
		parts = append(parts, "manual resend window undocumented")
	}
	h.total = max(h.retry, h.manual)
	h.source = strings.Join(parts, "; ")
	return h
}

// Phases and facts the RETENTION checkers read.
const (
	PhaseAfterPurge  = "after-purge"
	PhaseAfterReplay = "after-replay"
	PhaseKeyGone     = "after-key-gone"
	// PhaseLadder prefixes RETENTION-4's reads, one per purge of its ladder
	// ("ladder:<offset>").
	PhaseLadder = "ladder:"

	RoleReplay = "replay"

	FactKeyTTL     = "key_ttl"
	FactPayloadTTL = "payload_ttl"
	FactMargin     = "margin"
	// FactKeyMustRemain is "true" when RETENTION-3's purge lies inside the key TTL.
	FactKeyMustRemain = "key_must_remain"
	// FactLadder lists RETENTION-4's purge offsets in order.
	FactLadder = "ladder"
	// FactEndpointTTL prefixes RETENTION-1's per-endpoint facts:
	// "endpoint:<index>:<profile>/<account>" = "<key TTL>|<horizon>|<source>".
	FactEndpointTTL = "endpoint:"
)

// retentionEndpoint is the endpoint the RETENTION scenarios deliver to, with its
// declared TTLs checked.
func (s *session) retentionEndpoint() Endpoint {
	ep := s.primary()
	if ep.KeyTTL <= 0 || ep.PayloadTTL <= 0 {
		s.abort("endpoint %s declares no key_ttl/payload_ttl (target.retention)", ep.URL)
	}
	s.fact(FactKeyTTL, ep.KeyTTL)
	s.fact(FactPayloadTTL, ep.PayloadTTL)
	return ep
}

// deliverOnce delivers a fresh event of the effect role and returns it with the times
// just before the send and just after the acknowledgement: the receiver recorded
// the key between them. An event that was not stored leaves no retention to
// measure: that is an error, judged by the DEDUP and ACK guarantees.
func (s *session) deliverOnce(ep Endpoint) (profiles.Event, profiles.Key, time.Time, time.Time) {
	ev := s.effectEvent(ep)
	k := s.key(ep, ev)
	before := time.Now()
	a := s.send(ep, ev, RoleFirst, simulator.SendOptions{})
	after := time.Now()
	if !acked(a) {
		s.abort("the first delivery of %s was not acknowledged (%s): there is no stored key whose retention could be measured", k.EventID, Describe(a))
	}
	if n := s.settle(1, func() int { return s.rows(k, PhaseAfterFirst) }); n != 1 {
		s.abort("the first delivery of %s left %d event rows, not 1: there is no stored key whose retention could be measured", k.EventID, n)
	}
	return ev, k, before, after
}

// purgeAsOf asks the receiver to purge as if its clock read asOf.
func (s *session) purgeAsOf(asOf time.Time, why string) {
	t0 := time.Now()
	if err := s.env.Retention.Purge(s.ctx, asOf); err != nil {
		s.abort("purge as of %s (%s): %v", asOf.UTC().Format(time.RFC3339), why, err)
	}
	s.note("purge as of %s (%s) took %s", asOf.UTC().Format(time.RFC3339), why, time.Since(t0).Round(time.Millisecond))
}

// payload reads whether any payload of k is still stored.
func (s *session) payload(k profiles.Key, phase string) bool {
	o := s.read("payload_present", phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Present, o.Found, err = s.env.Retention.PayloadPresent(ctx, k)
		return err
	})
	return o.Found && o.Present
}

// replay redelivers ev (re-signed now, as a provider's retry or a person's resend
// is) and reads its rows and effects.
func (s *session) replay(ep Endpoint, ev profiles.Event, k profiles.Key, attempt int) {
	s.send(ep, ev, RoleReplay, simulator.SendOptions{Attempt: attempt})
	s.state(k, PhaseAfterReplay, 1)
}

func days(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%s (%.1f days)", d, d.Hours()/24)
	}
	return d.String()
}

func init() {
	register("RETENTION-1", "the declared key TTL covers the provider's redelivery horizon", func(s *session) {
		for i, ep := range s.env.Endpoints {
			h := horizonOf(ep.Profile)
			total := h.total
			if !h.documented {
				total = 0
			}
			s.fact(fmt.Sprintf("%s%03d:%s/%s", FactEndpointTTL, i, ep.Profile.ID(), ep.Account), fmt.Sprintf("%s|%s|%s", ep.KeyTTL, total, h.source))
		}
		// The declaration is checked against what the receiver does: a purge as of
		// the end of the horizon must leave the key, so the last possible
		// redelivery is still a duplicate.
		ep := s.retentionEndpoint()
		h := horizonOf(ep.Profile)
		ev, k, before, _ := s.deliverOnce(ep)
		end := h.total
		if end == 0 {
			end = min(ep.KeyTTL, 24*time.Hour)
			s.note("%s documents no redelivery horizon; purging as of %s after delivery instead", ep.Profile.ID(), end)
		}
		s.purgeAsOf(before.Add(end), "the end of the "+ep.Profile.ID()+" redelivery horizon")
		s.rows(k, PhaseAfterPurge)
		s.replay(ep, ev, k, 2)
	})

	register("RETENTION-2", "a replay inside the key TTL is still a duplicate after a purge", func(s *session) {
		ep := s.retentionEndpoint()
		ev, k, before, _ := s.deliverOnce(ep)
		m := min(retentionMargin, ep.KeyTTL/4)
		s.fact(FactMargin, m)
		s.purgeAsOf(before.Add(ep.KeyTTL-m), fmt.Sprintf("key TTL %s − %s: just inside", ep.KeyTTL, m))
		s.rows(k, PhaseAfterPurge)
		s.replay(ep, ev, k, 2)
	})

	register("RETENTION-3", "past the payload TTL the payload is gone and the key remains", func(s *session) {
		ep := s.retentionEndpoint()
		ev, k, _, after := s.deliverOnce(ep)
		if !s.payload(k, PhaseAfterFirst) {
			s.note("the receiver stored no payload for %s (nothing to expire)", KeyString(k))
		}
		gap := ep.KeyTTL - ep.PayloadTTL
		m := min(retentionMargin, gap/2)
		if gap <= 0 {
			s.note("payload TTL %s equals the key TTL: both tiers end together, only the payload's removal is checked", ep.PayloadTTL)
			m = 0
		}
		s.fact(FactMargin, m)
		s.fact(FactKeyMustRemain, gap > 0)
		s.purgeAsOf(after.Add(ep.PayloadTTL+m), fmt.Sprintf("payload TTL %s + %s: just past", ep.PayloadTTL, m))
		s.payload(k, PhaseAfterPurge)
		s.rows(k, PhaseAfterPurge)
		if gap > 0 {
			s.replay(ep, ev, k, 2)
		}
	})

	register("RETENTION-4", "past the key TTL the key is gone; the measured replay-protection window is reported", func(s *session) {
		ep := s.retentionEndpoint()
		// A payment creation: once its key has expired, the resend below is a new
		// event to the receiver, and the payment state machine keeps it harmless.
		ev, k, before, after := s.deliverOnce(ep)
		m := min(retentionMargin, ep.KeyTTL/4)
		s.fact(FactMargin, m)
		// A ladder of ever later purges: once a key is gone it stays gone, so the
		// first purge that removes it brackets the window actually kept.
		offsets := map[time.Duration]bool{time.Hour: true, ep.PayloadTTL + m: true, ep.KeyTTL - m: true,
			ep.KeyTTL + m: true, 2 * ep.KeyTTL: true, 10 * ep.KeyTTL: true}
		if h := horizonOf(ep.Profile); h.total > 0 {
			offsets[h.total] = true
		}
		ladder := make([]time.Duration, 0, len(offsets))
		for d := range offsets {
			if d > 0 {
				ladder = append(ladder, d)
			}
		}
		sort.Slice(ladder, func(i, j int) bool { return ladder[i] < ladder[j] })
		steps := make([]string, len(ladder))
		for i, d := range ladder {
			steps[i] = d.String()
		}
		s.fact(FactLadder, strings.Join(steps, ","))
		gone := false
		for _, d := range ladder {
			// Before the key TTL, measure from the send (the key is younger than
			// that); past it, from the acknowledgement (older than that).
			base := before
			if d > ep.KeyTTL {
				base = after
			}
			s.purgeAsOf(base.Add(d), fmt.Sprintf("%s after delivery", d))
			if s.rows(k, PhaseLadder+d.String()) == 0 {
				gone = true
				break
			}
		}
		if !gone {
			return
		}
		s.expire(k)
		s.payload(k, PhaseKeyGone)
		// Past the window a provider's resend is a new event again; what the
		// receiver makes of it is reported, not judged.
		a := s.send(ep, ev, RoleResend, simulator.SendOptions{Attempt: 2})
		s.note("a resend after the key expired was answered %s", Describe(a))
	})
}
