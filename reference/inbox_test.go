package reference

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

// fastInbox is inbox options scaled for tests.
func fastInbox(workers int) InboxOptions {
	return InboxOptions{Workers: workers, Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, ReconcileInterval: 50 * time.Millisecond}
}

// runWorkers runs the server's in-process workers until the test ends.
func (e *env) runWorkers() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.inbox.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

func (e *env) inbox(ep Endpoint, id string) store.InboxEntry {
	e.t.Helper()
	got, err := store.LookupInbox(context.Background(), e.pool, store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: id})
	if err != nil {
		e.t.Fatalf("inbox row of %s: %v", id, err)
	}
	return got
}

// waitState waits until the event's inbox row reaches state.
func (e *env) waitState(ep Endpoint, id, state string) store.InboxEntry {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.inbox(ep, id)
		if got.State == state {
			return got
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("event %s is %s after %d attempts (last error %q), want %s", id, got.State, got.Attempts, got.LastError, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestInboxAnswers202OnlyAfterCommit(t *testing.T) {
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1)})
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_inbox")
	hold := make(chan struct{})
	e.fps.set(&recorder{block: map[fpPoint]chan struct{}{fpAfterInsertBeforeCommit: hold}, reached: make(chan fpPoint, 1)})
	rec := e.fps.h.(*recorder)
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 40, Currency: "usd"}, time.Now())
	wait := e.fireAsync(d, 1)
	<-rec.reached
	// Inserted but not committed: nothing visible, no answer yet.
	if n := e.keyRows(ep, id); n != 0 {
		t.Fatalf("%d key rows visible before commit", n)
	}
	close(hold)
	r := wait()[0]
	e.expect(r, http.StatusAccepted, StatusAccepted, "")
	got := e.inbox(ep, id)
	if got.State != store.InboxPending || got.Attempts != 0 || e.ledger(ep, id) != 0 {
		t.Fatalf("after 202: %+v, %d ledger entries; want pending, no attempt, no effect", got, e.ledger(ep, id))
	}
	if n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE processed_at IS NULL`); n != 1 {
		t.Fatalf("pending event has processed_at set")
	}
	// A redelivery of a stored event is a duplicate, whatever its state.
	e.fps.set(&recorder{})
	e.expect(e.send(d), http.StatusOK, StatusDuplicate, "")

	if n, err := e.srv.inbox.Step(context.Background(), "test-worker"); err != nil || n != 1 {
		t.Fatalf("Step: %d, %v", n, err)
	}
	got = e.inbox(ep, id)
	if got.State != store.InboxDone || got.Attempts != 1 || e.ledger(ep, id) != 1 {
		t.Fatalf("after the worker: %+v, %d ledger entries", got, e.ledger(ep, id))
	}
	if n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE processed_at IS NOT NULL AND claimed_by IS NULL`); n != 1 {
		t.Fatal("done event has no processed_at or keeps its claim")
	}
}

func TestInboxConcurrentCopiesProcessedOnce(t *testing.T) {
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(4)})
	e.runWorkers()
	ep := e.ep("stripe", "acct_A")
	const rounds, copies = 10, 16
	var ids []string
	for round := range rounds {
		id := newID("evt_inbox_dup")
		ids = append(ids, id)
		d := build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 100, Currency: "usd"}, time.Now())
		accepted := 0
		for _, r := range e.fire(d, copies) {
			switch {
			case r.Code == http.StatusAccepted && r.Status == StatusAccepted:
				accepted++
			case r.Code == http.StatusOK && r.Status == StatusDuplicate:
			default:
				t.Fatalf("round %d: a copy got %d %s/%s", round, r.Code, r.Status, r.Reason)
			}
		}
		if accepted != 1 {
			t.Fatalf("round %d: %d copies accepted, want 1", round, accepted)
		}
	}
	for _, id := range ids {
		if got := e.waitState(ep, id, store.InboxDone); got.Attempts != 1 {
			t.Fatalf("%s done after %d attempts, want 1", id, got.Attempts)
		}
		if k, l := e.keyRows(ep, id), e.ledger(ep, id); k != 1 || l != 1 {
			t.Fatalf("%s: %d key rows, %d ledger entries; want 1 and 1", id, k, l)
		}
	}
	if got := e.count(`SELECT balance FROM account_balances WHERE source='stripe' AND account_id='acct_A'`); got != rounds*100 {
		t.Fatalf("balance %d, want %d", got, rounds*100)
	}
}

