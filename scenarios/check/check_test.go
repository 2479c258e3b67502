package check

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Checkers are plain functions of a history: these feed them small histories
// written by hand and hold the verdicts and codes they give.

var k1 = profiles.Key{Source: "stripe", Account: "acct_A", EventID: "evt_1"}

func attempt(role string, k profiles.Key, o history.Outcome, status int) history.Attempt {
	return history.Attempt{Scenario: 1, Role: role, Key: k, EventType: vocab.TypeCredit, Attempt: 1, Outcome: o, Status: status}
}

func count(query, phase string, k profiles.Key, n int64) history.Observation {
	return history.Observation{Scenario: 1, Query: query, Phase: phase, Params: []string{k.Source, k.Account, k.EventID, ""}, Found: true, Count: n}
}

func hist(id string, as []history.Attempt, obs ...history.Observation) *history.History {
	return &history.History{
		Scenarios:    []history.Scenario{{Index: 1, Guarantee: id, Name: id + " test", State: history.ScenarioRan}},
		Attempts:     as,
		Observations: obs,
	}
}

func judgeOne(t *testing.T, h *history.History) reports.Guarantee {
	t.Helper()
	res, err := Judge(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Guarantees) != 1 {
		t.Fatalf("%d guarantees judged", len(res.Guarantees))
	}
	return res.Guarantees[0]
}

func TestDEDUP1(t *testing.T) {
	ok := []history.Observation{count("event_rows", "after", k1, 1), count("effects", "after", k1, 1),
		count("event_rows", "reconcile", k1, 1), count("effects", "reconcile", k1, 1)}
	copies := []history.Attempt{attempt("copy", k1, history.OutcomeAcknowledged, 200), attempt("copy", k1, history.OutcomeAcknowledged, 200)}
	if g := judgeOne(t, hist("DEDUP-1", copies, ok...)); g.Status != reports.StatusPassed {
		t.Fatalf("clean history: %s %v", g.Status, g.Evidence)
	}

	// Two rows, two effects, one copy refused: every check fires with its code.
	bad := []history.Observation{count("event_rows", "after", k1, 2), count("effects", "after", k1, 2),
		count("event_rows", "reconcile", k1, 2), count("effects", "reconcile", k1, 2)}
	copies[1] = attempt("copy", k1, history.OutcomeFailed, 500)
	g := judgeOne(t, hist("DEDUP-1", copies, bad...))
	want := []string{"dedup.effects", "dedup.not-acked", "dedup.rows", "reconcile.applied-twice", "reconcile.duplicated"}
	if g.Status != reports.StatusFailed || strings.Join(g.Codes, ",") != strings.Join(want, ",") {
		t.Fatalf("got %s %v, want failed %v", g.Status, g.Codes, want)
	}
}

// The last read of a phase is the settled one: a first read still short of the
// count does not count against the receiver.
func TestLastReadOfAPhaseDecides(t *testing.T) {
	obs := []history.Observation{count("event_rows", "after", k1, 0), count("event_rows", "after", k1, 1),
		count("effects", "after", k1, 1), count("event_rows", "reconcile", k1, 1), count("effects", "reconcile", k1, 1)}
	as := []history.Attempt{attempt("copy", k1, history.OutcomeAcknowledged, 200)}
	if g := judgeOne(t, hist("DEDUP-1", as, obs...)); g.Status != reports.StatusPassed {
		t.Fatalf("%s %v", g.Status, g.Evidence)
	}
}

func TestReconcileLostAndRecovered(t *testing.T) {
	k2 := k1
	k2.EventID = "evt_2"
	as := []history.Attempt{attempt("copy", k1, history.OutcomeAcknowledged, 200), attempt("copy", k2, history.OutcomeUnknown, 0)}
	obs := []history.Observation{count("event_rows", "after", k1, 1), count("effects", "after", k1, 1),
		count("event_rows", "reconcile", k1, 0), count("effects", "reconcile", k1, 0),
		count("event_rows", "reconcile", k2, 1), count("effects", "reconcile", k2, 1)}
	h := hist("DEDUP-1", as, obs...)
	h.Attempts[1].Role = "other"
	g := judgeOne(t, h)
	if g.Status != reports.StatusFailed || strings.Join(g.Codes, ",") != "reconcile.lost" {
		t.Fatalf("got %s %v", g.Status, g.Codes)
	}
	if notes := strings.Join(g.Scenarios[0].Notes, "\n"); !strings.Contains(notes, "1 recovered") || !strings.Contains(notes, "1 lost") {
		t.Fatalf("notes: %s", notes)
	}
}

