package reference

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

// Each test shows that its defect really produces the wrong behaviour against real
// PostgreSQL, so none is a no-op.

func TestDefectCheckThenInsert(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectCheckThenInsert}})
	ep := e.ep("stripe", "acct_A")
	id := newID("evt_cti")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 5}, time.Now())
	release := e.gate("processed_webhook_events")
	wait := e.fireAsync(d, 16)
	// Every copy has passed its "does it exist?" SELECT and waits to INSERT.
	e.waitLockWaiters("processed_webhook_events", 16)
	release()
	for _, r := range wait() {
		if r.Code != 200 || r.Status != StatusProcessed {
			t.Fatalf("copy answered %d %s", r.Code, r.Status)
		}
	}
	if k, l := e.keyRows(ep, id), e.ledger(ep, id); k != 16 || l != 16 {
		t.Fatalf("check-then-insert left %d key rows and %d ledger entries; the defect should give 16 and 16", k, l)
	}
	// The defective receiver restarts on its own damage (a harness restarts it
	// after a crash)...
	if _, err := New(context.Background(), e.pool, Options{Defects: []string{DefectCheckThenInsert}}); err != nil {
		t.Fatalf("check-then-insert restart: %v", err)
	}
	// ...but a clean receiver refuses the damaged database, with a clear message.
	_, err := New(context.Background(), e.pool, Options{})
	if !errors.Is(err, store.ErrDuplicateKeys) {
		t.Fatalf("clean start on duplicate keys: %v, want ErrDuplicateKeys", err)
	}
}

func TestDefectDuplicate500(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectDuplicate500}})
	d := build(e.ep("stripe", "acct_A"), newID("evt"), store.TypeCashBalance, obj{ID: "cb", Amount: 5}, time.Now())
	e.expect(e.send(d), 200, StatusProcessed, "")
	e.expect(e.send(d), 500, StatusRetry, "transient_error")
}

func TestDefectMarkerSeparateTx(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectMarkerSeparateTx}})
	ep := e.ep("stripe", "acct_A")
	e.expect(e.send(build(ep, newID("evt_c"), store.TypePaymentCreated, obj{ID: "pi_m", Amount: 9}, time.Now())), 200, StatusProcessed, "")
	refundID := newID("evt_r")
	refund := build(ep, refundID, store.TypeChargeRefunded, obj{ID: "pi_m", Amount: 9}, time.Now())
	e.expect(e.send(refund), 503, StatusRetry, "failed_precondition")
	if e.keyRows(ep, refundID) != 1 {
		t.Fatal("marker-separate-tx should have committed the key of the failed event")
	}
	e.expect(e.send(build(ep, newID("evt_s"), store.TypePaymentSucceeded, obj{ID: "pi_m", Amount: 9}, time.Now())), 200, StatusProcessed, "")
	e.expect(e.send(refund), 200, StatusDuplicate, "")
	if n := e.ledger(ep, refundID); n != 0 {
		t.Fatalf("%d refund entries; the defect should have lost the refund", n)
	}

	// The same loss through a fault between the two commits.
	e.fps.set(&recorder{fail: map[fpPoint]error{fpAfterInsertBeforeCommit: errors.New("crash")}})
	id := newID("evt_cash")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	e.expect(e.send(d), 500, StatusRetry, "injected_fault")
	e.fps.set(noFailpoints{})
	e.expect(e.send(d), 200, StatusDuplicate, "")
	if e.ledger(ep, id) != 0 {
		t.Fatal("expected the event to be lost")
	}
}

func TestDefectBusinessFirst(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectBusinessFirst}})
	ep := e.ep("stripe", "acct_A")
	e.fps.set(&recorder{fail: map[fpPoint]error{fpAfterInsertBeforeCommit: errors.New("crash")}})
	id := newID("evt_bf")
	d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	e.expect(e.send(d), 500, StatusRetry, "injected_fault")
	if e.ledger(ep, id) != 1 || e.keyRows(ep, id) != 0 {
		t.Fatal("business-first: the change should be committed without its key")
	}
	e.fps.set(noFailpoints{})
	e.expect(e.send(d), 200, StatusProcessed, "")
	if n := e.ledger(ep, id); n != 2 {
		t.Fatalf("%d ledger entries after redelivery; the defect should apply twice", n)
	}

	// Concurrent copies all pass the existence check before any records the key.
	id2 := newID("evt_bf2")
	d2 := build(ep, id2, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	release := e.gate("ledger_entries")
	wait := e.fireAsync(d2, 4)
	e.waitLockWaiters("ledger_entries", 4)
	release()
	wait()
	if n := e.ledger(ep, id2); n != 4 {
		t.Fatalf("%d ledger entries from 4 concurrent copies; the defect should give 4", n)
	}
}

func TestDefectDedupeByPayload(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectDedupeByPayload}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("github", "acct_A")
		a := build(ep, newID("gh1"), store.TypeCashBalance, obj{ID: "cb", Amount: 3}, time.Now())
		b := build(ep, newID("gh2"), store.TypeCashBalance, obj{ID: "cb", Amount: 3}, time.Now())
		e.expect(e.send(a), 200, StatusProcessed, "")
		got := e.send(b)
		if defects == nil {
			e.expect(got, 200, StatusProcessed, "")
		} else {
			e.expect(got, 200, StatusDuplicate, "") // a distinct event dropped
			if e.ledger(ep, b.header.Get("X-GitHub-Delivery")) != 0 {
				t.Fatal("expected the second event to be dropped")
			}
		}
	}
}

func TestDefectGlobalEventID(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectGlobalEventID}})
	a, b := e.ep("stripe", "acct_A"), e.ep("stripe", "acct_B")
	id := newID("evt_g")
	e.expect(e.send(build(a, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())), 200, StatusProcessed, "")
	e.expect(e.send(build(b, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())), 200, StatusDuplicate, "")
	if e.ledger(b, id) != 0 {
		t.Fatal("expected acct_B's event to be dropped")
	}
}

func TestDefectLastWriteWins(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectLastWriteWins}})
	ep := e.ep("svix", "acct_A")
	e.expect(e.send(build(ep, newID("msg"), store.TypeSubscriptionUpdated, obj{ID: "sub", Version: 2, Status: "active"}, time.Now())), 200, StatusProcessed, "")
	e.expect(e.send(build(ep, newID("msg"), store.TypeSubscriptionUpdated, obj{ID: "sub", Version: 1, Status: "trialing"}, time.Now())), 200, StatusProcessed, "")
	if n := e.count(`SELECT version FROM subscriptions WHERE object_id='sub'`); n != 1 {
		t.Fatalf("version %d; the defect should regress to 1", n)
	}
	st := e.ep("stripe", "acct_A")
	e.send(build(st, newID("e"), store.TypePaymentSucceeded, obj{ID: "pi", Amount: 2}, time.Now()))
	e.send(build(st, newID("e"), store.TypeChargeRefunded, obj{ID: "pi", Amount: 2}, time.Now()))
	e.expect(e.send(build(st, newID("e"), store.TypePaymentSucceeded, obj{ID: "pi", Amount: 2}, time.Now())), 200, StatusProcessed, "")
	if n := e.count(`SELECT count(*) FROM payments WHERE payment_id='pi' AND status='succeeded'`); n != 1 {
		t.Fatal("the defect should let a refunded payment go back to succeeded")
	}
}

func TestDefectAckBeforeCommit(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectAckBeforeCommit}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		hold := make(chan struct{})
		rec := &recorder{block: map[fpPoint]chan struct{}{fpAfterResponse: hold}, reached: make(chan fpPoint, 1)}
		e.fps.set(rec)
		id := newID("evt_ack")
		d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
		replyc := make(chan reply, 1)
		go func() { r, _ := e.try(e.http.Client(), context.Background(), ep.Path, d); replyc <- r }()
		<-rec.reached
		r := <-replyc // the 2xx has been flushed: the client has it
		if r.Code != http.StatusOK {
			t.Fatalf("got %d", r.Code)
		}
		committed := e.keyRows(ep, id)
		close(hold)
		if defects == nil && committed != 1 {
			t.Fatal("clean reference acknowledged before its commit")
		}
		if defects != nil && committed != 0 {
			t.Fatal("ack-before-commit: the acknowledged event should not be committed yet")
		}
		deadline := time.Now().Add(5 * time.Second)
		for e.keyRows(ep, id) != 1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestDefectSkipSignatureAndTimestamp(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectSkipSignature}})
	d := build(e.ep("github", "acct_A"), newID("gh"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
	d.header.Set("X-Hub-Signature-256", "sha256=00")
	e.expect(e.send(d), 200, StatusProcessed, "")

	e = newEnv(t, Options{Defects: []string{DefectSkipTimestampCheck}})
	old := build(e.ep("stripe", "acct_A"), newID("evt"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now().Add(-24*time.Hour))
	e.expect(e.send(old), 200, StatusProcessed, "")
	old.header.Set("Stripe-Signature", "t=1,v1=00")
	e.expect(e.send(old), 401, StatusRejected, "bad_signature") // the signature itself is still checked
}
