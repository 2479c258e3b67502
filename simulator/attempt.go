package simulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// newRecord fills the fields every attempt record shares.
func (r *Runner) newRecord(ev profiles.Event, at profiles.Attempt, p *prepared, step, cp int) AttemptRecord {
	return AttemptRecord{
		Key: profiles.EventKey(r.target.Profile, ev), EventType: ev.Type, Step: step, Attempt: at.N, Copy: cp,
		DeliveryID: at.DeliveryID, SignedAt: p.signedAt.UTC(), Faults: p.faults,
	}
}

// response is what came back, however far it got.
type response struct {
	status  int
	header  http.Header
	body    []byte
	tooBig  bool
	err     error
	wrote   bool
	gotResp bool
}

// finish classifies the result into the record.
func (r *Runner) finish(rec *AttemptRecord, res response, lostAck string, now time.Time) {
	rec.Status = res.status
	if len(res.body) > 0 {
		ex := res.body
		if len(ex) > ExcerptLimit {
			ex = ex[:ExcerptLimit]
		}
		rec.ResponseExcerpt = r.excerpt(ex)
	}
	if res.err != nil && !(lostAck == LostAckClose && res.wrote) {
		rec.ErrorClass = classify(res.err)
		rec.Error = res.err.Error()
	} else if res.tooBig {
		rec.ErrorClass = ErrClassTooLarge
		rec.Error = "response body exceeds the read limit; the rest was not read"
	}
	if res.gotResp {
		rec.RetryAfterNS = int64(parseRetryAfter(res.header, now))
	}
	switch {
	case lostAck != "" && res.wrote:
		// The provider never sees this answer: it retries as after a timeout.
		rec.Outcome, rec.Verdict = OutcomeUnknown, profiles.Retry.String()
	case res.gotResp && res.err == nil:
		v := r.target.Profile.Verdict(res.status, res.header, res.body)
		rec.Verdict = v.String()
		if v == profiles.Acknowledged {
			rec.Outcome = OutcomeAcknowledged
		} else {
			rec.Outcome = OutcomeFailed
		}
	case res.wrote:
		// Written in full, answer missing or cut: the receiver may have processed it.
		rec.Outcome, rec.Verdict = OutcomeUnknown, profiles.Retry.String()
	default:
		rec.Outcome, rec.Verdict = OutcomeFailed, profiles.Retry.String()
	}
}

// excerpt returns ex as valid UTF-8 text. A receiver usually answers every
// delivery with the same bytes, so the last excerpt is kept and shared: records
// of a long run then hold one copy, and the hot path allocates nothing for it.
func (r *Runner) excerpt(ex []byte) string {
	if last := r.lastExcerpt.Load(); last != nil && last.raw == string(ex) {
		return last.text
	}
	e := &excerptText{raw: string(ex)}
	e.text = strings.ToValidUTF8(e.raw, "\uFFFD")
	r.lastExcerpt.Store(e)
	return e.text
}

// excerptText is a response excerpt as received and as recorded.
type excerptText struct{ raw, text string }

// single makes one attempt over the runner's keep-alive pool.
func (r *Runner) single(ctx context.Context, ev profiles.Event, at profiles.Attempt, p *prepared, lostAck string, timeout time.Duration, step, cp int, clock Clock) AttemptRecord {
	rec := r.newRecord(ev, at, p, step, cp)
	wb := wirePool.Get().(*[]byte)
	wire := r.serialize(p, *wb)
	defer func() {
		// Write has returned by now (the kernel holds a copy), so the buffer is
		// free; huge ones (oversize faults) are not kept.
		if cap(wire) <= maxPooledWire {
			*wb = wire[:0]
			wirePool.Put(wb)
		}
	}()
	rec.WallStart = time.Now().UTC()
	rec.StartNS = r.since()
	rec.VirtualNS = int64(clock.Virtual(time.Duration(rec.StartNS)))
	deadline := time.Now().Add(timeout)
	var res response
	done := func() AttemptRecord {
		rec.EndNS = r.since()
		r.finish(&rec, res, lostAck, time.Now())
		return rec
	}
	pc := r.pool.get(deadline)
	if pc == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		var err error
		pc, err = r.dial(dctx)
		cancel()
		if err != nil {
			res.err = err
			return done()
		}
		pc.c.SetDeadline(deadline)
	}
	stop := guard(ctx, pc.c)
	n, err := pc.c.Write(wire)
	rec.BytesSent = int64(n)
	if err != nil {
		stop()
		pc.c.Close()
		res.err = err
		return done()
	}
	res.wrote = true
	if lostAck == LostAckClose {
		// Written in full; the answer is never read.
		stop()
		pc.c.Close()
		return done()
	}
	var reusable bool
	res, reusable = r.readResponse(pc)
	res.wrote = true
	if !stop() && ctx.Err() != nil {
		// The guard fired: the connection's deadline is spoiled.
		reusable = false
	}
	if reusable {
		// The deadline stays; the next get sets its own before probing.
		r.pool.put(pc)
	} else {
		pc.c.Close()
	}
	return done()
}

