package targetfile

import (
	"fmt"
	"slices"
)

// Warning is something a valid target file says that would make a guarantee
// judge the wrong thing: a query that cannot tell apart what the guarantee
// tells apart, or a limit read the wrong way round. A warning never makes a
// file invalid; `hookcert validate --strict` treats it as an error.
type Warning struct {
	// Field is the file field the warning is about
	// (target.events.effect.effects).
	Field string
	// Guarantee names the guarantees it would mislead (DEDUP-5).
	Guarantee string
	// Problem says how: what the guarantee sends and what the field makes of it.
	Problem string
	// Fix says what to change.
	Fix string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s: %s: %s Fix: %s", w.Field, w.Guarantee, w.Problem, w.Fix)
}

// Warnings returns what in t would mislead a guarantee, in a stable order:
// the queries first, then the limits.
func (t *Target) Warnings() []Warning {
	var out []Warning
	out = append(out, t.sharedObjectWarnings()...)
	out = append(out, t.scopeWarnings()...)
	out = append(out, t.bodyLimitWarnings()...)
	out = append(out, t.stateEffectWarnings()...)
	return out
}

// sharedObjectWarnings: an effects query that does not bind the event ID
// counts per object; DEDUP-5 sends two events with byte-identical bodies, so
// one object, and expects one effect each.
func (t *Target) sharedObjectWarnings() []Warning {
	q := t.Store.Queries
	if q.Effects == "" || references(q.Effects, 3) {
		return nil
	}
	ep, ok := t.firstEndpoint(func(e Endpoint) bool { return t.headerEventID(e.Profile) })
	if !ok {
		// No two events share a body or an object: per-object counting
		// tells every event sent apart.
		return nil
	}
	return []Warning{{
		Field:     q.FieldPath(QueryEffects),
		Guarantee: "DEDUP-5 (identical payloads, different IDs)",
		Problem: fmt.Sprintf("the query does not bind $3 (event ID), so it counts the effects of the event's object, not of the event. "+
			"DEDUP-5 sends two events with byte-identical bodies (one object) and different %s event IDs to %s and expects one effect "+
			"for each: counted per object, a correct receiver reads 2 for each and fails, and one that applies only the first reads 1 and passes.",
			ep.Profile, ep.Path),
		Fix: "count the effects the event caused: bind the column that records the event ID (… AND event_id = $3).",
	}}
}

// scope is a part of the event key two endpoints can differ in.
type scope struct {
	param      int    // its query parameter
	name       string // "account"
	id, title  string // the guarantee that sends one event ID to both
	columnHint string
	differ     func(a, b Endpoint) bool // the pair the guarantee needs
	value      func(Endpoint) string
}

// keyScopes are the account (DEDUP-3: two accounts of one profile) and the
// source (DEDUP-4: two profiles for one account), as the suite derives them.
var keyScopes = []scope{
	{2, "account", "DEDUP-3", "account scope", "account_id = $2",
		func(a, b Endpoint) bool { return a.Profile == b.Profile && a.Account != b.Account },
		func(e Endpoint) string { return e.Account }},
	{1, "source", "DEDUP-4", "source scope", "source = $1",
		func(a, b Endpoint) bool { return a.Profile != b.Profile && a.Account == b.Account },
		func(e Endpoint) string { return e.Source }},
}

// scopeWarnings: with two accounts (or two sources) declared, a count that
// does not bind the account ($2, or the source $1) adds up both scopes' rows.
func (t *Target) scopeWarnings() []Warning {
	var out []Warning
	q := t.Store.Queries
	for _, s := range keyScopes {
		a, b, ok := t.twoEndpoints(s.differ)
		if !ok {
			continue
		}
		for _, name := range []string{QueryEventRows, QueryEffects} {
			sql := map[string]string{QueryEventRows: q.EventRows, QueryEffects: q.Effects}[name]
			if sql == "" || references(sql, s.param) {
				continue
			}
			out = append(out, Warning{
				Field:     q.FieldPath(name),
				Guarantee: fmt.Sprintf("%s (%s)", s.id, s.title),
				Problem: fmt.Sprintf("the query does not bind $%d (%s), while the target declares the %ss %s and %s. %s sends one event ID "+
					"to both and expects 1 under each: counted across %ss, a receiver that keeps them apart reads 2 and fails, "+
					"and one that wrongly takes the second for a duplicate reads 1 and passes.",
					s.param, s.name, s.name, s.value(a), s.value(b), s.id, s.name),
				Fix: fmt.Sprintf("bind the column that records the %s (… AND %s).", s.name, s.columnHint),
			})
		}
	}
	return out
}

// bodyLimitWarnings: limits.max_body_bytes is what the provider may send. Set
// below a documented maximum (to what the receiver accepts), ACK-7 and ACK-5
// test sizes the provider never stops at, and a receiver that refuses the
// provider's larger payloads passes.
func (t *Target) bodyLimitWarnings() []Warning {
	var out []Warning
	for _, id := range t.Profiles() {
		p, err := t.LookupProfile(id)
		if err != nil {
			continue
		}
		f := p.Facts()
		if f.MaxPayload == 0 || t.MaxBodyBytes >= f.MaxPayload {
			continue
		}
		out = append(out, Warning{
			Field:     "target.limits.max_body_bytes",
			Guarantee: "ACK-7 (large legitimate bodies) and ACK-5 (oversized bodies)",
			Problem: fmt.Sprintf("it is %d bytes, but %s documents payloads up to %d bytes (%s). The field is what the provider may send, "+
				"not what the receiver accepts: ACK-7 sends a valid event 1 KiB under %d and ACK-5 one of twice that, so a receiver that "+
				"refuses %s's larger payloads passes both and the bug stays hidden.",
				t.MaxBodyBytes, f.Name, f.MaxPayload, f.MaxPayloadSource, t.MaxBodyBytes, f.Name),
			Fix: fmt.Sprintf("set limits.max_body_bytes to %d (or more) and let the certification show whether the receiver takes it.", f.MaxPayload),
		})
	}
	return out
}

// references reports whether sql uses parameter $n. A query that does not
// scan was refused by the loader already; it warns about nothing.
func references(sql string, n int) bool {
	params, err := QueryParams(sql)
	return err != nil || slices.Contains(params, n)
}

func (t *Target) headerEventID(profile string) bool {
	p, err := t.LookupProfile(profile)
	return err == nil && p.Facts().EventIDHeader != ""
}

func (t *Target) firstEndpoint(ok func(Endpoint) bool) (Endpoint, bool) {
	for _, e := range t.Endpoints {
		if ok(e) {
			return e, true
		}
	}
	return Endpoint{}, false
}

// twoEndpoints finds the first pair of endpoints, in file order, for which ok
// holds.
func (t *Target) twoEndpoints(ok func(a, b Endpoint) bool) (Endpoint, Endpoint, bool) {
	for i, a := range t.Endpoints {
		for _, b := range t.Endpoints[i+1:] {
			if ok(a, b) {
				return a, b, true
			}
		}
	}
	return Endpoint{}, Endpoint{}, false
}
