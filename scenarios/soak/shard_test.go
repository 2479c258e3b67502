package soak

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"", "1", "a/2", "2/2", "-1/2", "0/0", "0/257", "1/x"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q): no error", bad)
		}
	}
	s, err := ParseShard(" 1/3 ")
	if err != nil || s.Index != 1 || s.Count != 3 || s.String() != "1/3" {
		t.Fatalf("ParseShard(1/3) = %+v, %v", s, err)
	}
	if _, err := ParseStartAt("tomorrow"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("ParseStartAt(tomorrow): %v", err)
	}
	o := Options{Duration: time.Second, Concurrency: 2, Shard: Shard{Index: 1, Count: 3, StartAt: time.Now()}}
	if err := o.Validate(Hooks{}); err == nil || !strings.Contains(err.Error(), "--concurrency") {
		t.Errorf("3 shards of 2 workers: %v", err)
	}
	o = Options{Duration: time.Second, Concurrency: 4, Shard: Shard{Index: 1, Count: 2}}
	if err := o.Validate(Hooks{}); err == nil || !strings.Contains(err.Error(), "--start-at") {
		t.Errorf("2 shards without a start time: %v", err)
	}
	// Shard 1 drops the nemesis (and so needs none of its hooks); shard 0 keeps it.
	for i, want := range []int{1, 0} {
		o = Options{Duration: time.Second, Concurrency: 4, Nemesis: []Nemesis{{Kind: KindPGTerminate, Every: time.Second}}, Shard: Shard{Index: i, Count: 2, StartAt: time.Now()}}
		err := o.Validate(Hooks{Terminate: func(context.Context) ([]int, error) { return nil, nil }})
		if err != nil || len(o.Nemesis) != want {
			t.Errorf("shard %d/2: nemesis %v, %v; want %d", i, o.Nemesis, err, want)
		}
	}
}

// The shards' workers partition the soak's, and their rates add up to its rate.
func TestShardWorkersPartition(t *testing.T) {
	for _, c := range []struct{ conc, n int }{{8, 2}, {7, 3}, {5, 5}, {64, 7}} {
		var all []int
		rate := 0.0
		for i := range c.n {
			sh := Shard{Index: i, Count: c.n}
			ws := sh.workers(c.conc)
			if len(ws) == 0 {
				t.Errorf("%d workers, shard %s runs none", c.conc, sh)
			}
			all = append(all, ws...)
			rate += sh.rate(300, c.conc)
		}
		slices.Sort(all)
		if want := (Shard{}).workers(c.conc); !slices.Equal(all, want) {
			t.Errorf("%d workers in %d shards: %v", c.conc, c.n, all)
		}
		if rate < 299.999 || rate > 300.001 {
			t.Errorf("%d workers in %d shards: rates add up to %g, want 300", c.conc, c.n, rate)
		}
	}
}

// shardHistory is a shard's hand-written history: one acknowledged attempt and
// its reads per event ID.
func shardHistory(t *testing.T, seed int64, sh ShardInfo, started time.Time, rows map[string]int64, faults ...string) *history.History {
	t.Helper()
	h := &history.History{Meta: history.Meta{RunID: "r", Seed: seed, Plan: Plan, TimeScale: 1, Started: started, Finished: started.Add(3 * time.Second)}}
	at := int64(100 * time.Millisecond)
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range rows {
			if !yield(k) {
				return
			}
		}
	}) {
		k := profiles.Key{Source: "stripe", Account: "acct_A", EventID: id}
		h.Attempts = append(h.Attempts, history.Attempt{Key: k, Role: RoleFirst, Outcome: history.OutcomeAcknowledged, StartNS: at, EndNS: at + int64(sh.Index+1)*int64(time.Millisecond)})
		params := []string{k.Source, k.Account, k.EventID, "obj"}
		h.Observations = append(h.Observations,
			history.Observation{Query: "event_rows", Params: params, Phase: PhaseSoak, Found: true, Count: rows[id], AtNS: int64(2 * time.Second)},
			history.Observation{Query: "effects", Params: params, Phase: PhaseSoak, Found: true, Count: rows[id], AtNS: int64(2 * time.Second)})
		at += int64(10 * time.Millisecond)
	}
	info := RunInfo{TrafficNS: int64(time.Second), Shard: &sh, Options: reports.SoakRun{Concurrency: 2}, Settle: reports.SoakSettle{Quiescent: true}, Repro: "soak --shard " + sh.String()}
	for _, f := range faults {
		info.Faults = append(info.Faults, reports.SoakFault{Kind: f, StartMS: 500, EndMS: 600})
	}
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	h.Meta.Run = raw
	return h
}

