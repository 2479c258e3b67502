package selftest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
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
