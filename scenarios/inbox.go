package scenarios

import (
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// INBOX: a receiver that stores each event durably, answers, then applies it
// in workers keeps the acknowledgement's promise through crashes of either
// side, competing workers, failures and purges: every accepted event is
// applied exactly once, or dead-lettered and kept.
var inboxFamily = family{Name: "INBOX", Guarantees: []*Guarantee{&inbox1, &inbox2, &inbox3, &inbox4, &inbox5, &inbox6, &inbox7}}

// The INBOX deviation codes.
var (
	codeInboxLost               = Code{"inbox.lost", "an acknowledged event is not in the inbox after a crash before its worker ran: it was acknowledged before it was durably accepted"}
	codeInboxNotApplied         = Code{"inbox.not-applied", "an accepted event was not applied"}
	codeInboxEffects            = Code{"inbox.effects", "an accepted event was applied more than once (by competing workers, or again after a re-dispatch)"}
	codeInboxStuck              = Code{"inbox.stuck", "an event whose worker died is still pending or claimed well past its lease"}
	codeInboxAttemptsUnrecorded = Code{"inbox.attempts-unrecorded", "a failed attempt was retried without being recorded (attempts below 2 after an injected failure)"}
	codeInboxDeadLetterLost     = Code{"inbox.dead-letter-lost", "an event that exhausted its attempts is gone, or marked done without being applied, instead of dead-lettered"}
	codeInboxNotDeadLettered    = Code{"inbox.not-dead-lettered", "an event that failed the declared number of attempts is not dead-lettered"}
	codeInboxPendingPurged      = Code{"inbox.pending-purged", "an accepted event that was not done yet was removed by a purge"}
)

// inboxFacts are what the INBOX scenarios fix for their checkers.
type inboxFacts struct {
	// EarlyAcks counts deliveries acknowledged while the receiver could not
	// store them (INBOX-1).
	EarlyAcks *int `fact:"early_acks"`
	// MaxAttempts is the declared attempt limit; Injected counts the failures
	// the harness caused.
	MaxAttempts *int `fact:"max_attempts"`
	Injected    *int `fact:"injected_failures"`
}

// Phases of the INBOX scenarios.
const (
	// phaseAfterTries is read once every attempt failed (INBOX-6).
	phaseAfterTries = "after-attempts"
	// phaseWorkersDown is read while the receiver's worker processes were down.
	phaseWorkersDown = "workers-down"
)

// perInboxLoad is how many events INBOX-1, INBOX-2 and INBOX-7 accept at once.
const perInboxLoad = 8

var inbox1 = Guarantee{
	ID: "INBOX-1", Title: "Durable acceptance",
	Promise: "An event is acknowledged only once it is durably accepted: after a crash before any worker ran, every acknowledged event is still there and is applied once.",
	Why:     "A receiver that answers 202 before its inbox row commits (or from an in-memory queue) loses acknowledged events in every deploy or crash; the provider will not resend them.",
	Needs:   []Capability{"inbox", "crash", "lock-gating"},
	Spec:    "an acknowledged event survives a crash before its worker ran, and is applied once",
	Sends:   "8 concurrent `effect` events while the harness locks the inbox table (`inbox.table`, else the event table: nothing can be accepted) and the effect table (no worker can apply); SIGKILL once they are answered, or at once if one is answered while nothing could be stored; restart",
	Expects: "every acknowledged event in the inbox after the restart, then applied once; the unacknowledged redelivered and applied once",
	codes:   []Code{codeInboxLost, codeInboxNotApplied, codeInboxEffects},
	Reads:   []Read{{Query: queryInboxState, Tells: "each acknowledged event's inbox row after the restart (found) and at the end"}, {Query: queryEventRows, Tells: "each event's key rows once applied: 1"}, {Query: queryEffects, Tells: "each event's effects: 1"}},
	judge: bind(func(s *session, f *inboxFacts) {
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
			recs, _ = s.deliver(ep, roleAccept, evs, simulator.Shape{}, 1, true, func(a history.Attempt) {
				mu.Lock()
				defer mu.Unlock()
				if acked(a) && !released {
					early++
				}
			})
		})
		held, _ := store.queue(perInboxLoad, finished, 0)
		waiters := store.count(held)
		mu.Lock()
		n := early
		mu.Unlock()
		f.EarlyAcks = &n
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
			s.inboxStateNow(k, phaseAfterRestart)
		}
		s.states(phaseAfter, 1, ackedKeys...)
		for _, k := range ackedKeys {
			s.inboxState(k, phaseAfter)
		}
		// The provider redelivers what it never saw acknowledged.
		var again []profiles.Event
		for i, a := range recs {
			if !acked(a) {
				again = append(again, evs[i])
			}
		}
		if len(again) > 0 {
			s.parallel(ep, again, roleRedelivery, simulator.Shape{Attempt: 2})
			s.states(phaseAfter, 1, all...)
		}
	}, func(v *view, f *inboxFacts) {
		if f.EarlyAcks != nil && *f.EarlyAcks != 0 {
			v.note("%d deliveries were acknowledged while the harness held the table their keys are stored in", *f.EarlyAcks)
		}
		restarted := v.reads(queryInboxState, phaseAfterRestart)
		if len(restarted) == 0 {
			v.fail("history: %s has no inbox_state read after the restart", v.sc.Name)
			return
		}
		for _, o := range restarted {
			if !o.Found {
				v.deviate(codeInboxLost, "%s was acknowledged and is not in the inbox after the crash: it was acknowledged before it was durably accepted", paramsText(o.Params))
			}
		}
		appliedOnce(v, phaseAfter, "after the restart")
	}),
}

