package check

import (
	"strconv"

	"github.com/hookcert/hookcert/history"
	sc "github.com/hookcert/hookcert/scenarios"
)

func init() {
	checkers["INBOX-1"] = func(v *view) {
		if n := v.fact(sc.FactEarlyAcks); n != "" && n != "0" {
			v.note("%s deliveries were acknowledged while the harness held the table their keys are stored in", n)
		}
		for _, o := range v.reads(sc.QueryInboxState, sc.PhaseAfterRestart) {
			if !o.Found {
				v.deviate("inbox.lost", "%s was acknowledged and is not in the inbox after the crash: it was acknowledged before it was durably accepted", paramsText(o.Params))
			}
		}
		appliedOnce(v, sc.PhaseAfter, "after the restart")
	}
	checkers["INBOX-2"] = func(v *view) {
		v.acked("inbox.not-applied", sc.RoleAccept)
		appliedOnce(v, sc.PhaseAfter, "after competing workers were released")
		inboxDone(v, "inbox.not-applied")
	}
	checkers["INBOX-3"] = func(v *view) {
		for _, o := range v.reads(sc.QueryInboxState, sc.PhaseWorkersDown) {
			if !o.Found {
				v.deviate("inbox.lost", "%s was acknowledged while no worker process ran and is not in the inbox: acknowledged before it was durably accepted", paramsText(o.Params))
			}
		}
		appliedOnce(v, sc.PhaseAfter, "after its worker was killed and the lease passed")
		inboxDone(v, "inbox.stuck")
	}
	checkers["INBOX-4"] = func(v *view) {
		appliedOnce(v, sc.PhaseAfter, "after a worker died between its change and marking the event done, and the event was dispatched again")
		inboxDone(v, "inbox.stuck")
	}
	checkers["INBOX-5"] = func(v *view) {
		appliedOnce(v, sc.PhaseAfter, "after a failed attempt")
		inboxDone(v, "inbox.stuck")
		for _, o := range v.reads(sc.QueryInboxState, sc.PhaseAfter) {
			if o.Found && o.Count < 2 {
				v.deviate("inbox.attempts-unrecorded", "%s: %d attempt(s) recorded after %s failure(s) the harness caused and a successful retry; want at least 2",
					paramsText(o.Params), o.Count, v.factOr(sc.FactInjected, "1"))
			}
		}
	}
	checkers["INBOX-6"] = func(v *view) {
		max, _ := strconv.Atoi(v.fact(sc.FactMaxAttempts))
		injected, _ := strconv.Atoi(v.fact(sc.FactInjected))
		tries := v.reads(sc.QueryInboxState, sc.PhaseAfterTries)
		if len(tries) == 0 {
			v.fail("history: no inbox read after the failed attempts")
			return
		}
		for _, o := range tries {
			switch {
			case !o.Found:
				v.deviate("inbox.dead-letter-lost", "%s: gone from the inbox after %d failed attempt(s): an acknowledged event was dropped instead of dead-lettered", paramsText(o.Params), injected)
			case o.Status == sc.InboxDone:
				v.deviate("inbox.dead-letter-lost", "%s: marked done after %d failed attempt(s), none of which applied it", paramsText(o.Params), injected)
			case o.Status != sc.InboxDead && injected >= max:
				v.deviate("inbox.not-dead-lettered", "%s: state %q with %d attempt(s) recorded after %d failed attempt(s) (declared max_attempts %d): not dead-lettered",
					paramsText(o.Params), o.Status, o.Count, injected, max)
			}
		}
		for _, o := range v.reads(sc.QueryInboxState, sc.PhaseAfter) {
			if o.Found && o.Status == sc.InboxDead {
				continue
			}
			if t, ok := v.read(sc.QueryInboxState, sc.PhaseAfterTries, o.Params); ok && t.Found && t.Status == sc.InboxDead {
				v.deviate("inbox.dead-letter-lost", "%s: dead-lettered, then %q (found %v) once the failures stopped", paramsText(o.Params), o.Status, o.Found)
			}
		}
	}

	checkers["INBOX-7"] = func(v *view) {
		rows := map[string]int64{}
		for _, o := range v.reads("event_rows", sc.PhaseAfter) {
			rows[paramsText(o.Params[:3])] = o.Count
		}
		for _, o := range v.reads("effects", sc.PhaseAfter) {
			switch {
			case o.Count == 0 && rows[paramsText(o.Params[:3])] == 0:
				v.deviate("inbox.pending-purged", "%s: accepted, then gone after a purge ran while it waited for its worker: never applied", paramsText(o.Params))
			case o.Count == 0:
				v.deviate("inbox.not-applied", "after the purge: %s accepted, not applied: 0 effects", paramsText(o.Params))
			case o.Count > 1:
				v.deviate("inbox.effects", "after the purge: %s applied %d times", paramsText(o.Params), o.Count)
			}
		}
		if len(v.reads("effects", sc.PhaseAfter)) == 0 {
			v.fail("history: no effects read after the purge")
		}
	}
	checkers["OUTBOX-1"] = func(v *view) {
		downstreamOnce(v, true)
	}
	checkers["OUTBOX-2"] = func(v *view) {
		downstreamOnce(v, true)
		if len(v.sinkFor("")) < 2 && len(v.sinkFor("")) > 0 {
			v.note("only one downstream call: the receiver did not resend after the crash (its first call was applied, so nothing downstream is missing)")
		}
	}
	checkers["OUTBOX-3"] = func(v *view) {
		cut := v.reads(sc.QuerySinkCalls, sc.PhaseAfterCut)
		if len(cut) == 0 {
			v.fail("history: no sink read while the transaction was cut")
			return
		}
		for _, o := range cut {
			for _, c := range v.sinkFor(o.Params[2]) {
				if c.AtNS <= o.AtNS {
					v.deviate("outbox.sent-uncommitted", "downstream call %d for %s (%s) arrived while its transaction was uncommitted; it was then killed", c.Seq, o.Params[2], c.Outcome)
				}
			}
		}
		downstreamOnce(v, true)
	}
	checkers["OUTBOX-4"] = func(v *view) {
		max, _ := strconv.Atoi(v.fact(sc.FactMaxAttempts))
		for _, o := range v.reads(sc.QuerySinkCalls, sc.PhaseAfter) {
			calls := v.sinkFor(o.Params[2])
			if len(calls) < min(2, max) {
				v.deviate("outbox.dropped", "%s: given up after %d failed downstream call(s) (declared max_attempts %d)", o.Params[2], len(calls), max)
			}
			sameKey(v, o.Params[2], calls)
		}
		for _, o := range v.reads(sc.QueryOutboxState, sc.PhaseAfter) {
			switch {
			case !o.Found:
				v.deviate("outbox.dropped", "%s: no outbox message after every downstream call failed: dropped", paramsText(o.Params))
			case o.Status == sc.OutboxSent:
				v.deviate("outbox.dropped", "%s: recorded as sent although the downstream answered every call 503", paramsText(o.Params))
			case o.Status != sc.InboxDead:
				// Still retrying when the harness stopped waiting: neither kept
				// as a dead letter nor dropped, yet.
				v.fail("%s: outbox message still %q after %d attempt(s) (declared max_attempts %d) when the wait ended: its dead-lettering was not observed", paramsText(o.Params), o.Status, o.Count, max)
			}
		}
	}
}

