package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Aimed faults, as Jepsen's nemeses aim theirs: a fault on a timer lands in
// the window that matters (between an acknowledgement and its commit, inside
// a transaction) only by chance; these wait for that window, using the lock
// gates the suite forces its races with.

const (
	// gateWait bounds how long an aimed fault waits for the receiver's
	// sessions to queue at the lock it holds.
	gateWait = 3 * time.Second
	// ackWait bounds how long a kill waits for its n-th acknowledgement.
	ackWait = 2 * time.Second
	// pastTimeout is how far a pause outlasts the provider's timeout.
	pastTimeout = 500 * time.Millisecond
)

// waitHeld polls who gate g holds until want of the receiver's sessions wait
// there, their count stops growing for 300ms, or gateWait passes; it
// returns the most seen.
func (s *soak) waitHeld(ctx context.Context, g scenarios.Gate, want int) (int, error) {
	deadline := time.Now().Add(gateWait)
	best, grew := 0, time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		h, err := g.Held(ctx)
		if err != nil {
			return best, err
		}
		// Under sustained traffic every waiter is the soak's own, whether
		// its transaction began before the lock was taken or after.
		if n := h.AtGate + h.Behind + h.Foreign; n > best {
			best, grew = n, time.Now()
		}
		if best >= want || (best > 0 && time.Since(grew) > 300*time.Millisecond) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return best, ctx.Err()
}

// hold locks table, bounded: a receiver transaction already holding a
// conflicting lock delays it a moment, never the whole soak.
func (s *soak) hold(ctx context.Context, table string) (scenarios.Gate, error) {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.env.DB.Hold(hctx, table)
}

// atAck kills the receiver (or terminates its sessions) right after the n-th acknowledgement, n drawn
// from the seed. A synchronous receiver whose table the harness may lock is
// first held there until its sessions queue, then released together: the
// acknowledgements that follow come in a burst, each with its commit racing
// it, so that a receiver that answers before it commits has several answered
// and uncommitted events when the kill lands, not one by luck. After the
// restart, every event acknowledged since the release is read: one not
// stored was acknowledged and uncommitted at the kill (what the aim is for).
func (s *soak) atAck(ctx context.Context, kind string, rng *rand.Rand) reports.SoakFault {
	f := reports.SoakFault{Kind: kind, StartMS: s.since() / 1e6}
	strike := func() error { _, err := s.hooks.Terminate(context.WithoutCancel(ctx)); return err }
	if kind == KindKill {
		strike = s.hooks.Controller.Kill
	}
	s.strike.Store(&strike)
	held, span := 0, max(1, s.o.Concurrency/2)
	var g scenarios.Gate
	gated := s.env.DB != nil && s.env.EffectTable != "" && !s.env.Acceptance.Async
	if gated {
		var err error
		if g, err = s.hold(ctx, s.env.EffectTable); err != nil {
			f.Error, f.EndMS = "locking "+s.env.EffectTable+": "+err.Error(), s.since()/1e6
			return f
		}
		held, err = s.waitHeld(ctx, g, s.o.Concurrency)
		if err != nil {
			_ = g.Release(context.WithoutCancel(ctx))
			f.Error, f.EndMS = "counting the sessions at the gate: "+err.Error(), s.since()/1e6
			return f
		}
		if held > 0 {
			// Early in the burst: most of the others are still between
			// their answer and their commit.
			span = max(1, held/4)
		}
	}
	n := 1 + rng.IntN(span)
	armed := s.since()
	s.killAfter.Store(int64(n))
	s.killArmed.Store(true)
	if g != nil {
		if err := g.Release(ctx); err != nil {
			f.Error = "releasing the gate: " + err.Error()
		}
	}
	how := fmt.Sprintf("acknowledgement %d", n)
	var k killed
	select {
	case k = <-s.killNow:
	case <-time.After(ackWait):
		if s.killArmed.CompareAndSwap(true, false) {
			how += fmt.Sprintf(" not heard within %s: killed then", ackWait)
			k = killed{at: s.since(), err: strike()}
		} else {
			k = <-s.killNow
		}
	case <-ctx.Done():
		if s.killArmed.CompareAndSwap(true, false) {
			f.Error, f.EndMS = ctx.Err().Error(), s.since()/1e6
			return f
		}
		k = <-s.killNow
	}
	f.Aim = how
	if gated {
		f.Aim += fmt.Sprintf(" after %d session(s) held at %s were released together", held, s.env.EffectTable)
	}
	f.StartMS = k.at / 1e6
	if kind == KindPGTerminate {
		f.Detail = "pg_terminate_backend of the receiver's sessions right after " + f.Aim
		if k.err != nil {
			f.Error = "terminate: " + k.err.Error()
		}
	} else {
		f.Detail = "SIGKILL right after " + f.Aim + ", restarted"
		if k.err != nil {
			f.Error = "kill: " + k.err.Error()
		} else if err := s.hooks.Controller.Restart(ctx); err != nil {
			f.Error = "restart: " + err.Error()
		}
	}
	f.EndMS = s.since() / 1e6
	if f.Error != "" {
		return f
	}
	if s.env.Acceptance.Async {
		// Accepted work is applied later: a missing row now is not a miss.
		f.Detail += "; acknowledged-but-uncommitted events not counted (the receiver applies after it answers)"
		return f
	}
	keys := s.ackedBetween(armed, k.at)
	missing, read := 0, 0
	for _, key := range keys {
		rows, err := s.env.Observer.EventRows(ctx, key)
		if err != nil {
			continue
		}
		read++
		if rows == 0 {
			missing++
		}
	}
	f.InFlight, f.Hit = missing, missing > 0
	f.Detail += fmt.Sprintf("; %d of %d event(s) acknowledged since it was armed were not stored after it (acknowledged, uncommitted when it struck)", missing, read)
	return f
}

