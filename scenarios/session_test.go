package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// These tests pin the harness's own decisions at its narrow seams (mocks generated
// by mockery, `make generate`); everything that touches a receiver is tested for
// real by the self-test.

func testSession(t *testing.T, env *Env) *session {
	t.Helper()
	r := &Run{env: env, start: time.Now(), opt: RunOptions{QuiesceTimeout: time.Second}}
	return &session{ctx: context.Background(), run: r, env: env, g: Guarantee{ID: "TEST-1"}, index: 1, rng: scenarioRand(1, "TEST-1"), waited: map[profiles.Key]bool{}}
}

// abortOf runs fn and returns the reason of the stop it raised ("" when none).
func abortOf(fn func()) string {
	if st := catch(fn); st != nil {
		return st.reason
	}
	return ""
}

// A failpoint that does not fire is the harness's lack, not the receiver's
// failure: the receiver is killed and restarted for the next scenario, and the
// scenario is an error.
func TestCrashedRestartWhenTheReceiverDoesNotCrash(t *testing.T) {
	c := newMockController(t)
	c.EXPECT().WaitExit(mock.Anything).Return(errors.New("still running (pid 42)"))
	c.EXPECT().Kill().Return(nil).Once()
	c.EXPECT().Restart(mock.Anything).Return(nil).Once()
	s := testSession(t, &Env{Controller: c})
	if r := abortOf(func() { s.crashedRestart("after-response") }); !strings.Contains(r, "did not crash at the armed failpoint after-response") {
		t.Fatalf("abort = %q", r)
	}
}

func TestCrashedRestartAfterACrash(t *testing.T) {
	c := newMockController(t)
	c.EXPECT().WaitExit(mock.Anything).Return(nil)
	c.EXPECT().Restart(mock.Anything).Return(nil).Once()
	s := testSession(t, &Env{Controller: c})
	if r := abortOf(func() { s.crashedRestart("after-response") }); r != "" {
		t.Fatalf("abort = %q", r)
	}
}

// A gate that held nobody forced no race: the scenario is an error, not a pass.
func TestGateThatHeldNobodyIsAnError(t *testing.T) {
	g := newMockGate(t)
	g.EXPECT().Held(mock.Anything).Return(GateHeld{}, nil)
	g.EXPECT().Release(mock.Anything).Return(nil).Once()
	db := newMockDBFaults(t)
	db.EXPECT().Hold(mock.Anything, "events").Return(g, nil)
	s := testSession(t, &Env{DB: db})
	if r := abortOf(func() { s.gate("events", 16, func() {}) }); !strings.Contains(r, "held no receiver session") {
		t.Fatalf("abort = %q", r)
	}
}

// The gate waits until the receiver's queue stops growing (its pool may be
// smaller than the number of copies), releases everyone together, and says how
// many waited.
func TestGateReleasesWhenTheQueueStopsGrowing(t *testing.T) {
	g := newMockGate(t)
	n := 0
	g.EXPECT().Held(mock.Anything).RunAndReturn(func(context.Context) (GateHeld, error) {
		if n < 4 {
			n++
		}
		// One more waits behind them on a row lock, and one older session
		// (another scenario's work) at the lock: it is not counted.
		return GateHeld{AtGate: n, Behind: 1, Foreign: 1}, nil
	})
	release := make(chan struct{})
	g.EXPECT().Release(mock.Anything).RunAndReturn(func(context.Context) error { close(release); return nil }).Once()
	db := newMockDBFaults(t)
	db.EXPECT().Hold(mock.Anything, "events").Return(g, nil)
	s := testSession(t, &Env{DB: db})
	var got history.Gate
	// The deliveries block on the lock until the gate is released.
	if r := abortOf(func() { got = s.gate("events", 16, func() { <-release }) }); r != "" {
		t.Fatalf("abort = %q", r)
	}
	if got.AtGate != 4 || got.Behind != 1 || got.Foreign != 1 || got.Held() != 5 || got.Racers != 16 {
		t.Fatalf("gate = %+v, want 4 at the gate, 1 behind, 1 foreign of 16", got)
	}
	if gs := s.run.hist.Gates; len(gs) != 1 || gs[0] != got {
		t.Fatalf("history gates = %+v, want the one gate", gs)
	}
}

