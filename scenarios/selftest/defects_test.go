// Package selftest holds the harness's test of itself. The suite runs against
// the clean reference receiver (everything applicable passes) and against the
// reference started with each defect: exactly the guarantees that defect breaks
// fail, each with the deviation codes of the checks that must catch it, and every
// deviation code of the catalogue is shown to fire. A second set of runs declares
// fewer capabilities, as a receiver without test hooks would, and holds the
// verdicts and not-applicable reasons it gets. The expectations live here, not in
// the harness's catalogue: the harness knows nothing of the reference's defects.
//
// TestDefects has one subtest per demo run, each judged on its own and run in
// parallel with the others (parallelRuns at once):
//
//	TestDefects/clean                        the reference, synchronous
//	TestDefects/clean-inbox                  the reference in inbox mode
//	TestDefects/clean-inbox-2-workers        inbox mode, workers in 2 processes (INBOX, OUTBOX)
//	TestDefects/clean-inbox-1-worker         inbox mode, workers in 1 process (INBOX)
//	TestDefects/<defect>                     the reference with that defect (inbox mode
//	                                         with INBOX || OUTBOX for the inbox defects)
//	TestDefects/<defect>-2-workers           an inbox defect with 2 worker processes
//	TestDefects/reduced-<target>/clean       a target declaring fewer capabilities
//	TestDefects/reduced-<target>/<defect>    the same with a defect it must still catch
//
// where <defect> is a name of `hookcert reference serve --help` and <target> is
// no-failpoints, sigkill-in-tx or nothing-declared. -run takes unanchored regular
// expressions per level: -run 'TestDefects/dedupe-by-payload' runs one demo, but
// 'TestDefects/ack-before-commit' also runs inbox-ack-before-commit and
// 'TestDefects/requeue-on-boot' its 2-workers run: anchor with ^…$ to run one.
// Each subtest logs its seed and the `hookcert demo` command that reproduces it.
// Once its subtests are done, TestDefects checks that every deviation code fired
// against some defect (only when -run left all of them to run) and logs the kill
// matrix of those that ran (go test -v).
package selftest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// parallelRuns is how many demo runs go at once (the machine has 2 cores;
// TestMain raises it where PostgreSQL has room for more connections).
var parallelRuns = 2

