package scenarios

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Queries, phases, roles and facts the INBOX and OUTBOX checkers read.
const (
	QueryInboxState  = "inbox_state"
	QueryOutboxState = "outbox_state"
	QuerySinkCalls   = "sink_calls"

	PhaseHeld       = "held"
	PhaseAfterTries = "after-attempts"
	// PhaseWorkersDown: read while the receiver's worker processes were down.
	PhaseWorkersDown = "workers-down"

	RoleAccept = "accept"
	RoleWork   = "work"

	// FactEarlyAcks counts deliveries acknowledged while the receiver could
	// not store them; FactMaxAttempts is the declared attempt limit;
	// FactInjected counts failures the harness caused.
	FactEarlyAcks   = "early_acks"
	FactMaxAttempts = "max_attempts"
	FactInjected    = "injected_failures"
)

// Inbox states a target's query maps its own onto (target.inbox.state).
const (
	InboxPending    = "pending"
	InboxProcessing = "processing"
	InboxDone       = "done"
	InboxDead       = "dead"
	OutboxSent      = "sent"
)

// perInboxLoad is how many events INBOX-1 and INBOX-2 accept at once.
const perInboxLoad = 8

func init() {
	register("INBOX-1", "an acknowledged event survives a crash before its worker ran, and is applied once", func(s *session) {
		ep := s.primary()
		evs, keys := s.effectEvents(ep, perInboxLoad)
		// Workers must not apply before the kill: hold the effect table first.
		work := s.hold(s.env.EffectTable)
		defer work.release()
		// Then the table accepted events are stored in: a receiver that
		// acknowledges only after its insert commits cannot answer while it is held.
		stored := s.env.inboxTable()
		store := s.hold(stored)
		defer store.release()
		var mu sync.Mutex
		early, released := 0, false
		finished := make(chan struct{})
		var recs []history.Attempt
		wait := s.spawn(func() {
			defer close(finished)
			recs = s.deliver(ep, RoleAccept, evs, simulator.Step{}, true, func(a history.Attempt) {
				mu.Lock()
				defer mu.Unlock()
				if acked(a) && !released {
					early++
				}
			})
		})
		waiters := waitQueue(s.ctx, store.g, perInboxLoad, finished, 0, func(err error) { s.abort("counting waiters on %s: %v", stored, err) })
		mu.Lock()
		n := early
		mu.Unlock()
		s.fact(FactEarlyAcks, n)
		if n > 0 {
			// Acknowledged while the key could not be written: kill now, while
			// whatever it meant to store is still uncommitted.
			s.note("%d of %d deliveries were acknowledged while %s was locked (%d session(s) waiting on it): killing the receiver before they could commit",
				n, perInboxLoad, stored, waiters)
			s.kill()
			store.cut()
			store.release()
			work.cut()
			work.release()
			wait()
		} else {
			s.note("no delivery was acknowledged while %s was locked (%d session(s) waited on it); released", stored, waiters)
			mu.Lock()
			released = true
			mu.Unlock()
			store.release()
			wait()
			// Accepted, and held back from their workers by the effect table:
			// the crash hits work that exists only as stored, pending events.
			s.kill()
			work.cut()
			work.release()
		}
		s.restart()
		var ackedKeys, all []profiles.Key
		for i, a := range recs {
			if acked(a) {
				ackedKeys = append(ackedKeys, keys[i])
			}
			all = append(all, keys[i])
		}
		if len(ackedKeys) == 0 {
			s.abort("none of %d deliveries was acknowledged, so no accepted event could be tested across the crash", perInboxLoad)
		}
		s.note("%d of %d deliveries acknowledged before the SIGKILL", len(ackedKeys), perInboxLoad)
		for _, k := range ackedKeys {
			s.inboxStateNow(k, PhaseAfterRestart)
		}
		s.states(PhaseAfter, 1, ackedKeys...)
		for _, k := range ackedKeys {
			s.inboxState(k, PhaseAfter)
		}
		// The provider redelivers what it never saw acknowledged.
		var again []profiles.Event
		for i, a := range recs {
			if !acked(a) {
				again = append(again, evs[i])
			}
		}
		if len(again) > 0 {
			s.parallel(ep, again, RoleRedelivery, simulator.SendOptions{Attempt: 2})
			s.states(PhaseAfter, 1, all...)
		}
	})

	register("INBOX-2", "competing workers apply each accepted event exactly once", func(s *session) {
		ep := s.primary()
		// Every worker takes work while the effect table is held, so they all
		// stand at the apply together; released, they race.
		keys, work, waiters := s.acceptHeld(ep)
		defer work.release()
		if waiters == 0 {
			s.abort("no worker session waited on %s while it was locked: the workers' race was not forced", s.env.EffectTable)
		}
		s.note("%d worker session(s) waited on %s with %d events accepted, then were released together", waiters, s.env.EffectTable, perInboxLoad)
		s.fact("gate_waiters", waiters)
		work.release()
		s.states(PhaseAfter, 1, keys...)
		for _, k := range keys {
			s.inboxState(k, PhaseAfter)
		}
	})

	register("INBOX-3", "a worker killed inside its transaction leaves the event to be claimed again after its lease, and applied once", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		alone, holder := false, 0
		a := s.holdAndCut(ep, ev, func(g Gate) { alone, holder = s.killWorkers(g) })
		if !acked(a) {
			// Restarted first: the next scenario needs the receiver whole.
			s.restartWorkers(alone)
			s.abort("the event was not acknowledged (%s): there was no accepted work for the worker to abandon", Describe(a))
		}
		if holder > 0 {
			// The other worker processes run on: one of them must take the
			// abandoned claim once its lease runs out, with nothing restarted.
			s.untilInbox(k, s.leaseWait(), InboxDone, InboxDead)
			s.state(k, PhaseAfter, 1)
			s.inboxState(k, PhaseAfter)
			s.restartWorkers(true)
			return
		}
		keys := []profiles.Key{k}
		var unacked []profiles.Event
		if alone {
			// No worker runs: acceptance must not need one. A second event
			// delivered now waits for the workers' return, and is applied once.
			ev2 := s.effectEvent(ep)
			k2 := s.key(ep, ev2)
			a2 := s.send(ep, ev2, RoleAccept, simulator.SendOptions{})
			s.note("delivered %s while no worker process ran: %s", ev2.ID, Describe(a2))
			if acked(a2) {
				s.inboxStateNow(k2, PhaseWorkersDown)
			} else {
				unacked = append(unacked, ev2)
			}
			keys = append(keys, k2)
		}
		s.restartWorkers(alone)
		// The provider redelivers what it never saw acknowledged.
		for _, ev := range unacked {
			s.send(ep, ev, RoleRedelivery, simulator.SendOptions{Attempt: 2})
		}
		for _, k := range keys {
			s.untilInbox(k, s.leaseWait(), InboxDone, InboxDead)
		}
		s.states(PhaseAfter, 1, keys...)
		for _, k := range keys {
			s.inboxState(k, PhaseAfter)
		}
	})

	register("INBOX-4", "an event dispatched again after its worker died mid-apply is applied only once", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		work := s.hold(s.env.EffectTable)
		defer work.release()
		a := s.send(ep, ev, RoleAccept, simulator.SendOptions{})
		if !acked(a) {
			s.abort("the event was not acknowledged (%s): there was no accepted work to dispatch", Describe(a))
		}
		done := make(chan struct{})
		close(done)
		if waitQueue(s.ctx, work.g, 1, done, s.workerLinger(), func(err error) { s.abort("counting waiters on %s: %v", s.env.EffectTable, err) }) == 0 {
			s.abort("no worker session waited on %s: the harness could not stop the worker at its business change", s.env.EffectTable)
		}
		// The worker stands at its business change. Now hold the table it marks
		// the event done in, and let the change go: a worker that marks done in
		// the same transaction stops again, uncommitted; one that committed the
		// change on its own stops with the change already made.
		table := s.env.inboxTable()
		mark := s.holdBounded(table)
		defer mark.release()
		work.release()
		if waitQueue(s.ctx, mark.g, 1, done, s.workerLinger(), func(err error) { s.abort("counting waiters on %s: %v", table, err) }) == 0 {
			s.abort("after its business change the worker never waited on %s: the harness could not stop it before it marked the event done", table)
		}
		s.note("the worker applied its change and stopped marking the event done (lock on %s); SIGKILL, then the event must be dispatched again after its lease", table)
		alone, _ := s.killWorkers(nil)
		mark.cut()
		mark.release()
		s.restartWorkers(alone)
		s.untilInbox(k, s.leaseWait(), InboxDone, InboxDead)
		s.state(k, PhaseAfter, 1)
		s.inboxState(k, PhaseAfter)
	})

	register("INBOX-5", "a transient failure is retried, with the attempt recorded", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		a := s.holdAndCut(ep, ev, nil)
		if !acked(a) {
			s.abort("the event was not acknowledged (%s): there was no accepted work to fail", Describe(a))
		}
		s.fact(FactInjected, 1)
		s.untilInbox(k, s.leaseWait(), InboxDone, InboxDead)
		s.state(k, PhaseAfter, 1)
		s.inboxState(k, PhaseAfter)
	})

	register("INBOX-6", "an event that keeps failing is dead-lettered, kept and visible, not lost", func(s *session) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		max := s.env.Inbox.MaxAttempts
		s.fact(FactMaxAttempts, max)
		work := s.hold(s.env.EffectTable)
		defer work.release()
		a := s.send(ep, ev, RoleAccept, simulator.SendOptions{})
		if !acked(a) {
			s.abort("the event was not acknowledged (%s): there was no accepted work to fail", Describe(a))
		}
		// Every attempt fails: its session is terminated at the business change.
		// Bounded by the attempts declared plus a margin, and by time.
		deadline := time.Now().Add(time.Duration(max+2)*(s.settleFor()+s.env.Inbox.Lease) + 10*time.Second)
		injected := 0
		// A dead letter must stay one: an attempt already in flight when the
		// state turned dead is failed too, so the state is trusted only once it
		// has held for a second with no session at the business change.
		var deadSince time.Time
		for injected < max+2 && time.Now().Before(deadline) && s.ctx.Err() == nil {
			n, err := work.g.Waiters(s.ctx)
			if err != nil {
				s.abort("counting waiters on %s: %v", s.env.EffectTable, err)
			}
			if n > 0 {
				pids, err := s.env.DB.TerminateWaiters(s.ctx, work.g)
				if err != nil {
					s.abort("terminating the worker's session: %v", err)
				}
				if len(pids) > 0 {
					injected++
				}
				deadSince = time.Time{}
				continue
			}
			st := s.inboxStateQuiet(k)
			switch {
			case !st.Found && injected > 0:
			case st.Found && st.State == InboxDead:
				if deadSince.IsZero() {
					deadSince = time.Now()
				}
				if time.Since(deadSince) < time.Second {
					time.Sleep(20 * time.Millisecond)
					continue
				}
			default:
				deadSince = time.Time{}
				time.Sleep(20 * time.Millisecond)
				continue
			}
			break
		}
		s.fact(FactInjected, injected)
		if injected == 0 {
			s.abort("no worker ever reached %s: no attempt could be failed", s.env.EffectTable)
		}
		// Let the last failure be recorded before judging.
		time.Sleep(300 * time.Millisecond)
		s.note("%d attempt(s) failed on purpose (declared max_attempts %d)", injected, max)
		s.inboxStateNow(k, PhaseAfterTries)
		work.release()
		// A dead letter stays, unapplied, once the failures stop. It is judged by
		// its inbox state, not by reconciliation: a receiver that writes its key
		// row when it applies has none for an event it never applied.
		s.expire(k)
		s.inboxState(k, PhaseAfter)
		s.rows(k, PhaseAfter)
		s.effects(k, PhaseAfter)
	})

	register("INBOX-7", "a purge never removes accepted work that is not done", func(s *session) {
		ep := s.retentionEndpoint()
		// The workers stop at their business change: every event is accepted
		// and none is done when the purge runs.
		keys, work, waiters := s.acceptHeld(ep)
		defer work.release()
		// Far past every key's TTL: whatever is finished may go, nothing else.
		asOf := time.Now().Add(10*ep.KeyTTL + 24*time.Hour)
		s.note("%d event(s) accepted, %d worker session(s) held at %s; purging as of %s", perInboxLoad, waiters, s.env.EffectTable, asOf.UTC().Format(time.RFC3339))
		s.purgeAsOf(asOf, "past the key TTL, with the events accepted and not applied")
		work.release()
		s.states(PhaseAfter, 1, keys...)
		for _, k := range keys {
			s.inboxState(k, PhaseAfter)
		}
	})
}

