package scenarios

import (
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

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

// retentionEndpoint is the endpoint the RETENTION scenarios deliver to, with its
// declared TTLs checked.
func (s *session) retentionEndpoint() Endpoint {
	ep := s.primary()
	if ep.KeyTTL <= 0 || ep.PayloadTTL <= 0 {
		s.abort("endpoint %s declares no key_ttl/payload_ttl (target.retention)", ep.URL)
	}
	return ep
}

// deliverOnce delivers a fresh event of type typ and returns it with the times
// just before the send and just after the acknowledgement: the receiver recorded
// the key between them.
func (s *session) deliverOnce(ep Endpoint, typ string) (profiles.Event, profiles.Key, time.Time, time.Time) {
	ev := s.event(ep, typ, s.newID("obj"))
	k := s.key(ep, ev)
	before := time.Now()
	s.expectAcked("first delivery", s.send(ep, ev, simulator.SendOptions{}))
	after := time.Now()
	s.expectRows(k, 1, "after the first delivery")
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

// payload reads whether k's key row exists and still holds its payload.
func (s *session) payload(k profiles.Key) (present, found bool) {
	present, found, err := s.env.Retention.PayloadPresent(s.ctx, k)
	if err != nil {
		s.abort("reading payload_present for %s: %v", keyString(k), err)
	}
	s.rec.observed("payload_present", keyString(k), fmt.Sprintf("key_found=%v payload_present=%v", found, present))
	return present, found
}

// replayIsDuplicate redelivers ev (re-signed now, as a provider's retry or a
// person's resend is) and expects no second effect.
func (s *session) replayIsDuplicate(ep Endpoint, ev profiles.Event, k profiles.Key, attempt int, why string) {
	s.expectAcked("replay "+why, s.send(ep, ev, simulator.SendOptions{Attempt: attempt}))
	s.expectRows(k, 1, "replay "+why)
	s.expectEffects(k, 1, "replay "+why)
}

func days(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%s (%.1f days)", d, d.Hours()/24)
	}
	return d.String()
}

var _ = Describe("RETENTION: keys outlive redeliveries, payloads do not outlive their purpose", Label("RETENTION"), func() {
	It("RETENTION-1 the declared key TTL covers the provider's redelivery horizon", labels("RETENTION-1"), func(ctx SpecContext) {
		s := begin(ctx, "RETENTION-1")
		for _, ep := range s.env.Endpoints {
			h := horizonOf(ep.Profile)
			switch {
			case ep.KeyTTL <= 0:
				s.deviate("endpoint %s (%s, %s) declares no key TTL", ep.URL, ep.Profile.ID(), ep.Account)
			case !h.documented:
				s.note("endpoint %s/%s: key TTL %s; %s: the redelivery horizon is undocumented, the user chooses", ep.Profile.ID(), ep.Account, days(ep.KeyTTL), h.source)
			case ep.KeyTTL < h.total:
				s.deviate("endpoint %s/%s keeps keys %s, less than the %s redelivery horizon %s: %s",
					ep.Profile.ID(), ep.Account, days(ep.KeyTTL), ep.Profile.ID(), days(h.total), h.source)
			default:
				s.note("endpoint %s/%s: key TTL %s covers the redelivery horizon %s: %s",
					ep.Profile.ID(), ep.Account, days(ep.KeyTTL), days(h.total), h.source)
			}
		}
		// The declaration is checked against what the receiver does: a purge as of
		// the end of the horizon must leave the key, so the last possible
		// redelivery is still a duplicate.
		ep := s.retentionEndpoint()
		h := horizonOf(ep.Profile)
		ev, k, before, _ := s.deliverOnce(ep, typeCash)
		end := h.total
		if end == 0 {
			end = min(ep.KeyTTL, 24*time.Hour)
			s.note("%s documents no redelivery horizon; purging as of %s after delivery instead", ep.Profile.ID(), end)
		}
		s.purgeAsOf(before.Add(end), "the end of the "+ep.Profile.ID()+" redelivery horizon")
		s.expectRows(k, 1, "after a purge as of the end of the redelivery horizon")
		s.replayIsDuplicate(ep, ev, k, 2, "at the end of the redelivery horizon")
		s.verdict()
	})

	It("RETENTION-2 a replay inside the key TTL is still a duplicate after a purge", labels("RETENTION-2"), func(ctx SpecContext) {
		s := begin(ctx, "RETENTION-2")
		ep := s.retentionEndpoint()
		ev, k, before, _ := s.deliverOnce(ep, typeCash)
		m := min(retentionMargin, ep.KeyTTL/4)
		s.purgeAsOf(before.Add(ep.KeyTTL-m), fmt.Sprintf("key TTL %s − %s: just inside", ep.KeyTTL, m))
		s.expectRows(k, 1, "after a purge as of just inside the key TTL")
		s.replayIsDuplicate(ep, ev, k, 2, "inside the key TTL")
		s.verdict()
	})

	It("RETENTION-3 past the payload TTL the payload is gone and the key remains", labels("RETENTION-3"), func(ctx SpecContext) {
		s := begin(ctx, "RETENTION-3")
		ep := s.retentionEndpoint()
		ev, k, _, after := s.deliverOnce(ep, typeCash)
		if present, found := s.payload(k); !found {
			s.deviate("payload_present finds no key row for %s right after its delivery", keyString(k))
		} else if !present {
			s.note("the receiver stored no payload for %s (nothing to expire)", keyString(k))
		}
		gap := ep.KeyTTL - ep.PayloadTTL
		m := min(retentionMargin, gap/2)
		if gap <= 0 {
			s.note("payload TTL %s equals the key TTL: both tiers end together, only the payload's removal is checked", ep.PayloadTTL)
			m = 0
		}
		s.purgeAsOf(after.Add(ep.PayloadTTL+m), fmt.Sprintf("payload TTL %s + %s: just past", ep.PayloadTTL, m))
		present, found := s.payload(k)
		if present {
			s.deviate("the payload of %s is still stored after a purge as of %s past its delivery (payload TTL %s)", keyString(k), ep.PayloadTTL+m, ep.PayloadTTL)
		}
		if gap > 0 {
			if !found {
				s.deviate("the key %s is gone after a purge as of %s past its delivery, inside its key TTL %s", keyString(k), ep.PayloadTTL+m, ep.KeyTTL)
			}
			s.replayIsDuplicate(ep, ev, k, 2, "after the payload was purged")
		}
		s.verdict()
	})

	It("RETENTION-4 past the key TTL the key is gone; the measured replay-protection window is reported", labels("RETENTION-4"), func(ctx SpecContext) {
		s := begin(ctx, "RETENTION-4")
		ep := s.retentionEndpoint()
		// A payment creation: once its key has expired, the replay below is a new
		// event to the receiver, and the payment state machine keeps it harmless.
		ev, k, before, after := s.deliverOnce(ep, typePayCreated)
		m := min(retentionMargin, ep.KeyTTL/4)
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
		kept, gone := time.Duration(0), time.Duration(0)
		for _, d := range ladder {
			// Before the key TTL, measure from the send (the key is younger than
			// that); past it, from the acknowledgement (older than that).
			base := before
			if d > ep.KeyTTL {
				base = after
			}
			s.purgeAsOf(base.Add(d), fmt.Sprintf("%s after delivery", d))
			if _, found := s.payload(k); found {
				kept = d
				continue
			}
			gone = d
			break
		}
		switch {
		case gone == 0:
			s.deviate("the key %s is still there after a purge as of %s past its delivery (declared key TTL %s): it is kept indefinitely as far as measured",
				keyString(k), days(kept), days(ep.KeyTTL))
		case gone > ep.KeyTTL+m:
			s.deviate("the key %s survived a purge as of %s past its delivery (declared key TTL %s); it went only at %s",
				keyString(k), days(ep.KeyTTL+m), days(ep.KeyTTL), days(gone))
		default:
			s.note("measured replay-protection window: more than %s, at most %s (declared key TTL %s)", days(kept), days(gone), days(ep.KeyTTL))
		}
		if gone > 0 {
			s.expire(k)
			if present, _ := s.payload(k); present {
				s.deviate("the payload of %s is still stored after its key is gone", keyString(k))
			}
			// Past the window a provider's resend is a new event again: it is
			// acknowledged and recorded anew.
			s.expectAcked("resend after the key expired", s.send(ep, ev, simulator.SendOptions{Attempt: 2}))
			s.expectRows(k, 1, "resend after the key expired")
			if ok, _ := s.env.has("state-machine"); ok {
				st, _ := s.payment(ep, ev.ObjectID)
				s.note("a resend after the key expired was recorded as a new event; the payment stays %q", st)
			}
		}
		s.verdict()
	})
})
