package reference

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/reference/store"
)

// Each inbox and outbox defect shown to produce its wrong behaviour against real
// PostgreSQL, beside the correct receiver's where the contrast matters.

// terminateWaiters ends the database sessions waiting for a lock on table, as a
// kill of their process would, and returns how many it ended.
func (e *env) terminateWaiters(table string) int {
	e.t.Helper()
	return e.count(`SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE c.relname = $1 AND NOT l.granted
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`, table)
}

// lockWaiters counts the sessions waiting for a lock on table.
func (e *env) lockWaiters(table string) int {
	return e.count(`SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE c.relname = $1 AND NOT l.granted
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`, table)
}

func cashDelivery(ep Endpoint, id string) delivery {
	return build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 250, Currency: "eur"}, time.Now())
}

// waitLedger waits until the event has n ledger entries.
func (e *env) waitLedger(ep Endpoint, id string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.ledger(ep, id) != n {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s has %d ledger entries, want %d", id, e.ledger(ep, id), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDefectsForMode(t *testing.T) {
	for _, c := range []struct {
		defects []string
		mode    string
		outbox  bool
		want    string // "" accepted, else part of the error
	}{
		{[]string{DefectSlowAck}, ModeInbox, false, "runs only in sync mode"},
		{[]string{DefectSlowAck}, ModeSync, true, ""},
		{[]string{DefectPollWithoutClaim}, ModeSync, false, "runs only in inbox mode"},
		{[]string{DefectPollWithoutClaim}, "", false, "runs only in inbox mode"},
		{[]string{DefectFreshIdempotencyKey}, ModeSync, false, "--sink-url"},
		{[]string{DefectFreshIdempotencyKey}, ModeSync, true, ""},
		{[]string{DefectSendBeforeCommit, DefectDropDeadLetters}, ModeInbox, true, ""},
		{[]string{DefectPollWithoutClaim, DefectNoLeaseExpiry}, ModeInbox, false, "at most one"},
		{[]string{DefectRetryWithoutAttempts, DefectDropDeadLetters}, ModeInbox, false, "at most one"},
		{[]string{DefectSendBeforeCommit, DefectFreshIdempotencyKey}, ModeInbox, true, "at most one"},
		{[]string{DefectInboxAckBeforeCommit, DefectMarkDoneSeparateTx, DefectNoLeaseExpiry, DefectDropFailedSends}, ModeInbox, true, ""},
	} {
		err := ValidateDefectsFor(c.defects, c.mode, c.outbox)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v in %q (outbox %v): %v, want %q", c.defects, c.mode, c.outbox, err, c.want)
		}
	}
	for _, d := range Defects() {
		modes, outbox := DefectModes(d.Name)
		if len(modes) == 0 {
			t.Errorf("%s: no mode", d.Name)
		}
		if err := ValidateDefectsFor([]string{d.Name}, modes[len(modes)-1], outbox); err != nil {
			t.Errorf("%s in its own mode: %v", d.Name, err)
		}
	}
	pool := testPool(t, testDatabase(t))
	if _, err := New(context.Background(), pool, Options{Mode: ModeInbox, Defects: []string{DefectAckBeforeCommit}}); err == nil ||
		!strings.Contains(err.Error(), "runs only in sync mode") {
		t.Fatalf("a sync defect in inbox mode: %v", err)
	}
	if _, err := New(context.Background(), pool, Options{Defects: []string{DefectMarkDoneSeparateTx}}); err == nil {
		t.Fatal("an inbox defect in sync mode accepted")
	}
}