// breaks maps each defect to the guarantees it must make fail and, per
// guarantee, the deviation codes that must be among the evidence. Any other
// guarantee must pass. Reconciliation codes not listed may come on top.
var breaks = map[string]map[string][]string{
	"ack-before-commit": {"ACK-1": {"ack.lost"}},
	"ack-on-error": {"ATOMIC-2": {"atomic.acked-uncommitted", "reconcile.lost"}, "ATOMIC-3": {"atomic.acked-uncommitted", "reconcile.lost"},
		// The refund of a payment nobody created yet is answered 200 and dropped.
		"ATOMIC-5": {"atomic.missing-lost", "reconcile.lost"}},
	"apply-unknown-types": {"ACK-6": {"ack.unknown-type-applied"}},
	// Held at the key insert after its change committed, a cut session
	// leaves the change alone (ATOMIC-3).
	"business-first": {"DEDUP-1": {"dedup.effects"}, "ATOMIC-1": {"atomic.partial", "atomic.not-applied"}, "ATOMIC-3": {"atomic.partial"}},
	// Lock gating makes the race certain: 16 copies, 16 rows, 16 credits.
	"check-then-insert": {"DEDUP-1": {"dedup.rows", "dedup.effects", "reconcile.duplicated", "reconcile.applied-twice"},
		// ORDER-2 always sends two copies of one version inside one gated half.
		"ORDER-2": {"reconcile.duplicated"}},
	"dedupe-by-payload": {"DEDUP-5": {"dedup.rows", "dedup.effects"}},
	"duplicate-500": {"DEDUP-1": {"dedup.not-acked"}, "DEDUP-2": {"dedup.not-acked"}, "DEDUP-7": {"dedup.not-acked"}, "ATOMIC-4": {"atomic.not-acked"},
		"ORDER-2": {"order.not-acked"}, "RETENTION-1": {"retention.replay-applied"}, "RETENTION-2": {"retention.replay-applied"},
		"RETENTION-3": {"retention.replay-applied"}},
	"global-event-id":   {"DEDUP-3": {"dedup.rows", "dedup.effects"}, "DEDUP-4": {"dedup.rows", "dedup.effects"}},
	"keep-keys-forever": {"RETENTION-4": {"retention.key-kept"}},
	"keep-payloads":     {"RETENTION-3": {"retention.payload-kept"}},
	// No state machine: a refund of a pending payment is applied at once, and
	// the payment's own success then overwrites it.
	"last-write-wins": {"ORDER-1": {"order.regressed"}, "ORDER-2": {"order.regressed"}, "ORDER-3": {"order.transition-applied"},
		"ORDER-4":  {"order.resurrected"},
		"ATOMIC-2": {"atomic.acked-uncommitted", "atomic.object-state"}},
	"marker-separate-tx": {"ATOMIC-1": {"atomic.partial", "atomic.not-applied"},
		"ATOMIC-2": {"atomic.partial", "atomic.object-state"}, "ATOMIC-3": {"atomic.partial", "atomic.not-applied"},
		"ATOMIC-5": {"atomic.partial", "atomic.object-state"}},
	"memory-dedup": {"ATOMIC-4": {"atomic.not-applied"}, "ACK-1": {"ack.effects"}},
	// A window of the last 32 keys: forgotten after 100 others, and after a restart.
	"dedup-window": {"DEDUP-7": {"dedup.rows", "dedup.effects", "reconcile.duplicated", "reconcile.applied-twice"},
		"ATOMIC-4": {"atomic.not-applied"}, "ACK-1": {"ack.effects"}},
	"no-domain-constraint": {"DEDUP-6": {"dedup.object-effects"}, "ORDER-3": {"order.transition-applied"}},
	// The first refund is dropped while ORDER-3 sets up its payment: its
	// setup is the finding, never the late event (notBlamed).
	"drop-first-refund": {"ORDER-3": {"setup.unmet"}},
	// Caught only where DEDUP-6's lock gate holds both refunds past their
	// check; TestForcedRace shows it on every seed. Its run certifies the
	// DEDUP family alone (raceFilter).
	"refund-check-then-act": {"DEDUP-6": {"dedup.object-effects"}},
	"no-input-validation":   {"ACK-5": {"ack.accepted-bad-input", "ack.stored-bad-input"}},
	"no-ttl-floor":          {"RETENTION-1": {"retention.ttl-below-horizon", "retention.key-purged-early", "retention.replay-applied"}},
	"orphan-payloads":       {"RETENTION-3": {"retention.payload-kept"}, "RETENTION-4": {"retention.payload-orphaned"}},
	"purge-all": {"RETENTION-1": {"retention.key-purged-early", "retention.replay-applied"},
		"RETENTION-2": {"retention.key-purged-early", "retention.replay-applied"}, "RETENTION-3": {"retention.key-purged-early"}},
	"reject-unknown-types": {"ACK-6": {"ack.unknown-type-rejected"}},
	// Only its GitHub endpoint refuses genuine deliveries: the positive control
	// of ACK-3 catches what the rejections alone would pass.
	// Every check that runs on each endpoint sees it.
	"rotated-secret": {"ACK-3": {"ack.control-rejected"}, "ACK-6": {"ack.unknown-type-rejected"},
		"DEDUP-1": {"dedup.not-acked"}, "DEDUP-2": {"dedup.not-acked"}, "ACK-2": {"ack.timeout"},
		"ACK-5": {"ack.control-rejected"}, "ACK-7": {"ack.boundary-rejected"},
		"ACK-9": {"ack.control-rejected"}, "DEDUP-8": {"dedup.not-acked"}},
	"skip-large-bodies": {"ACK-7": {"ack.boundary-not-applied", "reconcile.lost"}},
	"short-retention": {"RETENTION-1": {"retention.key-purged-early", "retention.replay-applied"},
		"RETENTION-2": {"retention.key-purged-early", "retention.replay-applied"}, "RETENTION-3": {"retention.key-purged-early"}},
	// Nothing signed is checked: every signed input changed after signing is
	// accepted, and so is a forged handshake.
	"skip-signature": {"ACK-3": {"ack.accepted-bad-input", "ack.stored-bad-input"}, "ACK-4": {"ack.accepted-bad-input"},
		"ACK-8": {"ack.handshake-bad-accepted"},
		"ACK-9": {"ack.unsigned-body", "ack.unsigned-id", "ack.unsigned-timestamp", "ack.wrong-key-accepted",
			"ack.signature-format-accepted", "ack.signature-truncated-accepted", "ack.future-accepted"}},
	"skip-timestamp-check": {"ACK-4": {"ack.accepted-bad-input", "ack.stored-bad-input"}, "ACK-9": {"ack.future-accepted"}},
	"slow-ack":             {"ACK-2": {"ack.timeout"}},
	// The derived checks: the provider's handshake (Slack's), every signed
	// input, the event identity.
	"handshake-echo-wrong":     {"ACK-8": {"ack.handshake-wrong"}},
	"handshake-unsigned":       {"ACK-8": {"ack.handshake-bad-accepted"}},
	"handshake-as-event":       {"ACK-8": {"ack.handshake-stored"}},
	"signature-prefix-compare": {"ACK-9": {"ack.signature-truncated-accepted"}},
	"signature-any-scheme":     {"ACK-9": {"ack.signature-format-accepted"}},
	"future-timestamps":        {"ACK-9": {"ack.future-accepted"}},
	"id-truncated":             {"DEDUP-8": {"dedup.identity-truncated"}},
	"id-case-folded":           {"DEDUP-8": {"dedup.identity-case-folded"}},
}

