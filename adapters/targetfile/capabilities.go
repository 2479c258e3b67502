package targetfile

import (
	"slices"
	"strings"
)

// Capability is a feature a target declares; guarantees that need an undeclared
// capability are reported as not applicable.
type Capability string

// The closed list of capabilities (documented in docs/target.md).
const (
	// Crash: the harness may SIGKILL and restart the receiver (needs lifecycle).
	Crash Capability = "crash"
	// LockGating: the harness may lock the receiver's event table (needs
	// observe.postgres.event_table).
	LockGating Capability = "lock-gating"
	// ConnectionLoss: the harness may terminate the receiver's PostgreSQL sessions
	// (needs observe.postgres).
	ConnectionLoss Capability = "connection-loss"
	// Failpoints: the receiver implements the failpoint protocol (needs failpoints).
	Failpoints Capability = "failpoints"
	// Ordering: versioned state updates (needs observe.postgres.queries.object).
	Ordering Capability = "ordering"
	// StateMachine: payment state machine (needs observe.postgres.queries.payment).
	StateMachine Capability = "state-machine"
	// DomainConstraint: two event IDs for one payment give one effect (needs
	// observe.postgres.queries.object_effects).
	DomainConstraint Capability = "domain-constraint"
	// Deletion: a deleted versioned object is not brought back by a stale update
	// (built-in vocabulary: customer.subscription.deleted; needs the ordering query).
	Deletion Capability = "deletion"
	// Retention: the receiver declares its key and payload TTLs and a purge the
	// harness can trigger as of a chosen time (needs target.retention and
	// observe.postgres.queries.payload_present).
	Retention Capability = "retention"
	// Inbox: the receiver accepts events durably, answers, and applies them in
	// workers (needs acceptance.mode async and target.inbox).
	Inbox Capability = "inbox"
	// Outbox: the receiver's downstream calls go to the harness's sink,
	// {{.SinkURL}}, with an operation key (needs target.outbox).
	Outbox Capability = "outbox"
	// Refetch: the receiver fetches the object of each event from the
	// harness's provider API, {{.ProviderAPIURL}} (needs target.provider_api).
	Refetch Capability = "refetch"
)

// Capabilities lists every valid capability in documentation order.
var Capabilities = []Capability{Crash, LockGating, ConnectionLoss, Failpoints, Ordering,
	StateMachine, DomainConstraint, Deletion, Retention, Inbox, Outbox, Refetch}

// Reserved reports whether c is accepted in a target file but not yet checked by
// any scenario (none is, today).
func Reserved(Capability) bool { return false }

// capabilities checks target.capabilities: known, each once, and each with
// what it needs from the rest of the file.
func (v *validator) capabilities(t *Target, rt *rawTarget) {
	base := []any{"target", "capabilities"}
	valid := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		valid[i] = string(c)
	}
	seen := map[Capability]int{}
	for i, s := range rt.Capabilities {
		p := at(base, i)
		c := Capability(s)
		if !contains(valid, s) {
			v.fail(p, "unknown capability %q (valid: %s)", s, strings.Join(valid, ", "))
			continue
		}
		if j, dup := seen[c]; dup {
			v.fail(p, "duplicate capability %q (also target.capabilities[%d])", s, j)
			continue
		}
		seen[c] = i
		t.Capabilities = append(t.Capabilities, c)
		// A missing field the shape check refused is reported there, once.
		if missing := v.needs(p, c, rt); missing != "" && !v.brokenPath(missing) {
			v.fail(p, "capability %q needs %s, which is missing", s, missing)
		}
	}
}

// needs returns the field capability c (declared at p) needs and the file
// lacks, "" when none; a need a present field does not meet it reports itself.
func (v *validator) needs(p []any, c Capability, rt *rawTarget) string {
	pg := rt.store()
	switch c {
	case Crash, LockGating, ConnectionLoss, Failpoints:
		return v.faultNeeds(c, rt, pg)
	case Deletion, Ordering, StateMachine, DomainConstraint:
		return stateNeeds(c, rt, pg)
	case Inbox, Outbox:
		return v.asyncNeeds(p, c, rt)
	case Refetch:
		return v.refetchNeeds(p, rt)
	case Retention:
		switch {
		case rt.Retention == nil:
			return "target.retention"
		case pg == nil || pg.Queries == nil || pg.Queries.PayloadPresent == "":
			return rt.storeField("queries", "payload_present")
		}
	}
	return ""
}