// Between scenarios the harness waits until the receiver is idle twice in a
// row, and says how long it waited.
func TestQuiesceWaitsForTheReceiverToGoIdle(t *testing.T) {
	a := newMockActivity(t)
	calls := 0
	a.EXPECT().Busy(mock.Anything).RunAndReturn(func(context.Context) (int, string, error) {
		calls++
		if calls <= 8 {
			return 3, "pid 7 active", nil
		}
		return 0, "", nil
	})
	s := testSession(t, &Env{Activity: a})
	s.run.quiesce(context.Background(), s)
	if calls != 10 || len(s.notes) != 1 || !strings.Contains(s.notes[0], "waited") {
		t.Fatalf("calls %d, notes %q", calls, s.notes)
	}
}

func TestQuiesceGivesUpAndSaysSo(t *testing.T) {
	a := newMockActivity(t)
	a.EXPECT().Busy(mock.Anything).Return(1, "pid 9 idle in transaction", nil)
	s := testSession(t, &Env{Activity: a})
	s.run.opt.QuiesceTimeout = 100 * time.Millisecond
	s.run.quiesce(context.Background(), s)
	if len(s.notes) != 1 || !strings.Contains(s.notes[0], "still busy") || !strings.Contains(s.notes[0], "pid 9") {
		t.Fatalf("notes %q", s.notes)
	}
}

// Between scenarios an asynchronous receiver's declared quiescence is waited
// for: an event accepted at the end of the previous scenario and not yet
// claimed leaves no database session busy, yet its worker is still to come.
func TestQuiesceWaitsForTheDeclaredQuiescence(t *testing.T) {
	calls := 0
	s := testSession(t, &Env{
		Acceptance: vocab.Acceptance{Async: true, Settle: time.Second},
		Quiescent: func(context.Context) (bool, error) {
			calls++
			return calls > 6, nil
		},
	})
	s.run.quiesce(context.Background(), s)
	if calls != 7 || len(s.notes) != 1 || !strings.Contains(s.notes[0], "acceptance.quiescent") {
		t.Fatalf("calls %d, notes %q", calls, s.notes)
	}
}

// Work that stays pending (a retry scheduled later) is waited for only as
// long as the declared settle period, and said.
func TestQuiesceBoundsTheQuiescenceWaitBySettle(t *testing.T) {
	s := testSession(t, &Env{
		Acceptance: vocab.Acceptance{Async: true, Settle: 100 * time.Millisecond},
		Quiescent:  func(context.Context) (bool, error) { return false, nil },
	})
	s.run.opt.QuiesceTimeout = 10 * time.Second
	t0 := time.Now()
	s.run.quiesce(context.Background(), s)
	if w := time.Since(t0); w > 5*time.Second || len(s.notes) != 1 || !strings.Contains(s.notes[0], "still had accepted work pending") {
		t.Fatalf("waited %s, notes %q", w, s.notes)
	}
}

// Scenario order and every scenario's random choices come from the seed alone.
func TestSelectionOrderFollowsTheSeed(t *testing.T) {
	a, _ := Select(RunOptions{Seed: 5})
	b, _ := Select(RunOptions{Seed: 5})
	c, _ := Select(RunOptions{Seed: 6})
	key := func(ss []Spec) string {
		var ids []string
		for _, s := range ss {
			ids = append(ids, s.Guarantee)
		}
		return strings.Join(ids, " ")
	}
	if key(a) != key(b) || key(a) == key(c) || len(a) != len(Catalogue()) {
		t.Fatalf("seed 5: %s\nseed 5: %s\nseed 6: %s", key(a), key(b), key(c))
	}
	want := 0
	for _, g := range Catalogue() {
		if g.Family == "DEDUP" && !slices.Contains(g.Needs, "multi-account") {
			want++
		}
	}
	if f, err := Select(RunOptions{Seed: 5, LabelFilter: "DEDUP && !needs:multi-account"}); err != nil || len(f) != want || want < 2 {
		t.Fatalf("label filter: %d specs, want %d, %v", len(f), want, err)
	}
	if _, err := Select(RunOptions{LabelFilter: "DEDUP &&"}); err == nil || !strings.Contains(err.Error(), "label filter") {
		t.Fatalf("bad filter: %v", err)
	}
	if scenarioRand(9, "DEDUP-1").Uint64() != scenarioRand(9, "DEDUP-1").Uint64() || scenarioRand(9, "DEDUP-1").Uint64() == scenarioRand(9, "DEDUP-2").Uint64() {
		t.Fatal("scenarioRand is not a function of seed and guarantee ID")
	}
}