// inboxBreaks are the expectations of the inbox and outbox defects, run against
// the reference in inbox mode with the INBOX and OUTBOX guarantees selected
// (inboxFilter): must fail as breaks says; inboxMay lists guarantees a defect
// may also fail, where whether it shows depends on which worker polls first.
var inboxBreaks = map[string]map[string][]string{
	"inbox-ack-before-commit": {"INBOX-1": {"inbox.lost"}},
	// Every idle worker picks the same pending event while the ledger is locked.
	"poll-without-claim":     {"INBOX-2": {"inbox.effects"}},
	"no-lease-expiry":        {"INBOX-3": {"inbox.stuck", "inbox.not-applied"}, "INBOX-4": {"inbox.stuck"}, "OUTBOX-3": {"outbox.not-sent"}},
	"mark-done-separate-tx":  {"INBOX-4": {"inbox.effects"}},
	"retry-without-attempts": {"INBOX-5": {"inbox.attempts-unrecorded"}, "INBOX-6": {"inbox.not-dead-lettered"}},
	"drop-dead-letters":      {"INBOX-6": {"inbox.dead-letter-lost"}},
	"purge-pending":          {"INBOX-7": {"inbox.pending-purged", "reconcile.lost"}},
	"fresh-idempotency-key": {"OUTBOX-1": {"outbox.key-changed", "outbox.applied-twice"},
		"OUTBOX-2": {"outbox.key-changed", "outbox.applied-twice"}, "OUTBOX-4": {"outbox.key-changed"}},
	// The inline call is made before the transaction's ledger insert; there is
	// no outbox message to dead-letter.
	"send-before-commit": {"OUTBOX-3": {"outbox.sent-uncommitted"}, "OUTBOX-4": {"outbox.dropped"}},
	"drop-failed-sends":  {"OUTBOX-4": {"outbox.dropped"}},
	// Right while the workers run inside the receiver: its restart after every
	// crash re-offers the claims. splitBreaks shows what catches it.
	"requeue-on-boot": {},
}

// splitBreaks are the inbox defects also run with the workers in separate
// processes (demo --worker-processes), where INBOX-3 kills the worker process
// holding the claim and INBOX-4 all of them, the receiver left running, and
// what they must break there.
var splitBreaks = map[string]map[string][]string{
	// INBOX-3 kills only the worker process holding the claim; INBOX-4 kills
	// them all, and their restart requeues.
	"requeue-on-boot": {"INBOX-3": {"inbox.stuck", "inbox.not-applied"}},
}

// splitProcs is how many worker processes the split runs start.
const splitProcs = 2

var inboxMay = map[string][]string{
	"poll-without-claim": {"INBOX-1", "INBOX-3", "INBOX-4", "INBOX-5", "INBOX-6", "INBOX-7", "OUTBOX-1", "OUTBOX-2", "OUTBOX-3", "OUTBOX-4"},
	// Claims a killed worker held are never offered again. INBOX-7 holds the
	// workers at a lock through a purge: on a loaded machine a held worker's
	// session can time out, and its claim then stays stuck, which is these
	// defects' own loss showing there.
	"no-lease-expiry": {"INBOX-1", "INBOX-7"},
	"requeue-on-boot": {"INBOX-7"},
	// Done is marked after the apply commits: a worker slow enough that its
	// lease ends in between (a loaded machine) lets another apply the event
	// again, which INBOX-2's competing workers then show.
	"mark-done-separate-tx": {"INBOX-2"},
}

// notBlamed are codes a defect's guarantee must not report: the finding is
// the defect's, and these would state the wrong reason for it.
var notBlamed = map[string]map[string][]string{
	"drop-first-refund": {"ORDER-3": {"order.transition-applied"}},
}

const inboxFilter = "INBOX || OUTBOX"

// raceFilter narrows the run of a defect whose other guarantees are those of
// the clean reference to the checks near what it breaks: a defect only a
// forced race shows, a handshake answered wrongly, a signature or an event
// ID read loosely (each touches one path of the receiver; the clean runs
// hold every other guarantee).
var raceFilter = map[string]string{
	"drop-first-refund":        "ORDER-3",
	"refund-check-then-act":    "DEDUP",
	"handshake-echo-wrong":     "ACK-8",
	"handshake-unsigned":       "ACK-8",
	"handshake-as-event":       "ACK-8",
	"signature-prefix-compare": "ACK-3 || ACK-4 || ACK-9",
	"signature-any-scheme":     "ACK-3 || ACK-4 || ACK-9",
	"future-timestamps":        "ACK-3 || ACK-4 || ACK-9",
	"id-truncated":             "DEDUP",
	"id-case-folded":           "DEDUP",
}