// appliedOnce: every accepted event read in phase has one row and one effect.
func appliedOnce(v *view, phase, what string) {
	rs := v.reads("effects", phase)
	if len(rs) == 0 {
		v.fail("history: %s has no effects read in phase %q", v.sc.Name, phase)
		return
	}
	for _, o := range rs {
		switch {
		case o.Count == 0:
			v.deviate("inbox.not-applied", "%s: %s accepted, not applied: 0 effects", what, paramsText(o.Params))
		case o.Count > 1:
			v.deviate("inbox.effects", "%s: %s applied %d times", what, paramsText(o.Params), o.Count)
		}
	}
}

// inboxDone: every event's last inbox read is done.
func inboxDone(v *view, code string) {
	for _, o := range v.reads(sc.QueryInboxState, sc.PhaseAfter) {
		if !o.Found || o.Status != sc.InboxDone {
			v.deviate(code, "%s: inbox state %q (found %v, %d attempt(s)), want done", paramsText(o.Params), o.Status, o.Found, o.Count)
		}
	}
}

// sinkFor returns the downstream calls attributed to eventID ("" for all).
func (v *view) sinkFor(eventID string) []history.Sink {
	var out []history.Sink
	for _, c := range v.sink {
		if eventID == "" || c.EventID == eventID {
			out = append(out, c)
		}
	}
	return out
}

// downstreamOnce: every event read in the after phase reached the sink, was
// answered 2xx at least once, carried one key, and was applied once.
func downstreamOnce(v *view, wantSent bool) {
	rs := v.reads(sc.QuerySinkCalls, sc.PhaseAfter)
	if len(rs) == 0 {
		v.fail("history: %s has no sink read after its deliveries", v.sc.Name)
		return
	}
	for _, o := range rs {
		id := o.Params[2]
		calls := v.sinkFor(id)
		applied, ok, noKey := 0, false, false
		for _, c := range calls {
			if c.Outcome == "applied" || c.Outcome == "lost" {
				applied++
			}
			if c.Status >= 200 && c.Status <= 299 {
				ok = true
			}
			if c.Key == "" && !noKey {
				noKey = true
				v.note("downstream call %d for %s carried no operation key: a resend of it would be a new operation downstream", c.Seq, id)
			}
		}
		if wantSent && !ok {
			v.deviate("outbox.not-sent", "%s: %d downstream call(s), none answered 2xx", id, len(calls))
		}
		sameKey(v, id, calls)
		if applied > 1 {
			v.deviate("outbox.applied-twice", "%s: the downstream applied its operation %d times (%d calls)", id, applied, len(calls))
		}
	}
}

func sameKey(v *view, id string, calls []history.Sink) {
	keys := map[string]bool{}
	for _, c := range calls {
		if c.Key != "" {
			keys[c.Key] = true
		}
	}
	if len(keys) > 1 {
		v.deviate("outbox.key-changed", "%s: %d different operation keys over %d downstream calls: a resend is a new operation downstream", id, len(keys), len(calls))
	}
}
