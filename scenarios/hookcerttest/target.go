package hookcerttest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Target describes the receiver under test: the Go form of a target file
// (docs/target.md). Only BaseURL, Endpoints, a database (DatabaseURL or Pool)
// and Queries.EventRows are required; every optional part left out makes the
// guarantees that need it not applicable, with the reason.
type Target struct {
	// Name names the target in reports; default: the test's name.
	Name string
	// BaseURL is the receiver's root URL (an httptest.Server's URL is fine);
	// every endpoint path is appended to it.
	BaseURL string
	// Endpoints are one per event-key scope (source, account).
	Endpoints []Endpoint

	// DatabaseURL is the receiver's database, where the harness reads its
	// state. Pool may be given instead: the harness then opens its own small
	// pools with that pool's connection settings (its sessions must carry the
	// harness's application_name, so connection-loss faults and the busy checks
	// between scenarios tell them from the receiver's) and never uses Pool
	// itself.
	DatabaseURL string
	Pool        *pgxpool.Pool
	// EventTable holds the receiver's event keys (capability lock-gating);
	// EffectTable is where it writes its business effect (connection-loss).
	// "table" or "schema.table".
	EventTable  string
	EffectTable string
	// Queries are the observer's queries ($1 source, $2 account, $3 event ID,
	// $4 object ID).
	Queries Queries
	// Timeouts bound the observer's connections and queries (zero fields: 5 s).
	Timeouts Timeouts

	// Capabilities the receiver declares: crash, lock-gating, connection-loss,
	// failpoints, ordering, state-machine, domain-constraint, retention.
	Capabilities []string
	// Vocab is the receiver's own event vocabulary (docs/target.md, "Declared
	// events"), built in Go (object templates with vocab.ParseObjectTemplate);
	// nil means the built-in conformance domain. Its queries go in Queries: the
	// effect role's effects in Queries.Effects, the lifecycle's state in
	// Queries.Payment and its effects in Queries.ObjectEffects, the ordered
	// role's state in Queries.Object.
	Vocab *vocab.Vocabulary
	// Fixtures create business objects before events about them arrive (named
	// by the vocabulary's create.fixture).
	Fixtures map[string]Fixture
	// Acceptance says whether the receiver applies events before (zero value:
	// sync, 1 s settle) or after its 2xx (Async; 5 s settle by default).
	Acceptance vocab.Acceptance
	// MaxBodyBytes is the largest body the receiver accepts (default 1 MiB).
	MaxBodyBytes int
	// FailpointsPath is where the receiver serves the failpoint protocol
	// (docs/failpoints.md), under BaseURL; "" when it does not (capability
	// failpoints needs it).
	FailpointsPath string
	// Retention is the receiver's declared retention and its purge (capability
	// retention; Queries.PayloadPresent too).
	Retention *Retention

	// Kill stops the receiver abruptly, as SIGKILL stops a process: it stops
	// accepting connections, drops the open ones and ends its database
	// sessions so that no transaction in flight commits. Restart starts it
	// again at the same BaseURL and returns once it is ready. Both are needed
	// for capability crash, which they take the place of a lifecycle for.
	Kill    func() error
	Restart func(ctx context.Context) error
	// Alive, optional, reports whether the receiver is up and, when it is not,
	// why. Without it the receiver is up unless Kill was called since the last
	// Restart and BaseURL accepts TCP connections (a receiver that crashes at a
	// failpoint by itself must then stop accepting them).
	Alive func() (ok bool, why string)
}

// Endpoint is one delivery endpoint.
type Endpoint struct {
	// Profile is the provider profile the simulator speaks (stripe, github,
	// standard-webhooks, …).
	Profile string
	// Source is the event key's source ($1); default: the profile.
	Source string
	// Account is the account scope ($2).
	Account string
	// Path is appended to Target.BaseURL; it starts with /.
	Path string
	// Secret is the signing secret in the provider's format.
	Secret string
	// KeyTTL and PayloadTTL are the endpoint's declared retention (default:
	// Target.Retention's).
	KeyTTL, PayloadTTL time.Duration
	// AckTimeout is the acknowledgement timeout ACK-2 holds the endpoint to;
	// default: the profile's documented one, else hookcert's 10 s model.
	AckTimeout time.Duration
}

// Queries are the observer's SQL queries (docs/target.md, "Queries").
type Queries struct {
	// EventRows counts the stored keys of one event; must reference $3.
	EventRows string
	// Effects counts the business effects of one event; $3 or $4.
	Effects string
	// ObjectEffects counts the effects on one object; $4 (domain-constraint).
	ObjectEffects string
	// Object returns (version[, status]) of a versioned object; $4 (ordering).
	Object string
	// Payment returns (status) of a payment; $4 (state-machine).
	Payment string
	// PayloadPresent returns (boolean): the key row still holds its payload;
	// $3 (retention).
	PayloadPresent string
	// Quiescent returns one boolean, true when no accepted work is pending; no
	// parameters (async receivers).
	Quiescent string
}

