package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	sc "github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/vocab"
)

// checkers judge each guarantee's scenario from its share of the history. Each
// reports deviations with the codes its catalogue entry lists.
var checkers = map[string]func(v *view){
	"DEDUP-1": func(v *view) {
		v.acked("dedup.not-acked", sc.RoleCopy)
		v.count("dedup.rows", "event_rows", sc.PhaseAfter, 1, "after concurrent copies")
		v.count("dedup.effects", "effects", sc.PhaseAfter, 1, "after concurrent copies")
	},
	"DEDUP-2": func(v *view) {
		for _, a := range v.role(sc.RoleFirst) {
			// Its answer was thrown away on purpose; the receiver still had to say 2xx.
			if a.Status < 200 || a.Status > 299 {
				v.deviate("dedup.not-acked", "first delivery of %s was answered %s", a.Key.EventID, sc.Describe(a))
			}
		}
		v.count("dedup.rows", "event_rows", sc.PhaseAfterFirst, 1, "after the first delivery (its acknowledgement lost)")
		v.acked("dedup.not-acked", sc.RoleRedelivery, sc.RoleResend)
		v.count("dedup.rows", "event_rows", sc.PhaseAfter, 1, "after the redeliveries")
		v.count("dedup.effects", "effects", sc.PhaseAfter, 1, "after the redeliveries")
	},
	"DEDUP-3": scopeCheck("same event ID under two accounts"),
	"DEDUP-4": scopeCheck("same event ID from two sources"),
	"DEDUP-5": scopeCheck("identical payload, distinct event IDs"),
	"DEDUP-6": func(v *view) {
		v.acked("dedup.not-acked", sc.RoleSetup, sc.RoleFirst, sc.RoleOtherScope, sc.RoleCopy)
		v.objectEffects("dedup.object-effects", sc.PhaseSequential, 1, "two events for one change, one after the other")
		v.objectEffects("dedup.object-effects", sc.PhaseConcurrent, 1, "two events for one change at the same time")
	},

	"ATOMIC-1": func(v *view) {
		cutCheck(v, sc.PhaseAfterCrash, "a crash before commit")
	},
	"ATOMIC-2": func(v *view) {
		async := v.fact(sc.FactAcceptance) == "async"
		for _, a := range v.role(sc.RolePremature, "refund-early") {
			if a.Outcome == history.OutcomeAcknowledged && !async {
				v.deviate("atomic.acked-uncommitted", "%s arrived before its precondition and was acknowledged (%s); the provider will not retry it", a.EventType, sc.Describe(a))
			}
		}
		v.countIf("atomic.partial", "event_rows", sc.PhaseAfterRefusal, 0, "after the failed precondition")
		v.acked("atomic.not-acked", sc.RoleSetup)
		if len(v.role(sc.RoleRedelivery)) > 0 {
			v.acked("atomic.not-acked", sc.RoleRedelivery)
			v.count("atomic.not-applied", "event_rows", sc.PhaseAfter, 1, "after the redelivery once the precondition held")
		}
		v.objectState("atomic.object-state", sc.PhaseAfter, "refunded", "after the precondition held and the event was redelivered")
	},
	"ATOMIC-3": func(v *view) {
		cutCheck(v, sc.PhaseAfterCut, "the connection loss")
	},
	"ATOMIC-4": func(v *view) {
		v.state("atomic.not-applied", sc.PhaseAfterCrash, 1, "after a crash after commit")
		v.acked("atomic.not-acked", sc.RoleRedelivery)
		v.state("atomic.not-applied", sc.PhaseAfter, 1, "after the redelivery")
	},

	"ATOMIC-5": func(v *view) {
		v.acked("atomic.not-acked", sc.RoleSetup, sc.RoleRedelivery, sc.RoleMissing+":"+vocab.MissingCreate, sc.RoleMissing+":"+vocab.MissingIgnore)
		v.countIf("atomic.partial", "event_rows", sc.PhaseAfterRefusal, 0, "after an event for an object that did not exist was refused")
		if len(v.role(sc.RoleRedelivery)) > 0 {
			v.count("atomic.not-applied", "event_rows", sc.PhaseAfter, 1, "after the object existed and the event was redelivered")
		}
		byObject := map[string]history.Attempt{}
		for _, a := range v.role(sc.RoleMissing + ":" + vocab.MissingRetry) {
			for name, id := range v.sc.Facts {
				if obj, ok := strings.CutPrefix(name, sc.FactEventOf); ok && id == a.Key.EventID {
					byObject[obj] = a
				}
			}
		}
		for _, o := range v.stateReads(sc.PhaseAfter) {
			want, ok := v.sc.Facts[sc.FactWantState+o.Params[3]]
			if !ok {
				continue
			}
			if o.Found && o.Status == want {
				continue
			}
			if a, ok := byObject[o.Params[3]]; ok && a.Outcome == history.OutcomeAcknowledged {
				v.deviate("atomic.missing-lost", "%s for %s %s, which did not exist yet, was acknowledged (%s); once the object existed it is %q (found %v), not %q: the change is lost",
					a.EventType, v.objectName(), o.Params[3], sc.Describe(a), o.Status, o.Found, want)
				continue
			}
			v.deviate("atomic.object-state", "%s %s: status %q (found %v), want %q", v.objectName(), o.Params[3], o.Status, o.Found, want)
		}
		for _, o := range v.stateReads(sc.PhaseAfterRefusal) {
			if o.Found {
				v.note("%s %s exists after an event the target declares it ignores for missing objects (status %q)", v.objectName(), o.Params[3], o.Status)
			}
		}
		if len(v.stateReads(sc.PhaseAfter)) == 0 && len(v.stateReads(sc.PhaseAfterRefusal)) == 0 {
			v.fail("history: no state read of the objects that did not exist")
		}
	},

	"ACK-1": func(v *view) {
		acked := 0
		for _, a := range v.role(sc.RoleLoad) {
			if a.Outcome != history.OutcomeAcknowledged {
				continue
			}
			acked++
			for _, q := range []string{"event_rows", "effects"} {
				o, ok := v.read(q, sc.PhaseAfterRestart, keyParams(a.Key))
				if !ok {
					v.fail("history: no %s read after the restart for acknowledged %s", q, sc.KeyString(a.Key))
					return
				}
				if o.Count != 1 {
					v.deviate("ack.lost", "%s was acknowledged before the kill, but after the restart %s is %d, want 1", sc.KeyString(a.Key), q, o.Count)
				}
			}
		}
		if acked == 0 {
			v.fail("no delivery was acknowledged before the kill: there is no acknowledged event to check")
			return
		}
		v.note("%d acknowledged event(s) checked after a kill and restart", acked)
		// Every event was redelivered after the restart: each applies exactly once.
		v.count("ack.effects", "effects", sc.PhaseAfterRedelivery, 1, "redelivered after the kill and restart")
		v.count("ack.effects", "event_rows", sc.PhaseAfterRedelivery, 1, "redelivered after the kill and restart")
	},
	"ACK-2": func(v *view) {
		for _, a := range v.role(sc.RoleLoad) {
			if a.Outcome != history.OutcomeAcknowledged {
				timeout := v.factOr(sc.FactTimeoutOf+a.Key.Source+"/"+a.Key.Account, v.fact("timeout"))
				v.deviate("ack.timeout", "%s on %s/%s: not acknowledged within %s: %s after %s", a.Key.EventID, a.Key.Source, a.Key.Account, timeout, sc.Describe(a), a.Duration().Round(time.Millisecond))
			}
		}
	},
	"ACK-3": badInputCheck,
	"ACK-4": func(v *view) {
		badInputCheck(v)
		boundaryCheck(v)
	},
	"ACK-5": badInputCheck,
	"ACK-6": func(v *view) {
		for _, a := range v.role(sc.RoleUnknownType) {
			if a.Outcome != history.OutcomeAcknowledged {
				v.deviate("ack.unknown-type-rejected", "an unhandled event type (%s) was answered %s; the provider retries it on its schedule", a.EventType, sc.Describe(a))
			}
		}
		v.count("ack.unknown-type-applied", "effects", sc.PhaseUnknownType, 0, "an unhandled event type")
		control(v)
	},

	"ACK-7": boundaryCheck,

	"ORDER-1": versionCheck("versions delivered 1, 3, 2"),
	"ORDER-2": versionCheck("after the shuffled, duplicated stream"),
	"ORDER-3": func(v *view) {
		v.acked("order.not-acked", sc.RoleSetup)
		ps := v.stateReads(sc.PhaseFinal)
		if len(ps) == 0 {
			v.fail("history: no state read after the late events")
		}
		for _, p := range ps {
			want := v.factOr(sc.FactWantState+p.Params[3], "refunded")
			if !p.Found || p.Status != want {
				v.deviate("order.transition-applied", "%s %s: status %q after a late %s, want it to stay %q", v.objectName(), p.Params[3], p.Status, v.factOr(sc.FactLateType+p.Params[3], "succeeded event"), want)
			}
		}
		if len(v.reads("object_effects", sc.PhaseFinal)) > 0 {
			v.objectEffects("order.transition-applied", sc.PhaseFinal, 2, "the effects of the object's own path; the late event must add none")
		}
	},

	"ORDER-4": func(v *view) {
		v.acked("order.not-acked", sc.RoleUpdate, sc.RoleDelete, sc.RoleLate)
		before, after, final := v.reads("object", sc.PhaseBeforeDelete), v.reads("object", sc.PhaseAfterDelete), v.reads("object", sc.PhaseFinal)
		if len(before) != 1 || len(after) != 1 || len(final) != 1 {
			v.fail("history: ORDER-4 needs one object read before the delete, after it and at the end")
			return
		}
		// The positive control: the state query sees the object before it is deleted.
		if want := v.fact(sc.FactWantVersion); !before[0].Found || fmt.Sprint(before[0].Version) != want {
			v.fail("object %s before the delete: key %d (found %v), want %s: the first update was not applied, so the deletion cannot be judged (ORDER-1 judges updates)", before[0].Params[3], before[0].Version, before[0].Found, want)
			return
		}
		// Brought back: the stale update is what the object now holds, or an
		// object the deletion removed exists again.
		a, f := after[0], final[0]
		if stale := v.fact(sc.FactStaleKey); (f.Found && fmt.Sprint(f.Version) == stale) || (!a.Found && f.Found) {
			v.deviate("order.resurrected", "object %s: after the delete it read %s; after a stale update (key %s) it reads %s: the deleted object was brought back",
				f.Params[3], objectText(a), stale, objectText(f))
		}
	},

	"RETENTION-1": func(v *view) {
		names := make([]string, 0, len(v.sc.Facts))
		for name := range v.sc.Facts {
			names = append(names, name)
		}
		sort.Strings(names) // the facts' keys number the endpoints in target order
		for _, name := range names {
			val := v.sc.Facts[name]
			ep, ok := strings.CutPrefix(name, sc.FactEndpointTTL)
			if !ok {
				continue
			}
			if _, after, found := strings.Cut(ep, ":"); found {
				ep = after
			}
			parts := strings.SplitN(val, "|", 3)
			if len(parts) != 3 {
				v.fail("history: fact %s is malformed", name)
				return
			}
			ttl, _ := time.ParseDuration(parts[0])
			horizon, _ := time.ParseDuration(parts[1])
			switch {
			case ttl <= 0:
				v.deviate("retention.ttl-below-horizon", "endpoint %s declares no key TTL", ep)
			case horizon == 0:
				v.note("endpoint %s: key TTL %s; %s: the redelivery horizon is undocumented, the user chooses", ep, days(ttl), parts[2])
			case ttl < horizon:
				v.deviate("retention.ttl-below-horizon", "endpoint %s keeps keys %s, less than the redelivery horizon %s: %s", ep, days(ttl), days(horizon), parts[2])
			default:
				v.note("endpoint %s: key TTL %s covers the redelivery horizon %s: %s", ep, days(ttl), days(horizon), parts[2])
			}
		}
		v.count("retention.key-purged-early", "event_rows", sc.PhaseAfterPurge, 1, "after a purge as of the end of the redelivery horizon")
		replayCheck(v, "at the end of the redelivery horizon")
	},
	"RETENTION-2": func(v *view) {
		v.count("retention.key-purged-early", "event_rows", sc.PhaseAfterPurge, 1, "after a purge as of just inside the key TTL")
		replayCheck(v, "inside the key TTL")
	},
	"RETENTION-3": func(v *view) {
		for _, o := range v.reads("payload_present", sc.PhaseAfterPurge) {
			if o.Found && o.Present {
				v.deviate("retention.payload-kept", "the payload of %s is still stored after a purge as of %s past its delivery (payload TTL %s)",
					paramsText(o.Params), addDur(v.fact(sc.FactPayloadTTL), v.fact(sc.FactMargin)), v.fact(sc.FactPayloadTTL))
			}
		}
		if v.fact(sc.FactKeyMustRemain) == "true" {
			v.count("retention.key-purged-early", "event_rows", sc.PhaseAfterPurge, 1, "after a purge past the payload TTL, inside the key TTL "+v.fact(sc.FactKeyTTL))
			replayCheck(v, "after the payload was purged")
		}
	},
	"RETENTION-4": func(v *view) {
		keyTTL, _ := time.ParseDuration(v.fact(sc.FactKeyTTL))
		margin, _ := time.ParseDuration(v.fact(sc.FactMargin))
		var kept, gone time.Duration
		var key string
		for _, step := range strings.Split(v.fact(sc.FactLadder), ",") {
			d, err := time.ParseDuration(step)
			if err != nil {
				v.fail("history: RETENTION-4 ladder %q: %v", v.fact(sc.FactLadder), err)
				return
			}
			rs := v.reads("event_rows", sc.PhaseLadder+step)
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
			v.deviate("retention.key-kept", "the key %s is still there after a purge as of %s past its delivery (declared key TTL %s): it is kept indefinitely as far as measured", key, days(kept), days(keyTTL))
		case gone > keyTTL+margin:
			v.deviate("retention.key-kept", "the key %s survived a purge as of %s past its delivery (declared key TTL %s); it went only at %s", key, days(keyTTL+margin), days(keyTTL), days(gone))
		default:
			v.note("measured replay-protection window: more than %s, at most %s (declared key TTL %s)", days(kept), days(gone), days(keyTTL))
		}
		for _, o := range v.reads("payload_present", sc.PhaseKeyGone) {
			if o.Found && o.Present {
				v.deviate("retention.payload-orphaned", "the payload of %s is still stored after its key is gone", paramsText(o.Params))
			}
		}
	},
}

