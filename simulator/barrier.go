package simulator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// A barrier release sends n copies of one request so that they reach the
// receiver within microseconds of each other: each copy opens its connection,
// writes all of its request but the final byte and waits; one loop then writes
// the final byte on every connection. Holding bytes back is not something a
// provider does, so the barrier must not cause failures a provider would not:
//
//   - A copy is held only once the receiver's kernel acknowledged everything
//     written so far (readSockState). A connection that completed its
//     handshake but sits in an overflowing accept queue (SYN cookies) has no
//     socket on the receiver's side yet; its final byte would fail the cookie
//     check and be answered with a reset.
//   - The pre-open phase is bounded: a receiver that serves one connection at
//     a time cannot accept the others while it waits for the first one's final
//     byte. The barrier falls when every copy is held, when no copy was held
//     for as long again as the held ones took (at least preopenStall), or at
//     the latest after maxPreopen (half the timeout when that is shorter).
//   - A copy the barrier fell without is late: it completes its own request
//     (its final byte once acknowledged, or the whole request on a connection
//     opened after the barrier fell) as a provider would. Only held copies
//     count in history.Release.Released and SpreadNS.
//   - A connection the receiver refused, never accepted, or reset before it
//     acknowledged any byte is opened again for the same attempt (bounded,
//     see connect and deliver).

const (
	// maxPreopen bounds the pre-open phase.
	maxPreopen = time.Second
	// preopenStall is the least time the barrier waits for more copies after
	// the last one was held.
	preopenStall = 150 * time.Millisecond
	// maxConfirmPoll bounds the pause between two reads of a connection's
	// acknowledged bytes while it is being confirmed.
	maxConfirmPoll = 2 * time.Millisecond
)

// Barrier states of one copy.
const (
	copyPending   int32 = iota // connecting, writing or being confirmed; the barrier stands
	copyHeld                   // confirmed: the barrier writes its final byte
	copyReleasing              // the barrier took it and wrote (or failed to write) its final byte
	copyLate                   // the barrier fell without it: it completes its own request
	copyBroken                 // answered, closed or timed out while held: never released
)

// errClosedUnconfirmed is a connection the receiver closed or reset before it
// acknowledged what was written.
var errClosedUnconfirmed = errors.New("the receiver closed the connection before it acknowledged the request: " + syscall.ECONNRESET.Error())

type copyState struct {
	state atomic.Int32
	// Set by the copy before it is held.
	pc   *pconn
	head int64 // bytes written before the barrier fell
	// Set by the barrier while releasing (read by the copy once fell is closed).
	final   int64 // bytes of the final write
	err     error // the final write's error (or the context's)
	before  int64 // ns since run start, no later than the final write began
	written int64 // ns since run start when the final write returned
	// settled is the copy's own: it told the barrier whether it is held.
	settled bool
}

type barrier struct {
	r        *Runner
	ctx      context.Context
	wire     []byte
	lostAck  string
	deadline time.Time
	st       []copyState
	// settled receives once per copy that knows its fate before the barrier
	// falls: true when held.
	settled chan bool
	fell    chan struct{}
}

// copies sends n copies of one prepared request released together by a
// barrier (see above) and returns their records and the release.
func (r *Runner) copies(ctx context.Context, ev profiles.Event, at profiles.Attempt, p *prepared, lostAck string, timeout time.Duration, step, n int, clock Clock) ([]history.Attempt, history.Release) {
	wire := r.serialize(p, nil)
	recs := make([]history.Attempt, n)
	rel := history.Release{Step: step, Attempt: at.N, Key: profiles.EventKey(r.target.Profile, ev), Copies: n}
	b := &barrier{r: r, ctx: ctx, wire: wire, lostAck: lostAck, deadline: time.Now().Add(timeout),
		st: make([]copyState, n), settled: make(chan bool, n), fell: make(chan struct{})}
	var done sync.WaitGroup
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			rec := r.newRecord(ev, at, p, step, i)
			res, startNS := b.run(i)
			if startNS == 0 {
				startNS = r.since()
			}
			rec.StartNS = startNS
			rec.WallStart = time.Unix(0, r.start.UnixNano()+startNS).UTC()
			rec.VirtualNS = int64(clock.Virtual(time.Duration(startNS)))
			rec.BytesSent = res.sent
			rec.EndNS = r.since()
			r.finish(&rec, res.response, lostAck, time.Now())
			recs[i] = rec
		}()
	}
	preopen := time.Now()
	rel.FellBecause = b.wait(timeout)
	rel.PreopenNS = int64(time.Since(preopen))
	rel.StartNS = r.since()
	b.release()
	done.Wait()
	for i := range b.st {
		if b.st[i].state.Load() == copyLate {
			rel.Late++
		}
	}
	var lo, hi int64
	for i := range b.st {
		cs := &b.st[i]
		if cs.state.Load() != copyReleasing || cs.err != nil {
			continue
		}
		if rel.Released == 0 || cs.written < lo {
			lo = cs.written
		}
		hi = max(hi, cs.written)
		rel.Released++
	}
	if rel.Released > 0 {
		rel.SpreadNS = hi - lo
	}
	return recs, rel
}

