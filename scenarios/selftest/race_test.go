package selftest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// forcedRaceSeeds is how many seeds TestForcedRace certifies: a race left to
// timing would pass some of them.
const forcedRaceSeeds = 10

// A race only a forced check catches: the reference's refund-check-then-act
// refunds one payment twice only when two refund events meet inside it, each
// past its unlocked status check before either commits; one after the other
// the second refund is refused. DEDUP-6 holds both at a lock gate on the
// ledger — one at the lock, the other behind its row lock — so it fails on
// every seed, its report says the race was forced, and the repro command it
// prints fails again, replaying the failing run's schedule.
func TestForcedRace(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies the reference ten times")
	}
	bin := build(t)
	server := pgtest.ServerURL()
	base := time.Now().UnixNano() % 1_000_000
	t.Logf("seeds %d to %d", base, base+forcedRaceSeeds-1)
	for i := range int64(forcedRaceSeeds) {
		r := &run{seed: base + i, defect: "refund-check-then-act", filter: "DEDUP-6"}
		dir := demo(t, bin, server, r, r.args()...)
		g := forcedFailure(t, r)
		if t.Failed() {
			return
		}
		// The printed repro, as a user would paste it, against the same server.
		args := strings.Fields(g.Repro)
		if len(args) < 2 || args[0] != "hookcert" || args[1] != "repro" || !strings.Contains(g.Repro, "--from "+dir) {
			t.Fatalf("seed %d: repro command %q is not `hookcert repro … --from %s`", r.seed, g.Repro, dir)
		}
		args = append(args[1:], "--database-url", server, "--report-dir", t.TempDir())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Fatalf("seed %d: %s exited %v, want 1 (DEDUP-6 failed again)\n%s", r.seed, g.Repro, err, tail(string(out), 20))
		}
		if !strings.Contains(string(out), "schedule replayed:") || !strings.Contains(string(out), "FAIL  DEDUP-6") {
			t.Fatalf("seed %d: the repro did not replay the failing schedule and fail DEDUP-6:\n%s", r.seed, tail(string(out), 20))
		}
	}
}

// forcedFailure checks that r failed DEDUP-6 with a doubled refund, the race
// reported as forced at the ledger, and returns its verdict.
func forcedFailure(t *testing.T, r *run) reports.Guarantee {
	t.Helper()
	if r.code != 1 || r.res == nil || len(r.res.Guarantees) != 1 {
		t.Errorf("seed %d: exit %d, want 1 with DEDUP-6 alone failed\n%s", r.seed, r.code, tail(r.out, 20))
		return reports.Guarantee{}
	}
	g := r.res.Guarantees[0]
	if g.ID != "DEDUP-6" || g.Status != reports.StatusFailed || fmt.Sprint(g.Codes) != "[dedup.object-effects]" {
		t.Errorf("seed %d: %s %s %v, want DEDUP-6 failed with dedup.object-effects\n%s", r.seed, g.ID, g.Status, g.Codes, tail(r.out, 20))
	}
	if g.Race == nil || !g.Race.Forced || !strings.Contains(g.Race.How, "ledger_entries held 2 of 2") {
		t.Errorf("seed %d: race %+v, want forced at the ledger, 2 of 2 held", r.seed, g.Race)
	}
	return g
}

// concurrentNotRaces are the guarantees that send deliveries at the same time
// without resting their verdict on them meeting inside the receiver, and why.
// Every other guarantee that does must declare its race (Guarantee.Race), so
// that it is forced and reported.
var concurrentNotRaces = map[string]string{
	"ACK-1":   "rounds of events sent at once so that the kill lands among answered and unanswered ones; judged per event after the restart",
	"ACK-2":   "load against the acknowledgement timeout; judged per delivery",
	"ACK-3":   "bad deliveries and their positive controls go at once only to keep the run short; each is judged on its own",
	"ACK-4":   "deliveries either side of the tolerance go at once only to keep the run short; each is judged on its own",
	"ACK-5":   "bad deliveries and their positive controls go at once only to keep the run short; each is judged on its own",
	"ACK-6":   "unknown types and their positive controls go at once only to keep the run short; each is judged on its own",
	"ACK-7":   "bodies either side of the size limit go at once only to keep the run short; each is judged on its own",
	"ACK-9":   "deliveries with one signed input changed, and their positive controls, go at once only to keep the run short; each is judged on its own",
	"DEDUP-7": "the intervening events go in batches only to keep the run short",
	"INBOX-1": "events accepted at once while the inbox is locked, then a kill; judged per event after the restart",
	"INBOX-7": "events accepted at once and held back from their workers; judged per event after the purge",
}

// auditRaces checks, on a clean run's history, that every guarantee whose
// deliveries to one endpoint overlapped in time declares its race, or is one
// of concurrentNotRaces. (Deliveries to different endpoints are different
// providers' and accounts': they cannot race for one key or object.)
func auditRaces(t *testing.T, h *history.History) {
	t.Helper()
	for _, p := range undeclaredRaces(h) {
		t.Error(p)
	}
}

// undeclaredRaces lists auditRaces' findings.
func undeclaredRaces(h *history.History) []string {
	var out []string
	declared := map[string]bool{}
	for _, g := range scenarios.Catalogue() {
		declared[g.ID] = g.Race != ""
	}
	for _, sc := range h.Scenarios {
		if declared[sc.Guarantee] || concurrentNotRaces[sc.Guarantee] != "" {
			continue
		}
		spans := map[[2]string][][2]int64{}
		for _, a := range h.Attempts {
			if a.Scenario == sc.Index && a.EndNS > a.StartNS {
				ep := [2]string{a.Key.Source, a.Key.Account}
				spans[ep] = append(spans[ep], [2]int64{a.StartNS, a.EndNS})
			}
		}
		for ep, sp := range spans {
			if overlap(sp) {
				out = append(out, fmt.Sprintf("%s sent deliveries to %s/%s that overlapped in time but declares no race: force it (Guarantee.Race, s.race) or say in concurrentNotRaces why it is none", sc.Guarantee, ep[0], ep[1]))
				break
			}
		}
	}
	return out
}

// The audit finds overlapping deliveries to one endpoint in a guarantee that
// declares no race, and nothing in one that does, or across endpoints.
func TestAuditFindsUndeclaredRaces(t *testing.T) {
	at := func(sc int, account string, start, end int64) history.Attempt {
		return history.Attempt{Scenario: sc, Key: profiles.Key{Source: "stripe", Account: account, EventID: "e"}, StartNS: start, EndNS: end}
	}
	h := &history.History{
		Scenarios: []history.Scenario{{Index: 1, Guarantee: "DEDUP-3"}, {Index: 2, Guarantee: "DEDUP-1"}, {Index: 3, Guarantee: "DEDUP-4"}},
		Attempts: []history.Attempt{
			at(1, "acct_A", 10, 20), at(1, "acct_A", 15, 25), // DEDUP-3 declares none: found
			at(2, "acct_A", 10, 20), at(2, "acct_A", 15, 25), // DEDUP-1 declares its race
			at(3, "acct_A", 10, 20), at(3, "acct_B", 15, 25), // two endpoints: no race
		},
	}
	got := undeclaredRaces(h)
	if len(got) != 1 || !strings.HasPrefix(got[0], "DEDUP-3 ") {
		t.Fatalf("findings %q, want DEDUP-3's alone", got)
	}
}

// overlap reports whether two of the spans overlap.
func overlap(spans [][2]int64) bool {
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if spans[i][0] < spans[j][1] && spans[j][0] < spans[i][1] {
				return true
			}
		}
	}
	return false
}
