package scenarios

import (
	"fmt"
	"time"
)

// capabilityDocs documents every capability a guarantee can need. Declared ones come
// from the target file's `capabilities`; derived ones are read off its endpoints.
var capabilityDocs = []struct{ name, doc string }{
	{"crash", "declared: the harness may SIGKILL and restart the receiver (needs `lifecycle`)"},
	{"failpoints", "declared: the receiver implements the failpoint protocol (docs/failpoints.md)"},
	{"lock-gating", "declared: the harness may lock the receiver's event table (`observe.postgres.event_table`, `observe.mysql.event_table`), or pause its Redis's writes (`observe.redis`), to force races"},
	{"connection-loss", "declared: the harness may cut the receiver's database connections while they wait at its lock (a SQL effect table, or Redis's write pause)"},
	{"ordering", "declared (built-in vocabulary): the receiver handles versioned updates (`customer.subscription.updated`) and exposes the `object` query; with `events:`, declaring `events.ordered` is enough"},
	{"state-machine", "declared (built-in vocabulary): the receiver handles the payment state machine and exposes the `payment` query; with `events:`, declaring `events.lifecycle` is enough"},
	{"domain-constraint", "declared (built-in vocabulary): the receiver credits one payment once whatever the event IDs (`object_effects` query); with `events:`, an `events.lifecycle.effects` query is enough"},
	{"deletion", "declared (built-in vocabulary): the receiver handles `customer.subscription.deleted` as an ordered update that deletes; with `events:`, declaring `events.ordered.delete` is enough"},
	{"retention", "declared: the receiver states its key and payload TTLs and offers a purge the harness can run as of a chosen time (`retention` section, `payload_present` query)"},
	{"inbox", "declared: the receiver accepts events durably, answers (acceptance.mode async) and applies them in workers; needs `inbox` with its `lease` and `state` query, (state, attempts) per event"},
	{"outbox", "declared: the receiver sends its downstream calls to the harness's sink, `{{.SinkURL}}`, with an operation key (`outbox` section)"},
	{"refetch", "declared: the receiver fetches each event's object from the harness's provider API, `{{.ProviderAPIURL}}`, with the key `provider_api` declares"},
	{"inbox-dead-letter", "derived: capability inbox and `inbox.max_attempts`"},
	{"outbox-dead-letter", "derived: capability outbox, `outbox.max_attempts` and the `outbox.state` query"},
	{"multi-account", "derived: two endpoints of one profile with different accounts"},
	{"multi-source", "derived: two endpoints of different profiles for one account"},
	{"header-event-id", "derived: an endpoint whose profile carries the event ID in a header, outside the body"},
	{"stop-in-transaction", "derived: the harness can stop the receiver inside its transaction: failpoints, or an effect table it may lock (lock-gating or connection-loss)"},
	{"signed-timestamp", "derived: an endpoint whose profile signs a timestamp"},
	{"handshake", "derived: an endpoint whose profile verifies the endpoint with a handshake (its contract's `handshake`: Slack's url_verification, Zoom's url_validation…)"},
	{"signed-inputs", "derived: an endpoint whose profile lists the inputs its signature covers (a contract profile, or a built-in described by one)"},
	{"event-identity", "derived: an endpoint whose profile lists where the event ID lives among its identity inputs, and lets the harness choose event IDs"},
	{"key-ttl", "derived: the observer answers the `key_ttl` query (a store that expires keys by itself, such as Redis)"},
}

// Has reports whether the target has a capability, declared or derived, and
// why not when it does not: what makes a guarantee needing it not applicable.
func (e *Env) Has(c Capability) (bool, string) { return e.has(c) }

// has reports whether the target has a capability, declared or derived, and why
// not when it does not.
func (e *Env) has(c Capability) (bool, string) {
	for _, from := range []func(Capability) (ok bool, why string, known bool){e.derived, e.queues, e.roles} {
		if ok, why, known := from(c); known {
			return ok, why
		}
	}
	return e.declared(c)
}

