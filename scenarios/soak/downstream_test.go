package soak

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reports"
)

// aimSoak soaks env for 3s under n, at a rate its two worker processes keep
// up with, and judges it.
func aimSoak(ctx context.Context, t *testing.T, env *scenarioEnv, n Nemesis, seed int64) (*Result, *reports.Soak) {
	t.Helper()
	res, err := Run(ctx, env.env, env.hooks, Options{Duration: 3 * time.Second, Concurrency: 4, Rate: 60,
		Nemesis: []Nemesis{n}, Seed: seed, SettleBound: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res, Judge(res.History, res.TrafficNS)
}

func faultsOf(res *Result, aim string) (n, hits int, details []string) {
	for _, f := range res.Faults {
		if strings.HasPrefix(f.Aim, aim) && f.Error == "" {
			n++
			if f.Hit {
				hits++
			}
		}
		details = append(details, f.Kind+" "+f.Aim+": "+f.Detail+" "+f.Error)
	}
	return n, hits, details
}

// kill@downstream strikes right after the sink applied a call whose answer
// it withholds: a receiver that resends with its stable operation key is
// applied once downstream; one that sends each attempt under a new key is
// applied twice, and the soak counts the event duplicated, naming it with
// its downstream calls.
func TestKillAtDownstream(t *testing.T) {
	if testing.Short() {
		t.Skip("soaks for seconds against PostgreSQL and worker processes")
	}
	for _, tc := range []struct {
		name   string
		defect string
	}{{"clean", ""}, {"fresh-idempotency-key", reference.DefectFreshIdempotencyKey}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var defects []string
			if tc.defect != "" {
				defects = []string{tc.defect}
			}
			env := newScenarioEnv(ctx, t, 2, defects...)
			res, s := aimSoak(ctx, t, env, Nemesis{Kind: KindKill, Aim: AimDownstream, Every: time.Second}, 5)
			n, hits, details := faultsOf(res, "downstream: call")
			t.Logf("%d acknowledged, %d lost, %d duplicated %v; faults:\n%s", s.Acknowledged, s.Lost, s.Duplicated, s.DuplicatedKeys, strings.Join(details, "\n"))
			if n == 0 || hits == 0 {
				t.Fatalf("kill@downstream never struck after a downstream call:\n%s", strings.Join(details, "\n"))
			}
			if len(res.History.Sink) == 0 {
				t.Errorf("no downstream call in the history")
			}
			if tc.defect == "" {
				if !s.Passed || s.Lost != 0 || s.Duplicated != 0 {
					t.Fatalf("clean reference: %+v\n%s", s, strings.Join(details, "\n"))
				}
				return
			}
			if s.Duplicated == 0 || s.Passed {
				t.Fatalf("%s escaped: %+v\n%s", tc.defect, s, strings.Join(details, "\n"))
			}
			if !strings.Contains(s.DuplicatedKeys[0], "downstream: applied 2 times") {
				t.Errorf("evidence %q names no downstream calls", s.DuplicatedKeys[0])
			}
		})
	}
}

// kill@commit with two worker processes kills the one holding the stopped
// claim and leaves it down: the other re-offers the claim after the lease
// (the clean reference passes), or, where claims are re-offered only when a
// process starts, the event stays claimed and the final read finds it
// acknowledged and never applied, its inbox state named.
func TestKillAtCommitLeavesHolderDown(t *testing.T) {
	if testing.Short() {
		t.Skip("soaks for seconds against PostgreSQL and worker processes")
	}
	for _, tc := range []struct {
		name   string
		defect string
	}{{"clean", ""}, {"requeue-on-boot", reference.DefectRequeueOnBoot}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var defects []string
			if tc.defect != "" {
				defects = []string{tc.defect}
			}
			env := newScenarioEnv(ctx, t, 2, defects...)
			res, s := aimSoak(ctx, t, env, Nemesis{Kind: KindKill, Aim: AimCommit, Every: 800 * time.Millisecond}, 7)
			_, _, details := faultsOf(res, "commit")
			t.Logf("%d acknowledged, %d lost %v, %d duplicated; settle %+v; faults:\n%s", s.Acknowledged, s.Lost, s.LostKeys, s.Duplicated, res.Settle, strings.Join(details, "\n"))
			if !strings.Contains(strings.Join(details, "\n"), "left down while the other 1 worker process(es) run") {
				t.Fatalf("no worker process was left down:\n%s", strings.Join(details, "\n"))
			}
			if ok, why := env.hooks.Controller.Alive(); !ok {
				t.Errorf("after the soak: %s", why)
			}
			if tc.defect == "" {
				if !s.Passed || s.Lost != 0 || s.Duplicated != 0 || !res.Settle.Quiescent {
					t.Fatalf("clean reference: %+v, settle %+v\n%s", s, res.Settle, strings.Join(details, "\n"))
				}
				return
			}
			if s.Lost == 0 || s.Passed {
				t.Fatalf("%s escaped: %+v\n%s", tc.defect, s, strings.Join(details, "\n"))
			}
			if !strings.Contains(s.LostKeys[0], "(inbox: processing") {
				t.Errorf("evidence %q names no inbox state", s.LostKeys[0])
			}
		})
	}
}