var inbox2 = Guarantee{
	ID: "INBOX-2", Title: "Competing workers",
	Promise: "Competing workers apply each accepted event exactly once.",
	Why:     "Workers that poll for unprocessed rows without claiming them (FOR UPDATE SKIP LOCKED, or a conditional claim) all pick the same event and apply it once each.",
	Needs:   []Capability{"inbox", "lock-gating"},
	Spec:    "competing workers apply each accepted event exactly once",
	Sends:   "8 concurrent `effect` events accepted while the effect table is locked, so every worker stands at its business change; then released together",
	Expects: "each event applied once and done",
	Race:    "the workers, held at the effect table with every event claimed",
	codes:   []Code{codeInboxEffects, codeInboxNotApplied},
	Reads:   []Read{{Query: queryInboxState, Tells: "each event's state: done"}, {Query: queryEventRows, Tells: "each event's key rows: 1"}, {Query: queryEffects, Tells: "each event's effects: 1"}},
	judge: bind(func(s *session, _ *inboxFacts) {
		ep := s.primary()
		// Every worker takes work while the effect table is held, so they all
		// stand at the apply together; released, they race.
		keys, work, gate := s.acceptHeld(ep)
		defer work.release()
		work.release()
		gate.ReleasedNS = s.run.sinceStart()
		s.run.addGate(gate)
		if gate.Held() == 0 {
			s.abort("no worker session waited on %s while it was locked: the workers' race was not forced", s.env.EffectTable)
		}
		s.note("lock gate on %s with %d events accepted: %s, then released together", s.env.EffectTable, perInboxLoad, describeHeld(gate))
		s.states(phaseAfter, 1, keys...)
		for _, k := range keys {
			s.inboxState(k, phaseAfter)
		}
	}, func(v *view, _ *inboxFacts) {
		v.acked(codeInboxNotApplied, roleAccept)
		appliedOnce(v, phaseAfter, "after competing workers were released")
		inboxAllDone(v, codeInboxNotApplied)
	}),
}