// The 202 goes out while the insert still waits (the key table is locked): the
// correct receiver does not answer until it has committed. A kill of the
// defective one at that moment (its session terminated) loses an accepted event.
func TestDefectInboxAckBeforeCommit(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1)})
		ep := e.ep("stripe", "acct_A")
		id := newID("evt_ack")
		release := e.gate("processed_webhook_events")
		wait := e.fireAsync(cashDelivery(ep, id), 1)
		e.waitLockWaiters("processed_webhook_events", 1)
		answered := make(chan reply, 1)
		go func() { answered <- wait()[0] }()
		select {
		case r := <-answered:
			t.Fatalf("answered %d %s before the event was committed", r.Code, r.Status)
		case <-time.After(300 * time.Millisecond):
		}
		release()
		r := <-answered
		e.expect(r, http.StatusAccepted, StatusAccepted, "")
		if e.keyRows(ep, id) != 1 {
			t.Fatal("accepted event not stored")
		}
	})
	t.Run("defect", func(t *testing.T) {
		e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1), Defects: []string{DefectInboxAckBeforeCommit}})
		ep := e.ep("stripe", "acct_A")
		id := newID("evt_ack")
		release := e.gate("processed_webhook_events")
		r := e.send(cashDelivery(ep, id)) // answered although the insert cannot proceed
		e.expect(r, http.StatusAccepted, StatusAccepted, "")
		e.waitLockWaiters("processed_webhook_events", 1)
		if n := e.terminateWaiters("processed_webhook_events"); n != 1 {
			t.Fatalf("terminated %d sessions, want the handler's", n)
		}
		release()
		time.Sleep(200 * time.Millisecond)
		if e.keyRows(ep, id) != 0 {
			t.Fatal("the event survived; the defect should have lost it")
		}
		// Accepted and gone: a redelivery is accepted anew, not a duplicate.
		e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
	})
}

// Four idle workers polling while the first one's apply waits on the ledger all
// read the same pending credit (nothing marks it taken) and each applies it:
// four cash entries for one event. The correct workers claim it once.
func TestDefectPollWithoutClaim(t *testing.T) {
	for _, c := range []struct {
		name    string
		defects []string
		want    int
	}{{"correct", nil, 1}, {"defect", []string{DefectPollWithoutClaim}, 4}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(4), Defects: c.defects})
			e.runWorkers()
			ep := e.ep("stripe", "acct_A")
			id := newID("evt_poll")
			release := e.gate("ledger_entries")
			e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
			e.waitLockWaiters("ledger_entries", c.want)
			time.Sleep(200 * time.Millisecond) // ten poll intervals: every idle worker has looked
			if n := e.lockWaiters("ledger_entries"); n != c.want {
				t.Fatalf("%d workers wait on the ledger, want %d", n, c.want)
			}
			release()
			e.waitState(ep, id, store.InboxDone)
			e.waitLedger(ep, id, c.want)
			time.Sleep(100 * time.Millisecond)
			if n := e.ledger(ep, id); n != c.want {
				t.Fatalf("%d ledger entries, want %d", n, c.want)
			}
			if got := e.count(`SELECT balance FROM account_balances WHERE source='stripe' AND account_id='acct_A'`); got != 250*c.want {
				t.Fatalf("balance %d, want %d", got, 250*c.want)
			}
		})
	}
}

// A claim whose worker died is never re-offered: no reconciler runs, Reconcile
// does nothing, and the event stays claimed and unapplied while workers idle.
func TestDefectNoLeaseExpiry(t *testing.T) {
	for _, c := range []struct {
		name    string
		defects []string
	}{{"correct", nil}, {"defect", []string{DefectNoLeaseExpiry}}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(2), Defects: c.defects})
			ep := e.ep("stripe", "acct_A")
			id := newID("evt_lease")
			e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
			if tasks, err := store.Claim(context.Background(), e.pool, "died", 50*time.Millisecond, 1); err != nil || len(tasks) != 1 {
				t.Fatalf("claim: %v %v", tasks, err)
			}
			e.runWorkers()
			if c.defects == nil {
				e.waitState(ep, id, store.InboxDone)
				if e.ledger(ep, id) != 1 {
					t.Fatal("re-offered event not applied once")
				}
				return
			}
			time.Sleep(time.Second) // twenty reconcile intervals of the correct receiver
			if n, err := e.srv.inbox.Reconcile(context.Background()); err != nil || n != 0 {
				t.Fatalf("Reconcile: %d %v, want nothing done", n, err)
			}
			if got := e.inbox(ep, id); got.State != store.InboxClaimed || got.ClaimedBy != "died" || e.ledger(ep, id) != 0 {
				t.Fatalf("%+v with %d ledger entries, want claimed by the dead worker forever", got, e.ledger(ep, id))
			}
		})
	}
}

var errKilled = errors.New("worker killed")

// The worker commits the credit before it marks the event done: in between, the
// effect is visible while the event is still claimed. A worker that dies there
// leaves it claimed; after the lease it is re-offered and applied a second time.
// The correct worker dying at the same point (inside its one transaction) leaves
// nothing, and the re-offer applies it once.
func TestDefectMarkDoneSeparateTx(t *testing.T) {
	ctx := context.Background()
	t.Run("window", func(t *testing.T) {
		e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1), Defects: []string{DefectMarkDoneSeparateTx}})
		ep := e.ep("stripe", "acct_A")
		id := newID("evt_split")
		e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
		hold, reached := make(chan struct{}), make(chan struct{})
		e.srv.inbox.betweenTx = func(store.Task) error { close(reached); <-hold; return nil }
		stepped := make(chan error, 1)
		go func() { _, err := e.srv.inbox.Step(ctx, "w1"); stepped <- err }()
		<-reached
		if got := e.inbox(ep, id); got.State != store.InboxClaimed || e.ledger(ep, id) != 1 {
			t.Fatalf("between the transactions: %+v with %d ledger entries, want claimed with the effect committed", got, e.ledger(ep, id))
		}
		close(hold)
		if err := <-stepped; err != nil {
			t.Fatal(err)
		}
		if got := e.inbox(ep, id); got.State != store.InboxDone || e.ledger(ep, id) != 1 {
			t.Fatalf("after: %+v", got)
		}
	})
	for _, c := range []struct {
		name    string
		defects []string
		want    int
	}{{"correct", nil, 1}, {"defect", []string{DefectMarkDoneSeparateTx}, 2}} {
		t.Run("killed/"+c.name, func(t *testing.T) {
			e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1), Defects: c.defects})
			ep := e.ep("stripe", "acct_A")
			id := newID("evt_split")
			e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
			tasks, err := store.Claim(ctx, e.pool, "w1", 50*time.Millisecond, 1)
			if err != nil || len(tasks) != 1 {
				t.Fatalf("claim: %v %v", tasks, err)
			}
			// The worker dies after its business change: for the defect after the
			// first commit, for the correct worker before its only commit.
			if c.defects != nil {
				_, err = store.ApplyThenMarkDone(ctx, e.pool, tasks[0], "w1", store.CorrectRules(), nil, func() error { return errKilled })
			} else {
				_, err = store.ApplyClaimed(ctx, e.pool, tasks[0], "w1", store.CorrectRules(), func(pgx.Tx) error { return errKilled })
			}
			if !errors.Is(err, errKilled) {
				t.Fatalf("apply: %v", err)
			}
			if got := e.inbox(ep, id); got.State != store.InboxClaimed || e.ledger(ep, id) != c.want-1 {
				t.Fatalf("after the kill: %+v with %d ledger entries, want claimed with %d", got, e.ledger(ep, id), c.want-1)
			}
			time.Sleep(80 * time.Millisecond)
			if n, err := e.srv.inbox.Reconcile(ctx); err != nil || n != 1 {
				t.Fatalf("Reconcile: %d %v", n, err)
			}
			if n, err := e.srv.inbox.Step(ctx, "w2"); err != nil || n != 1 {
				t.Fatalf("Step: %d %v", n, err)
			}
			if got := e.inbox(ep, id); got.State != store.InboxDone || e.ledger(ep, id) != c.want {
				t.Fatalf("after the re-offer: %+v with %d ledger entries, want done with %d", got, e.ledger(ep, id), c.want)
			}
		})
	}
}

// countingHandler counts log records by message.
type countingHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[r.Message]++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}

// A refund whose payment never comes fails on every attempt: retried far past
// MaxAttempts, with attempts 0 and no last error, never dead-lettered. Expired
// claims are re-offered without a record either.
func TestDefectRetryWithoutAttempts(t *testing.T) {
	logs := &countingHandler{}
	opts := fastInbox(2)
	opts.MaxAttempts = 3
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: opts, Defects: []string{DefectRetryWithoutAttempts}, Logger: slog.New(logs)})
	e.runWorkers()
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_forever")
	e.expect(e.send(build(ep, id, store.TypeChargeRefunded, obj{ID: newID("pi_never"), Amount: 1}, time.Now())), http.StatusAccepted, StatusAccepted, "")
	deadline := time.Now().Add(10 * time.Second)
	for logs.count("inbox attempt failed; will retry") < 2*opts.MaxAttempts {
		if time.Now().After(deadline) {
			t.Fatalf("%d retries, want %d", logs.count("inbox attempt failed; will retry"), 2*opts.MaxAttempts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := e.inbox(ep, id)
	if got.State == store.InboxDead || got.Attempts != 0 || got.LastError != "" || got.DeadAt != nil {
		t.Fatalf("after %d failed attempts: %+v, want attempts 0, no error, not dead", logs.count("inbox attempt failed; will retry"), got)
	}

	// The reconciler's re-offer records nothing either.
	e2 := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(-1), Defects: []string{DefectRetryWithoutAttempts}})
	ep2 := e2.ep("stripe", "acct_A")
	id2 := newID("evt_expired")
	e2.expect(e2.send(cashDelivery(ep2, id2)), http.StatusAccepted, StatusAccepted, "")
	ctx := context.Background()
	if n, err := e2.srv.inbox.Step(ctx, "w"); err != nil || n != 1 {
		t.Fatalf("Step: %d %v", n, err)
	}
	if got := e2.inbox(ep2, id2); got.State != store.InboxDone || got.Attempts != 0 {
		t.Fatalf("done event %+v, want attempts 0", got)
	}
	id3 := newID("evt_expired")
	e2.expect(e2.send(cashDelivery(ep2, id3)), http.StatusAccepted, StatusAccepted, "")
	if _, err := store.ClaimWithoutAttempts(ctx, e2.pool, "died", 10*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if n, err := e2.srv.inbox.Reconcile(ctx); err != nil || n != 1 {
		t.Fatalf("Reconcile: %d %v", n, err)
	}
	if got := e2.inbox(ep2, id3); got.State != store.InboxPending || got.Attempts != 0 || got.LastError != "" {
		t.Fatalf("re-offered %+v, want pending with no record", got)
	}
}

// An event that fails MaxAttempts times is deleted instead of dead-lettered:
// nothing shows it, and a redelivery is accepted as new. The reconciler deletes
// an expired last attempt the same way.
func TestDefectDropDeadLetters(t *testing.T) {
	opts := fastInbox(2)
	opts.MaxAttempts = 3
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: opts, Defects: []string{DefectDropDeadLetters}})
	e.runWorkers()
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_dropped")
	orphan := build(ep, id, store.TypeChargeRefunded, obj{ID: newID("pi_never"), Amount: 1}, time.Now())
	e.expect(e.send(orphan), http.StatusAccepted, StatusAccepted, "")
	deadline := time.Now().Add(10 * time.Second)
	for e.keyRows(ep, id) != 0 {
		// One read: the row may go between two (the defect deletes it).
		dead := e.count(`SELECT count(*) FROM processed_webhook_events WHERE event_id = $1 AND inbox_state = 'dead'`, id)
		if dead != 0 || time.Now().After(deadline) {
			t.Fatalf("event %s: %d dead letter(s) and the row still there after %s; want the row deleted after %d attempts", id, dead, 10*time.Second, opts.MaxAttempts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.count(`SELECT count(*) FROM processed_webhook_events WHERE inbox_state = 'dead'`); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
	e.expect(e.send(orphan), http.StatusAccepted, StatusAccepted, "")

	e2 := newEnv(t, Options{Mode: ModeInbox, Inbox: opts, Defects: []string{DefectDropDeadLetters}})
	ep2 := e2.ep("stripe", "acct_A")
	id2 := newID("evt_expired_last")
	e2.expect(e2.send(cashDelivery(ep2, id2)), http.StatusAccepted, StatusAccepted, "")
	ctx := context.Background()
	if _, err := store.Claim(ctx, e2.pool, "died", 10*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.pool.Exec(ctx, `UPDATE processed_webhook_events SET attempts = 3 WHERE event_id = $1`, id2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if n, err := e2.srv.inbox.Reconcile(ctx); err != nil || n != 1 {
		t.Fatalf("Reconcile: %d %v", n, err)
	}
	if e2.keyRows(ep2, id2) != 0 {
		t.Fatal("expired last attempt kept; the defect deletes it")
	}
}

// The first send is applied downstream but its answer lost; the resend carries a
// new key, so the downstream applies the credit a second time. The correct
// dispatcher's resend is replayed (TestOutboxLostResponseAppliedOnce).
func TestDefectFreshIdempotencyKey(t *testing.T) {
	s := newSink(t)
	s.LoseNext(1)
	e := newEnv(t, Options{Inbox: fastInbox(0), Outbox: OutboxOptions{SinkURL: s.URL(), Timeout: 2 * time.Second},
		Defects: []string{DefectFreshIdempotencyKey}})
	e.runDispatcher()
	k := e.credit(e.ep("stripe", "acct_A"), http.StatusOK, StatusProcessed)
	got := e.waitOutbox(k, store.OutboxSent)
	calls := s.Calls()
	if got.Attempts != 2 || len(calls) != 2 || calls[0].IdempotencyKey == calls[1].IdempotencyKey || calls[0].BodySHA256 != calls[1].BodySHA256 {
		t.Fatalf("%+v, calls %+v; want two sends of one body with two keys", got, calls)
	}
	applied := 0
	for _, n := range s.Record().Applied {
		applied += n
	}
	if applied != 2 || s.Applied(store.OutboxKey(k, store.OutboxCredit)) != 0 {
		t.Fatalf("applied %d times (stable key %d), want 2 under fresh keys", applied, s.Applied(store.OutboxKey(k, store.OutboxCredit)))
	}
}

// The credit's downstream call goes out inside the business transaction, before
// the ledger insert: with the ledger locked the call has been made; the session
// is then terminated (a kill) and the transaction rolls back, leaving an external
// effect for an event that never committed. The correct receiver calls nothing
// until the commit, and nothing at all for a rollback.
func TestDefectSendBeforeCommit(t *testing.T) {
	for _, c := range []struct {
		name    string
		defects []string
	}{{"correct", nil}, {"defect", []string{DefectSendBeforeCommit}}} {
		t.Run(c.name, func(t *testing.T) {
			s := newSink(t)
			e := newEnv(t, Options{Inbox: fastInbox(0), Outbox: OutboxOptions{SinkURL: s.URL()}, Defects: c.defects})
			e.runDispatcher()
			ep := e.ep("stripe", "acct_A")
			id := newID("evt_sbc")
			k := store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: id}
			release := e.gate("ledger_entries")
			wait := e.fireAsync(cashDelivery(ep, id), 1)
			e.waitLockWaiters("ledger_entries", 1)
			time.Sleep(100 * time.Millisecond)
			calls := s.Calls()
			if c.defects == nil && len(calls) != 0 {
				t.Fatalf("correct receiver called downstream before its commit: %+v", calls)
			}
			if c.defects != nil && (len(calls) != 1 || calls[0].IdempotencyKey != store.OutboxKey(k, store.OutboxCredit) ||
				calls[0].BodySHA256 != sha256Hex(creditBody(k))) {
				t.Fatalf("calls %+v, want one with the stable key before the commit", calls)
			}
			if n := e.terminateWaiters("ledger_entries"); n != 1 {
				t.Fatalf("terminated %d sessions", n)
			}
			release()
			e.expect(wait()[0], http.StatusInternalServerError, StatusRetry, "")
			time.Sleep(200 * time.Millisecond)
			if e.keyRows(ep, id) != 0 || e.ledger(ep, id) != 0 || e.count(`SELECT count(*) FROM outbox_messages`) != 0 {
				t.Fatal("the killed transaction left rows")
			}
			if want := len(c.defects); s.Applied(store.OutboxKey(k, store.OutboxCredit)) != want {
				t.Fatalf("downstream applied the rolled-back credit %d times, want %d", s.Applied(store.OutboxKey(k, store.OutboxCredit)), want)
			}
		})
	}
	// Inbox mode: the worker makes the call inline too, and writes no message.
	s := newSink(t)
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(1), Outbox: OutboxOptions{SinkURL: s.URL()}, Defects: []string{DefectSendBeforeCommit}})
	e.runWorkers()
	ep := e.ep("stripe", "acct_A")
	k := e.credit(ep, http.StatusAccepted, StatusAccepted)
	e.waitState(ep, k.EventID, store.InboxDone)
	if s.Applied(store.OutboxKey(k, store.OutboxCredit)) != 1 || e.count(`SELECT count(*) FROM outbox_messages`) != 0 {
		t.Fatalf("inbox credit: applied %d, %d outbox rows; want 1 inline call and no message",
			s.Applied(store.OutboxKey(k, store.OutboxCredit)), e.count(`SELECT count(*) FROM outbox_messages`))
	}
}

// A sink that keeps failing: after MaxAttempts the message is marked sent, not
// dead, although the downstream never applied it. The correct dispatcher
// dead-letters it (TestOutboxDeadLetterAfterMaxAttempts).
func TestDefectDropFailedSends(t *testing.T) {
	s := newSink(t)
	s.FailNext(100, http.StatusInternalServerError)
	retry := fastInbox(0)
	retry.MaxAttempts = 3
	e := newEnv(t, Options{Inbox: retry, Outbox: OutboxOptions{SinkURL: s.URL()}, Defects: []string{DefectDropFailedSends}})
	e.runDispatcher()
	k := e.credit(e.ep("stripe", "acct_A"), http.StatusOK, StatusProcessed)
	got := e.waitOutbox(k, store.OutboxSent)
	time.Sleep(100 * time.Millisecond)
	if got.Attempts != 3 || len(s.Calls()) != 3 || s.Applied(store.OutboxKey(k, store.OutboxCredit)) != 0 {
		t.Fatalf("%+v after %d calls (applied %d), want sent after 3 failed attempts", got, len(s.Calls()), s.Applied(store.OutboxKey(k, store.OutboxCredit)))
	}
	if n := e.count(`SELECT count(*) FROM outbox_messages WHERE state = 'dead' OR dead_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
}

// purge-pending: a purge past the key TTL deletes an accepted event nobody has
// applied yet; the correct purge keeps unfinished work, whatever its age.
func TestDefectPurgePending(t *testing.T) {
	ctx := context.Background()
	for _, defect := range []bool{false, true} {
		var defects []string
		if defect {
			defects = []string{DefectPurgePending}
		}
		// No workers: the accepted event stays pending.
		e := newEnv(t, Options{Mode: ModeInbox, Inbox: InboxOptions{Workers: -1}, Defects: defects})
		ep := e.ep("stripe", "acct_A")
		id := newID("evt_pending")
		e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
		if _, err := e.srv.Purge(ctx, time.Now().Add(10*365*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		switch n := e.keyRows(ep, id); {
		case defect && n != 0:
			t.Errorf("purge-pending kept the pending event (%d rows)", n)
		case !defect && n != 1:
			t.Errorf("the purge removed pending work (%d rows)", n)
		}
	}
}

// requeue-on-boot re-offers an abandoned claim only when a process starts:
// running workers never reclaim it; a start of the server, or of a worker
// process, puts it back to pending, after which it is applied once.
func TestDefectRequeueOnBoot(t *testing.T) {
	dbURL := testDatabase(t)
	e := newEnvOn(t, testPool(t, dbURL), Options{Mode: ModeInbox, Inbox: fastInbox(2), Defects: []string{DefectRequeueOnBoot}})
	ep := e.ep("stripe", "acct_A")
	abandoned := func(id string) {
		t.Helper()
		e.expect(e.send(cashDelivery(ep, id)), http.StatusAccepted, StatusAccepted, "")
		if tasks, err := store.Claim(context.Background(), e.pool, "died", 50*time.Millisecond, 1); err != nil || len(tasks) != 1 {
			t.Fatalf("claim: %v %v", tasks, err)
		}
	}
	// run runs f until the returned stop is called.
	run := func(f func(ctx context.Context)) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); f(ctx) }()
		return func() { cancel(); <-done }
	}

	id := newID("evt_boot")
	abandoned(id)
	stopWorkers := run(e.srv.inbox.Run)
	time.Sleep(time.Second) // twenty reconcile intervals of the correct receiver
	if n, err := e.srv.inbox.Reconcile(context.Background()); err != nil || n != 0 {
		t.Fatalf("Reconcile: %d %v, want nothing done", n, err)
	}
	if got := e.inbox(ep, id); got.State != store.InboxClaimed || got.ClaimedBy != "died" || e.ledger(ep, id) != 0 {
		t.Fatalf("%+v with %d ledger entries, want still claimed by the dead worker", got, e.ledger(ep, id))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopServe := run(func(ctx context.Context) { _ = e.srv.Serve(ctx, ln) })
	e.waitState(ep, id, store.InboxDone)
	if n := e.ledger(ep, id); n != 1 {
		t.Fatalf("%d ledger entries after the boot requeue, want 1", n)
	}
	stopServe()
	stopWorkers()

	// A worker process requeues at its start too.
	id2 := newID("evt_boot")
	abandoned(id2)
	opts := fastInbox(1)
	opts.Defects = []string{DefectRequeueOnBoot}
	stopProcess := run(func(ctx context.Context) { _ = RunWorkers(ctx, dbURL, opts, OutboxOptions{}, e.srv.log) })
	defer stopProcess()
	e.waitState(ep, id2, store.InboxDone)
	if n := e.ledger(ep, id2); n != 1 {
		t.Fatalf("%d ledger entries after the worker's boot requeue, want 1", n)
	}
}
