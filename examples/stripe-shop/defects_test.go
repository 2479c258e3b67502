package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Each planted defect, shown doing what the correct receiver does not.

func TestDefectLateOverwrite(t *testing.T) {
	sh := newShop(t, Config{Defect: DefectLateOverwrite})
	pi := uniq("pi")
	sh.createPayment(pi, "acct_a", 800)
	sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 800)))
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.payment_failed", now(), paymentIntentObj(pi, "requires_payment_method", 800))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.paymentStatus(pi); s != "failed" {
		t.Errorf("late-overwrite: a late failed left the payment %q; the defect regresses it to failed", s)
	}
	// And a late succeeded undoes a refund.
	pi2 := uniq("pi")
	sh.createPayment(pi2, "acct_a", 800)
	sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi2, "succeeded", 800)))
	sh.deliver("live", "acct_a", event(uniq("evt"), "charge.refunded", now(), refundedChargeObj(uniq("ch"), 800, pi2)))
	sh.deliver("live", "acct_a", event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi2, "succeeded", 800)))
	if s := sh.paymentStatus(pi2); s != "succeeded" {
		t.Errorf("late-overwrite: a late succeeded after the refund left %q; the defect moves it back to succeeded", s)
	}
	// The unique index still holds the credit to one.
	if n := sh.ledger("payment", "payment_id", pi2); n != 1 {
		t.Errorf("%d credits", n)
	}
}

func TestDefectMissingAck(t *testing.T) {
	sh := newShop(t, Config{Defect: DefectMissingAck})
	pi := uniq("pi")
	id := uniq("evt")
	ev := event(id, "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", 600))
	if got := sh.deliver("live", "acct_a", ev); got != 200 {
		t.Fatalf("missing-ack: an event for a missing payment got %d; the defect acknowledges it", got)
	}
	if n := sh.events("live", "acct_a", id); n != 1 {
		t.Errorf("missing-ack: %d event rows; the defect marks the event processed", n)
	}
	// Checkout's row commits; Stripe's redelivery is now a duplicate and the
	// payment never succeeds.
	sh.createPayment(pi, "acct_a", 600)
	if got := sh.deliver("live", "acct_a", ev); got != 200 {
		t.Fatal(got)
	}
	if s := sh.paymentStatus(pi); s != "processing" {
		t.Errorf("missing-ack: the payment is %q; the defect loses the success (processing)", s)
	}
	// Premature refunds (payment still processing) are still refused.
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "charge.refunded", now(), refundedChargeObj(uniq("ch"), 600, pi))); got != http.StatusConflict {
		t.Errorf("premature refund: %d, want 409", got)
	}
}

func TestDefectSmallBodyCap(t *testing.T) {
	sh := newShop(t, Config{Defect: DefectSmallBodyCap})
	obj := fmt.Sprintf(`{"id":%q,"object":"charge","amount":5,"currency":"eur","description":%q}`, uniq("ch"), strings.Repeat("d", 70<<10))
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "charge.succeeded", now(), obj)); got != http.StatusRequestEntityTooLarge {
		t.Errorf("small-body-cap: a 70 KB event got %d; the defect refuses it with 413", got)
	}
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "charge.succeeded", now(), chargeObj(uniq("ch"), 1, ""))); got != 200 {
		t.Errorf("small event: %d", got)
	}
}

func TestDefectMemoryDedup(t *testing.T) {
	sh := newShop(t, Config{Defect: DefectMemoryDedup})
	ch := uniq("ch")
	body := event(uniq("evt"), "charge.succeeded", now(), chargeObj(ch, 9, ""))
	sh.deliver("live", "acct_a", body)
	sh.deliver("live", "acct_a", body)
	if n := sh.ledger("charge", "charge_id", ch); n != 1 {
		t.Fatalf("memory-dedup still catches a redelivery to the same process: %d rows", n)
	}
	// Restart: the memory is gone, the redelivery books the charge again.
	sh.start(Config{Defect: DefectMemoryDedup})
	if got := sh.deliver("live", "acct_a", body); got != 200 {
		t.Fatal(got)
	}
	if n := sh.ledger("charge", "charge_id", ch); n != 2 {
		t.Errorf("memory-dedup: %d rows after a redelivery across a restart; the defect books it twice", n)
	}
	// Racing copies all pass the memory check.
	ch2 := uniq("ch")
	copies(t, sh, 4, event(uniq("evt"), "charge.succeeded", now(), chargeObj(ch2, 9, "")))
	if n := sh.ledger("charge", "charge_id", ch2); n != 4 {
		t.Errorf("memory-dedup: 4 racing copies booked %d rows; the defect books each", n)
	}
}

func TestParseDefect(t *testing.T) {
	for _, s := range []string{"", "none", "late-overwrite", "missing-ack", "small-body-cap", "memory-dedup", "refund-late-failure", "product-unordered"} {
		if _, err := parseDefect(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := parseDefect("late_overwrite"); err == nil {
		t.Error("an unknown defect was accepted")
	}
}