// Why a barrier fell (history.Release.FellBecause).
const (
	FellAllSettled = "all_settled" // every copy was held or gave up
	FellStalled    = "stalled"     // no copy was newly held for a while: the rest went late
	FellDeadline   = "deadline"    // the pre-open phase reached its bound
	FellCancelled  = "cancelled"   // the run was stopped
)

// wait returns when the barrier should fall (see the rules above), and why.
func (b *barrier) wait(timeout time.Duration) string {
	start := time.Now()
	hard := start.Add(min(timeout/2, maxPreopen))
	t := time.NewTimer(time.Until(hard))
	defer t.Stop()
	settled, held := 0, 0
	var lastHeld time.Time
	for settled < len(b.st) {
		select {
		case ok := <-b.settled:
			settled++
			if ok {
				held++
				lastHeld = time.Now()
			}
		case <-t.C:
		case <-b.ctx.Done():
			return FellCancelled
		}
		until, why := hard, FellDeadline
		if held > 0 {
			if u := lastHeld.Add(max(preopenStall, lastHeld.Sub(start))); u.Before(until) {
				until, why = u, FellStalled
			}
		}
		d := time.Until(until)
		if d <= 0 {
			return why
		}
		t.Reset(d)
	}
	return FellAllSettled
}

// release writes the final byte of every held copy in one tight loop and
// makes the others late.
func (b *barrier) release() {
	last := b.wire[len(b.wire)-1:]
	prev := b.r.since()
	for i := range b.st {
		cs := &b.st[i]
		if !cs.state.CompareAndSwap(copyHeld, copyReleasing) {
			cs.state.CompareAndSwap(copyPending, copyLate)
			continue
		}
		if err := b.ctx.Err(); err != nil {
			cs.err = err
			continue
		}
		cs.before = prev
		nw, err := releaseWrite(cs.pc.c, last)
		cs.written = b.r.since()
		prev = cs.written
		cs.final = int64(nw)
		if err != nil {
			cs.err = err
			cs.pc.c.SetDeadline(aLongTimeAgo)
		}
	}
	close(b.fell)
}

// settle tells the barrier, once, whether copy cs is held.
func (b *barrier) settle(cs *copyState, held bool) {
	if !cs.settled {
		cs.settled = true
		b.settled <- held
	}
}

// giveUp makes cs late (if the barrier has not fallen yet) and tells the barrier.
func (b *barrier) giveUp(cs *copyState) {
	cs.state.CompareAndSwap(copyPending, copyLate)
	b.settle(cs, false)
}

