package check_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
)

// The endpoint facts RETENTION-1 records: "<key TTL>|<horizon>|<source>", the
// horizon 0s when the profile documents none.
const (
	stripeEndpoint = "endpoint:000:stripe/acct_A"
	githubEndpoint = "endpoint:001:github/acct_A"
	stripeHorizon  = "|72h0m0s|automatic retries for 72h0m0s (https://docs.stripe.com/webhooks#retries); manual resend window undocumented"
	githubHorizon  = "|0s|automatic retry horizon undocumented; no manual resend"
)

// retention starts a RETENTION history: the endpoint's declared TTLs (30 days
// for keys, 7 for payloads) and the first delivery of evt_1, stored.
func retention(id string) *rec {
	return scenario(id).
		fact("key_ttl", "720h0m0s").
		fact("payload_ttl", "168h0m0s").
		send("first", key("evt_1"), typeCredit).
		rows("after-first", key("evt_1"), 1)
}

// replayed adds the replay of evt_1 after the purge and its reads.
func (r *rec) replayed() *rec {
	return r.send("replay", key("evt_1"), typeCredit, attemptNo(2)).
		state("after-replay", 1, key("evt_1"))
}

// replayCases are the cases every replay check has.
func replayCases() []tcase {
	return []tcase{
		{name: "the replay refused as a duplicate", codes: is("retention.replay-applied"),
			edits: do(attempts("replay", "", refused(409)))},
		{name: "the replay applied again", codes: is("retention.replay-applied"),
			edits: do(count("effects", "after-replay", "evt_1", 2))},
		{name: "the replay stored again", codes: is("retention.replay-applied"),
			edits: do(count("event_rows", "after-replay", "evt_1", 2))},
		{name: "the row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "two rows at the reconciliation", codes: is("reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", "evt_1", 2))},
		{name: "no effects read after the replay", reason: `has no effects read in phase "after-replay"`,
			edits: do(drop("effects", "after-replay", ""))},
	}
}

// RETENTION-1: every endpoint's declared key TTL against its profile's
// horizon (stripe documents 72 h; github none), then a purge as of the end of
// the horizon, the key read, a replay.
var retention1 = register(&table{
	id: "RETENTION-1",
	clean: func() *history.History {
		return retention("RETENTION-1").
			fact(stripeEndpoint, "720h0m0s"+stripeHorizon).
			fact(githubEndpoint, "720h0m0s"+githubHorizon).
			rows("after-purge", key("evt_1"), 1).
			replayed().
			reconciled(key("evt_1")).done()
	},
	cases: append([]tcase{
		{name: "a key TTL shorter than the horizon", codes: is("retention.ttl-below-horizon"),
			edits: do(setFact(stripeEndpoint, "24h0m0s"+stripeHorizon))},
		{name: "a key TTL an hour short of the horizon", codes: is("retention.ttl-below-horizon"),
			edits: do(setFact(stripeEndpoint, "71h0m0s"+stripeHorizon))},
		{name: "a key TTL equal to the horizon", edits: do(setFact(stripeEndpoint, "72h0m0s"+stripeHorizon))},
		{name: "no key TTL declared", codes: is("retention.ttl-below-horizon"),
			edits: do(setFact(githubEndpoint, "0s"+githubHorizon))},
		{name: "the key purged at the end of the horizon", codes: is("retention.key-purged-early"),
			edits: do(count("event_rows", "after-purge", "evt_1", 0))},
		// As it happens: the key gone, the replay is a new event.
		{name: "the key purged, the replay applied again", codes: is("retention.key-purged-early", "retention.replay-applied"),
			also:  is("reconcile.applied-twice"),
			edits: do(count("event_rows", "after-purge", "evt_1", 0), count("effects", "after-replay", "evt_1", 2), count("effects", "reconcile", "evt_1", 2))},
		{name: "an endpoint fact malformed", reason: "history: RETENTION-1 facts: fact endpoint:001:github/acct_A: \"720h0m0s\" is not <key TTL>|<horizon>|<source>",
			edits: do(setFact(githubEndpoint, "720h0m0s"))},
		{name: "no rows read after the purge", reason: `has no event_rows read in phase "after-purge"`,
			edits: do(drop("event_rows", "after-purge", ""))},
	}, replayCases()...),
})

func TestRETENTION1(t *testing.T) { retention1.run(t) }

// RETENTION-2: a purge as of the key TTL less the margin, the key read, a replay.
var retention2 = register(&table{
	id: "RETENTION-2",
	clean: func() *history.History {
		return retention("RETENTION-2").
			fact("margin", "1h0m0s").
			rows("after-purge", key("evt_1"), 1).
			replayed().
			reconciled(key("evt_1")).done()
	},
	cases: append([]tcase{
		{name: "the key purged inside its TTL", codes: is("retention.key-purged-early"),
			edits: do(count("event_rows", "after-purge", "evt_1", 0))},
		{name: "no rows read after the purge", reason: `has no event_rows read in phase "after-purge"`,
			edits: do(drop("event_rows", "after-purge", ""))},
	}, replayCases()...),
})

func TestRETENTION2(t *testing.T) { retention2.run(t) }

// RETENTION-3: the payload read after the first delivery, a purge just past
// the payload TTL, the payload and the key read, a replay.
var retention3 = register(&table{
	id: "RETENTION-3",
	clean: func() *history.History {
		return retention("RETENTION-3").
			payload("after-first", key("evt_1"), true, true).
			fact("margin", "1h0m0s").
			fact("key_must_remain", "true").
			payload("after-purge", key("evt_1"), true, false).
			rows("after-purge", key("evt_1"), 1).
			replayed().
			reconciled(key("evt_1")).done()
	},
	cases: append([]tcase{
		{name: "no payload read after the purge", reason: "has no payload_present read after the purge",
			edits: do(drop("payload_present", "after-purge", ""))},
		// A payload TTL equal to the key TTL: only the payload is judged, no replay.
		{name: "payload and key TTLs equal", edits: do(setFact("margin", "0s"), setFact("key_must_remain", "false"),
			dropRole("replay"), drop("event_rows", "after-replay", ""), drop("effects", "after-replay", ""))},
		{name: "the payload kept past its TTL", codes: is("retention.payload-kept"),
			edits: do(reads("payload_present", "after-purge", "evt_1", func(o *history.Observation) { o.Present = true }))},
		{name: "the key purged with the payload", codes: is("retention.key-purged-early"),
			edits: do(count("event_rows", "after-purge", "evt_1", 0))},
	}, replayCases()...),
})

func TestRETENTION3(t *testing.T) { retention3.run(t) }

// The ladder of RETENTION-4 for a 30-day key TTL, a 7-day payload TTL, a 1 h
// margin and stripe's 72 h horizon.
const ladder = "1h0m0s,72h0m0s,169h0m0s,719h0m0s,721h0m0s,1440h0m0s,7200h0m0s"

// RETENTION-4: purges as of each step of the ladder until the key is gone (at
// the key TTL plus the margin); the key is then expired on purpose, its payload
// read, and a resend made (reported, not judged). An expired key is not
// reconciled.
var retention4 = register(&table{
	id: "RETENTION-4",
	clean: func() *history.History {
		return retention("RETENTION-4").
			fact("margin", "1h0m0s").
			fact("ladder", ladder).
			rows("ladder:1h0m0s", key("evt_1"), 1).
			rows("ladder:72h0m0s", key("evt_1"), 1).
			rows("ladder:169h0m0s", key("evt_1"), 1).
			rows("ladder:719h0m0s", key("evt_1"), 1).
			rows("ladder:721h0m0s", key("evt_1"), 0).
			fact("expired", keyString(key("evt_1"))).
			payload("after-key-gone", key("evt_1"), false, false).
			send("resend", key("evt_1"), typeCredit, attemptNo(2)).done()
	},
	cases: []tcase{
		// RETENTION-2 judges a key gone inside its TTL; this one measures.
		{name: "the key gone before its TTL", note: "at most 169h0m0s",
			edits: do(count("event_rows", "ladder:169h0m0s", "evt_1", 0), drop("event_rows", "ladder:719h0m0s", ""), drop("event_rows", "ladder:721h0m0s", ""))},
		{name: "the key kept for ever", build: keptForever, codes: is("retention.key-kept")},
		{name: "the key kept for ever, stored twice", build: keptForever, codes: is("retention.key-kept", "reconcile.duplicated"),
			edits: do(count("event_rows", "reconcile", "evt_1", 2))},
		{name: "the key gone only at twice its TTL", codes: is("retention.key-kept"),
			edits: do(count("event_rows", "ladder:721h0m0s", "evt_1", 1), more(func(r *rec) { r.rows("ladder:1440h0m0s", key("evt_1"), 0) }))},
		{name: "the payload outlived its key", codes: is("retention.payload-orphaned"),
			edits: do(reads("payload_present", "after-key-gone", "evt_1", func(o *history.Observation) { o.Found, o.Present = true, true }))},
		{name: "a malformed ladder", reason: `history: RETENTION-4 facts: fact ladder: time: invalid duration "soon"`,
			edits: do(setFact("ladder", "1h0m0s,soon"))},
		{name: "no ladder reads", reason: "history: RETENTION-4 has no ladder reads",
			edits: do(func(h *history.History) {
				var keep []history.Observation
				for _, o := range h.Observations {
					if !strings.HasPrefix(o.Phase, "ladder:") {
						keep = append(keep, o)
					}
				}
				h.Observations = keep
			})},
	},
})

// keptForever is RETENTION-4 against a receiver that never purges the key:
// every step of the ladder reads it, so it is not expired, and reconciled.
func keptForever() *history.History {
	r := retention("RETENTION-4").fact("margin", "1h0m0s").fact("ladder", ladder)
	for _, step := range strings.Split(ladder, ",") {
		r.rows("ladder:"+step, key("evt_1"), 1)
	}
	return r.reconciled(key("evt_1")).done()
}

func TestRETENTION4(t *testing.T) { retention4.run(t) }

// keyTTL adds RETENTION-5's read of evt_1's key TTL after delivery: ms left,
// -1 never, found false when the key is gone.
func (r *rec) keyTTL(ms int64, found bool) *rec {
	return r.read(history.Observation{Query: "key_ttl", Params: keyParams(key("evt_1")), Phase: "after-delivery", Count: ms, Found: found})
}

// RETENTION-5: one delivery, the key's TTL read from the store against the
// provider's redelivery horizon (stripe: 72 h).
var retention5 = register(&table{
	id: "RETENTION-5",
	clean: func() *history.History {
		return scenario("RETENTION-5").
			fact("horizon", "72h0m0s").
			fact("horizon_source", "automatic retries for 72h0m0s (https://docs.stripe.com/webhooks#retries)").
			send("first", key("evt_1"), typeCredit).
			rows("after-first", key("evt_1"), 1).
			keyTTL((72*time.Hour + time.Minute).Milliseconds(), true).
			reconciled(key("evt_1")).done()
	},
	cases: []tcase{
		{name: "a key expiring in a minute", codes: is("retention.key-expires-early"),
			edits: do(reads("key_ttl", "after-delivery", "evt_1", func(o *history.Observation) { o.Count = 60_000 }))},
		{name: "a key expiring a minute before the horizon ends", codes: is("retention.key-expires-early"),
			edits: do(reads("key_ttl", "after-delivery", "evt_1", func(o *history.Observation) { o.Count = (72*time.Hour - time.Minute).Milliseconds() }))},
		{name: "a key that never expires", edits: do(reads("key_ttl", "after-delivery", "evt_1", func(o *history.Observation) { o.Count = -1 }))},
		{name: "the key gone right after delivery", codes: is("retention.key-expires-early"),
			edits: do(reads("key_ttl", "after-delivery", "evt_1", func(o *history.Observation) { o.Found, o.Count = false, 0 }))},
		{name: "an undocumented horizon", edits: do(setFact("horizon", "0s"), reads("key_ttl", "after-delivery", "evt_1", func(o *history.Observation) { o.Count = 60_000 }))},
		{name: "the key lost by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "no key TTL read", reason: "want one read of the key's TTL after delivery, got 0",
			edits: do(drop("key_ttl", "after-delivery", ""))},
	},
})

func TestRETENTION5(t *testing.T) { retention5.run(t) }