// redelivered judges the provider's redelivery of an event whose first attempt
// was not acknowledged; false when there was none (the first was acknowledged,
// which its own check reports).
func redelivered(v *view, what string) bool {
	if len(v.role(sc.RoleRedelivery)) == 0 {
		return false
	}
	v.acked("atomic.not-acked", sc.RoleRedelivery)
	v.state("atomic.not-applied", sc.PhaseAfter, 1, what)
	return true
}

// cutCheck judges a transaction cut in the middle (a crash, a lost
// connection): unacknowledged, it left nothing and its redelivery applied once;
// acknowledged by a receiver that accepts before applying, it was still
// applied once.
func cutCheck(v *view, phase, what string) {
	async := v.fact(sc.FactAcceptance) == "async"
	for _, a := range v.role(sc.RoleDoomed) {
		if a.Outcome != history.OutcomeAcknowledged {
			continue
		}
		if !async {
			v.deviate("atomic.acked-uncommitted", "delivery was acknowledged although its transaction was cut by %s before it could commit: %s", what, sc.Describe(a))
			continue
		}
		v.state("atomic.not-applied", sc.PhaseAfter, 1, "an event accepted before "+what+" cut its worker")
		return
	}
	v.state("atomic.partial", phase, 0, "after "+what)
	redelivered(v, "after the redelivery")
}

