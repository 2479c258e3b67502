package reference

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/reference/store"
)

func newSink(t *testing.T) *sink.Sink {
	t.Helper()
	s, err := sink.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// runDispatcher runs the server's outbox dispatcher until the test ends.
func (e *env) runDispatcher() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.outbox.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

// waitOutbox waits until the event's one outbox message reaches state.
func (e *env) waitOutbox(k store.Key, state string) store.OutboxEntry {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := store.LookupOutbox(context.Background(), e.pool, k)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(got) > 1 {
			e.t.Fatalf("%d outbox messages for one event", len(got))
		}
		if len(got) == 1 && got[0].State == state {
			return got[0]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("outbox message %+v, want state %s", got, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// refund delivers a payment and its refund and returns the refund's key.
func (e *env) refund(ep Endpoint, wantCode int, status string) store.Key {
	e.t.Helper()
	pay := newID("pi_out")
	e.expect(e.send(build(ep, newID("evt_paid"), store.TypePaymentSucceeded, obj{ID: pay, Amount: 700, Currency: "usd", Status: "succeeded"}, time.Now())), wantCode, status, "")
	if status == StatusAccepted {
		time.Sleep(50 * time.Millisecond) // let the payment apply first (a refund before it is retried anyway)
	}
	id := newID("evt_refund_out")
	e.expect(e.send(build(ep, id, store.TypeChargeRefunded, obj{ID: pay, Amount: 700, Currency: "usd"}, time.Now())), wantCode, status, "")
	return store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: id}
}

// Inbox mode: the worker's business transaction writes the message; the first send
// is applied downstream but its response lost, the second gets a 503, the third a
// replay of the first response: sent, applied once, one key throughout.
func TestOutboxLostResponseAppliedOnce(t *testing.T) {
	s := newSink(t)
	s.LoseNext(1)
	s.FailNext(1, http.StatusServiceUnavailable)
	e := newEnv(t, Options{Mode: ModeInbox, Inbox: fastInbox(2), Outbox: OutboxOptions{SinkURL: s.URL() + "/v1/refunds", Timeout: 2 * time.Second}})
	e.runWorkers()
	e.runDispatcher()
	ep := e.ep("stripe", "acct_A")
	k := e.refund(ep, http.StatusAccepted, StatusAccepted)
	e.waitState(ep, k.EventID, store.InboxDone)
	got := e.waitOutbox(k, store.OutboxSent)
	key := store.OutboxKey(k, store.OutboxRefund)
	if got.IdempotencyKey != key || got.Attempts != 3 || got.LastStatus != 200 {
		t.Fatalf("sent message %+v, want key %s after 3 attempts", got, key)
	}
	if n := s.Applied(key); n != 1 {
		t.Fatalf("downstream applied the refund %d times, want 1", n)
	}
	calls := s.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3: %+v", len(calls), calls)
	}
	for i, want := range []string{sink.OutcomeLost, sink.OutcomeFailed, sink.OutcomeReplayed} {
		if calls[i].Outcome != want || calls[i].IdempotencyKey != key || calls[i].BodySHA256 != calls[0].BodySHA256 || calls[i].Path != "/v1/refunds" {
			t.Fatalf("call %d: %+v, want %s with the same key and body", i, calls[i], want)
		}
	}
	// A redelivery of the refund writes no second message.
	e.expect(e.send(build(ep, k.EventID, store.TypeChargeRefunded, obj{ID: "whatever", Amount: 700}, time.Now())), http.StatusOK, StatusDuplicate, "")
	if n := e.count(`SELECT count(*) FROM outbox_messages`); n != 1 {
		t.Fatalf("%d outbox messages, want 1", n)
	}
}

// Sync mode: a sink that keeps failing dead-letters the message after MaxAttempts,
// with its last status; nothing is applied downstream.
func TestOutboxDeadLetterAfterMaxAttempts(t *testing.T) {
	s := newSink(t)
	s.FailNext(100, http.StatusInternalServerError)
	retry := fastInbox(0)
	retry.MaxAttempts = 3
	e := newEnv(t, Options{Inbox: retry, Outbox: OutboxOptions{SinkURL: s.URL()}})
	e.runDispatcher()
	k := e.refund(e.ep("stripe", "acct_A"), http.StatusOK, StatusProcessed)
	got := e.waitOutbox(k, store.OutboxDead)
	if got.Attempts != 3 || got.LastStatus != 500 {
		t.Fatalf("dead letter %+v, want 3 attempts and status 500", got)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(s.Calls()); n != 3 {
		t.Fatalf("%d calls, want 3 (none after the dead letter)", n)
	}
	if n := s.Applied(store.OutboxKey(k, store.OutboxRefund)); n != 0 {
		t.Fatalf("applied %d", n)
	}
}

// A dispatcher that dies after the sink applied a message but before recording it
// leaves the message claimed; after its lease it is resent with the same key, and
// the sink answers with the first response: applied once.
func TestOutboxResendAfterDispatcherCrash(t *testing.T) {
	s := newSink(t)
	retry := fastInbox(0)
	retry.Lease = 50 * time.Millisecond
	e := newEnv(t, Options{Inbox: retry, Outbox: OutboxOptions{SinkURL: s.URL()}})
	k := e.refund(e.ep("stripe", "acct_A"), http.StatusOK, StatusProcessed)
	ctx := context.Background()
	msgs, err := store.ClaimOutbox(ctx, e.pool, "crashed", 50*time.Millisecond, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("claim: %v %v", msgs, err)
	}
	// What the crashed dispatcher got out before it died.
	req, _ := http.NewRequest(http.MethodPost, s.URL(), bytes.NewReader(msgs[0].Body))
	req.Header.Set("Idempotency-Key", msgs[0].IdempotencyKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(80 * time.Millisecond)
	if n, err := store.ReclaimOutbox(ctx, e.pool, 5, 10); err != nil || n != 1 {
		t.Fatalf("reclaim: %d %v", n, err)
	}
	if n, err := e.srv.outbox.Step(ctx, "survivor"); err != nil || n != 1 {
		t.Fatalf("Step: %d %v", n, err)
	}
	got := e.waitOutbox(k, store.OutboxSent)
	key := store.OutboxKey(k, store.OutboxRefund)
	calls := s.Calls()
	if got.Attempts != 2 || s.Applied(key) != 1 || len(calls) != 2 || calls[1].Outcome != sink.OutcomeReplayed || calls[1].IdempotencyKey != key {
		t.Fatalf("%+v, calls %+v, applied %d; want sent after 2 attempts, the resend replayed, applied once", got, calls, s.Applied(key))
	}
	// Other event types write no message.
	if n := e.count(`SELECT count(*) FROM outbox_messages`); n != 1 {
		t.Fatalf("%d outbox messages, want only the refund's", n)
	}
}

// credit delivers one cash balance credit and returns its key.
func (e *env) credit(ep Endpoint, wantCode int, status string) store.Key {
	e.t.Helper()
	id := newID("evt_credit_out")
	e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 250, Currency: "eur"}, time.Now())), wantCode, status, "")
	return store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: id}
}

