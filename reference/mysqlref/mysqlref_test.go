package mysqlref

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// One event: 200 processed, its key row and one ledger row; its redelivery
// 200 duplicate and nothing more; the same event ID on another account is
// another event.
func TestDeliveryAppliedOnce(t *testing.T) {
	e := newEnv(t)
	a, b := e.eps[0], e.eps[1]
	d := charge(a, "evt_"+randomHex(t), "ch_1")
	id := eventID(d)
	e.expect(e.send(d), 200, StatusProcessed)
	e.expect(e.send(d), 200, StatusDuplicate)
	if k, l := e.keyRows(a, id), e.ledger(a, id); k != 1 || l != 1 {
		t.Fatalf("after a redelivery: %d key rows, %d ledger rows; want 1 and 1", k, l)
	}
	// Event IDs are compared byte for byte: another case is another event.
	e.expect(e.send(charge(a, strings.ToUpper(id), "ch_1")), 200, StatusProcessed)
	e.expect(e.send(charge(b, id, "ch_1")), 200, StatusProcessed)
	if k, l := e.keyRows(b, id), e.ledger(b, id); k != 1 || l != 1 {
		t.Fatalf("account B: %d key rows, %d ledger rows; want 1 and 1", k, l)
	}
}

// Every unusable delivery is refused before anything is written.
func TestRefusedDeliveriesLeaveNothing(t *testing.T) {
	e := newEnv(t)
	ep := e.eps[0]
	good := charge(ep, "evt_"+randomHex(t), "ch_r")
	badSig := charge(ep, eventID(good), "ch_r")
	badSig.header.Set("Stripe-Signature", "t="+strings.Split(strings.TrimPrefix(badSig.header.Get("Stripe-Signature"), "t="), ",")[0]+",v1=00")
	tampered := good
	tampered.body = []byte(strings.Replace(string(good.body), "1250", "9999", 1))
	stale := stripeEvent(ep, eventID(good), TypeChargeSucceeded, map[string]any{"id": "ch_r", "amount": 1, "currency": "usd"}, time.Now().Add(-time.Hour))
	otherSecret := ep
	otherSecret.Secret = "whsec_other"
	huge := signed(ep, []byte(`{"id": "`+eventID(good)+`", "type": "charge.succeeded", "pad": "`+strings.Repeat("x", DefaultMaxBodyBytes)+`"}`), time.Now())
	for _, c := range []struct {
		name   string
		d      delivery
		code   int
		reason string
	}{
		{"bad signature", badSig, 401, "bad_signature"},
		{"tampered body", tampered, 401, "bad_signature"},
		{"another secret", charge(otherSecret, eventID(good), "ch_r"), 401, "bad_signature"},
		{"stale timestamp", stale, 401, "stale_timestamp"},
		{"malformed JSON", signed(ep, []byte(`{"id": "evt_x", "type": `), time.Now()), 400, "malformed_json"},
		{"no event ID", signed(ep, []byte(`{"type": "charge.succeeded", "data": {"object": {"id": "ch_r", "amount": 1}}}`), time.Now()), 400, "missing_event_id"},
		{"no amount", stripeEvent(ep, eventID(good), TypeChargeSucceeded, map[string]any{"id": "ch_r"}, time.Now()), 400, "invalid_object"},
		{"too large", huge, 413, "body_too_large"},
	} {
		r := e.send(c.d)
		if r.err != nil || r.code != c.code || r.status != StatusRejected || r.reason != c.reason {
			t.Errorf("%s: got %d %s %s (%v), want %d rejected %s", c.name, r.code, r.status, r.reason, r.err, c.code, c.reason)
		}
	}
	if n := e.count("SELECT COUNT(*) FROM webhook_events") + e.count("SELECT COUNT(*) FROM ledger_entries"); n != 0 {
		t.Fatalf("refused deliveries left %d rows", n)
	}
	// The genuine delivery still goes through afterwards.
	e.expect(e.send(good), 200, StatusProcessed)
}

// A type the receiver does not handle is acknowledged, its key recorded, and
// nothing applied.
func TestUnhandledTypeAcknowledged(t *testing.T) {
	e := newEnv(t)
	ep := e.eps[0]
	id := "evt_" + randomHex(t)
	e.expect(e.send(stripeEvent(ep, id, "invoice.upcoming", map[string]any{"id": "in_1", "amount_due": 5}, time.Now())), 200, StatusIgnored)
	if k, l := e.keyRows(ep, id), e.count("SELECT COUNT(*) FROM ledger_entries"); k != 1 || l != 0 {
		t.Fatalf("%d key rows, %d ledger rows; want 1 and 0", k, l)
	}
}

