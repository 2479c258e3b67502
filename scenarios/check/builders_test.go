package check_test

// Builders for the checker tests: small hand-written histories, shaped as the
// scenarios record them, and the edits that break them one thing at a time.
//
// Every name the history format carries (roles, phases, queries, facts, event
// types, inbox states) is written here as the literal string a history holds,
// not as the scenarios package's constant: these tests pin the format, so a
// rename of a constant that changed a recorded string would fail them.

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Event types of the built-in domain.
const (
	typeCredit    = "customer_cash_balance_transaction.created" // the effect role
	typeCreated   = "payment_intent.created"                    // the lifecycle's creating event
	typeSucceeded = "payment_intent.succeeded"                  // pending → succeeded, an effect
	typeRefunded  = "charge.refunded"                           // succeeded → refunded, an effect
	typeUpdated   = "customer.subscription.updated"             // ordered updates
	typeDeleted   = "customer.subscription.deleted"             // the ordered deletion
	typeUnhandled = "hookcert.conformance.unhandled"
)

// builtinHandled is the "handled_types" fact every scenario's reconciliation
// records for the built-in domain.
const builtinHandled = "charge.refunded customer.subscription.deleted customer.subscription.updated customer_cash_balance_transaction.created payment_intent.created payment_intent.succeeded"

// scenarioNames are the names scenarios record ("<ID> <text>").
var scenarioNames = map[string]string{
	"DEDUP-1":     "concurrent copies converge on one row and one effect, all acknowledged",
	"DEDUP-2":     "a redelivery after a lost acknowledgement changes nothing",
	"DEDUP-3":     "the same event ID under another account is a different event",
	"DEDUP-4":     "the same event ID from another source is a different event",
	"DEDUP-5":     "different event IDs with identical payload text are both applied",
	"DEDUP-6":     "two event IDs for one business operation apply one effect",
	"ATOMIC-1":    "a crash before commit leaves nothing, and the redelivery applies once",
	"ATOMIC-2":    "a failed precondition rolls back the key and is retried successfully",
	"ATOMIC-3":    "a lost database connection mid-transaction leaves nothing partial",
	"ATOMIC-4":    "a crash after commit, before the answer, makes the redelivery harmless",
	"ATOMIC-5":    "an event for an object that does not exist yet is never acknowledged and lost",
	"ACK-1":       "every acknowledged event survives a kill right after its 2xx",
	"ACK-2":       "every delivery is acknowledged within the profile's timeout under 64 concurrent deliveries",
	"ACK-3":       "a bad signature gets a 4xx and leaves nothing",
	"ACK-4":       "a stale signed timestamp gets a 4xx and leaves nothing",
	"ACK-5":       "malformed JSON, a missing event ID or an oversized body gets a 4xx and leaves nothing",
	"ACK-6":       "a valid event of an unhandled type is acknowledged and changes nothing",
	"ACK-7":       "a legitimate body just under the size limit is acknowledged and applied",
	"ACK-8":       "the provider's handshake is answered within its deadline, bad ones refused",
	"ACK-9":       "a delivery with any signed input changed after signing gets a 4xx and leaves nothing",
	"DEDUP-8":     "two event IDs that differ in one byte are two events",
	"ORDER-1":     "an older update arriving late does not regress the object",
	"ORDER-2":     "a shuffled, duplicated stream ends at the newest version",
	"ORDER-3":     "a forbidden state transition is refused",
	"ORDER-4":     "a deleted object is not brought back by a stale update",
	"ORDER-5":     "an update with a key equal to the object's is not acknowledged and dropped",
	"ORDER-6":     "a stale update does not rewrite the object's child rows",
	"RETENTION-1": "the declared key TTL covers the provider's redelivery horizon",
	"RETENTION-2": "a replay inside the key TTL is still a duplicate after a purge",
	"RETENTION-3": "past the payload TTL the payload is gone and the key remains",
	"RETENTION-4": "past the key TTL the key is gone; the measured replay-protection window is reported",
	"RETENTION-5": "the store's expiry on an event key outlasts the provider's redelivery horizon",
	"INBOX-1":     "an acknowledged event survives a crash before its worker ran, and is applied once",
	"INBOX-2":     "competing workers apply each accepted event exactly once",
	"INBOX-3":     "a worker killed inside its transaction leaves the event to be claimed again after its lease, and applied once",
	"INBOX-4":     "an event dispatched again after its worker died mid-apply is applied only once",
	"INBOX-5":     "a transient failure is retried, with the attempt recorded",
	"INBOX-6":     "an event that keeps failing is dead-lettered, kept and visible, not lost",
	"INBOX-7":     "a purge never removes accepted work that is not done",
	"OUTBOX-1":    "a downstream call whose response was lost is sent again with the same operation key, and applied once",
	"OUTBOX-2":    "a crash after the downstream call, before it was recorded, resends it with the same operation key, applied once",
	"OUTBOX-3":    "no downstream call is made for an event whose transaction rolled back",
	"OUTBOX-4":    "downstream failures are retried, then dead-lettered and kept, never dropped",
}

