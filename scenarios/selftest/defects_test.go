// Package selftest holds the harness's test of itself. The suite runs against
// the clean reference receiver (everything applicable passes) and against the
// reference started with each defect: exactly the guarantees that defect breaks
// fail, each with the deviation codes of the checks that must catch it, and every
// deviation code of the catalogue is shown to fire. A second set of runs declares
// fewer capabilities, as a receiver without test hooks would, and holds the
// verdicts and not-applicable reasons it gets. The expectations live here, not in
// the harness's catalogue: the harness knows nothing of the reference's defects.
package selftest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
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
	"business-first":      {"DEDUP-1": {"dedup.effects"}, "ATOMIC-1": {"atomic.partial", "atomic.not-applied"}},
	// Lock gating makes the race certain: 16 copies, 16 rows, 16 credits.
	"check-then-insert": {"DEDUP-1": {"dedup.rows", "dedup.effects", "reconcile.duplicated", "reconcile.applied-twice"},
		// ORDER-2 always sends two copies of one version inside one gated half.
		"ORDER-2": {"reconcile.duplicated"}},
	"dedupe-by-payload": {"DEDUP-5": {"dedup.rows", "dedup.effects"}},
	"duplicate-500": {"DEDUP-1": {"dedup.not-acked"}, "DEDUP-2": {"dedup.not-acked"}, "ATOMIC-4": {"atomic.not-acked"},
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
	"memory-dedup":         {"ATOMIC-4": {"atomic.not-applied"}, "ACK-1": {"ack.effects"}},
	"no-domain-constraint": {"DEDUP-6": {"dedup.object-effects"}, "ORDER-3": {"order.transition-applied"}},
	"no-input-validation":  {"ACK-5": {"ack.accepted-bad-input", "ack.stored-bad-input"}},
	"no-ttl-floor":         {"RETENTION-1": {"retention.ttl-below-horizon", "retention.key-purged-early", "retention.replay-applied"}},
	"orphan-payloads":      {"RETENTION-3": {"retention.payload-kept"}, "RETENTION-4": {"retention.payload-orphaned"}},
	"purge-all": {"RETENTION-1": {"retention.key-purged-early", "retention.replay-applied"},
		"RETENTION-2": {"retention.key-purged-early", "retention.replay-applied"}, "RETENTION-3": {"retention.key-purged-early"}},
	"reject-unknown-types": {"ACK-6": {"ack.unknown-type-rejected"}},
	// Only its GitHub endpoint refuses genuine deliveries: the positive control
	// of ACK-3 catches what the rejections alone would pass.
	// Every check that runs on each endpoint sees it.
	"rotated-secret": {"ACK-3": {"ack.control-rejected"}, "ACK-6": {"ack.unknown-type-rejected"},
		"DEDUP-1": {"dedup.not-acked"}, "DEDUP-2": {"dedup.not-acked"}, "ACK-2": {"ack.timeout"},
		"ACK-5": {"ack.control-rejected"}, "ACK-7": {"ack.boundary-rejected"}},
	"skip-large-bodies": {"ACK-7": {"ack.boundary-not-applied", "reconcile.lost"}},
	"short-retention": {"RETENTION-1": {"retention.key-purged-early", "retention.replay-applied"},
		"RETENTION-2": {"retention.key-purged-early", "retention.replay-applied"}, "RETENTION-3": {"retention.key-purged-early"}},
	"skip-signature":       {"ACK-3": {"ack.accepted-bad-input", "ack.stored-bad-input"}, "ACK-4": {"ack.accepted-bad-input"}},
	"skip-timestamp-check": {"ACK-4": {"ack.accepted-bad-input", "ack.stored-bad-input"}},
	"slow-ack":             {"ACK-2": {"ack.timeout"}},
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
	// Claims a killed worker held are never offered again.
	"no-lease-expiry": {"INBOX-1"},
}

const inboxFilter = "INBOX || OUTBOX"