// ackedBetween are the keys of the acknowledged attempts that ended after
// from and started before to (ns since the start), at most 256.
func (s *soak) ackedBetween(from, to int64) []profiles.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[profiles.Key]bool{}
	var out []profiles.Key
	for i := s.attempts.len() - 1; i >= 0 && len(out) < 256; i-- {
		a := s.attempts.at(i)
		if a.Outcome != history.OutcomeAcknowledged || a.EndNS < from || a.StartNS > to || seen[a.Key] {
			continue
		}
		seen[a.Key] = true
		out = append(out, a.Key)
	}
	return out
}

// atCommit holds one of the receiver's tables (the effect table or the event
// table, drawn from the seed: a receiver that commits its key and its effect
// apart is caught between them at one or the other), waits until its sessions
// queue there inside their transactions, and cuts them: a kill (of the worker
// processes alone where the receiver applies in separate workers) then the
// termination of the waiting sessions, or the termination alone.
func (s *soak) atCommit(ctx context.Context, kind string, rng *rand.Rand) reports.SoakFault {
	f := reports.SoakFault{Kind: kind, StartMS: s.since() / 1e6}
	table := s.env.EffectTable
	if s.env.EventTable != "" && s.env.EventTable != table && rng.IntN(2) == 0 {
		table = s.env.EventTable
	}
	end := func(msg string) reports.SoakFault {
		f.Error, f.EndMS = msg, s.since()/1e6
		return f
	}
	g, err := s.hold(ctx, table)
	if err != nil {
		return end("locking " + table + ": " + err.Error())
	}
	release := func() {
		if g != nil {
			_ = g.Release(context.WithoutCancel(ctx))
			g = nil
		}
	}
	defer release()
	held, err := s.waitHeld(ctx, g, max(1, s.o.Concurrency/4))
	if err != nil {
		return end("counting the sessions at the gate: " + err.Error())
	}
	f.Aim = fmt.Sprintf("commit: %d session(s) waiting inside their transactions on %s", held, table)
	if held == 0 {
		// Missed, and said so: nothing of the receiver reached the table.
		f.EndMS = s.since() / 1e6
		f.Detail = fmt.Sprintf("no receiver session reached %s within %s: nothing cut", table, gateWait)
		return f
	}
	restart := func() error { return nil }
	what, after := "", ", restarted"
	if kind == KindKill {
		alone, holder, err := s.killAtGate(ctx, g)
		if err != nil {
			return end("kill: " + err.Error())
		}
		switch {
		case alone && holder < 0 && s.aim.down.Load() > 0:
			what = fmt.Sprintf("worker process %d is left down by an earlier kill: no other killed, so that one runs on; ", s.aim.down.Load())
		case alone && holder < 0:
			what = "no worker process's session waited there (the receiver's own did): no process killed, "
		case holder > 0:
			what = fmt.Sprintf("SIGKILL of worker process %d (whose session held the stopped claim), ", holder)
		case alone:
			what = "SIGKILL of the worker processes, "
		default:
			what = "SIGKILL, "
		}
		restart = func() error {
			if alone {
				return s.env.Workers.Restart(ctx)
			}
			return s.hooks.Controller.Restart(ctx)
		}
		if holder < 0 {
			restart, after = func() error { return nil }, ""
		}
		if holder > 0 && table == s.env.EffectTable {
			// Stopped at the effect table, it had claimed the event and was
			// applying it (at the event table it may have been claiming).
			// Its claim is the other worker processes' to re-offer once the
			// lease runs out, as nothing restarts in production when one
			// worker dies: a start would re-offer it for them (a receiver
			// that requeues claims at boot), so it stays down until a fault
			// restarts the whole receiver, or until after the final read.
			restart = func() error { return nil }
			s.aim.down.Store(int64(holder))
			after = fmt.Sprintf(", left down while the other %d worker process(es) run: its claim is theirs to re-offer after the lease (%s); restarted with the whole receiver by a later kill, or after the final read", s.env.Workers.Processes()-1, s.env.Inbox.Lease)
		}
	}
	// A killed client's backend waits on the lock regardless: end it too, so
	// nothing of its transaction commits once the gate opens.
	pids, err := s.env.DB.TerminateWaiters(ctx, g, false)
	release()
	if err != nil {
		return end("terminating the sessions waiting on " + table + ": " + err.Error())
	}
	if err := restart(); err != nil {
		return end("restart: " + err.Error())
	}
	f.EndMS = s.since() / 1e6
	f.InFlight, f.Hit = held, true
	f.Detail = fmt.Sprintf("%spg_terminate_backend of %d session(s) waiting mid-transaction on %s", what, len(pids), table)
	if kind == KindKill {
		f.Detail += after
	}
	return f
}