// derived are the capabilities read off the endpoints and the other
// capabilities; known is false for any other.
func (e *Env) derived(c Capability) (ok bool, why string, known bool) {
	switch c {
	case "multi-account":
		if _, _, ok := e.sameProfileTwoAccounts(); ok {
			return true, "", true
		}
		return false, "the target has no two endpoints of one profile with different accounts", true
	case "multi-source":
		if _, _, ok := e.twoProfilesOneAccount(); ok {
			return true, "", true
		}
		return false, "the target has no two endpoints of different profiles for one account", true
	case "header-event-id":
		if _, ok := e.endpointWhere(func(ep Endpoint) bool { return ep.Profile.Facts().EventIDHeader != "" }); ok {
			return true, "", true
		}
		return false, "no endpoint's profile carries the event ID in a header", true
	case "key-ttl":
		if e.Queries != nil && e.Queries(queryKeyTTL) {
			return true, "", true
		}
		if e.Unanswered != nil {
			if why := e.Unanswered(queryKeyTTL); why != "" {
				return false, "no capability key-ttl: " + why + ", so the store's expiry on a key cannot be read", true
			}
		}
		return false, fmt.Sprintf("no capability key-ttl: the %s observer answers no key_ttl query (%s.queries.key_ttl), so the store's expiry on a key cannot be read", e.kind(), e.kindField()), true
	case "signed-timestamp":
		if _, ok := e.endpointWhere(signsTimestamp); ok {
			return true, "", true
		}
		return false, "no endpoint's profile signs a timestamp", true
	case "handshake":
		if _, ok := e.endpointWhere(func(ep Endpoint) bool { _, ok := ep.handshaker(); return ok }); ok {
			return true, "", true
		}
		return false, "the endpoints' profiles (" + e.profileNames() + ") verify no endpoint with a handshake", true
	case "signed-inputs":
		if _, ok := e.endpointWhere(func(ep Endpoint) bool { return len(ep.signedInputs()) > 0 }); ok {
			return true, "", true
		}
		return false, "no endpoint's profile lists the inputs its signature covers (" + e.profileNames() + ")", true
	case "event-identity":
		if _, ok := e.endpointWhere(func(ep Endpoint) bool { _, ok := ep.identityID(); return ok }); ok {
			return true, "", true
		}
		return false, "no endpoint's profile lists where its event ID lives among its identity inputs with an ID the harness chooses (" + e.profileNames() + ")", true
	case "stop-in-transaction":
		if ok, _ := e.has("failpoints"); ok {
			return true, "", true
		}
		lock, _ := e.has("lock-gating")
		cut, _ := e.has("connection-loss")
		if e.EffectTable != "" && (lock || cut) {
			return true, "", true
		}
		if !e.holdable() {
			return false, fmt.Sprintf("no failpoints capability, and the %s observer has no lock the harness may hold to stop the receiver inside its transaction", e.kind()), true
		}
		return false, fmt.Sprintf("no failpoints capability, and no effect table (%s.effect_table) the harness may lock (lock-gating or connection-loss) to stop the receiver inside its transaction", e.kindField()), true
	}
	return false, "", false
}

// queues are the inbox and outbox capabilities, which need their declared
// sections and the run's sink as well as the declaration.
func (e *Env) queues(c Capability) (ok bool, why string, known bool) {
	switch c {
	case "inbox":
		switch {
		case !e.declares("inbox"):
			return false, "the target does not declare capability inbox", true
		case e.Queue == nil:
			return false, "capability inbox is declared but no inbox state query is configured (target.inbox.state)", true
		case !e.Acceptance.Async:
			return false, "capability inbox needs acceptance.mode async", true
		case e.Inbox.Lease <= 0:
			return false, "capability inbox needs target.inbox.lease", true
		}
		return true, "", true
	case "inbox-dead-letter":
		if ok, why := e.has("inbox"); !ok {
			return false, why, true
		}
		if e.Inbox.MaxAttempts <= 0 {
			return false, "the target declares no target.inbox.max_attempts, so when an event must be dead-lettered is unknown", true
		}
		return true, "", true
	case "outbox":
		switch {
		case !e.declares("outbox"):
			return false, "the target does not declare capability outbox", true
		case e.Sink == nil:
			return false, "capability outbox is declared but the run has no downstream sink", true
		}
		return true, "", true
	case "outbox-dead-letter":
		if ok, why := e.has("outbox"); !ok {
			return false, why, true
		}
		if e.Outbox.MaxAttempts <= 0 || !e.Outbox.HasState || e.Queue == nil {
			return false, "the target declares no target.outbox.max_attempts and target.outbox.state, so a dead letter cannot be seen", true
		}
		return true, "", true
	}
	return false, "", false
}

// roles are the capabilities a declared vocabulary says by its roles what the
// receiver handles; the built-in vocabulary leaves them to the declaration.
func (e *Env) roles(c Capability) (ok bool, why string, known bool) {
	v := e.Vocab
	if v == nil || !v.Declared {
		return false, "", false
	}
	switch c {
	case "state-machine":
		if v.Lifecycle == nil {
			return false, "the target declares no events.lifecycle", true
		}
		return true, "", true
	case "domain-constraint":
		// Any lifecycle object whose effects are counted (DEDUP-6 runs each).
		for _, l := range v.AllLifecycles() {
			if l.CountsEffects {
				return true, "", true
			}
		}
		return false, "the target declares no events.lifecycle with an effects query", true
	case "ordering":
		if v.Ordered == nil {
			return false, "the target declares no events.ordered", true
		}
		return true, "", true
	case "deletion":
		// Any ordered role with a deletion (ORDER-4 runs each).
		for _, o := range v.AllOrdered() {
			if o.Delete != nil {
				return true, "", true
			}
		}
		return false, "the target declares no events.ordered.delete", true
	}
	return false, "", false
}