// faultNeeds: a fault the harness injects needs what it acts on (the process,
// a table to lock, the sessions' tables, the failpoint protocol).
func (v *validator) faultNeeds(c Capability, rt *rawTarget, pg *rawStore) string {
	switch c {
	case Crash:
		if rt.Lifecycle == nil && !v.opts.hooks.Controller {
			return "target.lifecycle"
		}
	case LockGating:
		if pg != nil && pg.kind == KindRedis {
			return "" // Redis's gate pauses every write: no table to name
		}
		if pg == nil || pg.EventTable == "" {
			return rt.storeField("event_table")
		}
	case ConnectionLoss:
		if pg != nil && pg.kind == KindRedis {
			return ""
		}
		if pg == nil || pg.EffectTable == "" {
			return rt.storeField("effect_table")
		}
	case Failpoints:
		if rt.Failpoints == nil {
			return "target.failpoints"
		}
	}
	return ""
}

// stateNeeds: a state guarantee needs the query that reads the state. A
// declared role's query satisfies the capability that reads its slot.
func stateNeeds(c Capability, rt *rawTarget, pg *rawStore) string {
	ev := rt.Events
	var ordered *rawOrdered
	var lifecycle *rawEventLifecycle
	if ev != nil {
		ordered, lifecycle = ev.Ordered.first(), ev.Lifecycle.first()
	}
	// The first role of each kind is what the capability stands for.
	switch c {
	case Deletion:
		if ordered != nil {
			// Any ordered role's deletion: ORDER-4 runs every role with one.
			if !slices.ContainsFunc(ev.Ordered.Items, func(o *rawOrdered) bool { return o != nil && o.Delete != nil }) {
				return ev.Ordered.firstField("target.events.ordered", "delete")
			}
		} else if pg == nil || pg.Queries == nil || pg.Queries.Object == "" {
			return rt.storeField("queries", "object")
		}
	case Ordering:
		if ordered != nil {
			if ordered.State == "" {
				return ev.Ordered.firstField("target.events.ordered", "state")
			}
		} else if pg == nil || pg.Queries == nil || pg.Queries.Object == "" {
			return rt.storeField("queries", "object")
		}
	case StateMachine:
		if lifecycle != nil {
			if lifecycle.State == "" {
				return ev.Lifecycle.firstField("target.events.lifecycle", "state")
			}
		} else if pg == nil || pg.Queries == nil || pg.Queries.Payment == "" {
			return rt.storeField("queries", "payment")
		}
	case DomainConstraint:
		if lifecycle != nil {
			// Any lifecycle object's effects: DEDUP-6 runs every one counted.
			if !slices.ContainsFunc(ev.Lifecycle.Items, func(l *rawEventLifecycle) bool { return l != nil && l.Effects != "" }) {
				return ev.Lifecycle.firstField("target.events.lifecycle", "effects")
			}
		} else if pg == nil || pg.Queries == nil || pg.Queries.ObjectEffects == "" {
			return rt.storeField("queries", "object_effects")
		}
	}
	return ""
}

// asyncNeeds: inbox and outbox need their sections, and what lets the harness
// see the work done after the answer: an async acceptance, the sink's URL.
func (v *validator) asyncNeeds(p []any, c Capability, rt *rawTarget) string {
	switch c {
	case Inbox:
		switch {
		case rt.Inbox == nil:
			return "target.inbox"
		case rt.Acceptance == nil || rt.Acceptance.Mode != AcceptAsync:
			v.fail(p, "capability %q needs target.acceptance.mode async (an inbox receiver answers before its workers apply)", c)
		}
	case Outbox:
		switch {
		case rt.Outbox == nil:
			return "target.outbox"
		case !v.used["SinkURL"]:
			v.fail(p, "capability %q needs the receiver to be given {{.SinkURL}} (in target.lifecycle.command or target.lifecycle.env), where the harness's sink listens", c)
		}
	}
	return ""
}