// A refund that arrives before its payment fails its precondition: the attempt is
// recorded with its error, retried after backoff, and applied once the payment is
// there.
func TestInboxTransientFailureRetried(t *testing.T) {
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(2)})
	e.runWorkers()
	ep := e.ep("stripe", "acct_A")
	pay := newID("pi")
	refund := newID("evt_refund")
	e.expect(e.send(build(ep, refund, store.TypeChargeRefunded, obj{ID: pay, Amount: 500}, time.Now())), http.StatusAccepted, StatusAccepted, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.inbox(ep, refund)
		if got.Attempts >= 2 && got.State == store.InboxPending {
			if !strings.Contains(got.LastError, "precondition") {
				t.Fatalf("last error %q, want the failed precondition", got.LastError)
			}
			break
		}
		if got.State != store.InboxPending && got.State != store.InboxClaimed || time.Now().After(deadline) {
			t.Fatalf("refund before its payment: %+v, want pending with 2+ attempts", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	succeeded := newID("evt_paid")
	e.expect(e.send(build(ep, succeeded, store.TypePaymentSucceeded, obj{ID: pay, Amount: 500, Currency: "usd", Status: "succeeded"}, time.Now())),
		http.StatusAccepted, StatusAccepted, "")
	e.waitState(ep, succeeded, store.InboxDone)
	got := e.waitState(ep, refund, store.InboxDone)
	if got.Attempts < 3 || e.ledger(ep, refund) != 1 {
		t.Fatalf("refund done after %d attempts with %d ledger entries; want 3+ and 1", got.Attempts, e.ledger(ep, refund))
	}
	if s := e.count(`SELECT count(*) FROM payments WHERE payment_id=$1 AND status='refunded'`, pay); s != 1 {
		t.Fatal("payment not refunded")
	}
}

// An event that never succeeds is dead-lettered after MaxAttempts, stays visible
// with its error, and is never purged.
func TestInboxDeadLetterAfterMaxAttempts(t *testing.T) {
	opts := fastInbox(2)
	opts.MaxAttempts = 3
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: opts})
	e.runWorkers()
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_orphan_refund")
	e.expect(e.send(build(ep, id, store.TypeChargeRefunded, obj{ID: newID("pi_never"), Amount: 1}, time.Now())), http.StatusAccepted, StatusAccepted, "")
	got := e.waitState(ep, id, store.InboxDead)
	if got.Attempts != 3 || got.DeadAt == nil || !strings.Contains(got.LastError, "payment absent") || got.ClaimedBy != "" {
		t.Fatalf("dead letter: %+v, want 3 attempts, dead_at, the error, no claim", got)
	}
	time.Sleep(100 * time.Millisecond) // no worker touches it again
	if again := e.inbox(ep, id); again.Attempts != 3 || again.State != store.InboxDead {
		t.Fatalf("dead letter retried: %+v", again)
	}
	if _, err := e.srv.Purge(context.Background(), time.Now().Add(1000*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if e.keyRows(ep, id) != 1 {
		t.Fatal("the purge deleted a dead-lettered event")
	}
}

// The purge, however late its clock, leaves pending and claimed events with key
// and payload; it removes only finished ones.
func TestInboxPurgeKeepsUnfinishedWork(t *testing.T) {
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1)})
	ep := e.ep("stripe", "acct_A")
	var ids []string
	for range 3 {
		id := newID("evt_keep")
		ids = append(ids, id)
		e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 1}, time.Now())), http.StatusAccepted, StatusAccepted, "")
	}
	ctx := context.Background()
	// ids[0] done, ids[1] claimed (by a worker that never finishes), ids[2] pending.
	if n, err := e.srv.inbox.Step(ctx, "w-done"); err != nil || n != 1 {
		t.Fatalf("Step: %d %v", n, err)
	}
	tasks, err := store.Claim(ctx, e.pool, "w-stuck", time.Hour, 1)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("Claim: %v %v", tasks, err)
	}
	states := map[string]string{}
	for _, id := range ids {
		states[e.inbox(ep, id).State] = id
	}
	if len(states) != 3 || states[store.InboxDone] == "" || states[store.InboxClaimed] == "" || states[store.InboxPending] == "" {
		t.Fatalf("states %v, want one done, one claimed, one pending", states)
	}
	res, err := e.srv.Purge(ctx, time.Now().Add(1000*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if res.KeysDeleted != 1 {
		t.Fatalf("purge deleted %d keys, want only the finished one", res.KeysDeleted)
	}
	for _, st := range []string{store.InboxClaimed, store.InboxPending} {
		id := states[st]
		if n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE event_id=$1 AND payload IS NOT NULL`, id); n != 1 {
			t.Fatalf("%s event lost its key or payload to the purge", st)
		}
	}
	if e.keyRows(ep, states[store.InboxDone]) != 0 {
		t.Fatal("finished event not purged")
	}
}

// A task dispatched twice (its lease expired while its first worker was away, and
// another worker took it) is applied once: the first worker's mark-done is
// conditional on a claim it no longer holds.
func TestInboxDuplicateDispatchHarmless(t *testing.T) {
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1)})
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_twice")
	e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 9}, time.Now())), http.StatusAccepted, StatusAccepted, "")
	ctx := context.Background()
	first, err := store.Claim(ctx, e.pool, "w-slow", 10*time.Millisecond, 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("Claim: %v %v", first, err)
	}
	time.Sleep(30 * time.Millisecond)
	if n, err := e.srv.inbox.Reconcile(ctx); err != nil || n != 1 {
		t.Fatalf("Reconcile: %d %v", n, err)
	}
	if got := e.inbox(ep, id); got.State != store.InboxPending || !strings.Contains(got.LastError, "w-slow") {
		t.Fatalf("after the lease: %+v", got)
	}
	if n, err := e.srv.inbox.Step(ctx, "w-fast"); err != nil || n != 1 {
		t.Fatalf("Step: %d %v", n, err)
	}
	if _, err := store.ApplyClaimed(ctx, e.pool, first[0], "w-slow", store.CorrectRules(), nil); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("second dispatch: %v, want ErrClaimLost", err)
	}
	if got := e.inbox(ep, id); got.State != store.InboxDone || got.Attempts != 2 || e.ledger(ep, id) != 1 {
		t.Fatalf("%+v with %d ledger entries; want done after 2 attempts, applied once", got, e.ledger(ep, id))
	}
}

func TestInboxRefusesDefectsAndUnknownMode(t *testing.T) {
	pool := testPool(t, testDatabase(t))
	if _, err := New(context.Background(), pool, Options{Mode: ModeInbox, Defects: []string{DefectSlowAck}}); err == nil {
		t.Fatal("inbox mode with a defect accepted")
	}
	if _, err := New(context.Background(), pool, Options{Mode: "outbox-ish"}); err == nil || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("unknown mode: %v", err)
	}
}

// Serve runs the in-process workers and stops them before it returns.
func TestInboxServeRunsWorkers(t *testing.T) {
	pool := testPool(t, testDatabase(t))
	srv, err := New(context.Background(), pool, Options{Mode: ModeInbox, Inbox: fastInbox(2), PurgeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	e := &env{t: t, srv: srv, pool: pool, http: &httptest.Server{URL: "http://" + ln.Addr().String()}}
	ep := srv.Endpoints()[0]
	id := newID("evt_served")
	e.expect(e.sendTo(http.DefaultClient, ep.Path, build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 3}, time.Now())),
		http.StatusAccepted, StatusAccepted, "")
	e.waitState(ep, id, store.InboxDone)
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if e.ledger(ep, id) != 1 {
		t.Fatal("not applied once")
	}
}

// A batch claim whose tail is handed back leaves the tail pending with no
// attempt counted, and does not touch a claim another worker holds.
func TestInboxReleaseClaimsUndoesUnstartedClaims(t *testing.T) {
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: InboxOptions{Workers: -1}})
	ep := e.ep("stripe", "acct_A")
	for i := range 3 {
		id := fmt.Sprintf("evt_release_%d", i)
		d := build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 10, Currency: "usd"}, time.Now())
		e.expect(e.send(d), http.StatusAccepted, StatusAccepted, "")
	}
	ctx := context.Background()
	mine, err := store.Claim(ctx, e.pool, "w-batch", time.Minute, 2)
	if err != nil || len(mine) != 2 {
		t.Fatalf("claim: %d tasks, %v", len(mine), err)
	}
	theirs, err := store.Claim(ctx, e.pool, "w-other", time.Minute, 1)
	if err != nil || len(theirs) != 1 {
		t.Fatalf("claim: %d tasks, %v", len(theirs), err)
	}
	// Handing back the other worker's claim as well must leave it alone.
	if err := store.ReleaseClaims(ctx, e.pool, "w-batch", append(mine[1:], theirs...)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t       store.Task
		state   string
		attempt int
	}{{mine[0], store.InboxClaimed, 1}, {mine[1], store.InboxPending, 0}, {theirs[0], store.InboxClaimed, 1}} {
		got := e.inbox(ep, c.t.EventID)
		if got.State != c.state || got.Attempts != c.attempt {
			t.Errorf("%s: %s with %d attempts, want %s with %d", c.t.EventID, got.State, got.Attempts, c.state, c.attempt)
		}
	}
}
