package scenarios

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Crashes and connection loss: the receiver (or one of its worker processes)
// SIGKILLed at a failpoint or while it waits inside its transaction on a
// table the harness holds, or its sessions terminated there; restarts after.

// Failpoint names of the failpoint protocol (docs/failpoints.md).
const (
	fpAfterInsertBeforeCommit   = "after-insert-before-commit"
	fpAfterCommitBeforeResponse = "after-commit-before-response"
	fpAfterResponse             = "after-response"
)

// asyncAnswerWait bounds how long holdAndCut waits, for a receiver that
// accepts before it applies, for the delivery's answer once its worker waits.
const asyncAnswerWait = 5 * time.Second

// holdAndCut holds table, delivers ev as role doomed, waits until the
// receiver's session waits on the table — inside its transaction — and then
// cuts it: kill, when not nil, crashes whatever runs the transaction stopped
// at g (the receiver, or one of its worker processes) before the backends
// waiting on g are terminated; nil terminates them only. It returns the
// delivery's attempt.
func (s *session) holdAndCut(ep Endpoint, ev profiles.Event, table string, kill func(g Gate)) history.Attempt {
	h := s.hold(table)
	defer h.release()
	finished := make(chan struct{})
	var doomed history.Attempt
	wait := s.spawn(func() {
		defer close(finished)
		doomed = s.send(ep, ev, roleDoomed, simulator.Shape{})
	})
	held, _ := h.queue(1, finished, s.workerLinger())
	waited := h.count(held)
	if waited == 0 {
		h.release()
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
		kill(h.g)
	}
	// A killed client's backend waits on the lock regardless: end it too, so
	// nothing of its transaction can commit once the gate opens.
	pids, err := s.env.DB.TerminateWaiters(s.ctx, h.g, true)
	h.release()
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

// cutTables are the tables ATOMIC-1 and ATOMIC-3 cut the receiver at, one
// delivery each: the effect table of ev's role, where the change is written,
// then the event table, where the key is, when the target names it apart. A
// receiver that commits the two in separate transactions is caught between
// them at one or the other, whichever it commits first.
func (s *session) cutTables(ev profiles.Event) []string {
	ts := []string{s.effectTable(ev)}
	if t := s.env.EventTable; t != "" && t != ts[0] {
		ts = append(ts, t)
	}
	return ts
}

// afterCut reads what a cut transaction left. Not acknowledged: nothing may
// be stored (phase), and the provider's redelivery applies once. Acknowledged
// by a receiver that accepts before it applies: the event was accepted
// durably, so it must still be applied, once.
func (s *session) afterCut(ep Endpoint, ev profiles.Event, k profiles.Key, a history.Attempt, phase string) {
	if acked(a) && s.async() {
		s.note("the delivery was accepted (%s) before its worker was cut: it must still be applied once", Describe(a))
		s.state(k, phaseAfter, 1)
		return
	}
	s.state(k, phase, 0)
	s.redeliverUnlessAcked(ep, ev, k, a)
}

// redeliverUnlessAcked redelivers ev as the provider would — only when its first
// attempt was not acknowledged — and reads the result. An acknowledged event is
// never sent again by the provider: if it was not stored, it is lost.
func (s *session) redeliverUnlessAcked(ep Endpoint, ev profiles.Event, k profiles.Key, first history.Attempt) bool {
	if acked(first) {
		s.note("the first attempt was acknowledged, so the provider will not redeliver %s", k.EventID)
		return false
	}
	s.send(ep, ev, roleRedelivery, simulator.Shape{Attempt: 2})
	s.state(k, phaseAfter, 1)
	return true
}

func (s *session) arm(point, eventID string) {
	if err := s.env.Failpoints.Arm(s.ctx, point, eventID, "crash"); err != nil {
		s.abort("arming failpoint %s: %v", point, err)
	}
	s.note("failpoint %s armed (crash) for event %s", point, eventID)
}

// crashedRestart waits for the receiver to die at an armed failpoint, then
// restarts it. A receiver that does not crash there is killed and restarted, and
// the scenario is an error: the crash it was to test never happened.
func (s *session) crashedRestart(point string) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.env.Controller.WaitExit(ctx); err != nil {
		if kerr := s.env.Controller.Kill(); kerr != nil {
			s.abort("killing the receiver: %v", kerr)
		}
		s.restart()
		s.abort("the receiver did not crash at the armed failpoint %s (%v): the target declares the failpoints capability but the crash could not be tested", point, err)
	}
	s.restart()
}

func (s *session) restart() {
	t0 := time.Now()
	if err := s.env.Controller.Restart(s.ctx); err != nil {
		s.abort("restarting the receiver: %v", err)
	}
	s.note("receiver restarted in %s", time.Since(t0).Round(time.Millisecond))
}

func (s *session) kill() {
	if err := s.env.Controller.Kill(); err != nil {
		s.abort("killing the receiver: %v", err)
	}
}

// killAt crashes the receiver (and its worker processes) for holdAndCut.
func (s *session) killAt(Gate) { s.kill() }

// killWorkers crashes the receiver's worker processes alone where the target
// declares them (lifecycle.worker), else the receiver, whose workers run in
// it; it reports whether the workers died alone. With a gate and more than one
// worker process, only the one whose session waits on g is killed where the
// harness can tell which (holder: its number), the others left running.
func (s *session) killWorkers(g Gate) (alone bool, holder int) {
	w := s.env.Workers
	if w == nil {
		s.kill()
		return false, 0
	}
	if g != nil && w.Processes() > 1 {
		n, err := w.KillHolder(s.ctx, g)
		if err != nil {
			s.abort("killing the worker process holding the claim: %v", err)
		}
		if n > 0 {
			s.note("SIGKILLed worker process %d, whose session held the stopped claim; the other %d worker process(es) and the receiver kept running", n, w.Processes()-1)
			return true, n
		}
		s.note("could not tell which worker process held the stopped claim: killing all %d", w.Processes())
	}
	if err := w.Kill(); err != nil {
		s.abort("killing the worker processes: %v", err)
	}
	s.note("SIGKILLed the %d worker process(es) alone; the receiver's HTTP side kept running", w.Processes())
	return true, 0
}

// restartWorkers restarts what killWorkers killed.
func (s *session) restartWorkers(alone bool) {
	if !alone {
		s.restart()
		return
	}
	t0 := time.Now()
	if err := s.env.Workers.Restart(s.ctx); err != nil {
		s.abort("restarting the worker processes: %v", err)
	}
	s.note("worker processes restarted in %s", time.Since(t0).Round(time.Millisecond))
}