// The endpoint most histories deliver to.
const (
	source  = "stripe"
	account = "acct_A"
)

// key is the event key of id on the default endpoint.
func key(id string) profiles.Key { return profiles.Key{Source: source, Account: account, EventID: id} }

// keyString renders a key as the "expired" fact lists it.
func keyString(k profiles.Key) string {
	return fmt.Sprintf("(%s, %s, %s)", k.Source, k.Account, k.EventID)
}

// objectOf is the business object an effect event of k carries (its effects
// read names it as the fourth parameter).
func objectOf(k profiles.Key) string { return "cbtxn_" + k.EventID }

// ---- building a clean history ----

// rec is one scenario's share of a history under construction. Its clock
// advances a microsecond per entry, so attempts, reads and downstream calls
// are stamped in the order they are written.
type rec struct {
	h     *history.History
	clock int64
}

// scenario starts the history of one ran scenario of guarantee (index 1), with
// the facts every reconciliation records for the built-in domain.
func scenario(guarantee string) *rec {
	return &rec{h: &history.History{
		Meta: history.Meta{RunID: "checker-test", Seed: 1},
		Scenarios: []history.Scenario{{
			Index: 1, Guarantee: guarantee, Name: guarantee + " " + scenarioNames[guarantee], State: history.ScenarioRan,
			Facts: map[string]string{"handled_types": builtinHandled, "effect_type": typeCredit},
		}},
		Attempts: []history.Attempt{},
		Releases: []history.Release{},
	}}
}

func (r *rec) tick() int64 {
	r.clock += 1000
	return r.clock
}

// done returns the history.
func (r *rec) done() *history.History { return r.h }

// fact records a fact of the scenario.
func (r *rec) fact(name, value string) *rec {
	r.h.Scenarios[0].Facts[name] = value
	return r
}

// gate records a lock gate of the scenario: racers to meet, and who it held.
func (r *rec) gate(table string, racers, atGate, behind int) *rec {
	r.h.Gates = append(r.h.Gates, history.Gate{Scenario: 1, Table: table, Racers: racers, AtGate: atGate, Behind: behind, StartNS: r.tick(), ReleasedNS: r.tick()})
	return r
}

// attemptOpt adjusts one attempt.
type attemptOpt func(*history.Attempt)

// Answers an attempt can get.
var (
	acked    = answered(history.OutcomeAcknowledged, 200)
	accepted = answered(history.OutcomeAcknowledged, 202)
)

func answered(o history.Outcome, status int) attemptOpt {
	return func(a *history.Attempt) { a.Outcome, a.Status, a.ErrorClass = o, status, "" }
}

// refused is a failure answer with status.
func refused(status int) attemptOpt { return answered(history.OutcomeFailed, status) }

// noAnswer is a request written in full whose answer never came (class: reset, timeout).
func noAnswer(class string) attemptOpt {
	return func(a *history.Attempt) { a.Outcome, a.Status, a.ErrorClass = history.OutcomeUnknown, 0, class }
}

// attemptNo sets the provider's attempt number.
func attemptNo(n int) attemptOpt { return func(a *history.Attempt) { a.Attempt = n } }

// copyNo sets the copy index within a barrier release.
func copyNo(n int) attemptOpt { return func(a *history.Attempt) { a.Copy = n } }

