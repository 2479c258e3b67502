package reference

import (
	"bytes"
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
