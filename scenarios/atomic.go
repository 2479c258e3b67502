package scenarios

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hookcert/hookcert/simulator"
)

// Failpoint names of the failpoint protocol (docs/failpoints.md).
const (
	fpAfterInsertBeforeCommit   = "after-insert-before-commit"
	fpAfterCommitBeforeResponse = "after-commit-before-response"
	fpAfterResponse             = "after-response"
)

var _ = Describe("ATOMIC: the key and the change commit together", Label("ATOMIC"), func() {
	It("ATOMIC-1 a crash before commit leaves nothing, and the redelivery applies once", labels("ATOMIC-1"), func(ctx SpecContext) {
		s := begin(ctx, "ATOMIC-1")
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)

		s.arm(fpAfterInsertBeforeCommit, k.EventID)
		a := s.send(ep, ev, simulator.SendOptions{})
		if is2xx(a.Status) {
			s.deviate("delivery was acknowledged although the receiver was to crash before its commit: %s", describe(a))
		}
		s.crashedRestart()
		s.expectRows(k, 0, "after a crash before commit")
		s.expectEffects(k, 0, "after a crash before commit")

		s.expectAcked("redelivery after the crash", s.send(ep, ev, simulator.SendOptions{Attempt: 2}))
		s.expectRows(k, 1, "after the redelivery")
		s.expectEffects(k, 1, "after the redelivery")
		s.verdict()
	})

	It("ATOMIC-2 a failed precondition rolls back the key and is retried successfully", labels("ATOMIC-2"), func(ctx SpecContext) {
		s := begin(ctx, "ATOMIC-2")
		ep := s.primary()
		pay := s.newID("pi")
		refund := s.event(ep, typeRefunded, pay)
		k := s.key(ep, refund)

		// The refund arrives before the payment it refunds exists.
		a := s.send(ep, refund, simulator.SendOptions{})
		if is2xx(a.Status) {
			s.deviate("refund of a payment that has not succeeded was acknowledged (%s); the provider will not retry it", describe(a))
		}
		s.expectRows(k, 0, "after the failed precondition")
		s.expectEffects(k, 0, "after the failed precondition")

		created := s.event(ep, typePayCreated, pay)
		succeeded := s.event(ep, typePaySucceeded, pay)
		succeeded.Amount = refund.Amount
		s.expectAcked("payment created", s.send(ep, created, simulator.SendOptions{}))
		s.expectAcked("payment succeeded", s.send(ep, succeeded, simulator.SendOptions{}))

		s.expectAcked("refund redelivered once the payment succeeded", s.send(ep, refund, simulator.SendOptions{Attempt: 2}))
		s.expectRows(k, 1, "after the refund's redelivery")
		s.expectEffects(k, 1, "after the refund's redelivery")
		if st, found := s.payment(ep, pay); !found || st != "refunded" {
			s.deviate("payment %s: status %q (found %v) after the refund's redelivery, want \"refunded\"", pay, st, found)
		}
		s.verdict()
	})

	It("ATOMIC-3 a lost database connection mid-transaction leaves nothing partial", labels("ATOMIC-3"), func(ctx SpecContext) {
		s := begin(ctx, "ATOMIC-3")
		if s.env.EffectTable == "" {
			Skip("not applicable: observe.postgres.effect_table is not configured, so the harness cannot hold the receiver inside its transaction")
		}
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)

		// Hold the effect table so the receiver stops inside its transaction, after
		// the key and before the effect; then cut its database sessions.
		g, err := s.env.DB.Hold(s.ctx, s.env.EffectTable)
		if err != nil {
			s.abort("locking %s: %v", s.env.EffectTable, err)
		}
		var first simulator.AttemptRecord
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer GinkgoRecover()
			first = s.send(ep, ev, simulator.SendOptions{})
		}()
		waited := 0
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && waited == 0; time.Sleep(10 * time.Millisecond) {
			if waited, err = g.Waiters(s.ctx); err != nil {
				_ = g.Release(context.WithoutCancel(s.ctx))
				s.abort("counting waiters: %v", err)
			}
		}
		pids, err := s.env.DB.TerminateInTransaction(s.ctx)
		_ = g.Release(context.WithoutCancel(s.ctx))
		<-done
		if err != nil {
			s.abort("terminating the receiver's sessions: %v", err)
		}
		if waited == 0 {
			s.abort("the receiver never waited on %s; cannot cut it mid-transaction", s.env.EffectTable)
		}
		s.note("%d session(s) waited on %s; terminated backends %v mid-transaction", waited, s.env.EffectTable, pids)
		if is2xx(first.Status) {
			s.deviate("delivery acknowledged although its database session was terminated mid-transaction: %s", describe(first))
		}
		s.expectRows(k, 0, "after the connection loss")
		s.expectEffects(k, 0, "after the connection loss")

		s.expectAcked("redelivery after the connection loss", s.send(ep, ev, simulator.SendOptions{Attempt: 2}))
		s.expectRows(k, 1, "after the redelivery")
		s.expectEffects(k, 1, "after the redelivery")
		s.verdict()
	})

	It("ATOMIC-4 a crash after commit, before the answer, makes the redelivery harmless", labels("ATOMIC-4"), func(ctx SpecContext) {
		s := begin(ctx, "ATOMIC-4")
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)

		s.arm(fpAfterCommitBeforeResponse, k.EventID)
		a := s.send(ep, ev, simulator.SendOptions{})
		s.note("first attempt: %s (outcome %s)", describe(a), a.Outcome)
		s.crashedRestart()
		s.expectRows(k, 1, "after a crash after commit")
		s.expectEffects(k, 1, "after a crash after commit")

		s.expectAcked("redelivery after commit uncertainty", s.send(ep, ev, simulator.SendOptions{Attempt: 2}))
		s.expectRows(k, 1, "after the redelivery")
		s.expectEffects(k, 1, "after the redelivery")
		s.verdict()
	})
})