// faults sets the faults the attempt was sent with.
func faults(f ...string) attemptOpt { return func(a *history.Attempt) { a.Faults = f } }

// took sets how long the attempt took.
func took(d time.Duration) attemptOpt {
	return func(a *history.Attempt) { a.EndNS = a.StartNS + int64(d) }
}

// send records an attempt of role for k, acknowledged with a 200 unless opts
// say otherwise.
func (r *rec) send(role string, k profiles.Key, typ string, opts ...attemptOpt) *rec {
	at := r.tick()
	a := history.Attempt{Scenario: 1, Role: role, Key: k, EventType: typ, Step: len(r.h.Attempts), Attempt: 1,
		StartNS: at, EndNS: at + 500, Status: 200, Outcome: history.OutcomeAcknowledged}
	for _, o := range opts {
		o(&a)
	}
	r.h.Attempts = append(r.h.Attempts, a)
	return r
}

// read records one observation.
func (r *rec) read(o history.Observation) *rec {
	o.Scenario, o.AtNS = 1, r.tick()
	r.h.Observations = append(r.h.Observations, o)
	return r
}

func keyParams(k profiles.Key) []string { return []string{k.Source, k.Account, k.EventID, ""} }

func objParams(obj string) []string { return []string{source, account, "", obj} }

// rows records an event_rows read of k.
func (r *rec) rows(phase string, k profiles.Key, n int64) *rec {
	return r.read(history.Observation{Query: "event_rows", Phase: phase, Params: keyParams(k), Found: true, Count: n})
}

// effects records an effects read of k (by its event's object, as scenarios read it).
func (r *rec) effects(phase string, k profiles.Key, n int64) *rec {
	return r.read(history.Observation{Query: "effects", Phase: phase, Params: []string{k.Source, k.Account, k.EventID, objectOf(k)}, Found: true, Count: n})
}

// state records the rows and the effects of every key, n each, as a scenario's
// state read does.
func (r *rec) state(phase string, n int64, keys ...profiles.Key) *rec {
	for _, k := range keys {
		r.rows(phase, k, n)
		r.effects(phase, k, n)
	}
	return r
}

// reconciled records the reconciliation's reads of effect-event keys: one row
// and one effect each.
func (r *rec) reconciled(keys ...profiles.Key) *rec { return r.state("reconcile", 1, keys...) }

// reconciledRows records the reconciliation's reads of keys of other handled
// types (lifecycle, ordered): their rows only.
func (r *rec) reconciledRows(keys ...profiles.Key) *rec {
	for _, k := range keys {
		r.rows("reconcile", k, 1)
	}
	return r
}

// objState records a lifecycle object's state read ("" for no row).
func (r *rec) objState(phase, obj, status string) *rec {
	return r.read(history.Observation{Query: "state", Phase: phase, Params: objParams(obj), Found: status != "", Status: status})
}

// object records an ordered object's read (version 0 and status "" for no row).
func (r *rec) object(phase, obj string, version int64, status string) *rec {
	return r.read(history.Observation{Query: "object", Phase: phase, Params: objParams(obj), Found: version != 0 || status != "", Version: version, Status: status})
}

// objEffects records a read of an object's effects.
func (r *rec) objEffects(phase, obj string, n int64) *rec {
	return r.read(history.Observation{Query: "object_effects", Phase: phase, Params: objParams(obj), Found: true, Count: n})
}

// inbox records an inbox_state read of k ("" for no inbox row).
func (r *rec) inbox(phase string, k profiles.Key, state string, attempts int64) *rec {
	return r.read(history.Observation{Query: "inbox_state", Phase: phase, Params: keyParams(k), Found: state != "", Status: state, Count: attempts})
}

// outbox records an outbox_state read of k ("" for no outbox message).
func (r *rec) outbox(phase string, k profiles.Key, state string, attempts int64) *rec {
	return r.read(history.Observation{Query: "outbox_state", Phase: phase, Params: keyParams(k), Found: state != "", Status: state, Count: attempts})
}

// payload records a payload_present read of k: whether a row of the event is
// stored, and whether it still holds its payload.
func (r *rec) payload(phase string, k profiles.Key, row, present bool) *rec {
	return r.read(history.Observation{Query: "payload_present", Phase: phase, Params: keyParams(k), Found: row, Present: present})
}

