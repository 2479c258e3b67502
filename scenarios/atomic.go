package scenarios

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
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

	RoleDoomed    = "doomed"
	RolePremature = "premature"
	RoleMissing   = "missing"
)

func init() {
	register("ATOMIC-1", "a crash before commit leaves nothing, and the redelivery applies once", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		if ok, _ := s.env.has("failpoints"); ok {
			// The exact path: the receiver kills itself between insert and commit.
			s.arm(fpAfterInsertBeforeCommit, k.EventID)
			a := s.send(ep, ev, RoleDoomed, simulator.SendOptions{})
			s.crashedRestart(fpAfterInsertBeforeCommit)
			s.state(k, PhaseAfterCrash, 0)
			s.redeliverUnlessAcked(ep, ev, k, a)
			return
		}
		// Without failpoints: hold the effect table, so the receiver stops inside
		// its transaction after the key insert, and SIGKILL it there.
		a := s.holdAndCut(ep, ev, s.killAt)
		s.restart()
		s.afterCut(ep, ev, k, a, PhaseAfterCrash)
	})

	register("ATOMIC-2", "a failed precondition rolls back the key and is retried successfully", func(s *session) {
		ep := s.primary()
		l := s.lifecycle()
		// Every state with every event that can only come later from it.
		type item struct {
			pair         vocab.Pair
			path, onward []vocab.Transition
		}
		var items []item
		for _, p := range l.Forbidden() {
			if p.Stale {
				continue
			}
			path, _ := l.Path(p.State)
			for _, from := range p.T.From {
				if onward, ok := l.PathFrom(p.State, from); ok {
					items = append(items, item{p, path, onward})
					break
				}
			}
		}
		if len(items) == 0 {
			s.notApplicable("no event of %s can arrive before its precondition: every transition not allowed from a state is one the object is already past", l.Object)
		}
		for _, it := range items {
			pair := it.pair
			s.note("%s arrives while %s is %s (allowed from %v), before its precondition", pair.T.Type, l.Object, pair.State, pair.T.From)
			obj := s.newObject(l)
			s.create(ep, l, obj)
			s.drive(ep, obj, it.path)
			early := s.objectEvent(ep, pair.T.Type, obj)
			k := s.key(ep, early)
			a := s.send(ep, early, RolePremature, simulator.SendOptions{})
			// A lifecycle event's effect is the object's state (and its effects),
			// not the effect role's per-event count: its key rows are read. An
			// accepted one (async) keeps its key, rightly, until it applies.
			if !acked(a) {
				s.rows(k, PhaseAfterRefusal)
			}
			s.drive(ep, obj, it.onward)
			s.fact(FactWantState+obj, pair.T.To)
			switch {
			case acked(a) && s.async():
				// Accepted before its precondition: the receiver must keep it and
				// apply it once the precondition holds.
			case acked(a):
				s.note("the early %s was acknowledged, so the provider will not redeliver it", pair.T.Type)
			default:
				s.send(ep, early, RoleRedelivery, simulator.SendOptions{Attempt: 2})
				s.settle(1, func() int { return s.rows(k, PhaseAfter) })
			}
			s.settle(1, func() int {
				if st, found := s.lifecycleState(ep, obj, PhaseAfter); found && st == pair.T.To {
					return 1
				}
				return 0
			})
		}
	})

	register("ATOMIC-5", "an event for an object that does not exist yet is never acknowledged and lost", func(s *session) {
		ep := s.primary()
		l := s.lifecycle()
		// Every event type of the lifecycle, each for an object nobody created yet.
		type item struct {
			t   vocab.Transition
			obj string
			ev  profiles.Event
		}
		var items []item
		for _, t := range l.Transitions {
			obj := s.newObject(l)
			items = append(items, item{t, obj, s.objectEvent(ep, t.Type, obj)})
		}
		for _, it := range items {
			rule := l.MissingRule(it.t)
			k := s.key(ep, it.ev)
			s.fact(FactEventOf+it.obj, k.EventID)
			a := s.send(ep, it.ev, RoleMissing+":"+rule, simulator.SendOptions{})
			s.note("%s for %s %s, which does not exist (declared: %s): %s", it.t.Type, l.Object, it.obj, rule, Describe(a))
			switch rule {
			case vocab.MissingCreate:
				s.fact(FactWantState+it.obj, it.t.To)
				s.settle(1, func() int {
					if st, found := s.lifecycleState(ep, it.obj, PhaseAfter); found && st == it.t.To {
						return 1
					}
					return 0
				})
				continue
			case vocab.MissingIgnore:
				s.lifecycleState(ep, it.obj, PhaseAfterRefusal)
				continue
			}
			if !acked(a) {
				s.rows(k, PhaseAfterRefusal)
			}
			// The object appears, as the receiver's application or the provider
			// creates it, and reaches the event's precondition.
			s.create(ep, l, it.obj)
			path, ok := l.Path(it.t.From[0])
			if !ok {
				s.abort("the lifecycle has no path to %s", it.t.From[0])
			}
			s.drive(ep, it.obj, path)
			s.fact(FactWantState+it.obj, it.t.To)
			if !acked(a) {
				s.send(ep, it.ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
				s.settle(1, func() int { return s.rows(k, PhaseAfter) })
			}
			s.settle(1, func() int {
				if st, found := s.lifecycleState(ep, it.obj, PhaseAfter); found && st == it.t.To {
					return 1
				}
				return 0
			})
		}
	})

	register("ATOMIC-3", "a lost database connection mid-transaction leaves nothing partial", func(s *session) {
		if s.env.EffectTable == "" {
			s.notApplicable("observe.postgres.effect_table is not configured, so the harness cannot hold the receiver inside its transaction")
		}
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		a := s.holdAndCut(ep, ev, nil)
		s.afterCut(ep, ev, k, a, PhaseAfterCut)
	})

	register("ATOMIC-4", "a crash after commit, before the answer, makes the redelivery harmless", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
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
func (s *session) redeliverUnlessAcked(ep Endpoint, ev profiles.Event, k profiles.Key, first history.Attempt) bool {
	if acked(first) {
		s.note("the first attempt was acknowledged, so the provider will not redeliver %s", k.EventID)
		return false
	}
	s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
	s.state(k, PhaseAfter, 1)
	return true
}

// holdAndCut holds the effect table, delivers ev, waits until the receiver's
// session waits on the table — inside its transaction, after the key insert —
// and then cuts it: SIGKILL of the receiver (kill) or termination of exactly
// the sessions waiting on this gate. It returns the delivery's attempt.
// asyncAnswerWait bounds how long holdAndCut waits, for a receiver that
// accepts before it applies, for the delivery's answer once its worker waits.
const asyncAnswerWait = 5 * time.Second

// kill, when not nil, crashes whatever runs the transaction stopped at g (the
// receiver, or one of its worker processes) before its backends are cut.
func (s *session) holdAndCut(ep Endpoint, ev profiles.Event, kill func(g Gate)) history.Attempt {
	table := s.env.EffectTable
	g, err := s.env.DB.Hold(s.ctx, table)
	if err != nil {
		s.abort("locking %s: %v", table, err)
	}
	released := false
	defer func() {
		if !released {
			_ = g.Release(context.WithoutCancel(s.ctx))
		}
	}()
	finished := make(chan struct{})
	var doomed history.Attempt
	wait := s.spawn(func() {
		defer close(finished)
		doomed = s.send(ep, ev, RoleDoomed, simulator.SendOptions{})
	})
	waited := waitQueue(s.ctx, g, 1, finished, s.workerLinger(), func(err error) { s.abort("counting waiters on %s: %v", table, err) })
	if waited == 0 {
		_ = g.Release(context.WithoutCancel(s.ctx))
		released = true
		wait()
		s.abort("the delivery never waited on %s while it was locked: the harness could not stop the receiver inside its transaction", table)
	}
	if kill != nil && s.env.Acceptance.Async {
		// The worker waits, and the acceptance that came before it is on its
		// way back: let the answer arrive before the kill, so the cut hits
		// accepted work, not an acknowledgement still in flight.
		select {
		case <-finished:
		case <-time.After(asyncAnswerWait):
		case <-s.ctx.Done():
		}
	}
	if kill != nil {
		kill(g)
	}
	// A killed client's backend waits on the lock regardless: end it too, so
	// nothing of its transaction can commit once the gate opens.
	pids, err := s.env.DB.TerminateWaiters(s.ctx, g)
	_ = g.Release(context.WithoutCancel(s.ctx))
	released = true
	wait()
	if err != nil {
		s.abort("terminating the receiver's sessions waiting on %s: %v", table, err)
	}
	if len(pids) == 0 && kill == nil {
		s.abort("no receiver session was waiting on %s when the harness cut them", table)
	}
	how := "terminated backends"
	if kill != nil {
		how = "killed; terminated its backends"
	}
	s.note("%d session(s) waited on %s; %s %v mid-transaction", waited, table, how, pids)
	return doomed
}

// afterCut judges what a cut transaction left. Not acknowledged: nothing may
// be stored, and the provider's redelivery applies once. Acknowledged by a
// receiver that accepts before it applies: the event was accepted durably, so
// it must still be applied, once.
func (s *session) afterCut(ep Endpoint, ev profiles.Event, k profiles.Key, a history.Attempt, phase string) {
	if acked(a) && s.async() {
		s.note("the delivery was accepted (%s) before its worker was cut: it must still be applied once", Describe(a))
		s.state(k, PhaseAfter, 1)
		return
	}
	s.state(k, phase, 0)
	s.redeliverUnlessAcked(ep, ev, k, a)
}