// declared is a capability the target file lists, and what the run has to
// honour it.
func (e *Env) declared(c Capability) (bool, string) {
	if !e.declares(c) {
		if (c == "lock-gating" || c == "connection-loss") && !e.holdable() {
			return false, fmt.Sprintf("the %s observer cannot offer capability %s: there is no lock or connection the harness can hold in the receiver's store (PostgreSQL, MySQL and Redis observers only)", e.kind(), c)
		}
		return false, "the target does not declare capability " + c
	}
	switch {
	case c == "crash" && e.Controller == nil:
		return false, "capability crash is declared but the target has no lifecycle"
	case c == "crash" && e.CrashUnavailable != "":
		return false, "capability crash is declared but unavailable here: " + e.CrashUnavailable
	case c == "failpoints" && e.Failpoints == nil:
		return false, "capability failpoints is declared but no failpoint client is configured"
	case (c == "lock-gating" || c == "connection-loss") && e.DB == nil:
		return false, "capability " + c + " is declared but the observer offers no gate (observe.postgres, observe.mysql, observe.redis)"
	case c == "retention" && e.Retention == nil:
		return false, "capability retention is declared but no purge trigger is configured"
	}
	return true, ""
}

// declares reports whether the target file lists capability c.
func (e *Env) declares(c Capability) bool {
	for _, d := range e.Capabilities {
		if d == c {
			return true
		}
	}
	return false
}

// inboxTable is the table inbox workers claim in and mark done.
func (e *Env) inboxTable() string {
	if e.Inbox.Table != "" {
		return e.Inbox.Table
	}
	return e.EventTable
}

func signsTimestamp(ep Endpoint) bool {
	t := ep.Profile.Facts().Tolerance
	return t != nil && *t > 0
}

func (e *Env) endpointWhere(pred func(Endpoint) bool) (Endpoint, bool) {
	for _, ep := range e.Endpoints {
		if pred(ep) {
			return ep, true
		}
	}
	return Endpoint{}, false
}

func (e *Env) sameProfileTwoAccounts() (Endpoint, Endpoint, bool) {
	// Prefer two accounts of one source: then only the account differs.
	for _, sameSource := range []bool{true, false} {
		for i, a := range e.Endpoints {
			for _, b := range e.Endpoints[i+1:] {
				if a.Profile.ID() == b.Profile.ID() && a.Account != b.Account && (!sameSource || a.source() == b.source()) {
					return a, b, true
				}
			}
		}
	}
	return Endpoint{}, Endpoint{}, false
}

func (e *Env) twoProfilesOneAccount() (Endpoint, Endpoint, bool) {
	for i, a := range e.Endpoints {
		for _, b := range e.Endpoints[i+1:] {
			if a.source() != b.source() && a.Account == b.Account && eventIDCompatible(a, b) {
				return a, b, true
			}
		}
	}
	return Endpoint{}, Endpoint{}, false
}

// eventIDCompatible: both profiles let the harness choose the event ID (Adyen derives
// it from the payment, so one ID cannot be sent through both).
func eventIDCompatible(a, b Endpoint) bool {
	return a.Profile.Facts().EventIDRule == "" && b.Profile.Facts().EventIDRule == ""
}

// shortestTimeout returns the endpoint whose profile documents the shortest
// acknowledgement timeout.
func (e *Env) shortestTimeout() (Endpoint, time.Duration, bool) {
	var best Endpoint
	var bestT time.Duration
	for _, ep := range e.Endpoints {
		if t := ep.Profile.Facts().Timeout; t != nil && *t > 0 && (bestT == 0 || *t < bestT) {
			best, bestT = ep, *t
		}
	}
	return best, bestT, bestT > 0
}

// kind is the observer's kind, postgres when the run does not say (a Go
// environment built by hand).
func (e *Env) kind() string {
	if e.ObserverKind == "" {
		return "postgres"
	}
	return e.ObserverKind
}

// kindField is the target file's section of the observer.
func (e *Env) kindField() string { return "observe." + e.kind() }

// holdable reports whether the harness can hold the receiver in its store: a
// SQL database's table lock, Redis's write pause.
func (e *Env) holdable() bool {
	return e.kind() == "postgres" || e.kind() == "mysql" || e.kind() == "redis"
}