// effectEvents makes n fresh events of the effect role for ep, with their keys.
func (s *session) effectEvents(ep Endpoint, n int) ([]profiles.Event, []profiles.Key) {
	evs := make([]profiles.Event, n)
	keys := make([]profiles.Key, n)
	for i := range evs {
		evs[i] = s.effectEvent(ep)
		keys[i] = s.key(ep, evs[i])
	}
	return evs, keys
}

// acceptHeld locks the effect table, delivers perInboxLoad events at once and
// waits until the workers queue at the lock (their business change). It
// returns the events' keys, the held lock and how many sessions waited.
func (s *session) acceptHeld(ep Endpoint) ([]profiles.Key, *heldTable, int) {
	evs, keys := s.effectEvents(ep, perInboxLoad)
	work := s.hold(s.env.EffectTable)
	ok := false
	defer func() {
		if !ok {
			// An abort on the way: the caller never gets the lock to release.
			_ = work.g.Release(context.WithoutCancel(s.ctx))
		}
	}()
	s.parallel(ep, evs, RoleAccept, simulator.SendOptions{})
	done := make(chan struct{})
	close(done)
	waiters := waitQueue(s.ctx, work.g, perInboxLoad, done, s.workerLinger(), func(err error) {
		s.abort("counting waiters on %s: %v", s.env.EffectTable, err)
	})
	ok = true
	return keys, work, waiters
}