// Timeouts bound the observer (zero fields take their 5 s defaults).
type Timeouts struct {
	Connect, Statement, Lock time.Duration
}

// Fixture creates one business object. Set exactly one of SQL (run on the
// receiver's database with $1 source, $2 account, $4 object ID, $5 amount,
// $6 currency; must reference $4) and Func.
type Fixture struct {
	SQL  string
	Func func(ctx context.Context, d vocab.ObjectData) error
}

// Retention is the receiver's declared two-tier retention and its purge.
type Retention struct {
	// KeyTTL and PayloadTTL apply to endpoints that set none.
	KeyTTL, PayloadTTL time.Duration
	// Purge purges the receiver as if its clock read asOf, and returns when done.
	Purge func(ctx context.Context, asOf time.Time) error
}

// ModelAckTimeout is the acknowledgement timeout of an endpoint whose profile
// documents none and that sets no AckTimeout (hookcert's model, labelled so in
// the reports).
const ModelAckTimeout = 10 * time.Second

// Default bounds, as for a target file.
const (
	defaultMaxBodyBytes = targetfile.DefaultMaxBodyBytes
	defaultSyncSettle   = targetfile.DefaultSyncSettle
	defaultAsyncSettle  = targetfile.DefaultAsyncSettle
)

// validate checks the target as the target file loader would, and returns
// every problem at once, each naming its Go field.
func (tg *Target) validate() error {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("Target.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if u, err := url.Parse(tg.BaseURL); tg.BaseURL == "" {
		fail("BaseURL", "required (an httptest.Server's URL, say)")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fail("BaseURL", "must be an http:// or https:// URL with a host, got %q", tg.BaseURL)
	}
	if len(tg.Endpoints) == 0 {
		fail("Endpoints", "at least one endpoint is required")
	}
	paths := map[string]int{}
	scopes := map[[2]string]int{}
	for i, ep := range tg.Endpoints {
		f := func(field, format string, args ...any) {
			fail(fmt.Sprintf("Endpoints[%d].%s", i, field), format, args...)
		}
		if _, err := profiles.Lookup(ep.Profile); err != nil {
			f("Profile", "unknown profile %q (valid: %s)", ep.Profile, strings.Join(profiles.IDs(), ", "))
		}
		if ep.Account == "" || strings.ContainsAny(ep.Account, " \t\r\n") {
			f("Account", "required, without whitespace")
		}
		if strings.ContainsAny(ep.Source, " \t\r\n") {
			f("Source", "must not contain whitespace")
		}
		if !strings.HasPrefix(ep.Path, "/") {
			f("Path", "must start with / (got %q)", ep.Path)
		} else if j, dup := paths[ep.Path]; dup {
			f("Path", "duplicate of Endpoints[%d].Path", j)
		} else {
			paths[ep.Path] = i
		}
		if ep.Secret == "" {
			f("Secret", "required")
		}
		src := ep.Source
		if src == "" {
			src = ep.Profile
		}
		if j, dup := scopes[[2]string{src, ep.Account}]; dup {
			f("Account", "Endpoints[%d] has the same event-key scope (source %q, account %q): endpoints are one per scope", j, src, ep.Account)
		} else {
			scopes[[2]string{src, ep.Account}] = i
		}
		if ep.AckTimeout < 0 || ep.AckTimeout > 5*time.Minute {
			f("AckTimeout", "must be > 0 and at most 5m")
		}
		if ep.PayloadTTL > 0 && ep.KeyTTL > 0 && ep.PayloadTTL > ep.KeyTTL {
			f("PayloadTTL", "must not be longer than KeyTTL")
		}
	}
	if (tg.DatabaseURL == "") == (tg.Pool == nil) {
		fail("DatabaseURL", "set exactly one of DatabaseURL and Pool (the receiver's database)")
	}
	for _, q := range tg.Queries.list() {
		if q.sql == "" {
			if q.required {
				fail("Queries."+q.field, "required")
			}
			continue
		}
		ps, err := targetfile.QueryParams(q.sql)
		if err != nil {
			fail("Queries."+q.field, "%v", err)
			continue
		}
		if q.field == "Quiescent" {
			if len(ps) > 0 {
				fail("Queries.Quiescent", "takes no parameters")
			}
			continue
		}
		if !slices.ContainsFunc(q.needs, func(n int) bool { return slices.Contains(ps, n) }) {
			fail("Queries."+q.field, "must reference %s", paramList(q.needs))
		}
	}
	known := map[string]bool{}
	for _, c := range targetfile.Capabilities {
		known[string(c)] = true
	}
	seen := map[string]bool{}
	for i, c := range tg.Capabilities {
		switch {
		case !known[c]:
			fail(fmt.Sprintf("Capabilities[%d]", i), "unknown capability %q", c)
		case seen[c]:
			fail(fmt.Sprintf("Capabilities[%d]", i), "%q is given twice", c)
		}
		seen[c] = true
	}
	if (tg.Kill == nil) != (tg.Restart == nil) {
		fail("Kill", "Kill and Restart go together (capability crash needs both)")
	}
	// What each capability needs, as the target file loader holds it.
	for _, need := range []struct {
		capability, missing string
		ok                  bool
	}{
		{"crash", "Target.Kill and Target.Restart", tg.Kill != nil && tg.Restart != nil},
		{"lock-gating", "Target.EventTable", tg.EventTable != ""},
		{"connection-loss", "Target.EffectTable", tg.EffectTable != ""},
		{"failpoints", "Target.FailpointsPath", tg.FailpointsPath != ""},
		{"ordering", "Queries.Object", tg.Queries.Object != ""},
		{"state-machine", "Queries.Payment", tg.Queries.Payment != ""},
		{"domain-constraint", "Queries.ObjectEffects", tg.Queries.ObjectEffects != ""},
		{"deletion", "Queries.Object, and Vocab.Ordered.Delete with a declared vocabulary",
			tg.Queries.Object != "" && (tg.Vocab == nil || tg.Vocab.Ordered != nil && tg.Vocab.Ordered.Delete != nil)},
		{"retention", "Target.Retention with Purge, and Queries.PayloadPresent",
			tg.Retention != nil && tg.Retention.Purge != nil && tg.Queries.PayloadPresent != ""},
	} {
		if seen[need.capability] && !need.ok {
			fail("Capabilities", "%s needs %s", need.capability, need.missing)
		}
	}
	if tg.FailpointsPath != "" && !strings.HasPrefix(tg.FailpointsPath, "/") {
		fail("FailpointsPath", "must start with /")
	}
	if tg.MaxBodyBytes != 0 && tg.MaxBodyBytes < 1024 {
		fail("MaxBodyBytes", "must be at least 1024")
	}
	if tg.Acceptance.Settle < 0 || tg.Acceptance.Settle > targetfile.MaxSettle {
		fail("Acceptance.Settle", "must be > 0 and at most %s", targetfile.MaxSettle)
	}
	if r := tg.Retention; r != nil && r.KeyTTL > 0 && r.PayloadTTL > r.KeyTTL {
		fail("Retention.PayloadTTL", "must not be longer than KeyTTL")
	}
	for name, fx := range tg.Fixtures {
		if (fx.SQL == "") == (fx.Func == nil) {
			fail("Fixtures["+name+"]", "set exactly one of SQL and Func")
		} else if fx.SQL != "" {
			if ps, err := targetfile.FixtureParams(fx.SQL); err != nil {
				fail("Fixtures["+name+"].SQL", "%v", err)
			} else if !slices.Contains(ps, 4) {
				fail("Fixtures["+name+"].SQL", "must reference $4 (the object ID)")
			} else if slices.Contains(ps, 3) {
				fail("Fixtures["+name+"].SQL", "must not reference $3: no event exists yet")
			}
		}
	}
	errs = append(errs, tg.validateVocab()...)
	return errors.Join(errs...)
}