// syncFilter narrows a synchronous defect's run (CI time): to raceFilter's
// checks where it names some, else to the families of the guarantees the
// defect breaks. Within them every other guarantee must still pass; the
// clean runs certify the whole suite.
func syncFilter(defect string) string {
	if f, ok := raceFilter[defect]; ok {
		return f
	}
	fams := map[string]bool{}
	for id := range breaks[defect] {
		fams[id[:strings.LastIndex(id, "-")]] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(fams)), " || ")
}

// reducedTarget is a demo target that declares fewer capabilities, as a
// receiver without test hooks would: the guarantees it cannot judge and the
// reason each gets, and the defects it must still catch.
type reducedTarget struct {
	// name is its subtests' group: TestDefects/<name>/clean, …/<defect>.
	name   string
	caps   string
	na     map[string]string // guarantee → the capability its reason names
	breaks map[string]map[string][]string
}

var reduced = []reducedTarget{
	{
		// Crash by SIGKILL only, races by the barrier only, no retention hooks.
		name: "reduced-no-failpoints", caps: "crash,ordering,state-machine,domain-constraint",
		na: map[string]string{"ATOMIC-1": "failpoints", "ATOMIC-3": "connection-loss", "ATOMIC-4": "failpoints", "ORDER-4": "deletion",
			"RETENTION-1": "retention", "RETENTION-2": "retention", "RETENTION-3": "retention", "RETENTION-4": "retention"},
		// ACK-1's SIGKILL path redelivers every event after the restart.
		breaks: map[string]map[string][]string{"memory-dedup": {"ACK-1": {"ack.effects"}}},
	},
	{
		// No failpoints, as a third-party receiver: ATOMIC-1 SIGKILLs the
		// receiver while it waits inside its transaction on the locked effect table.
		name: "reduced-sigkill-in-tx", caps: "crash,lock-gating,connection-loss,ordering,state-machine,domain-constraint",
		na: map[string]string{"ATOMIC-4": "failpoints", "ORDER-4": "deletion",
			"RETENTION-1": "retention", "RETENTION-2": "retention", "RETENTION-3": "retention", "RETENTION-4": "retention"},
		// Killed with deliveries in flight, ACK-1 finds keys committed without their effect.
		breaks: map[string]map[string][]string{"marker-separate-tx": {"ATOMIC-1": {"atomic.partial"},
			"ATOMIC-2": {"atomic.partial", "atomic.object-state"}, "ATOMIC-3": {"atomic.partial"},
			"ATOMIC-5": {"atomic.partial"}, "ACK-1": {"ack.effects"}}},
	},
	{
		// Nothing declared: the harness only delivers and reads.
		name: "reduced-nothing-declared", caps: "none",
		na: map[string]string{"DEDUP-6": "domain-constraint", "ATOMIC-1": "crash", "ATOMIC-2": "state-machine", "ATOMIC-5": "state-machine",
			"ATOMIC-3": "connection-loss", "ATOMIC-4": "crash", "ACK-1": "crash", "ORDER-1": "ordering", "ORDER-2": "ordering", "ORDER-4": "ordering",
			"ORDER-3": "state-machine", "RETENTION-1": "retention", "RETENTION-2": "retention", "RETENTION-3": "retention", "RETENTION-4": "retention"},
		breaks: map[string]map[string][]string{"global-event-id": {"DEDUP-3": {"dedup.rows"}, "DEDUP-4": {"dedup.rows"}}},
	},
}

// run is one demo run of the self-test and its outcome.
type run struct {
	// group and name make its subtest: TestDefects/[group/]name.
	group, name string
	defect      string
	caps        string
	// target is the reduced target the run certifies (nil: the demo's own).
	target *reducedTarget
	// mode is the reference's design (sync when empty); filter selects guarantees.
	mode, filter string
	// procs is how many separate worker processes run (inbox mode; 0: none).
	procs int
	seed  int64
	code  int
	res   *reports.Results
	out   string
	dur   time.Duration
}

// path is the run's subtest name below TestDefects.
func (r *run) path() string {
	if r.group == "" {
		return r.name
	}
	return r.group + "/" + r.name
}

// args are the run's demo flags beyond the database, report directory and seed.
func (r *run) args() []string {
	var args []string
	if r.defect != "" {
		args = append(args, "--defect", r.defect)
	}
	if r.caps != "" {
		args = append(args, "--capabilities", r.caps)
	}
	if r.mode != "" {
		args = append(args, "--mode", r.mode)
	}
	if r.filter != "" {
		args = append(args, "--label-filter", r.filter)
	}
	if r.procs > 0 {
		args = append(args, "--worker-processes", fmt.Sprint(r.procs))
	}
	return args
}