// sinkRead records the read that marks the downstream calls of k so far.
func (r *rec) sinkRead(phase string, k profiles.Key, calls, applied int64) *rec {
	return r.read(history.Observation{Query: "sink_calls", Phase: phase, Params: keyParams(k), Found: true, Count: calls, Version: applied})
}

// sink records a downstream call attributed to k's event.
func (r *rec) sink(k profiles.Key, seq int, opKey string, status int, outcome string) *rec {
	r.h.Sink = append(r.h.Sink, history.Sink{Scenario: 1, EventID: k.EventID, Seq: seq, Key: opKey, Status: status, Outcome: outcome, AtNS: r.tick()})
	return r
}

// ---- breaking it ----

// edit changes one thing of a clean history.
type edit func(h *history.History)

// more appends to the history with the builders.
func more(fn func(r *rec)) edit {
	return func(h *history.History) {
		r := &rec{h: h}
		for _, a := range h.Attempts {
			r.clock = max(r.clock, a.EndNS)
		}
		for _, o := range h.Observations {
			r.clock = max(r.clock, o.AtNS)
		}
		for _, c := range h.Sink {
			r.clock = max(r.clock, c.AtNS)
		}
		fn(r)
	}
}

// attempts adjusts every attempt of role (of event id, when id is not "").
func attempts(role, id string, opts ...attemptOpt) edit {
	return func(h *history.History) {
		n := 0
		for i := range h.Attempts {
			a := &h.Attempts[i]
			if a.Role == role && (id == "" || a.Key.EventID == id) {
				n++
				for _, o := range opts {
					o(a)
				}
			}
		}
		if n == 0 {
			panic(fmt.Sprintf("edit: no attempt of role %q for %q", role, id))
		}
	}
}

// nthAttempt adjusts the i-th attempt (from 0) of role.
func nthAttempt(role string, i int, opts ...attemptOpt) edit {
	return func(h *history.History) {
		for j := range h.Attempts {
			a := &h.Attempts[j]
			if a.Role != role {
				continue
			}
			if i == 0 {
				for _, o := range opts {
					o(a)
				}
				return
			}
			i--
		}
		panic(fmt.Sprintf("edit: too few attempts of role %q", role))
	}
}

// dropRole removes every attempt of role (a role ending in ":" is a prefix).
func dropRole(role string) edit {
	return func(h *history.History) {
		h.Attempts = slices.DeleteFunc(h.Attempts, func(a history.Attempt) bool {
			return a.Role == role || strings.HasSuffix(role, ":") && strings.HasPrefix(a.Role, role)
		})
	}
}

// reads adjusts every read of query in phase about id (an event ID, or an
// object ID for object reads; "" for all).
func reads(query, phase, id string, fn func(o *history.Observation)) edit {
	return func(h *history.History) {
		n := 0
		for i := range h.Observations {
			o := &h.Observations[i]
			if o.Query == query && o.Phase == phase && (id == "" || o.Params[2] == id || o.Params[3] == id) {
				n++
				fn(o)
			}
		}
		if n == 0 {
			panic(fmt.Sprintf("edit: no %s read in phase %q about %q", query, phase, id))
		}
	}
}

// count sets the count every read of query in phase returned for id.
func count(query, phase, id string, n int64) edit {
	return reads(query, phase, id, func(o *history.Observation) { o.Count = n })
}

// keyReads adjusts every read of query in phase about key k (for keys that
// share an event ID across scopes).
func keyReads(query, phase string, k profiles.Key, fn func(o *history.Observation)) edit {
	return func(h *history.History) {
		n := 0
		for i := range h.Observations {
			o := &h.Observations[i]
			if o.Query == query && o.Phase == phase && slices.Equal(o.Params[:3], keyParams(k)[:3]) {
				n++
				fn(o)
			}
		}
		if n == 0 {
			panic(fmt.Sprintf("edit: no %s read in phase %q about %v", query, phase, k))
		}
	}
}