var inbox3 = Guarantee{
	ID: "INBOX-3", Title: "Worker crash, lease expiry",
	Promise: "A worker that dies holding a claim leaves the event to be claimed again after its lease and applied once.",
	Why:     "Without lease expiry a claim outlives its worker, and the event stays claimed, acknowledged and never applied.",
	Needs:   []Capability{"inbox", "crash", "stop-in-transaction"},
	Spec:    "a worker killed inside its transaction leaves the event to be claimed again after its lease, and applied once",
	Sends:   "one `effect` event accepted; its worker stopped at the locked effect table and SIGKILLed: where `lifecycle.worker` declares several processes, only the one holding the claim, the others left running; with one, the worker process alone, and a second event delivered while none runs; else the receiver; restart; wait past the declared lease",
	Expects: "the event claimed again and done, applied once (by a surviving worker process, before anything restarts, where one was left running); the second event acknowledged, stored and applied once",
	codes:   []Code{codeInboxStuck, codeInboxNotApplied, codeInboxEffects, codeInboxLost},
	Reads:   []Read{{Query: queryInboxState, Tells: "each event's state (done; found, for one delivered while no worker ran)"}, {Query: queryEventRows, Tells: "each event's key rows: 1"}, {Query: queryEffects, Tells: "each event's effects: 1"}},
	judge: bind(func(s *session, _ *inboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		alone, holder := false, 0
		a := s.holdAndCut(ep, ev, s.effectTable(ev), func(g Gate) { alone, holder = s.killWorkers(g) })
		if !acked(a) {
			// Restarted first: the next scenario needs the receiver whole.
			s.restartWorkers(alone)
			s.abort("the event was not acknowledged (%s): there was no accepted work for the worker to abandon", Describe(a))
		}
		if holder > 0 {
			// The other worker processes run on: one of them must take the
			// abandoned claim once its lease runs out, with nothing restarted.
			s.untilInbox(k, s.leaseWait(), inboxDone, inboxDead)
			s.state(k, phaseAfter, 1)
			s.inboxState(k, phaseAfter)
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
			a2 := s.send(ep, ev2, roleAccept, simulator.Shape{})
			s.note("delivered %s while no worker process ran: %s", ev2.ID, Describe(a2))
			if acked(a2) {
				s.inboxStateNow(k2, phaseWorkersDown)
			} else {
				unacked = append(unacked, ev2)
			}
			keys = append(keys, k2)
		}
		s.restartWorkers(alone)
		// The provider redelivers what it never saw acknowledged.
		for _, ev := range unacked {
			s.send(ep, ev, roleRedelivery, simulator.Shape{Attempt: 2})
		}
		for _, k := range keys {
			s.untilInbox(k, s.leaseWait(), inboxDone, inboxDead)
		}
		s.states(phaseAfter, 1, keys...)
		for _, k := range keys {
			s.inboxState(k, phaseAfter)
		}
	}, func(v *view, _ *inboxFacts) {
		for _, o := range v.reads(queryInboxState, phaseWorkersDown) {
			if !o.Found {
				v.deviate(codeInboxLost, "%s was acknowledged while no worker process ran and is not in the inbox: acknowledged before it was durably accepted", paramsText(o.Params))
			}
		}
		appliedOnce(v, phaseAfter, "after its worker was killed and the lease passed")
		inboxAllDone(v, codeInboxStuck)
	}),
}