// readBounded reads at most limit bytes of body; tooBig reports more was there.
func readBounded(body io.Reader, limit int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, err
}

// classify maps a transport error onto an error class.
func classify(err error) string {
	var ne net.Error
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var unk x509.UnknownAuthorityError
	var host x509.HostnameError
	var inv x509.CertificateInvalidError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return ErrClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrClassRefused
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert),
		errors.As(err, &unk), errors.As(err, &host), errors.As(err, &inv):
		return ErrClassTLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return ErrClassReset
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "exceeded") && strings.Contains(s, "bytes"):
		return ErrClassTooLarge
	case strings.Contains(s, "tls:") || strings.Contains(s, "x509:"):
		return ErrClassTLS
	case strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe") ||
		strings.Contains(s, "EOF") || strings.Contains(s, "server closed"):
		return ErrClassReset
	}
	return ErrClassOther
}

// copies sends n copies of one prepared request over n connections opened
// beforehand. Each copy writes all of its request except the final byte and
// starts waiting for its response; the release then writes the last byte on
// every connection from one goroutine in a tight loop. A receiver (which must
// read the whole body to verify the signature) thus gets all n requests within
// microseconds of each other, and no goroutine wake-ups sit between the
// copies' final writes.
func (r *Runner) copies(ctx context.Context, ev profiles.Event, at profiles.Attempt, p *prepared, lostAck string, timeout time.Duration, step, n int, clock Clock) ([]AttemptRecord, ReleaseRecord) {
	wire := r.serialize(p, nil)
	recs := make([]AttemptRecord, n)
	rel := ReleaseRecord{Step: step, Attempt: at.N, Key: profiles.EventKey(r.target.Profile, ev), Copies: n}
	deadline := time.Now().Add(timeout)
	type copyState struct {
		pc       *pconn
		sent     int64
		err      error // dial or pre-write error, or the final write's
		written  int64 // ns since run start when the last byte went out
		released chan struct{}
	}
	st := make([]copyState, n)
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for i := range st {
		st[i].released = make(chan struct{})
		go func(i int) {
			defer done.Done()
			cs := &st[i]
			rec := r.newRecord(ev, at, p, step, i)
			var res response
			finish := func() {
				if rec.StartNS == 0 {
					rec.WallStart, rec.StartNS = time.Now().UTC(), r.since()
					rec.VirtualNS = int64(clock.Virtual(time.Duration(rec.StartNS)))
				}
				rec.EndNS = r.since()
				r.finish(&rec, res, lostAck, time.Now())
				recs[i] = rec
			}
			dctx, cancel := context.WithDeadline(ctx, deadline)
			pc, err := r.dial(dctx)
			cancel()
			if err == nil {
				pc.c.SetDeadline(deadline)
				var nw int
				nw, err = pc.c.Write(wire[:len(wire)-1])
				cs.sent = int64(nw)
				if err != nil {
					pc.c.Close()
				}
			}
			if err != nil {
				cs.err = err
				ready.Done()
				<-cs.released
				res.err = err
				rec.BytesSent = cs.sent
				finish()
				return
			}
			cs.pc = pc
			defer pc.c.Close()
			stop := guard(ctx, pc.c)
			defer stop()
			ready.Done()
			if lostAck != LostAckClose {
				res, _ = r.readResponse(pc)
			}
			// The release wrote (or failed to write) the last byte before closing
			// released; until then a response cannot be complete.
			<-cs.released
			rec.BytesSent = cs.sent
			if cs.err != nil {
				// Not written in full; keep an early answer (a receiver may reject
				// on the headers alone) but never count the request as delivered.
				if !res.gotResp {
					res = response{err: cs.err}
				}
				res.wrote = false
			} else {
				res.wrote = true
				rec.WallStart = time.Unix(0, r.start.UnixNano()+cs.written).UTC()
				rec.StartNS = cs.written
				rec.VirtualNS = int64(clock.Virtual(time.Duration(rec.StartNS)))
			}
			finish()
		}(i)
	}
	ready.Wait()
	rel.StartNS = r.since()
	last := wire[len(wire)-1:]
	for i := range st {
		cs := &st[i]
		if cs.pc == nil || ctx.Err() != nil {
			if cs.err == nil {
				cs.err = ctx.Err()
			}
			continue
		}
		nw, err := releaseWrite(cs.pc.c, last)
		cs.written = r.since()
		cs.sent += int64(nw)
		if err != nil {
			cs.err = err
			cs.pc.c.SetDeadline(aLongTimeAgo)
		}
	}
	for i := range st {
		close(st[i].released)
	}
	done.Wait()
	var lo, hi int64
	for i := range st {
		if st[i].err != nil || st[i].pc == nil {
			continue
		}
		w := st[i].written
		if rel.Released == 0 || w < lo {
			lo = w
		}
		if w > hi {
			hi = w
		}
		rel.Released++
	}
	if rel.Released > 0 {
		rel.SpreadNS = hi - lo
	}
	return recs, rel
}
