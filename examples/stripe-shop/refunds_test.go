package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Refunds the shop starts itself: the row is written pending, then Stripe
// confirms with refund.updated or refund.failed.

func refundObj(id, paymentIntent, status string, amount int64) string {
	extra := ""
	if status == "failed" {
		extra = `,"failure_reason":"expired_or_canceled_card"`
	}
	return fmt.Sprintf(`{"id":%q,"object":"refund","amount":%d,"charge":%q,"currency":"eur","metadata":{},"payment_intent":%q,"reason":"requested_by_customer","status":%q%s}`,
		id, amount, "ch_"+strings.TrimPrefix(paymentIntent, "pi_"), paymentIntent, status, extra)
}

// startRefund is what the back office writes when it asks Stripe for a refund.
func (sh *shop) startRefund(id, payment, account string, amount int64) {
	sh.exec(`INSERT INTO refunds (id, account, payment_id, amount, currency, status) VALUES ($1, $2, $3, $4, 'eur', 'pending')`, id, account, payment, amount)
}

func (sh *shop) refundStatus(id string) string {
	sh.t.Helper()
	var s string
	if err := sh.pool.QueryRow(context.Background(), `SELECT status FROM refunds WHERE id = $1`, id).Scan(&s); err != nil {
		sh.t.Fatal(err)
	}
	return s
}

// succeededPayment is a checkout payment Stripe confirmed.
func (sh *shop) succeededPayment(account string, amount int64) string {
	pi := uniq("pi")
	sh.createPayment(pi, account, amount)
	if got := sh.deliver("live", account, event(uniq("evt"), "payment_intent.succeeded", now(), paymentIntentObj(pi, "succeeded", amount))); got != 200 {
		sh.t.Fatalf("payment_intent.succeeded: %d", got)
	}
	return pi
}

func TestRefundConfirmed(t *testing.T) {
	sh := newShop(t, Config{})
	pi := sh.succeededPayment("acct_a", 900)
	re := "re_" + strings.TrimPrefix(pi, "pi_")
	sh.startRefund(re, pi, "acct_a", 900)
	// A pending update (a pending_reason) changes nothing.
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "refund.updated", now(), refundObj(re, pi, "pending", 900))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.refundStatus(re); s != "pending" {
		t.Fatalf("after a pending update: %q", s)
	}
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "refund.updated", now(), refundObj(re, pi, "succeeded", 900))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.refundStatus(re); s != "succeeded" {
		t.Fatalf("after refund.updated: %q", s)
	}
	// A late failure is acknowledged and ignored.
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "refund.failed", now(), refundObj(re, pi, "failed", 900))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.refundStatus(re); s != "succeeded" {
		t.Errorf("a late refund.failed moved the refund to %q", s)
	}
}

func TestRefundFailed(t *testing.T) {
	sh := newShop(t, Config{})
	pi := sh.succeededPayment("acct_a", 700)
	re := "re_" + strings.TrimPrefix(pi, "pi_")
	sh.startRefund(re, pi, "acct_a", 700)
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "refund.failed", now(), refundObj(re, pi, "failed", 700))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.refundStatus(re); s != "failed" {
		t.Fatalf("after refund.failed: %q", s)
	}
	if n := sh.count(`SELECT count(*) FROM refunds WHERE id = $1 AND failure_reason = 'expired_or_canceled_card'`, re); n != 1 {
		t.Errorf("failure reason not kept")
	}
	// A late success does not undo the failure.
	sh.deliver("live", "acct_a", event(uniq("evt"), "refund.updated", now(), refundObj(re, pi, "succeeded", 700)))
	if s := sh.refundStatus(re); s != "failed" {
		t.Errorf("a late refund.updated moved a failed refund to %q", s)
	}
}

// An event for a refund the shop has not written yet is refused for a retry.
func TestRefundNotYetWritten(t *testing.T) {
	sh := newShop(t, Config{})
	pi := sh.succeededPayment("acct_a", 500)
	re := "re_" + strings.TrimPrefix(pi, "pi_")
	id := uniq("evt")
	ev := event(id, "refund.updated", now(), refundObj(re, pi, "succeeded", 500))
	if got := sh.deliver("live", "acct_a", ev); got != http.StatusConflict {
		t.Fatalf("an event for an unknown refund got %d, want 409", got)
	}
	if n := sh.events("live", "acct_a", id); n != 0 {
		t.Errorf("the refused event left %d rows", n)
	}
	sh.startRefund(re, pi, "acct_a", 500)
	if got := sh.deliver("live", "acct_a", ev); got != 200 {
		t.Fatal(got)
	}
	if s := sh.refundStatus(re); s != "succeeded" {
		t.Errorf("after the retry: %q", s)
	}
}

func TestDefectRefundLateFailure(t *testing.T) {
	sh := newShop(t, Config{Defect: DefectRefundLateFailure})
	pi := sh.succeededPayment("acct_a", 900)
	re := "re_" + strings.TrimPrefix(pi, "pi_")
	sh.startRefund(re, pi, "acct_a", 900)
	sh.deliver("live", "acct_a", event(uniq("evt"), "refund.updated", now(), refundObj(re, pi, "succeeded", 900)))
	if got := sh.deliver("live", "acct_a", event(uniq("evt"), "refund.failed", now(), refundObj(re, pi, "failed", 900))); got != 200 {
		t.Fatal(got)
	}
	if s := sh.refundStatus(re); s != "failed" {
		t.Errorf("refund-late-failure: a late failure left the refund %q; the defect overwrites it to failed", s)
	}
}