// heldTable is a lock the scenario holds on one of the receiver's tables.
type heldTable struct {
	s     *session
	table string
	g     Gate
	done  bool
}

// hold locks table until release.
func (s *session) hold(table string) *heldTable {
	g, err := s.env.DB.Hold(s.ctx, table)
	if err != nil {
		s.abort("locking %s: %v", table, err)
	}
	return &heldTable{s: s, table: table, g: g}
}

// holdBounded locks table while a receiver session may already hold a
// conflicting lock on it: a wait that would stand behind the receiver's own
// transaction is given up after a few seconds, as an error of the harness.
func (s *session) holdBounded(table string) *heldTable {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	g, err := s.env.DB.Hold(ctx, table)
	if err != nil {
		s.abort("locking %s while the worker was inside its transaction: %v", table, err)
	}
	return &heldTable{s: s, table: table, g: g}
}

func (h *heldTable) release() {
	if h.done {
		return
	}
	h.done = true
	if err := h.g.Release(context.WithoutCancel(h.s.ctx)); err != nil {
		h.s.abort("releasing the lock on %s: %v", h.table, err)
	}
}

// cut terminates the receiver's sessions waiting on the lock (after a kill,
// their backends would otherwise go on).
func (h *heldTable) cut() {
	if h.done {
		return
	}
	pids, err := h.s.env.DB.TerminateWaiters(h.s.ctx, h.g)
	if err != nil {
		h.s.abort("terminating the receiver's sessions waiting on %s: %v", h.table, err)
	}
	if len(pids) > 0 {
		h.s.note("terminated %d receiver backend(s) waiting on %s: %v", len(pids), h.table, pids)
	}
}

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