// run makes copy i's attempt; startNS is when its request was completed (0:
// never).
func (b *barrier) run(i int) (res delivered, startNS int64) {
	cs, r := &b.st[i], b.r
	size := int64(len(b.wire))
	pc, err := r.connect(b.ctx, b.deadline)
	if err != nil {
		b.giveUp(cs)
		return delivered{response: response{err: err, size: size}}, 0
	}
	opened := pc.tries
	defer func() { res.tries = max(res.tries, opened) }()
	pc.c.SetDeadline(b.deadline)
	if cs.state.Load() == copyLate {
		return b.late(pc, 0)
	}
	stop := guard(b.ctx, pc.c)
	nw, err := pc.c.Write(b.wire[:len(b.wire)-1])
	if err == nil {
		err = b.confirm(pc)
	}
	if err != nil {
		stop()
		b.giveUp(cs)
		if pc.untouched() && b.ctx.Err() == nil && time.Now().Before(b.deadline) {
			// The receiver took nothing: a fresh connection, the whole request.
			pc.c.Close()
			return b.late(nil, 0)
		}
		res = delivered{response: response{err: err, size: size}, sent: int64(nw)}
		if ans, ok := r.earlyAnswer(b.ctx, pc, int64(nw), size); ok {
			res.response = ans
		}
		pc.c.Close()
		return res, 0
	}
	cs.pc, cs.head = pc, int64(nw)
	if !cs.state.CompareAndSwap(copyPending, copyHeld) {
		// The barrier fell while this copy was being confirmed.
		stop()
		return b.late(pc, nw)
	}
	b.settle(cs, true)
	defer pc.c.Close()
	defer stop()
	if b.lostAck == LostAckClose {
		<-b.fell
		if cs.err != nil {
			return delivered{response: response{err: cs.err, size: size}, sent: cs.head + cs.final}, 0
		}
		return delivered{response: response{wrote: true, size: size}, sent: cs.head + cs.final}, cs.written
	}
	// Wait for the answer; one that comes before the barrier fell means the
	// receiver answered (or closed) without the whole request.
	pc.budget.n = maxResponseHeaderBytes + r.opts.ResponseReadLimit + int64(pc.br.Size())
	_, perr := pc.br.Peek(1)
	arrived := r.since()
	if cs.state.CompareAndSwap(copyHeld, copyBroken) {
		res = delivered{response: response{err: perr, size: size}, sent: cs.head}
		if perr == nil {
			res.response, _ = r.readResponse(pc)
		}
		res.wrote, res.sentEarly, res.size = false, cs.head, size
		return res, 0
	}
	<-b.fell
	ans, _ := r.readResponse(pc)
	res = delivered{response: ans, sent: cs.head + cs.final}
	res.size = size
	if cs.err != nil {
		// The final byte was not written: keep an early answer (a receiver may
		// reject on the headers alone) but never count it as delivered.
		if !ans.gotResp {
			res.response = response{err: cs.err, size: size}
		}
		res.wrote, res.sentEarly = false, cs.head
		return res, 0
	}
	res.wrote = true
	if perr == nil && arrived < cs.before {
		// The answer was there before the final byte went out.
		res.early, res.sentEarly = true, cs.head
	}
	return res, cs.written
}

// late completes a copy the barrier fell without: wire[from:] on pc, or the
// whole request on fresh connections when pc is nil.
func (b *barrier) late(pc *pconn, from int) (delivered, int64) {
	start := b.r.since()
	if pc == nil || from == 0 {
		return b.r.deliver(b.ctx, pc, b.wire, b.lostAck, b.deadline), start
	}
	res, _ := b.r.exchange(b.ctx, pc, b.wire, from, b.lostAck)
	pc.c.Close()
	if !res.wrote {
		return res, 0
	}
	return res, start
}

// confirm waits until the receiver's kernel acknowledged everything written
// on pc: only then does the receiver hold a socket for it (see above).
func (b *barrier) confirm(pc *pconn) error {
	pause := 20 * time.Microsecond
	for {
		st := readSockState(pc)
		switch {
		case !st.known:
			return nil // nothing to tell by: held as soon as written
		case st.received > pc.receivedBase:
			return errAnsweredUnconfirmed // read by earlyAnswer
		case !st.established:
			return errClosedUnconfirmed
		case !st.pending:
			return nil
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
		if !time.Now().Add(pause).Before(b.deadline) {
			return errUnconfirmedTimeout
		}
		time.Sleep(pause)
		pause = min(2*pause, maxConfirmPoll)
	}
}

// errAnsweredUnconfirmed: the receiver sent something before it acknowledged
// the request's bytes.
var errAnsweredUnconfirmed = errors.New("the receiver answered before it acknowledged the request's bytes")

// errUnconfirmedTimeout: the receiver's kernel never acknowledged the request
// within the attempt's timeout.
var errUnconfirmedTimeout = timeoutError("the receiver did not acknowledge the request's bytes within the timeout")

type timeoutError string

func (e timeoutError) Error() string   { return string(e) }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }
