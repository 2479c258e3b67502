package reference

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

func TestDefectNoDomainConstraint(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectNoDomainConstraint}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		for i := 0; i < 2; i++ { // two event IDs for one payment
			if r := e.send(build(ep, newID("evt"), store.TypePaymentSucceeded, obj{ID: "pi_dc", Amount: 7}, time.Now())); r.Code != 200 {
				t.Fatalf("defects %v: succeeded event answered %d %s", defects, r.Code, r.Reason)
			}
		}
		got := e.count(`SELECT count(*) FROM ledger_entries WHERE object_id = 'pi_dc' AND kind = 'payment'`)
		want := 1
		if defects != nil {
			want = 2
		}
		if got != want {
			t.Fatalf("defects %v: %d payment credits for one payment, want %d", defects, got, want)
		}
	}
}

// refund-check-then-act refuses a second refund one after the other, and
// refunds twice when two refund events for one payment meet: held at a lock on
// the ledger, the first after its check and its row update, the second behind
// the first's row lock, after its own check. The clean reference's second
// refund waits at its FOR UPDATE instead, and then reads refunded.
func TestDefectRefundCheckThenAct(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectRefundCheckThenAct}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		refund := func(pi string) delivery {
			return build(ep, newID("evt"), store.TypeChargeRefunded, obj{ID: pi, Amount: 7}, time.Now())
		}
		for _, pi := range []string{"pi_seq", "pi_race"} {
			if r := e.send(build(ep, newID("evt"), store.TypePaymentSucceeded, obj{ID: pi, Amount: 7}, time.Now())); r.Code != 200 {
				t.Fatalf("defects %v: succeeded event answered %d %s", defects, r.Code, r.Reason)
			}
		}
		for range 2 {
			if r := e.send(refund("pi_seq")); r.Code != 200 {
				t.Fatalf("defects %v: refund answered %d %s", defects, r.Code, r.Reason)
			}
		}
		release := e.gate("ledger_entries")
		var wg sync.WaitGroup
		for _, d := range []delivery{refund("pi_race"), refund("pi_race")} {
			wg.Add(1)
			go func() { defer wg.Done(); e.send(d) }()
		}
		// One at the ledger's lock, one behind it (on the payment's row lock).
		deadline := time.Now().Add(15 * time.Second)
		for e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("defects %v: the two refunds never both waited", defects)
			}
			time.Sleep(5 * time.Millisecond)
		}
		release()
		wg.Wait()
		seq := e.count(`SELECT count(*) FROM ledger_entries WHERE object_id = 'pi_seq' AND kind = 'refund'`)
		race := e.count(`SELECT count(*) FROM ledger_entries WHERE object_id = 'pi_race' AND kind = 'refund'`)
		want := 1
		if defects != nil {
			want = 2
		}
		if seq != 1 || race != want {
			t.Fatalf("defects %v: refunds one after the other %d (want 1), at once %d (want %d)", defects, seq, race, want)
		}
	}
}

func TestDefectSlowAck(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectSlowAck}})
	ep := e.ep("stripe", "acct_A")
	const n = 8
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := build(ep, newID("evt"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
			if r := e.send(d); r.Code != 200 {
				t.Errorf("answered %d", r.Code)
			}
		}()
	}
	wg.Wait()
	// One at a time, each after a 100 ms call: n concurrent deliveries take at
	// least n × 100 ms, however many cores and connections there are.
	if el := time.Since(start); el < n*slowAckWork {
		t.Fatalf("%d concurrent deliveries took %s; the defect serialises them behind %s each", n, el, slowAckWork)
	}
}

func TestDefectNoInputValidation(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectNoInputValidation}} {
		e := newEnv(t, Options{Defects: defects, MaxBodyBytes: 1 << 16})
		ep := e.ep("stripe", "acct_A")

		// A body over the limit, correctly signed.
		big := build(ep, newID("evt_big"), store.TypeCashBalance, obj{ID: "cb", Amount: 1, Currency: string(bytes.Repeat([]byte("x"), 1<<17))}, time.Now())
		bigCode := e.send(big).Code

		// No event ID, correctly signed.
		noID := build(ep, "", store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
		noIDCode := e.send(noID).Code

		// Malformed JSON, correctly signed.
		bad := delivery{ep: ep, header: http.Header{"Content-Type": {"application/json"}}, body: []byte(`{"id":"evt_x","type":`)}
		bad.sign(time.Now())
		r, err := e.try(e.http.Client(), t.Context(), ep.Path, bad)
		badCode := r.Code
		if err != nil { // a 500 body is JSON too; any transport error is a test failure
			t.Fatalf("malformed JSON: %v", err)
		}

		emptyRows := e.count(`SELECT count(*) FROM processed_webhook_events WHERE event_id = ''`)
		if defects == nil {
			if bigCode != http.StatusRequestEntityTooLarge || noIDCode != http.StatusBadRequest || badCode != http.StatusBadRequest || emptyRows != 0 {
				t.Fatalf("clean: oversized %d, no ID %d, malformed %d, empty-ID rows %d; want 413, 400, 400, 0", bigCode, noIDCode, badCode, emptyRows)
			}
			continue
		}
		if bigCode != 200 || noIDCode != 200 || badCode != 500 || emptyRows != 1 {
			t.Fatalf("defect: oversized %d, no ID %d, malformed %d, empty-ID rows %d; want 200, 200, 500, 1", bigCode, noIDCode, badCode, emptyRows)
		}
	}
}

func TestDefectRejectUnknownTypes(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectRejectUnknownTypes}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("github", "acct_A")
		r := e.send(build(ep, newID("gh"), "hookcert.conformance.unhandled", obj{ID: "x"}, time.Now()))
		want := 200
		if defects != nil {
			want = 400
		}
		if r.Code != want {
			t.Fatalf("defects %v: unknown type answered %d (%s), want %d", defects, r.Code, r.Reason, want)
		}
	}
}

func TestDefectMemoryDedup(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectMemoryDedup}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		id := newID("evt_mem")
		d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 5}, time.Now())

		// Within one process the map does its job: concurrent copies and a later
		// redelivery are all answered duplicate but one.
		processed := 0
		for _, r := range e.fire(d, 8) {
			if r.Code != 200 {
				t.Fatalf("defects %v: concurrent copy answered %d %s/%s", defects, r.Code, r.Status, r.Reason)
			}
			if r.Status == StatusProcessed {
				processed++
			}
		}
		e.expect(e.send(d), 200, StatusDuplicate, "")
		if k, l := e.keyRows(ep, id), e.ledger(ep, id); processed != 1 || k != 1 || l != 1 {
			t.Fatalf("defects %v, one process: %d processed, %d key rows, %d ledger entries; want 1, 1, 1", defects, processed, k, l)
		}
		// An attempt that rolls back gives its claim back: the provider's retry
		// after the precondition holds is applied, not taken for a duplicate.
		refund := build(ep, newID("evt_mem_r"), store.TypeChargeRefunded, obj{ID: "pi_mem", Amount: 5}, time.Now())
		e.expect(e.send(refund), 503, StatusRetry, "failed_precondition")
		e.expect(e.send(build(ep, newID("evt_mem_s"), store.TypePaymentSucceeded, obj{ID: "pi_mem", Amount: 5}, time.Now())), 200, StatusProcessed, "")
		e.expect(e.send(refund), 200, StatusProcessed, "")

		// A restart (a fresh receiver on the same database, as after a crash that
		// lost the acknowledgement), then the provider's redelivery.
		restarted := newEnvOn(t, e.pool, Options{Defects: defects})
		got := restarted.send(d)
		k, l := e.keyRows(ep, id), e.ledger(ep, id)
		if defects == nil {
			restarted.expect(got, 200, StatusDuplicate, "")
			if k != 1 || l != 1 {
				t.Fatalf("clean after restart: %d key rows, %d ledger entries; want 1 and 1", k, l)
			}
			continue
		}
		restarted.expect(got, 200, StatusProcessed, "")
		if k != 2 || l != 2 {
			t.Fatalf("memory-dedup after restart: %d key rows, %d ledger entries; the defect should apply the redelivery again (2 and 2)", k, l)
		}
		// The damage is left for a clean receiver to refuse, as check-then-insert's.
		if _, err := New(context.Background(), e.pool, Options{}); !errors.Is(err, store.ErrDuplicateKeys) {
			t.Fatalf("clean start after memory-dedup's duplicates: %v, want ErrDuplicateKeys", err)
		}
	}
}