// killAtGate kills what runs the transactions stopped at g: where the
// receiver applies in separate worker processes, the worker process whose
// session holds the stopped claim alone (holder -1: none of theirs waited,
// nothing killed) or, with one, the worker process; otherwise the receiver.
func (s *soak) killAtGate(ctx context.Context, g scenarios.Gate) (alone bool, holder int, err error) {
	w := s.env.Workers
	if w == nil || !s.env.Acceptance.Async {
		return false, 0, s.hooks.Controller.Kill()
	}
	if w.Processes() > 1 {
		if s.aim.down.Load() > 0 {
			// Left down by an earlier kill@commit, and still: its claims
			// are the running ones' to re-offer, and a start (of it, or of
			// the one killed now for want of any) would re-offer them.
			if ok, _ := s.hooks.Controller.Alive(); !ok {
				return true, -1, nil
			}
			s.aim.down.Store(0) // a restart of the whole receiver brought it back
		}
		n, err := w.KillHolder(ctx, g)
		if err != nil || n > 0 {
			return true, n, err
		}
		// Only the receiver's own sessions waited (accepting, at the event
		// table): the termination cuts them. Killing every worker process
		// would cut none of theirs, and its restart would re-offer the
		// claims the others must.
		return true, -1, nil
	}
	return true, 0, w.Kill()
}

// pauseTimeout is the shortest acknowledgement timeout of the target's
// endpoints (0: none declared).
func pauseTimeout(env *scenarios.Env) time.Duration {
	if env == nil {
		return 0
	}
	var d time.Duration
	for _, ep := range env.Endpoints {
		if ep.AckTimeout > 0 && (d == 0 || ep.AckTimeout < d) {
			d = ep.AckTimeout
		}
	}
	return d
}

// pauseTimeout stops the receiver past the shortest provider timeout of its
// endpoints: the deliveries it holds time out and are redelivered while the
// originals are still inside it, which is what a provider does to a receiver
// stalled by a long GC pause or a stopped VM.
func (s *soak) pauseTimeout(ctx context.Context) reports.SoakFault {
	d := pauseTimeout(s.env) + pastTimeout
	f := reports.SoakFault{Kind: KindPause, StartMS: s.since() / 1e6, Aim: fmt.Sprintf("timeout: %s, past the shortest acknowledgement timeout (%s)", d, pauseTimeout(s.env))}
	from := s.since()
	if err := s.hooks.Pause(true); err != nil {
		f.Error, f.EndMS = "SIGSTOP: "+err.Error(), f.StartMS
		return f
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	if err := s.hooks.Pause(false); err != nil {
		f.Error = "SIGCONT: " + err.Error()
	}
	to := s.since()
	f.EndMS = to / 1e6
	// The attempts the pause outlasted end with an unknown outcome within it;
	// give the workers a moment to record them.
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	for i := s.attempts.len() - 1; i >= 0; i-- {
		a := s.attempts.at(i)
		if a.StartNS < from-int64(time.Minute) {
			break
		}
		if a.Role != RoleLostAck && a.Outcome == history.OutcomeUnknown && a.StartNS >= from-int64(d) && a.EndNS >= from && a.EndNS <= to+int64(pastTimeout) {
			f.InFlight++
		}
	}
	s.mu.Unlock()
	f.Hit = f.InFlight > 0
	f.Detail = fmt.Sprintf("SIGSTOP for %s, then SIGCONT; %d delivery(ies) timed out while it was stopped", d, f.InFlight)
	return f
}