// Only a newer version changes a subscription; a deletion leaves a tombstone an
// older update cannot bring back.
func TestSubscriptionVersionGuard(t *testing.T) {
	for _, defect := range []string{"", DefectLastWriteWins} {
		t.Run("defect="+defect, func(t *testing.T) {
			var e *env
			if defect == "" {
				e = newEnv(t)
			} else {
				e = newEnv(t, defect)
			}
			ep := e.eps[0]
			sub := "sub_" + randomHex(t)
			e.expect(e.send(subscription(ep, "evt_"+randomHex(t), TypeSubscriptionUpdated, sub, 2)), 200, StatusProcessed)
			late := e.send(subscription(ep, "evt_"+randomHex(t), TypeSubscriptionUpdated, sub, 1))
			v, _, _ := e.subscription(ep, sub)
			e.expect(e.send(subscription(ep, "evt_"+randomHex(t), TypeSubscriptionDeleted, sub, 3)), 200, StatusProcessed)
			e.send(subscription(ep, "evt_"+randomHex(t), TypeSubscriptionUpdated, sub, 2))
			v2, st, found := e.subscription(ep, sub)
			if defect == "" {
				e.expect(late, 200, StatusIgnored)
				if v != 2 || v2 != 3 || st != "deleted" || !found {
					t.Fatalf("after v2, v1: version %d; after delete v3, v2: %d %s; want 2, then 3 deleted", v, v2, st)
				}
				return
			}
			// The defect: the late v1 overwrote v2, and v2 revived the deleted one.
			if v != 1 || v2 != 2 || st != "active" {
				t.Fatalf("last-write-wins: version %d after v1; %d %s after the late v2; want 1, then 2 active", v, v2, st)
			}
		})
	}
}

// Copies held at the harness's lock of the event table, released together:
// the unique key lets one apply and the others get 200 duplicate. With the
// check-then-insert defect every copy passes its SELECT while held, and all
// insert and apply: the race the lock gate forces.
func TestLockGatedCopies(t *testing.T) {
	const copies = 4
	for _, defect := range []string{"", DefectCheckThenInsert} {
		t.Run("defect="+defect, func(t *testing.T) {
			var e *env
			if defect == "" {
				e = newEnv(t)
			} else {
				e = newEnv(t, defect)
			}
			ep := e.eps[0]
			d := charge(ep, "evt_"+randomHex(t), "ch_gate")
			release := e.lock(EventTable)
			replies := e.sendAsync(d, copies)
			// Every copy is inside its transaction, at its INSERT; under the
			// defect each has already run its SELECT and seen no key.
			e.waitingAtLock(copies)
			release()
			statuses := map[string]int{}
			for range copies {
				r := <-replies
				if r.err != nil || r.code != 200 {
					t.Fatalf("a copy got %d %s %s (%v), want 200", r.code, r.status, r.reason, r.err)
				}
				statuses[r.status]++
			}
			k, l := e.keyRows(ep, eventID(d)), e.ledger(ep, eventID(d))
			if defect == "" {
				if k != 1 || l != 1 || statuses[StatusProcessed] != 1 || statuses[StatusDuplicate] != copies-1 {
					t.Fatalf("%d key rows, %d ledger rows, answers %v; want 1, 1, one processed", k, l, statuses)
				}
				return
			}
			if k != copies || l != copies || statuses[StatusProcessed] != copies {
				t.Fatalf("check-then-insert: %d key rows, %d ledger rows, answers %v; the defect should apply every copy (%d)", k, l, statuses, copies)
			}
			// The damage stays: a clean receiver refuses to start on it.
			if _, err := Open(context.Background(), e.dbURL, Options{Endpoints: e.eps}); err == nil || !strings.Contains(err.Error(), "duplicate event keys") {
				t.Fatalf("clean start on the defect's duplicates: %v, want ErrDuplicateKeys", err)
			}
		})
	}
}

