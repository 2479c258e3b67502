package scenarios

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
)

// These tests pin the harness's own decisions at its narrow seams (mocks generated
// by mockery, `make generate`); everything that touches a receiver is tested for
// real by the self-test.

func testSession(t *testing.T, env *Env) *session {
	t.Helper()
	return &session{ctx: context.Background(), env: env, rec: &Record{}, g: Guarantee{ID: "TEST-1"}}
}

func TestCrashedRestartWhenTheReceiverDoesNotCrash(t *testing.T) {
	c := newMockController(t)
	c.EXPECT().WaitExit(mock.Anything).Return(errors.New("still running (pid 42)"))
	c.EXPECT().Kill().Return(nil).Once()
	c.EXPECT().Restart(mock.Anything).Return(nil).Once()
	s := testSession(t, &Env{Controller: c})
	s.crashedRestart()
	if len(s.rec.Deviations) != 1 || !strings.Contains(s.rec.Deviations[0], "did not crash at the armed failpoint") {
		t.Fatalf("deviations = %q; a failpoint that does not fire is a deviation", s.rec.Deviations)
	}
}

func TestCrashedRestartAfterACrash(t *testing.T) {
	c := newMockController(t)
	c.EXPECT().WaitExit(mock.Anything).Return(nil)
	c.EXPECT().Restart(mock.Anything).Return(nil).Once()
	s := testSession(t, &Env{Controller: c})
	s.crashedRestart()
	if len(s.rec.Deviations) != 0 {
		t.Fatalf("deviations = %q", s.rec.Deviations)
	}
}

// The gate waits until the receiver's queue stops growing (its pool may be
// smaller than the number of copies), releases everyone together, and says how
// many waited.
func TestGateReleasesWhenTheQueueStopsGrowing(t *testing.T) {
	g := newMockGate(t)
	var polls atomic.Int32
	g.EXPECT().Waiters(mock.Anything).RunAndReturn(func(context.Context) (int, error) {
		n := int(polls.Add(1))
		return min(n, 4), nil // grows to 4 (the pool), then stays
	})
	released := make(chan struct{})
	g.EXPECT().Release(mock.Anything).RunAndReturn(func(context.Context) error { close(released); return nil }).Once()
	db := newMockDBFaults(t)
	db.EXPECT().Hold(mock.Anything, "events").Return(g, nil).Once()

	s := testSession(t, &Env{DB: db})
	var fired atomic.Bool
	n := s.gate("events", 16, func() {
		fired.Store(true)
		<-released // the deliveries finish only once the lock is released
	})
	if n != 4 || !fired.Load() {
		t.Fatalf("gate saw %d waiters (fired %v), want 4", n, fired.Load())
	}
	if len(s.rec.Notes) != 1 || !strings.Contains(s.rec.Notes[0], "4 receiver session(s) waited") {
		t.Fatalf("notes = %q", s.rec.Notes)
	}
}

func TestGateStopsWaitingWhenTheDeliveriesFinish(t *testing.T) {
	g := newMockGate(t)
	g.EXPECT().Waiters(mock.Anything).Return(0, nil)
	g.EXPECT().Release(mock.Anything).Return(nil).Once()
	db := newMockDBFaults(t)
	db.EXPECT().Hold(mock.Anything, "events").Return(g, nil).Once()
	s := testSession(t, &Env{DB: db})
	start := time.Now()
	if n := s.gate("events", 16, func() {}); n != 0 {
		t.Fatalf("waiters = %d", n)
	}
	// A receiver that never writes to the table must not cost the 5 s deadline.
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("gate waited %s for deliveries that had already finished", el)
	}
}

func TestCapabilitiesNeedTheirAdapters(t *testing.T) {
	env := &Env{Capabilities: []string{"crash", "failpoints", "lock-gating"}}
	for _, c := range []string{"crash", "failpoints", "lock-gating"} {
		if ok, why := env.has(c); ok || why == "" {
			t.Errorf("%s declared without its adapter: has = %v (%q), want false with a reason", c, ok, why)
		}
	}
	env.Controller = newMockController(t)
	env.Failpoints = newMockFailpoints(t)
	env.DB = newMockDBFaults(t)
	for _, c := range []string{"crash", "failpoints", "lock-gating"} {
		if ok, why := env.has(c); !ok {
			t.Errorf("%s: %s", c, why)
		}
	}
	if ok, why := env.has("ordering"); ok || !strings.Contains(why, "does not declare capability ordering") {
		t.Errorf("undeclared ordering: %v %q", ok, why)
	}
}