// command is the command line that reproduces the run.
func (r *run) command() string {
	db := `"$` + pgtest.EnvURL + `"`
	if os.Getenv(pgtest.EnvURL) == "" {
		db = pgtest.DefaultURL
	}
	args := append([]string{"hookcert", "demo", "--database-url", db, "--seed", fmt.Sprint(r.seed)}, r.args()...)
	for i, a := range args {
		if strings.ContainsAny(a, " |&;<>()*?!") {
			args[i] = "'" + a + "'"
		}
	}
	return strings.Join(args, " ")
}

// defectRuns lists the self-test's runs, each with its seed (base plus its
// place in the list), and fails t for a defect without expectations or
// expectations of a defect the reference does not have.
func defectRuns(t *testing.T, base int64) []*run {
	t.Helper()
	var runs []*run
	add := func(r *run) {
		r.seed = base + int64(len(runs))
		runs = append(runs, r)
	}
	add(&run{name: "clean"})
	add(&run{name: "clean-inbox", mode: reference.ModeInbox})
	add(&run{name: fmt.Sprintf("clean-inbox-%d-workers", splitProcs), mode: reference.ModeInbox, procs: splitProcs, filter: inboxFilter})
	// One worker process: INBOX-3 kills every worker and delivers an event while none runs.
	add(&run{name: "clean-inbox-1-worker", mode: reference.ModeInbox, procs: 1, filter: "INBOX"})
	for _, d := range slices.Sorted(maps.Keys(splitBreaks)) {
		add(&run{name: fmt.Sprintf("%s-%d-workers", d, splitProcs), defect: d, mode: reference.ModeInbox, procs: splitProcs, filter: inboxFilter})
	}
	for _, d := range reference.Defects() {
		_, syncMode := breaks[d.Name]
		_, inbox := inboxBreaks[d.Name]
		switch {
		case inbox:
			add(&run{name: d.Name, defect: d.Name, mode: reference.ModeInbox, filter: inboxFilter})
		case syncMode:
			add(&run{name: d.Name, defect: d.Name, filter: syncFilter(d.Name)})
		default:
			t.Errorf("defect %s has no expectation here: no check is shown to catch it", d.Name)
		}
	}
	for _, m := range []map[string]map[string][]string{breaks, inboxBreaks, splitBreaks} {
		for d := range m {
			if !slices.ContainsFunc(reference.Defects(), func(x reference.DefectInfo) bool { return x.Name == d }) {
				t.Errorf("expectations name defect %s, which the reference does not have", d)
			}
		}
	}
	for i := range reduced {
		rd := &reduced[i]
		add(&run{group: rd.name, name: "clean", caps: rd.caps, target: rd})
		for _, d := range slices.Sorted(maps.Keys(rd.breaks)) {
			add(&run{group: rd.name, name: d, caps: rd.caps, defect: d, target: rd})
		}
	}
	return runs
}

// longRuns start first, then the other inbox-mode runs, then the rest, each in
// the order of defectRuns, so that the long runs do not start last and the
// runs end about together. They took 20 s or more on 2 cores; a name out of
// date here only changes the order.
var longRuns = []string{"no-lease-expiry", "slow-ack", "rotated-secret", "reduced-sigkill-in-tx/marker-separate-tx",
	"clean-inbox", "send-before-commit", "purge-pending", "ack-on-error"}

// startOrder is r's place in the order the runs start, i its place in defectRuns.
func startOrder(r *run, i int) int {
	if k := slices.Index(longRuns, r.path()); k >= 0 {
		return k
	}
	if r.mode == reference.ModeInbox {
		return 1000 + i
	}
	return 2000 + i
}

// slots lets runs start n at a time, in their start order: of the runs
// waiting, the first in that order starts when a slot is free, and none starts
// before every run announced has come to wait, so that the first to come
// does not start first.
type slots struct {
	mu      sync.Mutex
	cond    sync.Cond
	free    int
	due     int   // runs announced that have not come to wait yet
	waiting []int // start orders of the runs waiting
}

func newSlots(n int) *slots {
	s := &slots{free: n}
	s.cond.L = &s.mu
	return s
}

// announce says a run will come to acquire: none starts before it has.
func (s *slots) announce() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due++
}

// acquire waits for a slot for the run with the given start order; announced
// says announce was called for it.
func (s *slots) acquire(order int, announced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if announced {
		s.due--
	}
	s.waiting = append(s.waiting, order)
	s.cond.Broadcast()
	for s.due > 0 || s.free == 0 || slices.Min(s.waiting) != order {
		s.cond.Wait()
	}
	s.waiting = slices.DeleteFunc(s.waiting, func(o int) bool { return o == order })
	s.free--
	s.cond.Broadcast()
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	s.cond.Broadcast()
}