// boundaryCheck: every legitimate delivery at the edge of a limit or tolerance
// was acknowledged and applied once.
func boundaryCheck(v *view) {
	bs := v.role(sc.RoleBoundaryPrefix)
	if len(bs) == 0 {
		v.fail("history: %s sent no delivery at a boundary", v.sc.Name)
		return
	}
	for _, a := range bs {
		if a.Outcome != history.OutcomeAcknowledged {
			v.deviate("ack.boundary-rejected", "%s: a legitimate delivery was not acknowledged: %s", strings.TrimPrefix(a.Role, sc.RoleBoundaryPrefix), sc.Describe(a))
		}
	}
	v.state("ack.boundary-not-applied", sc.PhaseBoundary, 1, "a legitimate delivery at a boundary")
}

func scopeCheck(what string) func(v *view) {
	return func(v *view) {
		v.acked("dedup.not-acked", sc.RoleFirst, sc.RoleOtherScope)
		v.count("dedup.rows", "event_rows", sc.PhaseAfter, 1, what)
		v.count("dedup.effects", "effects", sc.PhaseAfter, 1, what)
	}
}

// badInputCheck: every invalid delivery is refused with a 4xx and leaves
// nothing.
func badInputCheck(v *view) {
	bad := v.role(sc.RoleBadPrefix)
	if len(bad) == 0 {
		v.fail("history: %s sent no invalid delivery", v.sc.Name)
		return
	}
	for _, a := range bad {
		if a.Status < 400 || a.Status > 499 {
			v.deviate("ack.accepted-bad-input", "%s: want a 4xx rejection, got %s", strings.TrimPrefix(a.Role, sc.RoleBadPrefix), sc.Describe(a))
		}
	}
	v.state("ack.stored-bad-input", sc.PhaseBad, 0, "an invalid delivery")
	control(v)
}