// killAt crashes the receiver (and its worker processes) for holdAndCut.
func (s *session) killAt(Gate) { s.kill() }

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

func (s *session) kill() {
	if err := s.env.Controller.Kill(); err != nil {
		s.abort("killing the receiver: %v", err)
	}
}

// leaseWait bounds the wait for abandoned work to be claimed again and done:
// the lease runs out, a reconciler notices (within another lease), a worker
// polls and applies.
func (s *session) leaseWait() time.Duration {
	return 2*s.env.Inbox.Lease + 3*time.Second
}

// untilInbox polls an event's inbox state, without recording, until it is one
// of states or d passes.
func (s *session) untilInbox(k profiles.Key, d time.Duration, states ...string) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		st := s.inboxStateQuiet(k)
		for _, want := range states {
			if st.Found && st.State == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.note("the event %s did not reach state %v within %s", k.EventID, states, d.Round(time.Millisecond))
}

func (s *session) inboxStateQuiet(k profiles.Key) QueueState {
	st, err := s.env.Queue.InboxState(s.ctx, k)
	if err != nil {
		s.abort("reading the inbox state of %s: %v", k.EventID, err)
	}
	return st
}

func queueRead(o *history.Observation, st QueueState) {
	o.Status, o.Count, o.Found = st.State, int64(st.Attempts), st.Found
}