// The effect table locked as hookcert's gate locks it: the delivery stops
// inside its transaction, after its key. The clean receiver has not answered
// (its answer follows COMMIT), and when its session is killed (a lost
// connection, or the crash the harness causes) it answers 500 and leaves
// nothing. With ack-before-commit the 200 is already out while the key is
// uncommitted, and the same kill loses an acknowledged event.
func TestAckFollowsCommit(t *testing.T) {
	for _, defect := range []string{"", DefectAckBeforeCommit} {
		t.Run("defect="+defect, func(t *testing.T) {
			var e *env
			if defect == "" {
				e = newEnv(t)
			} else {
				e = newEnv(t, defect)
			}
			ep := e.eps[0]
			d := charge(ep, "evt_"+randomHex(t), "ch_ack")
			release := e.lock(LedgerTable)
			replies := e.sendAsync(d, 1)
			waiting := e.waitingAtLock(1)
			var early *reply
			select {
			case r := <-replies:
				early = &r
			case <-time.After(500 * time.Millisecond):
			}
			committed := e.keyRows(ep, eventID(d))
			if committed != 0 {
				t.Fatalf("the key is committed while its effect waits: %d rows", committed)
			}
			if _, err := e.db.Exec("KILL CONNECTION ?", waiting[0]); err != nil {
				t.Fatal(err)
			}
			release()
			if defect == "" {
				if early != nil {
					t.Fatalf("answered %d %s before its COMMIT", early.code, early.status)
				}
				r := <-replies
				if r.code != http.StatusInternalServerError || r.status != StatusRetry {
					t.Fatalf("after its session was killed: %d %s, want 500 retry", r.code, r.status)
				}
				if k, l := e.keyRows(ep, eventID(d)), e.ledger(ep, eventID(d)); k != 0 || l != 0 {
					t.Fatalf("killed mid-transaction: %d key rows, %d ledger rows left", k, l)
				}
				// The provider retries, and the event applies once.
				e.expect(e.send(d), 200, StatusProcessed)
				if k, l := e.keyRows(ep, eventID(d)), e.ledger(ep, eventID(d)); k != 1 || l != 1 {
					t.Fatalf("after the retry: %d key rows, %d ledger rows; want 1 and 1", k, l)
				}
				return
			}
			if early == nil || early.code != 200 {
				t.Fatalf("ack-before-commit: no 200 while the transaction waited (got %+v)", early)
			}
			if k, l := e.keyRows(ep, eventID(d)), e.ledger(ep, eventID(d)); k != 0 || l != 0 {
				t.Fatalf("ack-before-commit: %d key rows, %d ledger rows; the acknowledged event should be lost", k, l)
			}
			if !waitFor(func() bool { return strings.Contains(e.log.String(), "acknowledged but not committed") }) {
				t.Errorf("the receiver did not log the lost event:\n%s", e.log.String())
			}
		})
	}
}

// Three inserts of one key: the test's own transaction first, then two copies
// that wait on it. When the first rolls back, both copies take their shared
// lock on the key and both want it exclusively: InnoDB kills one as a
// deadlock victim. The receiver runs it again, and both copies end 200 with
// one key row and one ledger row.
func TestDeadlockVictimRetried(t *testing.T) {
	e := newEnv(t)
	ep := e.eps[0]
	d := charge(ep, "evt_"+randomHex(t), "ch_dl")
	ctx := context.Background()
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO webhook_events (source, account_id, event_id, event_type) VALUES (?, ?, ?, 'x')", ep.KeySource(), ep.Account, eventID(d)); err != nil {
		t.Fatal(err)
	}
	replies := e.sendAsync(d, 2)
	// Both wait on the uncommitted key (PROCESSLIST, as MariaDB 10.11's
	// INNODB_TRX does not list every transaction in LOCK WAIT).
	e.waitSessions(2, "Update", "INSERT INTO webhook_events%", "on the uncommitted key")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	statuses := map[string]int{}
	for range 2 {
		r := <-replies
		if r.code != 200 {
			t.Fatalf("a copy got %d %s %s: the deadlock victim was not retried", r.code, r.status, r.reason)
		}
		statuses[r.status]++
	}
	if k, l := e.keyRows(ep, eventID(d)), e.ledger(ep, eventID(d)); k != 1 || l != 1 || statuses[StatusProcessed] != 1 {
		t.Fatalf("%d key rows, %d ledger rows, answers %v; want 1, 1, one processed", k, l, statuses)
	}
	if !strings.Contains(e.log.String(), "deadlock: running the transaction again") {
		t.Fatalf("no deadlock happened, so its retry was not tested:\n%s", e.log.String())
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
}

func eventID(d delivery) string {
	var env struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(d.body, &env)
	return env.ID
}

func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