func TestDefectAckOnError(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectAckOnError}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")

		// A failed precondition: a refund of a payment that has not succeeded.
		refundID := newID("evt_refund")
		refund := e.send(build(ep, refundID, store.TypeChargeRefunded, obj{ID: "pi_none", Amount: 3}, time.Now()))

		// A database error: the ledger refuses the entry, so the insert fails and
		// the transaction rolls back.
		if _, err := e.pool.Exec(context.Background(),
			`ALTER TABLE ledger_entries ADD CONSTRAINT test_small_amounts CHECK (amount < 1000) NOT VALID`); err != nil {
			t.Fatal(err)
		}
		bigID := newID("evt_big")
		dbErr := e.send(build(ep, bigID, store.TypeCashBalance, obj{ID: "cb", Amount: 5000}, time.Now()))

		// Bad input is still refused whatever the defect.
		forged := build(ep, newID("evt_forged"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
		forged.header.Set("Stripe-Signature", "t=1,v1=00")
		e.expect(e.send(forged), 401, StatusRejected, "bad_signature")

		if n := e.totalRows(); n != 0 {
			t.Fatalf("defects %v: %d rows after two failed deliveries; both must roll back", defects, n)
		}
		if defects == nil {
			e.expect(refund, 503, StatusRetry, "failed_precondition")
			e.expect(dbErr, 500, StatusRetry, "transient_error")
			continue
		}
		// Acknowledged with nothing stored: the provider will never send them again.
		e.expect(refund, 200, StatusProcessed, "")
		e.expect(dbErr, 200, StatusProcessed, "")
	}
}

func TestDefectApplyUnknownTypes(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectApplyUnknownTypes}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("github", "acct_A")
		id := newID("gh_unknown")
		r := e.send(build(ep, id, "hookcert.conformance.unhandled", obj{ID: "x", Amount: 4}, time.Now()))
		entries := e.ledger(ep, id)
		credited := e.count(`SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE event_id = $1`, id)
		if defects == nil {
			e.expect(r, 200, StatusIgnored, "unhandled_type")
			if entries != 0 {
				t.Fatalf("clean: %d ledger entries for an unknown type, want 0", entries)
			}
			continue
		}
		e.expect(r, 200, StatusProcessed, "")
		if entries != 1 || credited != 4 {
			t.Fatalf("apply-unknown-types: %d ledger entries crediting %d, want 1 crediting 4", entries, credited)
		}
	}
	if err := ValidateDefects([]string{DefectApplyUnknownTypes, DefectRejectUnknownTypes}); err == nil {
		t.Fatal("apply-unknown-types with reject-unknown-types was accepted")
	}
}

func TestDefectRotatedSecret(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectRotatedSecret}} {
		e := newEnv(t, Options{Defects: defects})
		gh, st := e.ep("github", "acct_A"), e.ep("stripe", "acct_A")
		id := newID("gh_rotated")
		r := e.send(build(gh, id, "customer_cash_balance_transaction.created", obj{ID: "x", Amount: 4}, time.Now()))
		other := newID("st_rotated")
		e.expect(e.send(build(st, other, "customer_cash_balance_transaction.created", obj{ID: "y", Amount: 4}, time.Now())), 200, StatusProcessed, "")
		if defects == nil {
			e.expect(r, 200, StatusProcessed, "")
			continue
		}
		if r.Code != 401 || e.keyRows(gh, id) != 0 {
			t.Fatalf("rotated-secret: a genuine GitHub delivery got %d and %d key rows, want 401 and 0", r.Code, e.keyRows(gh, id))
		}
	}
}