func TestMergeJudgesTheWhole(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	s0 := ShardInfo{Index: 0, Count: 2, StartAt: start}
	s1 := ShardInfo{Index: 1, Count: 2, StartAt: start}
	clean0 := shardHistory(t, 5, s0, start, map[string]int64{"a0": 1, "a1": 1}, "kill")
	clean1 := shardHistory(t, 5, s1, start.Add(2*time.Second), map[string]int64{"b0": 1})
	dup1 := shardHistory(t, 5, s1, start, map[string]int64{"b0": 1, "b1": 2})

	// Given in any order; shard 1's times move onto shard 0's origin.
	h, err := Merge([]*history.History{clean1, clean0})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Results(h)
	if err != nil {
		t.Fatal(err)
	}
	sk := res.Soak
	if !sk.Passed || sk.Keys != 3 || sk.Acknowledged != 3 || sk.Options.Shards != 2 || sk.Options.Concurrency != 2 {
		t.Fatalf("merged clean shards: %+v", sk)
	}
	if len(sk.Faults) != 1 || sk.Faults[0].Kind != "kill" {
		t.Errorf("faults %+v, want shard 0's kill", sk.Faults)
	}
	if sk.Latency.MaxMS != 2 || sk.Latency.P50MS != 1 {
		t.Errorf("latency %+v: percentiles come from every shard's raw samples", sk.Latency)
	}
	var b0 history.Attempt
	for _, a := range h.Attempts {
		if a.Key.EventID == "b0" {
			b0 = a
		}
	}
	if b0.StartNS != int64(2100*time.Millisecond) {
		t.Errorf("shard 1's attempt starts at %d ns of the merged soak, want 2.1 s", b0.StartNS)
	}

	// A duplicate in one shard fails the whole.
	if h, err = Merge([]*history.History{clean0, dup1}); err != nil {
		t.Fatal(err)
	}
	if res, _ = Results(h); res.Soak.Passed || res.Soak.Duplicated != 1 || res.Soak.DuplicatedKeys[0] != "(stripe, acct_A, b1)" {
		t.Errorf("merged with a duplicating shard: %+v", res.Soak)
	}

	for name, c := range map[string]struct {
		hs   []*history.History
		want string
	}{
		"missing":   {[]*history.History{clean0}, "shard 1/2 is missing"},
		"twice":     {[]*history.History{clean0, clean0}, "shard 0/2 is given twice"},
		"seed":      {[]*history.History{clean0, shardHistory(t, 6, s1, start, map[string]int64{"c": 1})}, "share their seed"},
		"start":     {[]*history.History{clean0, shardHistory(t, 5, ShardInfo{Index: 1, Count: 2, StartAt: start.Add(time.Hour)}, start, map[string]int64{"c": 1})}, "share --start-at"},
		"count":     {[]*history.History{clean0, shardHistory(t, 5, ShardInfo{Index: 1, Count: 3, StartAt: start}, start, map[string]int64{"c": 1})}, "share their count"},
		"same key":  {[]*history.History{clean0, shardHistory(t, 5, s1, start, map[string]int64{"a1": 1})}, "event (stripe, acct_A, a1) was sent by shard 0/2 and shard 1/2"},
		"unsharded": {[]*history.History{clean0, {Meta: history.Meta{Plan: Plan, Run: json.RawMessage(`{}`)}}}, "is not a shard's"},
	} {
		if _, err := Merge(c.hs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Merge error %v, want %q", name, err, c.want)
		}
	}
}

var shardTag = regexp.MustCompile(`soak(\d+)w(\d+)n[0-9a-f]{6}$`)