// validateVocab checks what a declared vocabulary needs from the rest of the
// target: its queries and fixtures.
func (tg *Target) validateVocab() []error {
	v := tg.Vocab
	if v == nil {
		return nil
	}
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("Target.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if v.Effect == nil && v.Lifecycle == nil && v.Ordered == nil && v.Unhandled == nil {
		fail("Vocab", "declare at least one of Effect, Lifecycle, Ordered, Unhandled (or leave Vocab nil for the built-in vocabulary)")
	}
	fixture := func(field, name string) {
		if _, ok := tg.Fixtures[name]; name != "" && !ok {
			fail(field, "fixture %q is not in Target.Fixtures", name)
		}
	}
	types := map[string]bool{}
	typ := func(field, t string) {
		switch {
		case t == "" || strings.ContainsAny(t, " \t\r\n"):
			fail(field, "an event type without whitespace is required")
		case types[t]:
			fail(field, "event type %q plays another role already: types are distinct across roles", t)
		}
		types[t] = true
	}
	if r := v.Effect; r != nil {
		typ("Vocab.Effect.Type", r.Type)
	}
	if l := v.Lifecycle; l != nil {
		if l.Initial == "" {
			fail("Vocab.Lifecycle.Initial", "required")
		}
		if (l.Create == nil) == (l.Fixture == "") {
			fail("Vocab.Lifecycle", "set exactly one of Create (an event creates the object) and Fixture")
		}
		if l.Create != nil {
			typ("Vocab.Lifecycle.Create.Type", l.Create.Type)
		}
		fixture("Vocab.Lifecycle.Fixture", l.Fixture)
		if len(l.Transitions) == 0 {
			fail("Vocab.Lifecycle.Transitions", "at least one transition is required")
		}
		for i, tr := range l.Transitions {
			typ(fmt.Sprintf("Vocab.Lifecycle.Transitions[%d].Type", i), tr.Type)
		}
		if tg.Queries.Payment == "" {
			fail("Queries.Payment", "required with Vocab.Lifecycle (its state query)")
		}
	}
	if o := v.Ordered; o != nil {
		typ("Vocab.Ordered.Type", o.Type)
		if o.Delete != nil {
			typ("Vocab.Ordered.Delete.Type", o.Delete.Type)
		}
		switch o.Key {
		case vocab.OrderCreated, vocab.OrderField:
		default:
			fail("Vocab.Ordered.Key", "must be %q or %q (got %q)", vocab.OrderCreated, vocab.OrderField, o.Key)
		}
		fixture("Vocab.Ordered.Fixture", o.Fixture)
		if tg.Queries.Object == "" {
			fail("Queries.Object", "required with Vocab.Ordered (its state query)")
		}
	}
	if r := v.Unhandled; r != nil {
		typ("Vocab.Unhandled.Type", r.Type)
	}
	if v.Effect != nil && tg.Queries.Effects == "" {
		fail("Queries.Effects", "required with Vocab.Effect (its effects query)")
	}
	return errs
}