// keyCount sets the count every read of query in phase returned for k.
func keyCount(query, phase string, k profiles.Key, n int64) edit {
	return keyReads(query, phase, k, func(o *history.Observation) { o.Count = n })
}

// status sets the status (state) those reads returned, found.
func status(query, phase, id, s string) edit {
	return reads(query, phase, id, func(o *history.Observation) { o.Status, o.Found = s, true })
}

// noRow makes those reads return no row.
func noRow(query, phase, id string) edit {
	return reads(query, phase, id, func(o *history.Observation) {
		o.Found, o.Status, o.Count, o.Version, o.Present = false, "", 0, 0, false
	})
}

// drop removes every read of query in phase (about id, when id is not "").
func drop(query, phase, id string) edit {
	return func(h *history.History) {
		h.Observations = slices.DeleteFunc(h.Observations, func(o history.Observation) bool {
			return o.Query == query && o.Phase == phase && (id == "" || o.Params[2] == id || o.Params[3] == id)
		})
	}
}

// dropReads removes every read about event id, in any phase.
func dropReads(id string) edit {
	return func(h *history.History) {
		h.Observations = slices.DeleteFunc(h.Observations, func(o history.Observation) bool { return o.Params[2] == id })
	}
}

// setFact sets a fact; dropFact removes one.
func setFact(name, value string) edit {
	return func(h *history.History) { h.Scenarios[0].Facts[name] = value }
}

func dropFact(name string) edit {
	return func(h *history.History) { delete(h.Scenarios[0].Facts, name) }
}

// sinkCall adjusts the downstream call seq.
func sinkCall(seq int, fn func(c *history.Sink)) edit {
	return func(h *history.History) {
		for i := range h.Sink {
			if h.Sink[i].Seq == seq {
				fn(&h.Sink[i])
				return
			}
		}
		panic(fmt.Sprintf("edit: no downstream call %d", seq))
	}
}

// dropSink removes the downstream calls seqs (all of them when none is named).
func dropSink(seqs ...int) edit {
	return func(h *history.History) {
		h.Sink = slices.DeleteFunc(h.Sink, func(c history.Sink) bool { return len(seqs) == 0 || slices.Contains(seqs, c.Seq) })
	}
}

// ---- tables ----

// tcase is one history of a table: the table's clean history with edits
// applied (or, for another path of the scenario, a history of its own), and
// the verdict it must get. No codes and no reason: passed. A reason: error,
// with that text in the guarantee's reason. Codes: failed, reporting exactly
// codes and also.
type tcase struct {
	name  string
	build func() *history.History // instead of the table's clean history
	edits []edit
	// codes are the deviation codes the case proves the checker reports; also
	// those that come with them in that history.
	codes, also []string
	reason      string
	// na, when set, makes the case not applicable with that text in its
	// reason: a check it rests on could not have failed.
	na string
	// note, when set, must be in the scenario's notes.
	note string
}

// table is one guarantee's checker table (or, named, a table of behaviour
// every checker shares, judged through guarantee id).
type table struct {
	name  string
	id    string
	clean func() *history.History
	cases []tcase
	// unreconciled says why no history of the scenario can reach a
	// reconciliation code (its keys are expired on purpose), when none can.
	unreconciled string
}

// tables holds every table, for the coverage test.
var tables []*table

func register(t *table) *table {
	for _, o := range tables {
		if o.label() == t.label() {
			panic("two tables for " + t.label())
		}
	}
	tables = append(tables, t)
	return t
}

// label names the table: its guarantee, unless it has a name of its own.
func (tb *table) label() string {
	if tb.name != "" {
		return tb.name
	}
	return tb.id
}

// all lists the table's cases, its clean history first.
func (tb *table) all() []tcase {
	return append([]tcase{{name: "clean"}}, tb.cases...)
}

func (tb *table) history(c tcase) *history.History {
	b := tb.clean
	if c.build != nil {
		b = c.build
	}
	h := b()
	for _, e := range c.edits {
		e(h)
	}
	return h
}

// undocumented lists, as "<guarantee> <code>", codes a checker reports that
// its guarantee's catalogue entry does not list. Each is a finding: the
// catalogue (or the checker) should change, and then the entry goes.
var undocumented = map[string]string{}