// provenByExamples are the deviation codes the reference cannot show firing
// (it keeps its state in PostgreSQL, which expires no key by itself), each
// with the example receiver test that shows it firing against a planted defect.
var provenByExamples = map[string]string{
	"retention.key-expires-early": "TestRedisExampleIsCertified (examples/redis-receiver with short-ttl)",
	"ack.unsigned-url":            "TestExampleReceiversAreCertified/multi-provider (Twilio, twilio-signature-path-only)",
	// The reference calls no provider API.
	"refetch.stale-applied":    "TestExampleReceiversAreCertified/refetch-receiver (trust-event-body, no-refetch)",
	"refetch.recreated":        "TestExampleReceiversAreCertified/refetch-receiver (trust-event-body)",
	"refetch.lost":             "TestExampleReceiversAreCertified/refetch-receiver (404-acked-lost)",
	"refetch.not-called":       "TestExampleReceiversAreCertified/refetch-receiver (no-refetch)",
	"refetch.not-acked":        "TestExampleReceiversAreCertified/refetch-receiver (404-retry-forever)",
	"order.tie-dropped":        "TestExampleReceiversAreCertified/ledgerless-receiver (same-second-drop)",
	"order.children-regressed": "TestExampleReceiversAreCertified/ledgerless-receiver (unguarded-children)",
}

// provenOnCheckers are the deviation codes no profile the reference serves
// can show firing, each with why: the checker tables
// (scenarios/check/derived_checker_test.go) and the derived checks' own
// receiver (scenarios/derive_test.go, a profile that exists only there) show
// them firing.
var provenOnCheckers = map[string]string{
	"ack.handshake-late":         "Slack's contract documents no handshake deadline",
	"ack.handshake-revalidation": "Slack does not re-validate its endpoints",
	"ack.unsigned-form":          "no profile the reference serves sends a form",
	"ack.unsigned-header":        "no profile the reference serves signs a header besides the event ID and timestamp",
	"order.tie-rule":             "the reference's updates carry no tag to tell ties apart, and no example declares ties: first-wins",
}

// notOnReference are the guarantees the reference's clean runs cannot run,
// with why and the example receiver test that runs them (and holds them to
// their declared reads through its verdicts).
var notOnReference = map[string]string{
	"RETENTION-5": "its keys are in PostgreSQL, which expires none by itself (no key_ttl query); TestRedisExampleIsCertified runs it",
	"REFETCH-1":   "it calls no provider API (no capability refetch); TestExampleReceiversAreCertified/refetch-receiver runs it",
	"REFETCH-2":   "it calls no provider API (no capability refetch); TestExampleReceiversAreCertified/refetch-receiver runs it",
	"REFETCH-3":   "it calls no provider API (no capability refetch); TestExampleReceiversAreCertified/refetch-receiver runs it",
	"ORDER-5":     "its built-in updates carry no {{.Tag}}, so two with equal keys cannot be told apart; TestExampleReceiversAreCertified/ledgerless-receiver runs it",
	"ORDER-6":     "its subscriptions have no child rows; TestExampleReceiversAreCertified/ledgerless-receiver runs it",
}

