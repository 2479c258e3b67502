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

// RETENTION: keys are kept at least as long as the provider may redeliver
// (and then let go), payloads no longer than needed. The receiver states its
// TTLs and offers a purge the harness runs as of a chosen time.
var retentionFamily = family{Name: "RETENTION", Guarantees: []*Guarantee{&retention1, &retention2, &retention3, &retention4, &retention5}}

// The RETENTION deviation codes.
var (
	codeRetentionTTLBelowHorizon = Code{"retention.ttl-below-horizon", "an endpoint declares no key TTL, or one shorter than its provider's redelivery horizon"}
	codeRetentionKeyPurgedEarly  = Code{"retention.key-purged-early", "a purge removed a key inside its declared key TTL (or payload TTL)"}
	codeRetentionReplayApplied   = Code{"retention.replay-applied", "a replay inside the key TTL was not acknowledged as a duplicate"}
	codeRetentionPayloadKept     = Code{"retention.payload-kept", "a payload is still stored after a purge past its payload TTL"}
	codeRetentionPayloadOrphaned = Code{"retention.payload-orphaned", "a payload is still stored after its key was purged"}
	codeRetentionKeyKept         = Code{"retention.key-kept", "a key survived a purge past its declared key TTL"}
	codeRetentionKeyExpiresEarly = Code{"retention.key-expires-early", "the store expires an event's key before its provider's redelivery horizon ends (the TTL read from the store)"}
)

// retentionFacts are what the RETENTION scenarios fix for their checkers
// (the endpoint's key and payload TTLs are the session's: commonFacts).
type retentionFacts struct {
	// EndpointTTL is, per endpoint ("<index>:<profile>/<account>", so that
	// the keys sort in target order), its key TTL against its provider's
	// redelivery horizon (RETENTION-1).
	EndpointTTL map[string]endpointTTL `fact:"endpoint:"`
	// Margin is how far inside or past a TTL a purge was asked for.
	Margin *time.Duration `fact:"margin"`
	// KeyMustRemain is whether RETENTION-3's purge lay inside the key TTL.
	KeyMustRemain *bool `fact:"key_must_remain"`
	// Ladder is RETENTION-4's purge offsets, in order.
	Ladder durations `fact:"ladder"`
	// Horizon is RETENTION-5's endpoint's redelivery horizon (0: undocumented)
	// and HorizonSource where it comes from.
	Horizon       *time.Duration `fact:"horizon"`
	HorizonSource string         `fact:"horizon_source"`
}

// endpointTTL is an endpoint's declared key TTL beside its provider's
// redelivery horizon (0: undocumented) and where the horizon comes from,
// written "<key TTL>|<horizon>|<source>".
type endpointTTL struct {
	KeyTTL, Horizon time.Duration
	Source          string
}

func (e endpointTTL) MarshalText() ([]byte, error) {
	return []byte(fmt.Sprintf("%s|%s|%s", e.KeyTTL, e.Horizon, e.Source)), nil
}

func (e *endpointTTL) UnmarshalText(b []byte) error {
	parts := strings.SplitN(string(b), "|", 3)
	if len(parts) != 3 {
		return fmt.Errorf("%q is not <key TTL>|<horizon>|<source>", b)
	}
	e.KeyTTL, _ = time.ParseDuration(parts[0])
	e.Horizon, _ = time.ParseDuration(parts[1])
	e.Source = parts[2]
	return nil
}

// phaseDelivered names RETENTION-5's read of the key's TTL right after its delivery.
const phaseDelivered = "after-delivery"

// Phases and roles of the RETENTION scenarios. phaseLadder, with the offset,
// names RETENTION-4's read after each purge of its ladder ("ladder:720h0m0s").
const (
	phaseAfterPurge  = "after-purge"
	phaseAfterReplay = "after-replay"
	phaseKeyGone     = "after-key-gone"
	phaseLadder      = "ladder:"

	roleReplay = "replay"
)