// A run records an interrupted scenario and every one left as errors.
func TestInterruptedRunRecordsEveryScenarioAsError(t *testing.T) {
	env := &Env{RunID: "x", Observer: nopObserver{}}
	r, err := NewRun(env, RunOptions{Seed: 1, LabelFilter: "ACK-3 || ACK-5"}, history.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("SIGINT"))
	if err := r.All(ctx); err != nil {
		t.Fatal(err)
	}
	h := r.History()
	if len(h.Scenarios) != 2 {
		t.Fatalf("%d scenarios recorded", len(h.Scenarios))
	}
	for _, sc := range h.Scenarios {
		if sc.State != history.ScenarioError || !strings.Contains(sc.Reason, "interrupted") || !strings.Contains(sc.Reason, "SIGINT") {
			t.Fatalf("%s: %s %q", sc.Guarantee, sc.State, sc.Reason)
		}
	}
}

type nopObserver struct{}

func (nopObserver) EventRows(context.Context, profiles.Key) (int, error)       { return 0, nil }
func (nopObserver) Effects(context.Context, profiles.Key, string) (int, error) { return 0, nil }
func (nopObserver) ObjectEffects(context.Context, string, string, string) (int, error) {
	return 0, nil
}
func (nopObserver) Object(context.Context, string, string, string) (int64, string, bool, error) {
	return 0, "", false, nil
}
func (nopObserver) Payment(context.Context, string, string, string) (string, bool, error) {
	return "", false, nil
}

// Two runs go in one process at once, each with its own history: nothing of a
// run lives in a package variable.
func TestTwoRunsInOneProcess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	p, err := profiles.Lookup("stripe")
	if err != nil {
		t.Fatal(err)
	}
	runs := make([]*Run, 2)
	var wg sync.WaitGroup
	for i := range runs {
		env := &Env{RunID: fmt.Sprintf("run%d", i), Observer: nopObserver{}, TimeScale: 3600,
			Endpoints: []Endpoint{{Profile: p, Account: "acct_A", URL: srv.URL + "/hook", Secrets: []string{"whsec_test"}}}}
		r, err := NewRun(env, RunOptions{Seed: 3, LabelFilter: "ACK-6"}, history.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = r
		wg.Add(1)
		go func() { defer wg.Done(); defer r.Close(); _ = r.All(context.Background()) }()
	}
	wg.Wait()
	for i, r := range runs {
		h := r.History()
		if len(h.Scenarios) != 1 || h.Scenarios[0].State != history.ScenarioRan || len(h.Attempts) != 2 {
			t.Fatalf("run %d: scenarios %+v, %d attempts", i, h.Scenarios, len(h.Attempts))
		}
		if ns := Namespace(fmt.Sprintf("run%d", i)); !strings.Contains(h.Attempts[0].Key.EventID, ns) {
			t.Fatalf("run %d delivered %s, outside its namespace %s", i, h.Attempts[0].Key.EventID, ns)
		}
	}
}

// A gate that held nobody because the receiver refused every delivery is no
// harness error: the refusals are the finding, and the checker reports them.
func TestGateThatHeldNobodyBecauseAllWereRefused(t *testing.T) {
	g := newMockGate(t)
	g.EXPECT().Held(mock.Anything).Return(GateHeld{}, nil)
	g.EXPECT().Release(mock.Anything).Return(nil).Once()
	db := newMockDBFaults(t)
	db.EXPECT().Hold(mock.Anything, "events").Return(g, nil)
	s := testSession(t, &Env{DB: db})
	refused := func() { s.record(roleCopy, history.Attempt{Status: 401, Outcome: history.OutcomeFailed}) }
	if r := abortOf(func() {
		if g := s.gate("events", 16, refused); g.Held() != 0 || !g.Refused {
			t.Errorf("gate = %+v, want none held, refused", g)
		}
	}); r != "" {
		t.Fatalf("abort = %q, want none", r)
	}
}

func (nopObserver) KeyTTL(context.Context, profiles.Key) (time.Duration, bool, bool, error) {
	return 0, false, false, errors.New("no key_ttl")
}