// TestDefects runs the demo once per run of defectRuns, each in its own
// parallel subtest that judges it (see the package comment for the names),
// then checks what takes them all: every deviation code fired against some
// defect.
func TestDefects(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: the self-test runs the whole suite once per defect")
	}
	// Seeds vary from run to run so timing luck cannot hide behind a fixed seed;
	// each subtest logs its own to reproduce a failure.
	base := time.Now().UnixNano() % 1_000_000
	t.Logf("self-test seeds start at %d", base)
	runs := defectRuns(t, base)
	bin := build(t)
	server := pgtest.ServerURL()

	slots := newSlots(parallelRuns)
	var (
		mu    sync.Mutex
		ran   []*run
		fired = map[string]bool{}
		// reads gathers the reads of the clean runs of both designs, between
		// which every guarantee runs, to hold them to the declared Reads.
		reads     = newReadsSeen()
		readsFrom []string
	)
	// Cleanup runs once every subtest, parallel ones included, has finished.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for c := range provenByExamples {
			if _, ok := scenarios.DeviationCodes()[c]; !ok {
				t.Errorf("provenByExamples lists %s, which is no deviation code", c)
			}
		}
		for c := range provenOnCheckers {
			if _, ok := scenarios.DeviationCodes()[c]; !ok {
				t.Errorf("provenOnCheckers lists %s, which is no deviation code", c)
			}
		}
		if len(ran) < len(runs) {
			t.Logf("%d of %d runs ran (-run narrowed them): not checking that every deviation code fires against some defect, which takes them all", len(ran), len(runs))
		} else {
			for _, c := range slices.Sorted(maps.Keys(scenarios.DeviationCodes())) {
				if by, ok := provenByExamples[c]; ok {
					t.Logf("deviation code %s is shown to fire by %s", c, by)
					continue
				}
				if why, ok := provenOnCheckers[c]; ok {
					if fired[c] {
						t.Errorf("deviation code %s fired against a defect: remove it from provenOnCheckers", c)
					}
					t.Logf("deviation code %s is shown to fire by the checker tables and scenarios/derive_test.go: %s", c, why)
					continue
				}
				if !fired[c] {
					t.Errorf("deviation code %s fired against no defect: its check is not shown to work", c)
				}
			}
		}
		if len(readsFrom) == 2 {
			reads.complete(t)
		} else {
			t.Logf("the clean runs of both designs did not both run: not checking that every declared read was made")
		}
		if len(ran) > 0 {
			t.Log("\n" + killMatrix(ran, scenarios.Catalogue()))
		}
	})
	// one is the subtest of r; announced runs are waited for before any starts.
	one := func(r *run, order int, announced bool) func(*testing.T) {
		return func(t *testing.T) {
			if announced {
				slots.announce()
			}
			t.Parallel()
			var dir string
			func() {
				slots.acquire(order, announced)
				defer slots.release()
				mu.Lock()
				ran = append(ran, r)
				mu.Unlock()
				t.Logf("seed %d: %s", r.seed, r.command())
				dir = demo(t, bin, server, r, r.args()...)
			}()
			codes := judge(t, r)
			if r.defect == "" && r.target == nil {
				h := readHistory(t, dir)
				auditRaces(t, h)
				if r.procs == 0 && r.filter == "" {
					// The reads of each design's full clean run, held to the
					// declared Reads (reads_test.go, docs/guarantees.md).
					mu.Lock()
					reads.add(t, r.name, h)
					readsFrom = append(readsFrom, r.name)
					mu.Unlock()
				}
			}
			mu.Lock()
			for _, c := range codes {
				fired[c] = true
			}
			mu.Unlock()
			if t.Failed() {
				t.Logf("failed with seed %d after %s (exit %d); to reproduce:\n  %s",
					r.seed, r.dur.Round(100*time.Millisecond), r.code, r.command())
			} else {
				t.Logf("exit %d in %s", r.code, r.dur.Round(100*time.Millisecond))
			}
		}
	}
	// The reduced targets' runs are subtests of a parallel subtest per target,
	// which starts them only once this function has returned: the runs started
	// here are announced, and none starts before they have all come to wait.
	for i, r := range runs {
		switch {
		case r.group == "":
			t.Run(r.name, one(r, startOrder(r, i), true))
		case i == 0 || runs[i-1].group != r.group:
			t.Run(r.group, func(t *testing.T) {
				t.Parallel()
				for j, g := range runs {
					if g.group == r.group {
						t.Run(g.name, one(g, startOrder(g, j), false))
					}
				}
			})
		}
	}
}

// expect is what r is judged on: the guarantees judged, those its defect must
// fail with the codes among their evidence, those not applicable with the
// capability their reason names, and those its defect may fail besides.
func (r *run) expect() (judged []scenarios.Guarantee, want map[string][]string, na map[string]string, may []string) {
	judged = scenarios.Catalogue()
	want, na = breaks[r.defect], map[string]string{}
	if r.target != nil {
		want, na = r.target.breaks[r.defect], r.target.na
	}
	if r.mode == reference.ModeInbox {
		want, may = inboxBreaks[r.defect], inboxMay[r.defect]
		if r.procs > 0 {
			// What the defect may fail under load, it may fail split too.
			want = splitBreaks[r.defect]
		}
		na = map[string]string{"ATOMIC-4": "failpoints"}
	} else {
		// A synchronous receiver has no inbox and no outbox to judge.
		na = maps.Clone(na)
		for _, g := range judged {
			if g.Family == "INBOX" {
				na[g.ID] = "inbox"
			}
			if g.Family == "OUTBOX" {
				na[g.ID] = "outbox"
			}
		}
	}
	if r.filter != "" {
		// Filters here name families or guarantees: "INBOX || OUTBOX",
		// "DEDUP", "ACK-3 || ACK-4 || ACK-9".
		names := strings.Split(r.filter, " || ")
		judged = slices.DeleteFunc(judged, func(g scenarios.Guarantee) bool {
			return !slices.Contains(names, g.Family) && !slices.Contains(names, g.ID)
		})
	}
	if r.defect == "" {
		want = nil
	}
	return judged, want, na, may
}