// reduced are demo targets that declare fewer capabilities, as a receiver
// without test hooks would: the guarantees they cannot judge and the reason
// each gets, and the defects they must still catch.
var reduced = []struct {
	name   string
	caps   string
	na     map[string]string // guarantee → the capability its reason names
	breaks map[string]map[string][]string
}{
	{
		// Crash by SIGKILL only, races by the barrier only, no retention hooks.
		name: "no failpoints, no lock gating", caps: "crash,ordering,state-machine,domain-constraint",
		na: map[string]string{"ATOMIC-1": "failpoints", "ATOMIC-3": "connection-loss", "ATOMIC-4": "failpoints", "ORDER-4": "deletion",
			"RETENTION-1": "retention", "RETENTION-2": "retention", "RETENTION-3": "retention", "RETENTION-4": "retention"},
		// ACK-1's SIGKILL path redelivers every event after the restart.
		breaks: map[string]map[string][]string{"memory-dedup": {"ACK-1": {"ack.effects"}}},
	},
	{
		// No failpoints, as a third-party receiver: ATOMIC-1 SIGKILLs the
		// receiver while it waits inside its transaction on the locked effect table.
		name: "SIGKILL inside the transaction", caps: "crash,lock-gating,connection-loss,ordering,state-machine,domain-constraint",
		na: map[string]string{"ATOMIC-4": "failpoints", "ORDER-4": "deletion",
			"RETENTION-1": "retention", "RETENTION-2": "retention", "RETENTION-3": "retention", "RETENTION-4": "retention"},
		// Killed with deliveries in flight, ACK-1 finds keys committed without their effect.
		breaks: map[string]map[string][]string{"marker-separate-tx": {"ATOMIC-1": {"atomic.partial"},
			"ATOMIC-2": {"atomic.partial", "atomic.object-state"}, "ATOMIC-3": {"atomic.partial"},
			"ATOMIC-5": {"atomic.partial"}, "ACK-1": {"ack.effects"}}},
	},
	{
		// Nothing declared: the harness only delivers and reads.
		name: "nothing declared", caps: "none",
		na: map[string]string{"DEDUP-6": "domain-constraint", "ATOMIC-1": "crash", "ATOMIC-2": "state-machine", "ATOMIC-5": "state-machine",
			"ATOMIC-3": "connection-loss", "ATOMIC-4": "crash", "ACK-1": "crash", "ORDER-1": "ordering", "ORDER-2": "ordering", "ORDER-4": "ordering",
			"ORDER-3": "state-machine", "RETENTION-1": "retention", "RETENTION-2": "retention", "RETENTION-3": "retention", "RETENTION-4": "retention"},
		breaks: map[string]map[string][]string{"global-event-id": {"DEDUP-3": {"dedup.rows"}, "DEDUP-4": {"dedup.rows"}}},
	},
}