type namedQuery struct {
	name, field, sql string
	required         bool
	needs            []int
}

func (q Queries) list() []namedQuery {
	return []namedQuery{
		{targetfile.QueryEventRows, "EventRows", q.EventRows, true, []int{3}},
		{targetfile.QueryEffects, "Effects", q.Effects, false, []int{3, 4}},
		{targetfile.QueryObjectEffects, "ObjectEffects", q.ObjectEffects, false, []int{4}},
		{targetfile.QueryObject, "Object", q.Object, false, []int{4}},
		{targetfile.QueryPayment, "Payment", q.Payment, false, []int{4}},
		{targetfile.QueryPayloadPresent, "PayloadPresent", q.PayloadPresent, false, []int{3}},
		{targetfile.QueryQuiescent, "Quiescent", q.Quiescent, false, nil},
	}
}

// targetQueries converts to the observer's form. From names the Go field in
// the observer's messages; a declared vocabulary's queries are marked as such,
// so the observer holds them to the stricter column rules of declared events.
func (tg *Target) targetQueries() targetfile.Queries {
	q := tg.Queries
	out := targetfile.Queries{EventRows: q.EventRows, Effects: q.Effects, ObjectEffects: q.ObjectEffects, Object: q.Object,
		Payment: q.Payment, PayloadPresent: q.PayloadPresent, Quiescent: q.Quiescent, From: map[string]string{}}
	declared := map[string]string{}
	if v := tg.Vocab; v != nil {
		if v.Effect != nil {
			declared[targetfile.QueryEffects] = "target.events.effect.effects"
		}
		if v.Lifecycle != nil {
			declared[targetfile.QueryPayment] = "target.events.lifecycle.state"
			declared[targetfile.QueryObjectEffects] = "target.events.lifecycle.effects"
		}
		if v.Ordered != nil {
			declared[targetfile.QueryObject] = "target.events.ordered.state"
		}
	}
	for _, nq := range q.list() {
		from := "Target.Queries." + nq.field
		if d := declared[nq.name]; d != "" {
			from = d + " (" + from + ")"
		}
		out.From[nq.name] = from
	}
	return out
}

// vocabulary is the declared vocabulary as the suite takes it: marked
// declared, and the lifecycle counting effects exactly when its effects query
// is given. The caller's value is not changed.
func (tg *Target) vocabulary() *vocab.Vocabulary {
	if tg.Vocab == nil {
		return nil
	}
	v := *tg.Vocab
	v.Declared = true
	if v.Lifecycle != nil {
		l := *v.Lifecycle
		l.CountsEffects = tg.Queries.ObjectEffects != ""
		if l.Object == "" {
			l.Object = "object"
		}
		if l.Missing == "" {
			l.Missing = vocab.MissingRetry
		}
		v.Lifecycle = &l
	}
	return &v
}

// acceptance applies the target file's defaults.
func (tg *Target) acceptance() vocab.Acceptance {
	a := tg.Acceptance
	if a.Settle == 0 {
		a.Settle = defaultSyncSettle
		if a.Async {
			a.Settle = defaultAsyncSettle
		}
	}
	return a
}

func (tg *Target) has(c string) bool { return slices.Contains(tg.Capabilities, c) }

func paramList(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprintf("$%d", n))
	}
	return strings.Join(s, " or ")
}