// judge holds one run's verdicts and exit status against its expectations and
// returns the codes that fired where its defect was expected to break a
// guarantee.
func judge(t *testing.T, r *run) (fired []string) {
	t.Helper()
	if r.res == nil {
		t.Errorf("seed %d: no results (exit %d):\n%s", r.seed, r.code, tail(r.out, 40))
		return nil
	}
	all, want, na, may := r.expect()
	got := map[string]reports.Guarantee{}
	for _, g := range r.res.Guarantees {
		got[g.ID] = g
	}
	if len(r.res.Guarantees) != len(all) {
		t.Errorf("seed %d: %d guarantees judged, want %d", r.seed, len(r.res.Guarantees), len(all))
	}
	for _, g := range all {
		rg := got[g.ID]
		codes, broken := want[g.ID]
		switch {
		case na[g.ID] != "":
			if rg.Status != reports.StatusNotApplicable || !strings.Contains(rg.Reason, na[g.ID]) {
				t.Errorf("seed %d: %s is %s (%s), want not_applicable naming %q", r.seed, g.ID, rg.Status, rg.Reason, na[g.ID])
			}
		case broken:
			if rg.Status != reports.StatusFailed {
				t.Errorf("seed %d: %s is %s (%s), but this defect breaks it: the check missed the bug", r.seed, g.ID, rg.Status, rg.Reason)
				continue
			}
			for _, c := range codes {
				if !slices.Contains(rg.Codes, c) {
					t.Errorf("seed %d: %s failed without code %s (got %v): that check missed the bug", r.seed, g.ID, c, rg.Codes)
				}
			}
			for _, c := range notBlamed[r.defect][g.ID] {
				if slices.Contains(rg.Codes, c) {
					t.Errorf("seed %d: %s reported %s (got %v): the defect's finding was blamed on the wrong event", r.seed, g.ID, c, rg.Codes)
				}
			}
			for _, c := range rg.Codes {
				if !slices.Contains(g.Codes, c) && !slices.Contains(scenarios.ReconcileCodes, c) {
					t.Errorf("seed %d: %s reported code %s, which its catalogue entry does not list", r.seed, g.ID, c)
				}
				if slices.Contains(codes, c) {
					fired = append(fired, c)
				}
			}
		case slices.Contains(may, g.ID) && rg.Status == reports.StatusFailed:
			for _, c := range rg.Codes {
				if !slices.Contains(g.Codes, c) && !slices.Contains(scenarios.ReconcileCodes, c) {
					t.Errorf("seed %d: %s reported code %s, which its catalogue entry does not list", r.seed, g.ID, c)
				}
			}
		case rg.Status == reports.StatusNotApplicable && notOnReference[g.ID] != "":
		default:
			if rg.Status != reports.StatusPassed {
				t.Errorf("seed %d: %s is %s, want passed: %s", r.seed, g.ID, rg.Status, rg.Reason)
			}
		}
	}
	wantCode := 1
	if len(want) == 0 {
		wantCode = 0
	}
	if r.code != wantCode {
		t.Errorf("seed %d: exit status %d, want %d", r.seed, r.code, wantCode)
	}
	return fired
}

func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hookcert")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/hookcert/hookcert/cmd/hookcert").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// demo runs `hookcert demo` with the run's seed and extra args, and reads its
// results.
func demo(t *testing.T, bin, server string, r *run, extra ...string) string {
	dir := t.TempDir()
	args := append([]string{"demo", "--database-url", server, "--report-dir", dir, "--seed", fmt.Sprint(r.seed)}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	r.out, r.dur = out.String(), time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
		r.out += "\n" + err.Error()
	}
	if res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON)); err == nil {
		r.res = res
	}
	return dir
}

// killMatrix prints run × guarantee: X failed, . passed, - not applicable, E error.
func killMatrix(runs []*run, all []scenarios.Guarantee) string {
	var b strings.Builder
	w := 44
	fmt.Fprintf(&b, "%-*s", w, "run \\ guarantee")
	for _, g := range all {
		fmt.Fprintf(&b, " %-8s", g.ID)
	}
	b.WriteString("  seed    wall\n")
	sorted := append([]*run(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].caps+sorted[i].defect < sorted[j].caps+sorted[j].defect })
	for _, r := range sorted {
		fmt.Fprintf(&b, "%-*s", w, r.path())
		for _, g := range all {
			mark := "?"
			if r.res != nil {
				for _, rg := range r.res.Guarantees {
					if rg.ID == g.ID {
						mark = map[reports.Status]string{reports.StatusPassed: ".", reports.StatusFailed: "X", reports.StatusError: "E", reports.StatusNotApplicable: "-"}[rg.Status]
					}
				}
			}
			fmt.Fprintf(&b, " %-8s", mark)
		}
		fmt.Fprintf(&b, "  %-6d  %s\n", r.seed, r.dur.Round(100*time.Millisecond))
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