var retention1 = Guarantee{
	ID: "RETENTION-1", Title: "Key TTL covers the redelivery horizon",
	Promise: "Every endpoint's declared key TTL covers its provider's redelivery horizon (automatic retries and manual resend), and a key purged as of the end of that horizon is still there: the redelivery is a duplicate.",
	Why:     "Advice like \"keep IDs for 5 minutes\" meets retry schedules of days and resend buttons of weeks; a key deleted first turns a redelivery into a second effect.",
	Needs:   []Capability{"retention"},
	Spec:    "the declared key TTL covers the provider's redelivery horizon",
	Sends:   "one `effect` event, a purge as of the end of the provider's redelivery horizon (its retry horizon and manual resend window, with sources), a redelivery",
	Expects: "the declared key TTL covers the horizon; the key survives; the redelivery 2xx and no second effect",
	codes:   []Code{codeRetentionTTLBelowHorizon, codeRetentionKeyPurgedEarly, codeRetentionReplayApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key once delivered, after a purge as of the end of the redelivery horizon (1), and after the redelivery"}, {Query: queryEffects, Tells: "the event's effects after the redelivery: 1"}},
	judge: bind(func(s *session, f *retentionFacts) {
		f.EndpointTTL = map[string]endpointTTL{}
		for i, ep := range s.env.Endpoints {
			h := horizonOf(ep.Profile)
			total := h.total
			if !h.documented {
				total = 0
			}
			f.EndpointTTL[fmt.Sprintf("%03d:%s/%s", i, ep.Profile.ID(), ep.Account)] = endpointTTL{KeyTTL: ep.KeyTTL, Horizon: total, Source: h.source}
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
		s.rows(k, phaseAfterPurge)
		s.replay(ep, ev, k, 2)
	}, func(v *view, f *retentionFacts) {
		names := make([]string, 0, len(f.EndpointTTL))
		for name := range f.EndpointTTL {
			names = append(names, name)
		}
		sort.Strings(names) // the keys number the endpoints in target order
		for _, name := range names {
			e := f.EndpointTTL[name]
			ep := name
			if _, after, found := strings.Cut(name, ":"); found {
				ep = after
			}
			switch {
			case e.KeyTTL <= 0:
				v.deviate(codeRetentionTTLBelowHorizon, "endpoint %s declares no key TTL", ep)
			case e.Horizon == 0:
				v.note("endpoint %s: key TTL %s; %s: the redelivery horizon is undocumented, the user chooses", ep, days(e.KeyTTL), e.Source)
			case e.KeyTTL < e.Horizon:
				v.deviate(codeRetentionTTLBelowHorizon, "endpoint %s keeps keys %s, less than the redelivery horizon %s: %s", ep, days(e.KeyTTL), days(e.Horizon), e.Source)
			default:
				v.note("endpoint %s: key TTL %s covers the redelivery horizon %s: %s", ep, days(e.KeyTTL), days(e.Horizon), e.Source)
			}
		}
		v.count(codeRetentionKeyPurgedEarly, queryEventRows, phaseAfterPurge, 1, "after a purge as of the end of the redelivery horizon")
		replayCheck(v, "at the end of the redelivery horizon")
	}),
}

var retention5 = Guarantee{
	ID: "RETENTION-5", Title: "Key store expiry covers the redelivery horizon",
	Promise: "A receiver that lets its store expire event keys (a Redis `SET NX PX`, a TTL index) sets an expiry that outlasts its provider's redelivery horizon, read from the store itself.",
	Why:     "A dedupe key with a TTL of minutes meets retry schedules of days: once it expires, the provider's next retry is applied a second time, and no declaration in a file would show it.",
	Needs:   []Capability{"key-ttl"},
	Spec:    "the store's expiry on an event key outlasts the provider's redelivery horizon",
	Sends:   "one `effect` event; the key's remaining TTL is read from the store right after its acknowledgement (the `key_ttl` query)",
	Expects: "the key is there, and it never expires or expires after the provider's redelivery horizon (its retry horizon and manual resend window, with sources)",
	codes:   []Code{codeRetentionKeyExpiresEarly},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key once delivered (1)"}, {Query: queryKeyTTL, Tells: "the key's TTL right after delivery: gone, never expiring, or how long it has left"}},
	judge: bind(func(s *session, f *retentionFacts) {
		ep := s.primary()
		h := horizonOf(ep.Profile)
		total := h.total
		if !h.documented {
			total = 0
		}
		f.Horizon, f.HorizonSource = &total, h.source
		_, k, _, _ := s.deliverOnce(ep)
		s.keyTTL(k, phaseDelivered)
	}, func(v *view, f *retentionFacts) {
		reads := v.reads(queryKeyTTL, phaseDelivered)
		if len(reads) != 1 {
			v.fail("want one read of the key's TTL after delivery, got %d", len(reads))
			return
		}
		o := reads[0]
		horizon := time.Duration(0)
		if f.Horizon != nil {
			horizon = *f.Horizon
		}
		ttl := time.Duration(o.Count) * time.Millisecond
		switch {
		case !o.Found:
			// The key was read as stored just before (deliverOnce): it expired
			// in between.
			v.deviate(codeRetentionKeyExpiresEarly, "the key of %s expired within moments of its delivery (key_ttl found it gone right after event_rows read it): a redelivery would not be recognised", o.Params[2])
		case o.Count == -1:
			v.note("the key of %s never expires (key_ttl -1): it covers any redelivery horizon", o.Params[2])
		case horizon == 0:
			v.note("the key of %s expires in %s; %s: the redelivery horizon is undocumented, the user chooses", o.Params[2], days(ttl), f.HorizonSource)
		case ttl < horizon:
			v.deviate(codeRetentionKeyExpiresEarly, "the store expires the key of %s in %s (key_ttl read right after delivery), before the redelivery horizon %s ends: %s", o.Params[2], days(ttl), days(horizon), f.HorizonSource)
		default:
			v.note("the key of %s expires in %s, after the redelivery horizon %s: %s", o.Params[2], days(ttl), days(horizon), f.HorizonSource)
		}
	}),
}

var retention2 = Guarantee{
	ID: "RETENTION-2", Title: "Replay inside the key TTL",
	Promise: "After a purge as of just inside the key TTL, a replay of the event is acknowledged and has no second effect.",
	Why:     "A purge that removes keys early (a wrong TTL, or a purge that deletes more than it should) makes old events look new.",
	Needs:   []Capability{"retention"},
	Spec:    "a replay inside the key TTL is still a duplicate after a purge",
	Sends:   "one `effect` event, a purge as of the key TTL minus an hour, a replay",
	Expects: "the replay 2xx and no second effect",
	codes:   []Code{codeRetentionKeyPurgedEarly, codeRetentionReplayApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key once delivered, after a purge just inside the key TTL (1), and after the replay"}, {Query: queryEffects, Tells: "the event's effects after the replay: 1"}},
	judge: bind(func(s *session, f *retentionFacts) {
		ep := s.retentionEndpoint()
		ev, k, before, _ := s.deliverOnce(ep)
		m := min(retentionMargin, ep.KeyTTL/4)
		f.Margin = &m
		s.purgeAsOf(before.Add(ep.KeyTTL-m), fmt.Sprintf("key TTL %s − %s: just inside", ep.KeyTTL, m))
		s.rows(k, phaseAfterPurge)
		s.replay(ep, ev, k, 2)
	}, func(v *view, _ *retentionFacts) {
		v.count(codeRetentionKeyPurgedEarly, queryEventRows, phaseAfterPurge, 1, "after a purge as of just inside the key TTL")
		replayCheck(v, "inside the key TTL")
	}),
}

var retention3 = Guarantee{
	ID: "RETENTION-3", Title: "Payloads expire before keys",
	Promise: "After a purge as of just past the payload TTL, the stored payload is gone and the key remains and still deduplicates.",
	Why:     "Payloads carry personal data nobody needs once processed; keys must stay to keep deduplicating.",
	Needs:   []Capability{"retention"},
	Spec:    "past the payload TTL the payload is gone and the key remains",
	Sends:   "one `effect` event, purges just past the payload TTL and inside the key TTL (payload_present and event_rows read), a replay",
	Expects: "the payload gone, the key kept; a replay harmless",
	codes:   []Code{codeRetentionPayloadKept, codeRetentionKeyPurgedEarly, codeRetentionReplayApplied},
	Reads:   []Read{{Query: queryPayloadPresent, Tells: "the event's payload when stored, and after a purge past the payload TTL: gone"}, {Query: queryEventRows, Tells: "the event's key once delivered, and after that purge: kept"}, {Query: queryEffects, Tells: "the event's effects after the replay: 1"}},
	judge: bind(func(s *session, f *retentionFacts) {
		ep := s.retentionEndpoint()
		ev, k, _, after := s.deliverOnce(ep)
		if !s.payload(k, phaseAfterFirst) {
			s.note("the receiver stored no payload for %s (nothing to expire)", KeyString(k))
		}
		gap := ep.KeyTTL - ep.PayloadTTL
		m := min(retentionMargin, gap/2)
		if gap <= 0 {
			s.note("payload TTL %s equals the key TTL: both tiers end together, only the payload's removal is checked", ep.PayloadTTL)
			m = 0
		}
		remain := gap > 0
		f.Margin, f.KeyMustRemain = &m, &remain
		s.purgeAsOf(after.Add(ep.PayloadTTL+m), fmt.Sprintf("payload TTL %s + %s: just past", ep.PayloadTTL, m))
		s.payload(k, phaseAfterPurge)
		s.rows(k, phaseAfterPurge)
		if gap > 0 {
			s.replay(ep, ev, k, 2)
		} else {
			// The purge ran at the key TTL too: the key may rightly be gone,
			// which reconciliation must not call lost.
			s.expire(k)
		}
	}, func(v *view, f *retentionFacts) {
		var margin time.Duration
		if f.Margin != nil {
			margin = *f.Margin
		}
		payloads := v.reads(queryPayloadPresent, phaseAfterPurge)
		if len(payloads) == 0 {
			v.fail("history: %s has no payload_present read after the purge", v.sc.Name)
			return
		}
		for _, o := range payloads {
			if o.Found && o.Present {
				v.deviate(codeRetentionPayloadKept, "the payload of %s is still stored after a purge as of %s past its delivery (payload TTL %s)",
					paramsText(o.Params), v.common.PayloadTTL+margin, v.common.PayloadTTL)
			}
		}
		if f.KeyMustRemain != nil && *f.KeyMustRemain {
			v.count(codeRetentionKeyPurgedEarly, queryEventRows, phaseAfterPurge, 1, "after a purge past the payload TTL, inside the key TTL "+v.common.KeyTTL.String())
			replayCheck(v, "after the payload was purged")
		}
	}),
}

var retention4 = Guarantee{
	ID: "RETENTION-4", Title: "Keys expire",
	Promise: "After a purge as of past the key TTL, the key (and its payload) is gone: data is not kept forever. The replay-protection window actually measured is reported.",
	Why:     "Keys kept forever grow without bound and keep data past any stated purpose.",
	Needs:   []Capability{"retention"},
	Spec:    "past the key TTL the key is gone; the measured replay-protection window is reported",
	Sends:   "one `effect` event, a ladder of purges up to 10 × the key TTL",
	Expects: "the key gone past its TTL (when it disappeared is reported); no payload outlives its key",
	codes:   []Code{codeRetentionKeyKept, codeRetentionPayloadOrphaned},
	Reads:   []Read{{Query: queryEventRows, Tells: "the event's key once delivered, then after each purge of the ladder until it is gone"}, {Query: queryPayloadPresent, Tells: "the event's payload once its key is gone: none"}},
	judge: bind(func(s *session, f *retentionFacts) {
		ep := s.retentionEndpoint()
		// A payment creation: once its key has expired, the resend below is a new
		// event to the receiver, and the payment state machine keeps it harmless.
		ev, k, before, after := s.deliverOnce(ep)
		m := min(retentionMargin, ep.KeyTTL/4)
		f.Margin = &m
		// A ladder of ever later purges: once a key is gone it stays gone, so the
		// first purge that removes it brackets the window actually kept.
		offsets := map[time.Duration]bool{time.Hour: true, ep.PayloadTTL + m: true, ep.KeyTTL - m: true,
			ep.KeyTTL + m: true, 2 * ep.KeyTTL: true, 10 * ep.KeyTTL: true}
		if h := horizonOf(ep.Profile); h.total > 0 {
			offsets[h.total] = true
		}
		ladder := make(durations, 0, len(offsets))
		for d := range offsets {
			if d > 0 {
				ladder = append(ladder, d)
			}
		}
		sort.Slice(ladder, func(i, j int) bool { return ladder[i] < ladder[j] })
		f.Ladder = ladder
		gone := false
		for _, d := range ladder {
			// Before the key TTL, measure from the send (the key is younger than
			// that); past it, from the acknowledgement (older than that).
			base := before
			if d > ep.KeyTTL {
				base = after
			}
			s.purgeAsOf(base.Add(d), fmt.Sprintf("%s after delivery", d))
			if s.rows(k, phaseLadder+d.String()) == 0 {
				gone = true
				break
			}
		}
		if !gone {
			return
		}
		s.expire(k)
		s.payload(k, phaseKeyGone)
		// Past the window a provider's resend is a new event again; what the
		// receiver makes of it is reported, not judged.
		a := s.send(ep, ev, roleResend, simulator.Shape{Attempt: 2})
		s.note("a resend after the key expired was answered %s", Describe(a))
	}, func(v *view, f *retentionFacts) {
		keyTTL := v.common.KeyTTL
		var margin time.Duration
		if f.Margin != nil {
			margin = *f.Margin
		}
		var kept, gone time.Duration
		var key string
		for _, d := range f.Ladder {
			rs := v.reads(queryEventRows, phaseLadder+d.String())
			if len(rs) == 0 {
				break // the ladder stopped at the first purge that removed the key
			}
			key = paramsText(rs[0].Params)
			if rs[0].Count > 0 {
				kept = d
				continue
			}
			gone = d
			break
		}
		if key == "" {
			v.fail("history: RETENTION-4 has no ladder reads")
			return
		}
		switch {
		case gone == 0:
			v.deviate(codeRetentionKeyKept, "the key %s is still there after a purge as of %s past its delivery (declared key TTL %s): it is kept indefinitely as far as measured", key, days(kept), days(keyTTL))
		case gone > keyTTL+margin:
			v.deviate(codeRetentionKeyKept, "the key %s survived a purge as of %s past its delivery (declared key TTL %s); it went only at %s", key, days(keyTTL+margin), days(keyTTL), days(gone))
		default:
			v.note("measured replay-protection window: more than %s, at most %s (declared key TTL %s)", days(kept), days(gone), days(keyTTL))
		}
		for _, o := range v.reads(queryPayloadPresent, phaseKeyGone) {
			if o.Found && o.Present {
				v.deviate(codeRetentionPayloadOrphaned, "the payload of %s is still stored after its key is gone", paramsText(o.Params))
			}
		}
	}),
}

// replayCheck: a replay inside the key TTL is acknowledged and changes nothing.
func replayCheck(v *view, when string) {
	for _, a := range v.role(roleReplay) {
		if a.Outcome != history.OutcomeAcknowledged {
			v.deviate(codeRetentionReplayApplied, "replay %s: %s was not acknowledged as a duplicate: %s", when, a.Key.EventID, Describe(a))
		}
	}
	v.count(codeRetentionReplayApplied, queryEventRows, phaseAfterReplay, 1, "replay "+when)
	v.once(codeRetentionReplayApplied, phaseAfterReplay, "replay "+when)
}

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
	s.common(func(c *commonFacts) { c.KeyTTL, c.PayloadTTL = ep.KeyTTL, ep.PayloadTTL })
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
	a := s.send(ep, ev, roleFirst, simulator.Shape{})
	after := time.Now()
	if !acked(a) {
		s.abort("the first delivery of %s was not acknowledged (%s): there is no stored key whose retention could be measured", k.EventID, Describe(a))
	}
	if n := s.settle(1, func() int { return s.rows(k, phaseAfterFirst) }); n != 1 {
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
	o := s.read(queryPayloadPresent, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		var err error
		o.Present, o.Found, err = s.env.Retention.PayloadPresent(ctx, k)
		return err
	})
	return o.Found && o.Present
}

// keyTTL reads how long k's key has left before the store expires it: the
// observation's count is milliseconds, -1 when it never expires; found is
// false when the key is gone.
func (s *session) keyTTL(k profiles.Key, phase string) history.Observation {
	return s.read(queryKeyTTL, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		ttl, never, found, err := s.env.Observer.KeyTTL(ctx, k)
		o.Found = found
		if never {
			o.Count = -1
		} else {
			o.Count = ttl.Milliseconds()
		}
		return err
	})
}

// replay redelivers ev (re-signed now, as a provider's retry or a person's resend
// is) and reads its rows and effects.
func (s *session) replay(ep Endpoint, ev profiles.Event, k profiles.Key, attempt int) {
	s.send(ep, ev, roleReplay, simulator.Shape{Attempt: attempt})
	s.state(k, phaseAfterReplay, 1)
}

// days renders a duration for evidence, in days too when it is long.
func days(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%s (%.1f days)", d, d.Hours()/24)
	}
	return d.String()
}
