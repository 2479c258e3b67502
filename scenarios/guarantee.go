package scenarios

import (
	"fmt"

	"github.com/hookcert/hookcert/history"
)

// Capability names a feature a target declares in its target file, or one the
// harness derives from it (capabilities.go). A guarantee that needs a
// capability the target lacks is reported not_applicable, with the reason.
type Capability = string

// Code is a deviation code: one stable way a receiver breaks a promise. Codes
// are never renamed once published: reports and CI configurations refer to them.
type Code struct {
	ID string
	// Meaning says what the receiver did, for docs/guarantees.md.
	Meaning string
}

// Guarantee is one documented promise with a stable ID, and everything that
// judges it: what it needs, the deviation codes it can report, its scenario
// (what it sends and reads) and its checker (a pure function of the history).
// A family file holds its guarantees as values (dedup.go: dedupFamily);
// catalogue.go lists the families in report order. IDs are never reused or
// renumbered once published.
type Guarantee struct {
	ID string `json:"id"`
	// Family is set from the family list the guarantee is in.
	Family string `json:"family"`
	// Title is a few words for tables; Promise is the one-sentence promise.
	Title   string `json:"title"`
	Promise string `json:"promise"`
	// Why names the failure the promise prevents.
	Why string `json:"why"`
	// Needs lists the capabilities the target must have for the check to apply.
	Needs []Capability `json:"needs,omitempty"`
	// Spec names the scenario: its Ginkgo spec text after the ID, and its name
	// in the history ("DEDUP-1 " + Spec).
	Spec string `json:"spec"`
	// Sends says which of the target's declared roles it delivers, and how;
	// Expects what it then holds the receiver to.
	Sends   string `json:"sends"`
	Expects string `json:"expects"`
	// Reads are the target's queries its scenario runs, besides the
	// reconciliation's (ReconcileReads): what a target must get right for the
	// verdict to mean what it says. The self-test holds them to what a clean
	// run of the reference actually read.
	Reads []Read `json:"reads"`
	// Codes are the IDs of the deviation codes its checker can report (from
	// codes), besides the reconciliation's, which every scenario can report.
	Codes []string `json:"codes"`
	// Race, for a guarantee whose verdict rests on deliveries (or workers)
	// meeting inside the receiver at once, names who must meet and where. Its
	// report then says whether the race was forced (held at a lock gate: the
	// history's gate lines) or left to timing, and why.
	Race string `json:"race,omitempty"`

	codes []Code
	judge binding
}

// Read is one read of the receiver's state a scenario makes: the query's
// name (in the history and the target file), the parameters the harness binds
// for it, and what the query must tell apart for the verdict to hold.
type Read struct {
	Query string `json:"query"`
	// Binds are the parameters the harness binds ($1 source, $2 account, $3
	// event ID, $4 object ID), the same for every read of one query
	// (readBinds); assemble sets them.
	Binds []int `json:"binds"`
	// Tells says what the read counts or returns, and what a query must tell
	// apart for that to be right.
	Tells string `json:"tells"`
}

// readBinds is what the harness binds for each read: an event key ($1 $2
// $3), an event with its object ($4), or an object alone. A query that
// references a parameter its read does not bind is given an empty string.
// The self-test holds this table to the parameters the history records.
var readBinds = map[string][]int{
	queryEventRows: {1, 2, 3}, queryEffects: {1, 2, 3, 4}, queryPayloadPresent: {1, 2, 3}, queryKeyTTL: {1, 2, 3},
	queryObjectEffects: {1, 2, 4}, queryObject: {1, 2, 4}, queryState: {1, 2, 4}, queryObjectChildren: {1, 2, 4},
	queryInboxState: {1, 2, 3}, queryOutboxState: {1, 2, 3}, querySinkCalls: {1, 2, 3},
}

// ReconcileReads are the reads of every scenario's reconciliation
// (reconcile.go, phase "reconcile"), once the scenario has ended, of every
// key it delivered that the receiver should have stored; QuiesceReads those
// made before a scenario starts (quiesce.go, phase "quiesce").
var (
	ReconcileReads = bound([]Read{
		{Query: queryEventRows, Tells: "every delivered key of a handled type: 1 row; an acknowledged key with none is lost, a key with 2 duplicated"},
		{Query: queryEffects, Tells: "every delivered key of the `effect` role: more than 1 is applied twice ($4 is the event's object); for an object-version receiver, 0 for an acknowledged one is lost"},
		{Query: queryObject, Tells: "object-version receivers: the object of every delivered ordered update or deletion ($4): it holds the acknowledged update's key or a newer one, or a newer acknowledged deletion removed it; else the update is lost"},
	})
	QuiesceReads = bound([]Read{
		{Query: queryEventRows, Tells: "each key of the previous scenario whose delivery ended with an unknown outcome, until it lands (bounded)"},
	})
)

