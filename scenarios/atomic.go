package scenarios

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Failpoint names of the failpoint protocol (docs/failpoints.md).
const (
	fpAfterInsertBeforeCommit   = "after-insert-before-commit"
	fpAfterCommitBeforeResponse = "after-commit-before-response"
	fpAfterResponse             = "after-response"
)

// Phases and roles the ATOMIC checkers read.
const (
	PhaseAfterCrash   = "after-crash"
	PhaseAfterRefusal = "after-refusal"
	PhaseAfterCut     = "after-cut"

	RoleDoomed      = "doomed"
	RoleRefundEarly = "refund-early"
)

func init() {
	register("ATOMIC-1", "a crash before commit leaves nothing, and the redelivery applies once", func(s *session) {
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)
		s.arm(fpAfterInsertBeforeCommit, k.EventID)
		a := s.send(ep, ev, RoleDoomed, simulator.SendOptions{})
		s.crashedRestart(fpAfterInsertBeforeCommit)
		s.state(k, PhaseAfterCrash, 0)
		s.redeliverUnlessAcked(ep, ev, k, a)
	})

	register("ATOMIC-2", "a failed precondition rolls back the key and is retried successfully", func(s *session) {
		ep := s.primary()
		pay := s.newID("pi")
		refund := s.event(ep, typeRefunded, pay)
		k := s.key(ep, refund)
		// The refund arrives before the payment it refunds exists.
		early := s.send(ep, refund, RoleRefundEarly, simulator.SendOptions{})
		s.state(k, PhaseAfterRefusal, 0)
		created := s.event(ep, typePayCreated, pay)
		succeeded := s.event(ep, typePaySucceeded, pay)
		succeeded.Amount = refund.Amount
		s.send(ep, created, RoleSetup, simulator.SendOptions{})
		s.send(ep, succeeded, RoleSetup, simulator.SendOptions{})
		if s.redeliverUnlessAcked(ep, refund, k, early) {
			s.payment(ep, pay, PhaseAfter)
		}
	})

	register("ATOMIC-3", "a lost database connection mid-transaction leaves nothing partial", func(s *session) {
		if s.env.EffectTable == "" {
			s.notApplicable("observe.postgres.effect_table is not configured, so the harness cannot hold the receiver inside its transaction")
		}
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)
		// Hold the effect table so the receiver stops inside its transaction, after
		// the key and before the effect; then cut exactly the sessions waiting on
		// this gate.
		g, err := s.env.DB.Hold(s.ctx, s.env.EffectTable)
		if err != nil {
			s.abort("locking %s: %v", s.env.EffectTable, err)
		}
		released := false
		defer func() {
			if !released {
				_ = g.Release(context.WithoutCancel(s.ctx))
			}
		}()
		finished := make(chan struct{})
		var doomed simulator.AttemptRecord
		wait := s.spawn(func() {
			defer close(finished)
			doomed = s.send(ep, ev, RoleDoomed, simulator.SendOptions{})
		})
		waited := 0
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && waited == 0; time.Sleep(10 * time.Millisecond) {
			if waited, err = g.Waiters(s.ctx); err != nil {
				s.abort("counting waiters on %s: %v", s.env.EffectTable, err)
			}
			select {
			case <-finished:
				deadline = time.Now()
			default:
			}
		}
		if waited == 0 {
			_ = g.Release(context.WithoutCancel(s.ctx))
			released = true
			wait()
			s.abort("the delivery never waited on %s while it was locked: the harness could not stop the receiver inside its transaction", s.env.EffectTable)
		}
		pids, err := s.env.DB.TerminateWaiters(s.ctx, g)
		_ = g.Release(context.WithoutCancel(s.ctx))
		released = true
		wait()
		if err != nil {
			s.abort("terminating the receiver's sessions waiting on %s: %v", s.env.EffectTable, err)
		}
		if len(pids) == 0 {
			s.abort("no receiver session was waiting on %s when the harness cut them", s.env.EffectTable)
		}
		s.note("%d session(s) waited on %s; terminated backends %v mid-transaction", waited, s.env.EffectTable, pids)
		s.state(k, PhaseAfterCut, 0)
		s.redeliverUnlessAcked(ep, ev, k, doomed)
	})

	register("ATOMIC-4", "a crash after commit, before the answer, makes the redelivery harmless", func(s *session) {
		ep := s.primary()
		ev := s.event(ep, typeCash, s.newID("cbtxn"))
		k := s.key(ep, ev)
		s.arm(fpAfterCommitBeforeResponse, k.EventID)
		a := s.send(ep, ev, RoleFirst, simulator.SendOptions{})
		s.note("first attempt: %s (outcome %s)", Describe(a), a.Outcome)
		s.crashedRestart(fpAfterCommitBeforeResponse)
		s.state(k, PhaseAfterCrash, 1)
		s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
		s.state(k, PhaseAfter, 1)
	})
}

// redeliverUnlessAcked redelivers ev as the provider would — only when its first
// attempt was not acknowledged — and reads the result. An acknowledged event is
// never sent again by the provider: if it was not stored, it is lost.
func (s *session) redeliverUnlessAcked(ep Endpoint, ev profiles.Event, k profiles.Key, first simulator.AttemptRecord) bool {
	if acked(first) {
		s.note("the first attempt was acknowledged, so the provider will not redeliver %s", k.EventID)
		return false
	}
	s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
	s.state(k, PhaseAfter, 1)
	return true
}