// inboxState reads an event's inbox state once the receiver has settled.
func (s *session) inboxState(k profiles.Key, phase string) QueueState {
	s.settled()
	return s.inboxStateNow(k, phase)
}

// inboxStateNow reads it at once (status: state, count: attempts).
func (s *session) inboxStateNow(k profiles.Key, phase string) QueueState {
	var st QueueState
	s.readNow(QueryInboxState, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		var err error
		st, err = s.env.Queue.InboxState(ctx, k)
		queueRead(o, st)
		return err
	})
	return st
}

// outboxState reads an event's outbox message state at once.
func (s *session) outboxState(k profiles.Key, phase string) QueueState {
	var st QueueState
	s.readNow(QueryOutboxState, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		var err error
		st, err = s.env.Queue.OutboxState(ctx, k)
		queueRead(o, st)
		return err
	})
	return st
}

// sinkCalls records the downstream calls attributed to k's event so far, and a
// read marking the moment (count: calls; version: operations applied).
func (s *session) sinkCalls(k profiles.Key, phase string) []SinkCall {
	var calls []SinkCall
	s.readNow(QuerySinkCalls, phase, keyParams(k), func(ctx context.Context, o *history.Observation) error {
		calls = s.env.Sink.Calls(k.EventID)
		s.recordSink(k.EventID, calls)
		o.Count, o.Found = int64(len(calls)), true
		applied := map[string]bool{}
		for _, c := range calls {
			if c.Outcome == "applied" || c.Outcome == "lost" {
				applied[c.Key+"#"+strconv.Itoa(c.Seq)] = true
			}
		}
		o.Version = int64(len(applied))
		return nil
	})
	return calls
}

// recordSink adds calls not recorded yet (and ones since answered) to the history.
func (s *session) recordSink(eventID string, calls []SinkCall) {
	s.mu.Lock()
	if s.sinkSeen == nil {
		s.sinkSeen = map[int]string{}
	}
	var add []history.Sink
	for _, c := range calls {
		if c.Outcome == "" || s.sinkSeen[c.Seq] == c.Outcome {
			continue // still being answered, or recorded already
		}
		s.sinkSeen[c.Seq] = c.Outcome
		add = append(add, history.Sink{Scenario: s.index, EventID: eventID, Seq: c.Seq, Key: c.Key,
			Status: c.Status, Outcome: c.Outcome, AtNS: int64(c.At.Sub(s.run.start))})
	}
	s.mu.Unlock()
	for _, r := range add {
		s.run.addSink(r)
	}
}

// untilSink polls the sink until done reports true for k's calls or d passes.
func (s *session) untilSink(k profiles.Key, d time.Duration, done func([]SinkCall) bool) []SinkCall {
	deadline := time.Now().Add(d)
	for {
		calls := s.env.Sink.Calls(k.EventID)
		if done(calls) || !time.Now().Before(deadline) || s.ctx.Err() != nil {
			return calls
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answered2xx reports whether some call was answered with a 2xx.
func answered2xx(calls []SinkCall) bool {
	for _, c := range calls {
		if is2xx(c.Status) {
			return true
		}
	}
	return false
}