var inbox4 = Guarantee{
	ID: "INBOX-4", Title: "Duplicate dispatch",
	Promise: "An event dispatched again after its worker died mid-apply is applied only once: the change and the mark of completion commit together.",
	Why:     "A worker that commits the business change and marks the event done in a second transaction applies it twice when it dies in between and the event is dispatched again.",
	Needs:   []Capability{"inbox", "crash", "lock-gating", "stop-in-transaction"},
	Spec:    "an event dispatched again after its worker died mid-apply is applied only once",
	Sends:   "one `effect` event accepted; its worker let through its business change and stopped at the inbox table before marking the event done; SIGKILL (the worker processes alone where declared); restart; wait past the lease",
	Expects: "the event dispatched again and done, applied once in all",
	codes:   []Code{codeInboxEffects, codeInboxStuck, codeInboxNotApplied},
	Reads:   []Read{{Query: queryInboxState, Tells: "the event's state: done"}, {Query: queryEventRows, Tells: "the event's key rows: 1"}, {Query: queryEffects, Tells: "the event's effects: 1, not 2"}},
	judge: bind(func(s *session, _ *inboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		work := s.hold(s.env.EffectTable)
		defer work.release()
		a := s.send(ep, ev, roleAccept, simulator.Shape{})
		if !acked(a) {
			s.abort("the event was not acknowledged (%s): there was no accepted work to dispatch", Describe(a))
		}
		done := make(chan struct{})
		close(done)
		if held, _ := work.queue(1, done, s.workerLinger()); work.count(held) == 0 {
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
		if held, _ := mark.queue(1, done, s.workerLinger()); mark.count(held) == 0 {
			s.abort("after its business change the worker never waited on %s: the harness could not stop it before it marked the event done", table)
		}
		s.note("the worker applied its change and stopped marking the event done (lock on %s); SIGKILL, then the event must be dispatched again after its lease", table)
		alone, _ := s.killWorkers(nil)
		mark.cut()
		mark.release()
		s.restartWorkers(alone)
		s.untilInbox(k, s.leaseWait(), inboxDone, inboxDead)
		s.state(k, phaseAfter, 1)
		s.inboxState(k, phaseAfter)
	}, func(v *view, _ *inboxFacts) {
		appliedOnce(v, phaseAfter, "after a worker died between its change and marking the event done, and the event was dispatched again")
		inboxAllDone(v, codeInboxStuck)
	}),
}

var inbox5 = Guarantee{
	ID: "INBOX-5", Title: "Transient failure retried",
	Promise: "A transient failure in a worker is retried, and the attempt is recorded.",
	Why:     "Retries without attempt records can neither back off nor ever dead-letter: a poison event is retried forever and nobody can see why.",
	Needs:   []Capability{"inbox", "connection-loss"},
	Spec:    "a transient failure is retried, with the attempt recorded",
	Sends:   "one `effect` event accepted; its worker's session terminated at the locked effect table",
	Expects: "the event retried and done, applied once, with at least 2 attempts recorded",
	codes:   []Code{codeInboxAttemptsUnrecorded, codeInboxStuck, codeInboxNotApplied, codeInboxEffects},
	Reads:   []Read{{Query: queryInboxState, Tells: "the event's state (done) and attempts: at least 2"}, {Query: queryEventRows, Tells: "the event's key rows: 1"}, {Query: queryEffects, Tells: "the event's effects: 1"}},
	judge: bind(func(s *session, f *inboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		a := s.holdAndCut(ep, ev, s.effectTable(ev), nil)
		if !acked(a) {
			s.abort("the event was not acknowledged (%s): there was no accepted work to fail", Describe(a))
		}
		one := 1
		f.Injected = &one
		s.untilInbox(k, s.leaseWait(), inboxDone, inboxDead)
		s.state(k, phaseAfter, 1)
		s.inboxState(k, phaseAfter)
	}, func(v *view, f *inboxFacts) {
		appliedOnce(v, phaseAfter, "after a failed attempt")
		inboxAllDone(v, codeInboxStuck)
		injected := 1
		if f.Injected != nil {
			injected = *f.Injected
		}
		for _, o := range v.reads(queryInboxState, phaseAfter) {
			if o.Found && o.Count < 2 {
				v.deviate(codeInboxAttemptsUnrecorded, "%s: %d attempt(s) recorded after %d failure(s) the harness caused and a successful retry; want at least 2",
					paramsText(o.Params), o.Count, injected)
			}
		}
	}),
}

var inbox6 = Guarantee{
	ID: "INBOX-6", Title: "Dead letters kept",
	Promise: "An event that keeps failing is dead-lettered after the declared attempts: kept, visible and not applied, never deleted.",
	Why:     "An acknowledged event that is dropped when it fails too often is lost without a trace; one retried forever blocks nothing but hides the failure.",
	Needs:   []Capability{"inbox-dead-letter", "connection-loss"},
	Spec:    "an event that keeps failing is dead-lettered, kept and visible, not lost",
	Sends:   "one `effect` event accepted; every attempt's session terminated at the locked effect table, up to the declared max_attempts",
	Expects: "the event dead-lettered (state dead), still stored, never applied",
	codes:   []Code{codeInboxDeadLetterLost, codeInboxNotDeadLettered},
	Reads:   []Read{{Query: queryInboxState, Tells: "the event's state after the failed attempts and once they stop: dead both times"}, {Query: queryEventRows, Tells: "the event's key rows, for the evidence"}, {Query: queryEffects, Tells: "the event's effects, for the evidence"}},
	judge: bind(func(s *session, f *inboxFacts) {
		ep := s.primary()
		ev := s.effectEvent(ep)
		k := s.key(ep, ev)
		max := s.env.Inbox.MaxAttempts
		f.MaxAttempts = &max
		work := s.hold(s.env.EffectTable)
		defer work.release()
		a := s.send(ep, ev, roleAccept, simulator.Shape{})
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
		// A session cut at the lock may be another event's worker: one the
		// receiver retries later than the wait between scenarios can know of.
		// While this event records fewer attempts than declared, its attempts
		// are failed on, up to three times the margin.
		recorded := 0
		more := func() bool {
			return injected < max+2 || (recorded > 0 && recorded < max && injected < 3*(max+2))
		}
		for more() && time.Now().Before(deadline) && s.ctx.Err() == nil {
			// Only sessions that began after the lock was taken: work left
			// over from an earlier scenario is not this event's attempt.
			if work.waiters() > 0 {
				pids, err := s.env.DB.TerminateWaiters(s.ctx, work.g, true)
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
			recorded = st.Attempts
			switch {
			case !st.Found && injected > 0:
			case st.Found && st.State == inboxDead:
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
		f.Injected = &injected
		if injected == 0 {
			s.abort("no worker ever reached %s: no attempt could be failed", s.env.EffectTable)
		}
		// Let the last failure be recorded before judging.
		time.Sleep(300 * time.Millisecond)
		s.note("%d attempt(s) failed on purpose (declared max_attempts %d)", injected, max)
		s.inboxStateNow(k, phaseAfterTries)
		work.release()
		// A dead letter stays, unapplied, once the failures stop. It is judged by
		// its inbox state, not by reconciliation: a receiver that writes its key
		// row when it applies has none for an event it never applied.
		s.expire(k)
		s.inboxState(k, phaseAfter)
		s.rows(k, phaseAfter)
		s.effects(k, phaseAfter)
	}, func(v *view, f *inboxFacts) {
		max, injected := 0, 0
		if f.MaxAttempts != nil {
			max = *f.MaxAttempts
		}
		if f.Injected != nil {
			injected = *f.Injected
		}
		tries := v.reads(queryInboxState, phaseAfterTries)
		if len(tries) == 0 {
			v.fail("history: no inbox read after the failed attempts")
			return
		}
		for _, o := range tries {
			switch {
			case !o.Found:
				v.deviate(codeInboxDeadLetterLost, "%s: gone from the inbox after %d failed attempt(s): an acknowledged event was dropped instead of dead-lettered", paramsText(o.Params), injected)
			case o.Status == inboxDone:
				v.deviate(codeInboxDeadLetterLost, "%s: marked done after %d failed attempt(s), none of which applied it", paramsText(o.Params), injected)
			case o.Status != inboxDead && injected >= max:
				v.deviate(codeInboxNotDeadLettered, "%s: state %q with %d attempt(s) recorded after %d failed attempt(s) (declared max_attempts %d): not dead-lettered",
					paramsText(o.Params), o.Status, o.Count, injected, max)
			}
		}
		for _, o := range v.reads(queryInboxState, phaseAfter) {
			if o.Found && o.Status == inboxDead {
				continue
			}
			if t, ok := v.read(queryInboxState, phaseAfterTries, o.Params); ok && t.Found && t.Status == inboxDead {
				v.deviate(codeInboxDeadLetterLost, "%s: dead-lettered, then %s once the failures stopped", paramsText(o.Params), readText(o))
			}
		}
	}),
}

var inbox7 = Guarantee{
	ID: "INBOX-7", Title: "No purge of pending work",
	Promise: "A purge never removes accepted work that is not done, however old it is.",
	Why:     "A retention purge that deletes rows by age alone drops events that were acknowledged and are still waiting for a worker (or for an operator, as dead letters).",
	Needs:   []Capability{"inbox", "retention", "lock-gating"},
	Spec:    "a purge never removes accepted work that is not done",
	Sends:   "8 `effect` events accepted while the effect table is locked (none done), then a purge as of ten key TTLs later, then released",
	Expects: "every event still there and applied once",
	codes:   []Code{codeInboxPendingPurged, codeInboxNotApplied, codeInboxEffects},
	Reads:   []Read{{Query: queryInboxState, Tells: "each event's state after the purge, for the evidence"}, {Query: queryEventRows, Tells: "each event's key rows after the purge: none, with no effect, is pending work purged"}, {Query: queryEffects, Tells: "each event's effects after the purge: 1"}},
	judge: bind(func(s *session, _ *inboxFacts) {
		ep := s.retentionEndpoint()
		// The workers stop at their business change: every event is accepted
		// and none is done when the purge runs.
		keys, work, gate := s.acceptHeld(ep)
		defer work.release()
		// Far past every key's TTL: whatever is finished may go, nothing else.
		asOf := time.Now().Add(10*ep.KeyTTL + 24*time.Hour)
		s.note("%d event(s) accepted, %d worker session(s) held at %s; purging as of %s", perInboxLoad, gate.Held(), s.env.EffectTable, asOf.UTC().Format(time.RFC3339))
		s.purgeAsOf(asOf, "past the key TTL, with the events accepted and not applied")
		work.release()
		s.states(phaseAfter, 1, keys...)
		for _, k := range keys {
			s.inboxState(k, phaseAfter)
		}
	}, func(v *view, _ *inboxFacts) {
		rows := map[string]int64{}
		for _, o := range v.reads(queryEventRows, phaseAfter) {
			rows[paramsText(o.Params[:3])] = o.Count
		}
		for _, o := range v.reads(queryEffects, phaseAfter) {
			switch {
			case o.Count == 0 && rows[paramsText(o.Params[:3])] == 0:
				v.deviate(codeInboxPendingPurged, "%s: accepted, then gone after a purge ran while it waited for its worker: never applied", paramsText(o.Params))
			case o.Count == 0:
				v.deviate(codeInboxNotApplied, "after the purge: %s accepted, not applied: 0 effects", paramsText(o.Params))
			case o.Count > 1:
				v.deviate(codeInboxEffects, "after the purge: %s applied %d times", paramsText(o.Params), o.Count)
			}
		}
		v.blindTo("after the purge")
		if len(v.reads(queryEffects, phaseAfter)) == 0 {
			v.fail("history: no effects read after the purge")
		}
	}),
}

// appliedOnce: every accepted event read in phase has one row and one effect.
func appliedOnce(v *view, phase, what string) {
	rs := v.reads(queryEffects, phase)
	if len(rs) == 0 {
		v.fail("history: %s has no effects read in phase %q", v.sc.Name, phase)
		return
	}
	for _, o := range rs {
		switch {
		case o.Count == 0:
			v.deviate(codeInboxNotApplied, "%s: %s accepted, not applied: 0 effects", what, paramsText(o.Params))
		case o.Count > 1:
			v.deviate(codeInboxEffects, "%s: %s applied %d times", what, paramsText(o.Params), o.Count)
		}
	}
	v.blindTo(what)
}

// inboxAllDone: every event's last inbox read is done.
func inboxAllDone(v *view, code Code) {
	rs := v.reads(queryInboxState, phaseAfter)
	if len(rs) == 0 {
		v.fail("history: %s has no inbox_state read in phase %q", v.sc.Name, phaseAfter)
		return
	}
	for _, o := range rs {
		if !o.Found || o.Status != inboxDone {
			v.deviate(code, "%s: inbox state reads %s (%d attempt(s)), want done", paramsText(o.Params), readText(o), o.Count)
		}
	}
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
// returns the events' keys, the held lock and the gate's record so far (who
// it held), for the caller to complete when it releases the lock.
func (s *session) acceptHeld(ep Endpoint) ([]profiles.Key, *heldTable, history.Gate) {
	evs, keys := s.effectEvents(ep, perInboxLoad)
	work := s.hold(s.env.EffectTable)
	rec := history.Gate{Scenario: s.index, Table: s.env.EffectTable, Racers: perInboxLoad, StartNS: s.run.sinceStart()}
	ok := false
	defer func() {
		if !ok {
			// An abort on the way: the caller never gets the lock to release.
			work.release()
		}
	}()
	s.parallel(ep, evs, roleAccept, simulator.Shape{})
	done := make(chan struct{})
	close(done)
	held, foreign := work.queue(perInboxLoad, done, s.workerLinger())
	rec.AtGate, rec.Behind, rec.Foreign = held.AtGate, held.Behind, foreign
	ok = true
	return keys, work, rec
}