// bound sets each read's Binds from readBinds; an unknown query is a
// mistake in the catalogue, refused when the package loads.
func bound(rs []Read) []Read {
	for i := range rs {
		b, ok := readBinds[rs[i].Query]
		if !ok {
			panic(fmt.Sprintf("scenarios: read of unknown query %q", rs[i].Query))
		}
		rs[i].Binds = b
	}
	return rs
}

// family is one guarantee family in report order.
type family struct {
	Name       string
	Guarantees []*Guarantee
}

// binding ties a guarantee's scenario to its checker through the facts they
// share: the scenario fills a struct, the session writes it into the history
// (facts.go), and the checker reads it back from there, typed.
type binding struct {
	run   func(s *session)
	check func(v *view)
}

// noFacts is the facts of a scenario whose checker needs none beyond the
// session's own (commonFacts).
type noFacts struct{}

// bind makes a guarantee's binding from its scenario and its checker, which
// share facts of type F.
func bind[F any](run func(s *session, f *F), check func(v *view, f *F)) binding {
	return binding{
		run: func(s *session) {
			f := new(F)
			s.mu.Lock()
			s.own = f
			s.mu.Unlock()
			run(s, f)
		},
		check: func(v *view) {
			f := new(F)
			if err := decodeFacts(v.sc.Facts, f); err != nil {
				v.fail("history: %s facts: %v", v.sc.Guarantee, err)
				return
			}
			check(v, f)
		},
	}
}

// Deviation is one way the receiver broke a promise, with its stable code.
type Deviation struct {
	Code string
	Text string
}

// Findings are what a checker made of one scenario's share of the history.
type Findings struct {
	Deviations []Deviation
	// Notes are the checker's remarks (the scenario's own are in its record).
	Notes []string
	// Unjudged says why the scenario could not be judged (something the
	// checker needs is missing from the history); "" when it was judged.
	Unjudged string
	// NotApplicable says why a scenario that found nothing wrong is still no
	// pass: a check it rests on could not have failed (effects.go).
	NotApplicable string
}

// Check judges one scenario of g that ran, from its record and its share of
// the history, and reconciles its deliveries with the rows read.
func (g Guarantee) Check(rec history.Scenario, attempts []history.Attempt, obs []history.Observation, sink []history.Sink) Findings {
	return g.CheckCalls(rec, attempts, obs, sink, nil)
}

// CheckCalls is Check with the scenario's calls to the provider API.
func (g Guarantee) CheckCalls(rec history.Scenario, attempts []history.Attempt, obs []history.Observation, sink []history.Sink, calls []history.APICall) Findings {
	v := newView(rec, attempts, obs, sink)
	v.apiCalls = calls
	if g.judge.check == nil {
		return Findings{Unjudged: "no checker for " + g.ID}
	}
	g.judge.check(v)
	reconcile(v)
	f := Findings{Deviations: v.devs, Notes: v.notes, Unjudged: v.errReason}
	if len(f.Deviations) == 0 && f.Unjudged == "" {
		f.NotApplicable = v.blindReason()
	}
	return f
}

// assemble sets every guarantee's family and code IDs, in family order, and
// refuses a catalogue whose IDs or codes clash: the catalogue is built once,
// when the package loads, from the family lists.
func assemble(fams []family) []Guarantee {
	var out []Guarantee
	ids := map[string]bool{}
	meanings := map[string]string{}
	for _, c := range reconcileCodes {
		meanings[c.ID] = c.Meaning
	}
	for _, fam := range fams {
		for _, g := range fam.Guarantees {
			if ids[g.ID] {
				panic(fmt.Sprintf("scenarios: guarantee %s is defined twice", g.ID))
			}
			ids[g.ID] = true
			g.Family = fam.Name
			g.Reads = bound(g.Reads)
			g.Codes = nil
			for _, c := range g.codes {
				if m, ok := meanings[c.ID]; ok && m != c.Meaning {
					panic(fmt.Sprintf("scenarios: deviation code %s has two meanings", c.ID))
				}
				meanings[c.ID] = c.Meaning
				g.Codes = append(g.Codes, c.ID)
			}
			out = append(out, *g)
		}
	}
	return out
}