// Shards of one seed send exactly the events of an unsharded soak of that seed
// and total concurrency, split by worker: worker w's events, in order, are the
// same in both, and no event is in two shards. Against the reference served
// in-process, the merged shards judge as the unsharded soak does.
func TestShardsSendTheUnshardedTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("soaks for a second against PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eps, hts, pool := inProcessReference(ctx, t)
	soakOf := func(runID string, sh Shard) *history.History {
		env := &scenarios.Env{RunID: runID, TimeScale: 3600, Observer: pgObserver{pool}}
		for _, ep := range eps {
			p, err := profiles.Lookup(ep.Profile)
			if err != nil {
				t.Error(err)
				return nil
			}
			env.Endpoints = append(env.Endpoints, scenarios.Endpoint{Profile: p, Account: ep.Account, URL: hts.URL + ep.Path, Secrets: []string{ep.Secret}})
		}
		res, err := Run(ctx, env, Hooks{}, Options{Duration: time.Second, Concurrency: 4, Rate: 120, DupRate: 0.2, LostAckRate: 0.2, Seed: 9, SettleBound: 10 * time.Second, Shard: sh})
		if err != nil {
			t.Error(err)
			return nil
		}
		info := RunInfo{TrafficNS: res.TrafficNS, Faults: res.Faults, Settle: res.Settle, Shard: sh.Info()}
		res.History.Meta.Run, _ = json.Marshal(info)
		return res.History
	}
	start := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	whole := soakOf("whole", Shard{StartAt: start})
	start = time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	shards := make([]*history.History, 2)
	done := make(chan int)
	for i := range shards {
		go func() {
			shards[i] = soakOf(ShardRunID(9, start), Shard{Index: i, Count: 2, StartAt: start})
			done <- i
		}()
	}
	<-done
	<-done
	if t.Failed() {
		t.FailNow()
	}
	// Each worker's first attempts: its events in order, with the role chosen.
	type sent struct {
		seq       int
		tag, role string
	}
	perWorker := func(hs ...*history.History) map[string][]sent {
		out := map[string][]sent{}
		for _, h := range hs {
			for _, a := range h.Attempts {
				if a.Role == RoleRedelivery || a.Role == RoleSettle {
					continue
				}
				m := shardTag.FindStringSubmatch(a.Key.EventID)
				if m == nil {
					t.Fatalf("event ID %q has no worker tag", a.Key.EventID)
				}
				tag := strings.TrimPrefix(m[0], "soak")
				if w := out[m[1]]; len(w) > 0 && w[len(w)-1].tag == tag {
					continue // the second of two copies
				}
				seq, _ := strconv.Atoi(m[2])
				out[m[1]] = append(out[m[1]], sent{seq, tag, a.Role})
			}
		}
		for w, s := range out {
			slices.SortFunc(s, func(a, b sent) int { return a.seq - b.seq })
			out[w] = slices.CompactFunc(s, func(a, b sent) bool { return a.tag == b.tag })
		}
		return out
	}
	a, b := perWorker(whole), perWorker(shards...)
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("workers seen: unsharded %d, sharded %d, want 4 each", len(a), len(b))
	}
	for w, x := range a {
		y := b[w]
		n := min(len(x), len(y))
		if n < 5 || !slices.Equal(x[:n], y[:n]) {
			t.Errorf("worker %s: unsharded sent %v, sharded %v", w, x[:min(len(x), 8)], y[:min(len(y), 8)])
		}
	}
	for i, h := range shards {
		for w := range perWorker(h) {
			if int(w[0]-'0')%2 != i {
				t.Errorf("shard %d/2 ran worker %s", i, w)
			}
		}
	}
	merged, err := Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Results(merged)
	if err != nil {
		t.Fatal(err)
	}
	u := Judge(whole, 0)
	if !m.Soak.Passed || !u.Passed || m.Soak.Keys < 50 || m.Soak.Keys != keysOf(shards[0])+keysOf(shards[1]) {
		t.Errorf("merged %+v\nunsharded %+v", m.Soak, u)
	}
}

func keysOf(h *history.History) int {
	ks := map[profiles.Key]bool{}
	for _, a := range h.Attempts {
		ks[a.Key] = true
	}
	return len(ks)
}