// documented reports whether code is one guarantee id may report.
func documented(id, code string) bool {
	if slices.Contains(scenarios.ReconcileCodes, code) {
		return true
	}
	return slices.Contains(catalogued(id).Codes, code)
}

// catalogued is guarantee id's catalogue entry.
func catalogued(id string) scenarios.Guarantee {
	for _, g := range scenarios.Catalogue() {
		if g.ID == id {
			return g
		}
	}
	return scenarios.Guarantee{}
}

// judge judges h and returns its one guarantee.
func judge(t *testing.T, id string, h *history.History) reports.Guarantee {
	t.Helper()
	res, err := check.Judge(h)
	if err != nil {
		t.Fatalf("Judge: %v", err)
	}
	if len(res.Guarantees) != 1 || res.Guarantees[0].ID != id {
		t.Fatalf("judged %d guarantees (%v), want %s alone", len(res.Guarantees), res.Guarantees, id)
	}
	return res.Guarantees[0]
}

// roundTrip writes h as JSON Lines and reads it back, as `hookcert check
// --from` does.
func roundTrip(t *testing.T, h *history.History) *history.History {
	t.Helper()
	var buf bytes.Buffer
	if err := h.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := history.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func want(c tcase) []string {
	out := append(append([]string(nil), c.codes...), c.also...)
	sort.Strings(out)
	return slices.Compact(out)
}

// verify checks one case's verdict.
func (tb *table) verify(t *testing.T, c tcase) {
	t.Helper()
	h := tb.history(c)
	g := judge(t, tb.id, h)
	// The same verdict from the history read back from its file.
	if back := judge(t, tb.id, roundTrip(t, h)); back.Status != g.Status || !slices.Equal(back.Codes, g.Codes) || back.Reason != g.Reason {
		t.Errorf("after a JSON Lines round trip: %s %v %q; before: %s %v %q", back.Status, back.Codes, back.Reason, g.Status, g.Codes, g.Reason)
	}
	switch {
	case c.na != "":
		if g.Status != reports.StatusNotApplicable || !strings.Contains(g.Reason, c.na) {
			t.Fatalf("got %s %v (reason %q), want not_applicable with reason containing %q", g.Status, g.Codes, g.Reason, c.na)
		}
	case c.reason != "":
		if g.Status != reports.StatusError || !strings.Contains(g.Reason, c.reason) {
			t.Fatalf("got %s %v (reason %q), want error with reason containing %q", g.Status, g.Codes, g.Reason, c.reason)
		}
		if len(g.Codes) > 0 {
			t.Errorf("an error verdict with codes %v", g.Codes)
		}
	case len(c.codes) == 0:
		if len(c.also) > 0 {
			t.Fatalf("case %q lists codes that come along but proves none", c.name)
		}
		if g.Status != reports.StatusPassed || len(g.Codes) > 0 || len(g.Evidence) > 0 {
			t.Fatalf("got %s %v (reason %q), want passed; evidence: %q", g.Status, g.Codes, g.Reason, g.Evidence)
		}
	default:
		if g.Status != reports.StatusFailed {
			t.Fatalf("got %s %v (reason %q), want failed with %v", g.Status, g.Codes, g.Reason, want(c))
		}
		if !slices.Equal(g.Codes, want(c)) {
			t.Errorf("codes %v, want %v; evidence: %q", g.Codes, want(c), g.Evidence)
		}
		for _, code := range g.Codes {
			if !documented(tb.id, code) && undocumented[tb.id+" "+code] == "" {
				t.Errorf("%s reported %s, which its catalogue entry does not list", tb.id, code)
			}
		}
	}
	if c.note != "" {
		if notes := strings.Join(g.Scenarios[0].Notes, "\n"); !strings.Contains(notes, c.note) {
			t.Errorf("notes do not say %q:\n%s", c.note, notes)
		}
	}
}

// run runs the table: the clean history passes, each broken one gets its verdict.
func (tb *table) run(t *testing.T) {
	t.Helper()
	for _, c := range tb.all() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tb.verify(t, c)
		})
	}
}

// is lists codes.
func is(codes ...string) []string { return codes }

// do lists edits.
func do(edits ...edit) []edit { return edits }