// control is the positive control of a check that expects nothing to happen:
// the same endpoints acknowledge and apply a valid, handled delivery.
func control(v *view) {
	if len(v.role(sc.RoleControl)) == 0 {
		v.fail("history: %s sent no valid delivery to hold its expectations against", v.sc.Name)
		return
	}
	v.acked("ack.control-rejected", sc.RoleControl)
	v.state("ack.control-rejected", sc.PhaseControl, 1, "a valid delivery sent as the positive control")
}

func versionCheck(what string) func(v *view) {
	return func(v *view) {
		v.acked("order.not-acked", sc.RoleUpdate, sc.RoleStream, sc.RoleLate)
		want, err := strconv.ParseInt(v.fact(sc.FactWantVersion), 10, 64)
		if err != nil {
			v.fail("history: fact %s: %v", sc.FactWantVersion, err)
			return
		}
		os := v.reads("object", sc.PhaseFinal)
		if len(os) == 0 {
			v.fail("history: no object read at the end of the stream")
		}
		for _, o := range os {
			if !o.Found || o.Version != want {
				v.deviate("order.regressed", "%s: object %s is at version %d (status %q, found %v), want %d", what, o.Params[3], o.Version, o.Status, o.Found, want)
			}
		}
	}
}

func replayCheck(v *view, when string) {
	for _, a := range v.role(sc.RoleReplay) {
		if a.Outcome != history.OutcomeAcknowledged {
			v.deviate("retention.replay-applied", "replay %s: %s was not acknowledged as a duplicate: %s", when, a.Key.EventID, sc.Describe(a))
		}
	}
	v.count("retention.replay-applied", "event_rows", sc.PhaseAfterReplay, 1, "replay "+when)
	v.count("retention.replay-applied", "effects", sc.PhaseAfterReplay, 1, "replay "+when)
}

func objectText(o history.Observation) string {
	if !o.Found {
		return "no row"
	}
	if o.Status != "" {
		return fmt.Sprintf("key %d, status %q", o.Version, o.Status)
	}
	return fmt.Sprintf("key %d", o.Version)
}

func days(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%s (%.1f days)", d, d.Hours()/24)
	}
	return d.String()
}

func addDur(a, b string) string {
	x, _ := time.ParseDuration(a)
	y, _ := time.ParseDuration(b)
	return (x + y).String()
}