// Whatever stopped the harness is an error, never a pass or a failure.
func TestMissingReadsAndNothingAcknowledgedAreErrors(t *testing.T) {
	as := []history.Attempt{attempt("copy", k1, history.OutcomeAcknowledged, 200)}
	if g := judgeOne(t, hist("DEDUP-1", as)); g.Status != reports.StatusError || !strings.Contains(g.Reason, "no event_rows read") {
		t.Fatalf("no reads: %s %s", g.Status, g.Reason)
	}
	as = []history.Attempt{attempt("load", k1, history.OutcomeUnknown, 0)}
	obs := []history.Observation{count("event_rows", "reconcile", k1, 1), count("effects", "reconcile", k1, 1)}
	if g := judgeOne(t, hist("ACK-1", as, obs...)); g.Status != reports.StatusError || !strings.Contains(g.Reason, "no delivery was acknowledged") {
		t.Fatalf("ACK-1 with nothing acknowledged: %s %s", g.Status, g.Reason)
	}
}

func TestStatesFromTheHarnessSide(t *testing.T) {
	h := hist("DEDUP-3", nil)
	h.Scenarios[0].State, h.Scenarios[0].Reason = history.ScenarioNotApplicable, "the target has no two endpoints"
	if g := judgeOne(t, h); g.Status != reports.StatusNotApplicable || g.Reason != "the target has no two endpoints" {
		t.Fatalf("%s %s", g.Status, g.Reason)
	}
	h.Scenarios[0].State, h.Scenarios[0].Reason = history.ScenarioError, "interrupted before it ran"
	if g := judgeOne(t, h); g.Status != reports.StatusError || !strings.Contains(g.Reason, "interrupted") {
		t.Fatalf("%s %s", g.Status, g.Reason)
	}
}

func TestRETENTION4(t *testing.T) {
	h := hist("RETENTION-4", nil,
		count("event_rows", "ladder:"+"1h0m0s", k1, 1), count("event_rows", "ladder:"+"97h0m0s", k1, 1))
	h.Scenarios[0].Facts = map[string]string{"key_ttl": "96h0m0s", "margin": "1h0m0s", "ladder": "1h0m0s,97h0m0s"}
	g := judgeOne(t, h)
	if g.Status != reports.StatusFailed || strings.Join(g.Codes, ",") != "retention.key-kept" {
		t.Fatalf("key never gone: %s %v", g.Status, g.Codes)
	}
	h.Observations[1].Count = 0
	h.Observations = append(h.Observations, history.Observation{Scenario: 1, Query: "payload_present", Phase: "after-key-gone",
		Params: []string{k1.Source, k1.Account, k1.EventID, ""}, Found: true, Present: true})
	g = judgeOne(t, h)
	if g.Status != reports.StatusFailed || strings.Join(g.Codes, ",") != "retention.payload-orphaned" {
		t.Fatalf("payload after key: %s %v", g.Status, g.Codes)
	}
}

// OUTBOX-1 is judged from the sink's calls in the history: one key and one
// application pass; a fresh key per resend fails, twice over; and the history
// keeps its sink lines through JSON Lines.
func TestOUTBOX1FromSinkCalls(t *testing.T) {
	k := profiles.Key{Source: "stripe", Account: "acct_A", EventID: "evt_1"}
	read := count("sink_calls", "after", k, 3)
	acked := []history.Attempt{attempt("copy", k, history.OutcomeAcknowledged, 200)}
	reads := []history.Observation{read, count("event_rows", "reconcile", k, 1), count("effects", "reconcile", k, 1)}
	call := func(seq int, key, outcome string, status int) history.Sink {
		return history.Sink{Scenario: 1, EventID: k.EventID, Seq: seq, Key: key, Outcome: outcome, Status: status}
	}
	good := hist("OUTBOX-1", acked, reads...)
	good.Sink = []history.Sink{call(1, "op", "lost", 0), call(2, "op", "failed", 503), call(3, "op", "replayed", 200)}
	if g := judgeOne(t, good); g.Status != reports.StatusPassed {
		t.Fatalf("one key, applied once: %s %v", g.Status, g.Scenarios)
	}
	bad := hist("OUTBOX-1", acked, reads...)
	bad.Sink = []history.Sink{call(1, "op-a", "lost", 0), call(2, "op-b", "failed", 503), call(3, "op-c", "applied", 200)}
	var buf bytes.Buffer
	if err := bad.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := history.ReadJSONL(&buf)
	if err != nil || len(back.Sink) != 3 || back.Sink[2] != bad.Sink[2] {
		t.Fatalf("round trip: %v, %+v", err, back.Sink)
	}
	g := judgeOne(t, back)
	if g.Status != reports.StatusFailed || !slices.Contains(g.Codes, "outbox.key-changed") || !slices.Contains(g.Codes, "outbox.applied-twice") {
		t.Fatalf("fresh keys: %s %v", g.Status, g.Codes)
	}
	none := hist("OUTBOX-1", acked, reads...)
	if g := judgeOne(t, none); g.Status != reports.StatusFailed || !slices.Contains(g.Codes, "outbox.not-sent") {
		t.Fatalf("no call: %s %v", g.Status, g.Codes)
	}
}
