package soak

import (
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func key(id string) profiles.Key {
	return profiles.Key{Source: "stripe", Account: "acct_A", EventID: id}
}

func att(id string, o history.Outcome, startMS, endMS int64) history.Attempt {
	return history.Attempt{Key: key(id), Outcome: o, StartNS: startMS * 1e6, EndNS: endMS * 1e6}
}

func reads(id string, rows, effects int64) []history.Observation {
	p := []string{"stripe", "acct_A", id, "obj_" + id}
	return []history.Observation{
		{Query: "event_rows", Params: p, Phase: PhaseSoak, Found: true, Count: rows},
		{Query: "effects", Params: p, Phase: PhaseSoak, Found: true, Count: effects},
	}
}

// Each key's attempts are held against its reads, as the issue defines the
// classes.
func TestJudgeClasses(t *testing.T) {
	A, F, U := history.OutcomeAcknowledged, history.OutcomeFailed, history.OutcomeUnknown
	h := &history.History{Attempts: []history.Attempt{
		att("ok", A, 0, 10),
		att("lost", A, 100, 120),
		att("noeffect", A, 200, 210),
		att("dup", A, 300, 305), att("dup", A, 300, 306),
		att("dupeff", A, 400, 401),
		att("rec", U, 500, 510), att("rec", F, 600, 601),
		att("unk", U, 700, 710),
		att("never", F, 800, 801), att("never", F, 1500, 1501),
		att("late", F, 900, 901), att("late", A, 2500, 2540),
		att("unread", A, 950, 960),
	}}
	for _, r := range [][]history.Observation{reads("ok", 1, 1), reads("lost", 0, 0), reads("noeffect", 1, 0), reads("dup", 2, 2),
		reads("dupeff", 1, 2), reads("rec", 1, 1), reads("unk", 0, 0), reads("never", 0, 0), reads("late", 1, 1)} {
		h.Observations = append(h.Observations, r...)
	}
	h.Observations = append(h.Observations, history.Observation{Query: "event_rows", Params: []string{"stripe", "acct_A", "unread"}, Phase: PhaseSoak, Error: "timeout"})
	s := Judge(h, int64(2*time.Second))
	want := map[string][2]int{"keys": {s.Keys, 10}, "acknowledged": {s.Acknowledged, 7}, "lost": {s.Lost, 2}, "duplicated": {s.Duplicated, 2},
		"unknown": {s.Unknown, 2}, "recovered": {s.Recovered, 1}, "never applied": {s.NeverApplied, 1}, "unjudged": {s.Unjudged, 1}, "attempts": {s.Attempts, 14}}
	for name, gw := range want {
		if gw[0] != gw[1] {
			t.Errorf("%s = %d, want %d", name, gw[0], gw[1])
		}
	}
	if s.Passed {
		t.Error("passed with lost and duplicated keys")
	}
	if len(s.LostKeys) != 2 || s.LostKeys[0] != "(stripe, acct_A, lost)" || s.DuplicatedKeys[1] != "(stripe, acct_A, dupeff)" {
		t.Errorf("evidence lost %v duplicated %v", s.LostKeys, s.DuplicatedKeys)
	}
	// The rates count what ended before traffic stopped (2 s): 13 of 14 attempts.
	if s.DeliveriesPerS != 6.5 || s.AcksPerS != 3.5 {
		t.Errorf("deliveries/s %g acks/s %g, want 6.5 and 3.5", s.DeliveriesPerS, s.AcksPerS)
	}
	if s.Latency.MaxMS != 40 || s.Latency.P50MS != 10 {
		t.Errorf("latency %+v", s.Latency)
	}
	if len(s.Series) != 3 || s.Series[0].Deliveries != 12 || s.Series[2].Acknowledged != 1 || s.Series[2].P99MS != 40 {
		t.Errorf("series %+v", s.Series)
	}
}

// A soak with nothing lost or duplicated passes; one that sent nothing does not.
func TestJudgePassAndEmpty(t *testing.T) {
	h := &history.History{Attempts: []history.Attempt{att("a", history.OutcomeAcknowledged, 0, 5)}, Observations: reads("a", 1, 1)}
	if s := Judge(h, int64(time.Second)); !s.Passed {
		t.Errorf("not passed: %+v", s)
	}
	if s := Judge(&history.History{}, int64(time.Second)); s.Passed {
		t.Error("an empty soak passed")
	}
	// Without effect reads (no effects query), the rows alone judge.
	h.Observations = h.Observations[:1]
	if s := Judge(h, int64(time.Second)); !s.Passed {
		t.Errorf("without effects: %+v", s)
	}
}

func TestParseNemesis(t *testing.T) {
	ns, err := ParseNemesis("kill=5s, pg-terminate=7s,pause=9s")
	if err != nil || len(ns) != 3 || ns[0] != (Nemesis{Kind: KindKill, Every: 5 * time.Second}) || ns[2].Every != 9*time.Second {
		t.Fatalf("%v %v", ns, err)
	}
	if ns, err := ParseNemesis(""); err != nil || len(ns) != 0 {
		t.Errorf("empty: %v %v", ns, err)
	}
	for _, bad := range []string{"kill", "kill=x", "kill=1ms", "boom=1s", "kill=1s,kill=2s"} {
		if _, err := ParseNemesis(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