type run struct {
	label  string
	defect string
	caps   string
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

func TestSuiteAgainstEveryDefect(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: the self-test runs the whole suite once per defect")
	}
	bin := build(t)
	server := pgtest.ServerURL()
	// Seeds vary from run to run so timing luck cannot hide behind a fixed seed;
	// each is logged with its run to reproduce a failure.
	base := time.Now().UnixNano() % 1_000_000
	t.Logf("self-test seeds start at %d", base)

	var jobs []*run
	jobs = append(jobs, &run{label: "clean reference"})
	jobs = append(jobs, &run{label: "clean reference, inbox mode", mode: reference.ModeInbox})
	jobs = append(jobs, &run{label: fmt.Sprintf("clean reference, inbox mode, %d worker processes", splitProcs), mode: reference.ModeInbox, procs: splitProcs, filter: inboxFilter})
	// One worker process: INBOX-3 kills every worker and delivers an event while none runs.
	jobs = append(jobs, &run{label: "clean reference, inbox mode, 1 worker process", mode: reference.ModeInbox, procs: 1, filter: "INBOX"})
	for d := range splitBreaks {
		jobs = append(jobs, &run{label: fmt.Sprintf("%s (inbox mode, %d worker processes)", d, splitProcs), defect: d, mode: reference.ModeInbox, procs: splitProcs, filter: inboxFilter})
	}
	for _, d := range reference.Defects() {
		_, sync := breaks[d.Name]
		_, inbox := inboxBreaks[d.Name]
		switch {
		case inbox:
			jobs = append(jobs, &run{label: d.Name + " (inbox mode)", defect: d.Name, mode: reference.ModeInbox, filter: inboxFilter})
		case sync:
			jobs = append(jobs, &run{label: d.Name, defect: d.Name})
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
	for _, r := range reduced {
		jobs = append(jobs, &run{label: r.name + " (clean)", caps: r.caps})
		for d := range r.breaks {
			jobs = append(jobs, &run{label: r.name + " + " + d, caps: r.caps, defect: d})
		}
	}
	for i, j := range jobs {
		j.seed = base + int64(i)
	}
	runAll(t, bin, server, jobs)

	all := scenarios.Catalogue()
	fired := map[string]bool{}
	for _, r := range jobs {
		if r.res == nil {
			t.Errorf("%s (seed %d): no results (exit %d):\n%s", r.label, r.seed, r.code, tail(r.out, 40))
			continue
		}
		want, na := breaks[r.defect], map[string]string{}
		for _, rd := range reduced {
			if rd.caps == r.caps {
				want, na = rd.breaks[r.defect], rd.na
			}
		}
		var may []string
		judged := all
		if r.mode == reference.ModeInbox {
			want, may = inboxBreaks[r.defect], inboxMay[r.defect]
			if r.procs > 0 {
				want, may = splitBreaks[r.defect], nil
			}
			na = map[string]string{"ATOMIC-4": "failpoints"}
			if r.filter != "" {
				// Filters here name whole families: "INBOX || OUTBOX".
				families := strings.Split(r.filter, " || ")
				judged = slices.DeleteFunc(slices.Clone(all), func(g scenarios.Guarantee) bool { return !slices.Contains(families, g.Family) })
			}
		} else {
			// A synchronous receiver has no inbox and no outbox to judge.
			na = maps.Clone(na)
			for _, g := range all {
				if g.Family == "INBOX" {
					na[g.ID] = "inbox"
				}
				if g.Family == "OUTBOX" {
					na[g.ID] = "outbox"
				}
			}
		}
		if r.defect == "" {
			want = nil
		}
		judge(t, r, judged, want, na, may, fired)
		wantCode := 1
		if len(want) == 0 {
			wantCode = 0
		}
		if r.code != wantCode {
			t.Errorf("%s (seed %d): exit status %d, want %d", r.label, r.seed, r.code, wantCode)
		}
	}
	codes := scenarios.DeviationCodes()
	for c := range codes {
		if !fired[c] {
			t.Errorf("deviation code %s fired against no defect: its check is not shown to work", c)
		}
	}
	t.Log("\n" + killMatrix(jobs, all))
}

// judge holds one run's verdicts against its expectations and records the codes
// that fired where a defect was expected to break a guarantee.
func judge(t *testing.T, r *run, all []scenarios.Guarantee, want map[string][]string, na map[string]string, may []string, fired map[string]bool) {
	t.Helper()
	got := map[string]reports.Guarantee{}
	for _, g := range r.res.Guarantees {
		got[g.ID] = g
	}
	if len(r.res.Guarantees) != len(all) {
		t.Errorf("%s (seed %d): %d guarantees judged, want %d", r.label, r.seed, len(r.res.Guarantees), len(all))
	}
	for _, g := range all {
		rg := got[g.ID]
		codes, broken := want[g.ID]
		switch {
		case na[g.ID] != "":
			if rg.Status != reports.StatusNotApplicable || !strings.Contains(rg.Reason, na[g.ID]) {
				t.Errorf("%s (seed %d): %s is %s (%s), want not_applicable naming %q", r.label, r.seed, g.ID, rg.Status, rg.Reason, na[g.ID])
			}
		case broken:
			if rg.Status != reports.StatusFailed {
				t.Errorf("%s (seed %d): %s is %s (%s), but this defect breaks it: the check missed the bug", r.label, r.seed, g.ID, rg.Status, rg.Reason)
				continue
			}
			for _, c := range codes {
				if !slices.Contains(rg.Codes, c) {
					t.Errorf("%s (seed %d): %s failed without code %s (got %v): that check missed the bug", r.label, r.seed, g.ID, c, rg.Codes)
				}
			}
			for _, c := range rg.Codes {
				if !slices.Contains(g.Codes, c) && !slices.Contains(scenarios.ReconcileCodes, c) {
					t.Errorf("%s: %s reported code %s, which its catalogue entry does not list", r.label, g.ID, c)
				}
				if slices.Contains(codes, c) {
					fired[c] = true
				}
			}
		case slices.Contains(may, g.ID) && rg.Status == reports.StatusFailed:
			for _, c := range rg.Codes {
				if !slices.Contains(g.Codes, c) && !slices.Contains(scenarios.ReconcileCodes, c) {
					t.Errorf("%s: %s reported code %s, which its catalogue entry does not list", r.label, g.ID, c)
				}
			}
		default:
			if rg.Status != reports.StatusPassed {
				t.Errorf("%s (seed %d): %s is %s, want passed: %s", r.label, r.seed, g.ID, rg.Status, rg.Reason)
			}
		}
	}
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

func runAll(t *testing.T, bin, server string, jobs []*run) {
	sem := make(chan struct{}, parallelRuns)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{}
			if j.defect != "" {
				args = append(args, "--defect", j.defect)
			}
			if j.caps != "" {
				args = append(args, "--capabilities", j.caps)
			}
			if j.mode != "" {
				args = append(args, "--mode", j.mode)
			}
			if j.filter != "" {
				args = append(args, "--label-filter", j.filter)
			}
			if j.procs > 0 {
				args = append(args, "--worker-processes", fmt.Sprint(j.procs))
			}
			demo(t, bin, server, j, args...)
		}()
	}
	wg.Wait()
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
		fmt.Fprintf(&b, "%-*s", w, r.label)
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