// creditBody is the message body a credit of e.credit sends downstream.
func creditBody(k store.Key) []byte {
	return mustJSON(store.CreditMessage{Source: k.Source, AccountID: k.AccountID, EventID: k.EventID,
		ObjectID: "cb_" + k.EventID, Amount: 250, Currency: "eur"})
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// An applied credit writes a "credit" message in its business transaction, in
// both modes; its body names the event, its key is stable, and it is applied once
// downstream. A credit that rolls back writes nothing and calls nothing.
func TestOutboxCreditBothModes(t *testing.T) {
	for _, mode := range []string{ModeSync, ModeInbox} {
		t.Run(mode, func(t *testing.T) {
			s := newSink(t)
			e := newEnv(t, Options{Mode: mode, Inbox: fastInbox(2), Outbox: OutboxOptions{SinkURL: s.URL()}})
			if mode == ModeInbox {
				e.runWorkers()
			}
			e.runDispatcher()
			ep := e.ep("stripe", "acct_A")
			code, status := http.StatusOK, StatusProcessed
			if mode == ModeInbox {
				code, status = http.StatusAccepted, StatusAccepted
			}
			k := e.credit(ep, code, status)
			got := e.waitOutbox(k, store.OutboxSent)
			key := store.OutboxKey(k, store.OutboxCredit)
			if got.IdempotencyKey != key || !strings.HasPrefix(key, "hookcert-credit-") || s.Applied(key) != 1 {
				t.Fatalf("message %+v (applied %d), want key %s applied once", got, s.Applied(key), key)
			}
			var kind string
			var body []byte
			if err := e.pool.QueryRow(context.Background(), `SELECT kind, body FROM outbox_messages WHERE event_id = $1`, k.EventID).Scan(&kind, &body); err != nil {
				t.Fatal(err)
			}
			var msg map[string]any
			if err := json.Unmarshal(body, &msg); err != nil {
				t.Fatal(err)
			}
			if kind != store.OutboxCredit || msg["event_id"] != k.EventID || msg["source"] != k.Source || msg["account_id"] != k.AccountID ||
				msg["object_id"] != "cb_"+k.EventID || msg["amount"] != float64(250) || msg["currency"] != "eur" {
				t.Fatalf("kind %s, body %s", kind, body)
			}
			calls := s.Calls()
			if len(calls) != 1 || calls[0].BodySHA256 != sha256Hex(body) {
				t.Fatalf("calls %+v, want one carrying the stored body", calls)
			}
		})
	}
	t.Run("rollback", func(t *testing.T) {
		s := newSink(t)
		e := newEnv(t, Options{Inbox: fastInbox(0), Outbox: OutboxOptions{SinkURL: s.URL()}})
		e.runDispatcher()
		e.fps.set(&recorder{fail: map[fpPoint]error{fpAfterInsertBeforeCommit: errors.New("injected")}})
		ep := e.ep("stripe", "acct_A")
		e.credit(ep, http.StatusInternalServerError, StatusRetry)
		time.Sleep(200 * time.Millisecond)
		if n := e.count(`SELECT count(*) FROM outbox_messages`); n != 0 || len(s.Calls()) != 0 {
			t.Fatalf("a rolled-back credit left %d outbox messages and %d calls", n, len(s.Calls()))
		}
	})
}