func TestDefectSkipLargeBodies(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectSkipLargeBodies}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		// A legitimate 100 KiB event: under the 1 MiB limit, over the defect's cut.
		id := newID("evt_large")
		large := build(ep, id, store.TypeCashBalance, obj{ID: "cb_large", Amount: 7, Currency: "usd"}, time.Now())
		large.body = append(large.body[:len(large.body)-1], append(bytes.Repeat([]byte(" "), 100<<10), '}')...)
		large.sign(time.Now())
		got := e.send(large)
		if got.Code != http.StatusOK {
			t.Fatalf("defects %v: a legitimate 100 KiB event was answered %d", defects, got.Code)
		}
		rows, credits := e.keyRows(ep, id), e.ledger(ep, id)
		if defects == nil && (rows != 1 || credits != 1) {
			t.Fatalf("correct receiver: %d key rows and %d credits for a large event, want 1 and 1", rows, credits)
		}
		if defects != nil && (rows != 0 || credits != 0) {
			t.Fatalf("skip-large-bodies: %d key rows and %d credits, want the event acknowledged and dropped (0 and 0)", rows, credits)
		}
	}
}

// dedup-window remembers the last 32 keys and nothing else: an immediate
// redelivery is a duplicate, one after 40 other events is applied again.
func TestDefectDedupWindow(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectDedupWindow}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		id := newID("evt_win")
		d := build(ep, id, store.TypeCashBalance, obj{ID: "cb", Amount: 5}, time.Now())
		e.expect(e.send(d), 200, StatusProcessed, "")
		e.expect(e.send(d), 200, StatusDuplicate, "")
		for i := range 40 {
			e.expect(e.send(build(ep, newID(fmt.Sprintf("evt_win%d_", i)), store.TypeCashBalance, obj{ID: "cb", Amount: 5}, time.Now())), 200, StatusProcessed, "")
		}
		got := e.send(d)
		k, l := e.keyRows(ep, id), e.ledger(ep, id)
		if defects == nil {
			e.expect(got, 200, StatusDuplicate, "")
			if k != 1 || l != 1 {
				t.Fatalf("clean: %d key rows, %d ledger entries after a late redelivery; want 1 and 1", k, l)
			}
			continue
		}
		e.expect(got, 200, StatusProcessed, "")
		if k != 2 || l != 2 {
			t.Fatalf("dedup-window: %d key rows, %d ledger entries; the defect should apply the late redelivery again (2 and 2)", k, l)
		}
	}
}

// drop-first-refund acknowledges the first refund and leaves its payment
// succeeded, with its key recorded; the next refund applies. The clean
// reference refunds both.
func TestDefectDropFirstRefund(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectDropFirstRefund}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("stripe", "acct_A")
		for _, pi := range []string{"pi_first", "pi_second"} {
			for _, typ := range []string{store.TypePaymentCreated, store.TypePaymentSucceeded, store.TypeChargeRefunded} {
				if r := e.send(build(ep, newID("evt"), typ, obj{ID: pi, Amount: 7}, time.Now())); r.Code != 200 {
					t.Fatalf("defects %v: %s answered %d %s", defects, typ, r.Code, r.Reason)
				}
			}
		}
		first := e.count(`SELECT count(*) FROM payments WHERE payment_id = 'pi_first' AND status = 'refunded'`)
		second := e.count(`SELECT count(*) FROM payments WHERE payment_id = 'pi_second' AND status = 'refunded'`)
		keys := e.count(`SELECT count(*) FROM processed_webhook_events`)
		want := 1
		if defects != nil {
			want = 0
		}
		if first != want || second != 1 || keys != 6 {
			t.Fatalf("defects %v: first payment refunded %d (want %d), second %d (want 1), %d keys (want 6)", defects, first, want, second, keys)
		}
	}
}
