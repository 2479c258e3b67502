package simulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// newRecord fills the fields every attempt record shares.
func (r *Runner) newRecord(ev profiles.Event, at profiles.Attempt, p *prepared, step, cp int) history.Attempt {
	return history.Attempt{
		Key: profiles.EventKey(r.target.Profile, ev), EventType: ev.Type, Step: step, Attempt: at.N, Copy: cp,
		DeliveryID: at.DeliveryID, SignedAt: p.signedAt.UTC(), Faults: p.faults,
		BodyBytes: len(p.body), PadTo: p.padTo,
	}
}

// response is what came back, however far it got.
type response struct {
	// tries counts the connection tries the attempt made beyond a pooled
	// connection (refused or unanswered handshakes, fresh connections after the
	// receiver took nothing); 0 or 1 is the ordinary case.
	tries   int
	status  int
	header  http.Header
	body    []byte
	tooBig  bool
	err     error
	wrote   bool // the request was written in full
	gotResp bool
	// early: the answer arrived before the request was written in full (after
	// sentEarly of size bytes); a provider cannot count it as a delivery.
	early     bool
	sentEarly int64
	size      int64
}

// finish classifies the result into the record.
func (r *Runner) finish(rec *history.Attempt, res response, lostAck string, now time.Time) {
	rec.Status = res.status
	if res.tries > 1 {
		rec.ConnectTries = res.tries
	}
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
		rec.ErrorClass = history.ErrClassTooLarge
		rec.Error = "response body exceeds the read limit; the rest was not read"
	}
	if res.gotResp {
		rec.RetryAfterNS = int64(parseRetryAfter(res.header, now))
	}
	switch {
	case lostAck != "" && res.wrote && !res.early:
		// The provider never sees this answer: it retries as after a timeout.
		rec.Outcome, rec.Verdict = history.OutcomeUnknown, profiles.Retry.String()
	case res.gotResp && res.err == nil && (res.early || !res.wrote):
		// The receiver answered before it could have read the whole request: a
		// rejection stands (it may judge the headers alone), but a success
		// cannot be a delivery of a request it did not read.
		v := r.target.Profile.Verdict(res.status, res.header, res.body)
		rec.Verdict = v.String()
		rec.Outcome = history.OutcomeFailed
		if v == profiles.Acknowledged {
			rec.Outcome, rec.Verdict = history.OutcomeUnknown, profiles.Retry.String()
			rec.ErrorClass = history.ErrClassEarlyResponse
			rec.Error = fmt.Sprintf("the receiver answered %d before the request was written in full (%d of %d bytes sent); a provider cannot count that as a delivery",
				res.status, res.sentEarly, res.size)
		}
	case res.gotResp && res.err == nil:
		v := r.target.Profile.Verdict(res.status, res.header, res.body)
		rec.Verdict = v.String()
		if v == profiles.Acknowledged {
			rec.Outcome = history.OutcomeAcknowledged
		} else {
			rec.Outcome = history.OutcomeFailed
		}
	case res.wrote:
		// Written in full, answer missing or cut: the receiver may have processed it.
		rec.Outcome, rec.Verdict = history.OutcomeUnknown, profiles.Retry.String()
	default:
		rec.Outcome, rec.Verdict = history.OutcomeFailed, profiles.Retry.String()
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
func (r *Runner) single(ctx context.Context, ev profiles.Event, at profiles.Attempt, p *prepared, lostAck string, timeout time.Duration, step, cp int, clock Clock) history.Attempt {
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
	res := r.deliver(ctx, r.pool.get(deadline), wire, lostAck, deadline)
	rec.BytesSent = res.sent
	rec.EndNS = r.since()
	r.finish(&rec, res.response, lostAck, time.Now())
	return rec
}

// delivered is a response with the bytes written on the last connection.
type delivered struct {
	response
	sent int64
}

// deliver writes wire whole on pc (nil: a fresh connection) and reads the
// answer. When the receiver reset or closed a fresh connection without
// acknowledging any byte of the request, it cannot have read it: the same
// attempt goes out again on a fresh connection, a bounded number of times.
// A clean connection goes back to the pool.
func (r *Runner) deliver(ctx context.Context, pc *pconn, wire []byte, lostAck string, deadline time.Time) delivered {
	tries := 0
	for fresh := 1; ; fresh++ {
		if pc == nil {
			var err error
			if pc, err = r.connect(ctx, deadline); err != nil {
				return delivered{response: response{err: err, size: int64(len(wire))}}
			}
			pc.c.SetDeadline(deadline)
		}
		tries += pc.tries
		res, reusable := r.exchange(ctx, pc, wire, 0, lostAck)
		res.tries = tries
		if acked, ok := pc.requestAcked(); ok && !res.gotResp && res.err != nil {
			switch {
			case acked == 0 && fresh < maxFreshTries && ctx.Err() == nil && sleepCtx(ctx, retryPause(fresh), deadline):
				pc.c.Close()
				pc = nil
				continue
			case acked == 0:
				// Nothing reached the receiver: the request was not delivered.
				res.wrote = false
				res.err = untouchedError{err: res.err, conns: fresh}
			case acked < res.size && res.wrote:
				// Written to the socket, but the receiver's kernel never got all of
				// it: the receiver cannot have read the whole request.
				res.wrote = false
				res.err = partialError{err: res.err, acked: acked, size: res.size}
			}
		}
		pc.fresh = false
		if reusable {
			// The deadline stays; the next get sets its own before probing.
			r.pool.put(pc)
		} else {
			pc.c.Close()
		}
		return res
	}
}

// untouchedError is a connection failure before the receiver acknowledged any
// byte of the request, on every connection the attempt opened.
type untouchedError struct {
	err   error
	conns int
}

func (e untouchedError) Error() string {
	return fmt.Sprintf("%v (the receiver acknowledged no byte of the request on %d connection(s))", e.err, e.conns)
}

func (e untouchedError) Unwrap() error { return e.err }

// partialError is a connection failure after the receiver acknowledged only
// part of the request.
type partialError struct {
	err         error
	acked, size int64
}

func (e partialError) Error() string {
	return fmt.Sprintf("%v (the receiver acknowledged %d of the request's %d bytes)", e.err, e.acked, e.size)
}

func (e partialError) Unwrap() error { return e.err }

// earlyAnswerWait bounds the read of an answer that may have arrived while a
// write failed (a receiver that answers before reading a large body, then
// closes).
const earlyAnswerWait = 50 * time.Millisecond

// exchange writes wire[from:] on pc, whose deadline is set, and reads the
// answer (wire[:from] was written before).
func (r *Runner) exchange(ctx context.Context, pc *pconn, wire []byte, from int, lostAck string) (delivered, bool) {
	stop := guard(ctx, pc.c)
	n, err := pc.c.Write(wire[from:])
	sent, size := int64(from+n), int64(len(wire))
	if err != nil {
		stop()
		res := delivered{response: response{err: err, size: size}, sent: sent}
		if ans, ok := r.earlyAnswer(ctx, pc, sent, size); ok {
			res.response = ans
		}
		return res, false
	}
	if lostAck == LostAckClose {
		// Written in full; the answer is never read.
		stop()
		return delivered{response: response{wrote: true, size: size}, sent: sent}, false
	}
	res, reusable := r.readResponse(pc)
	res.wrote, res.size = true, size
	if !stop() && ctx.Err() != nil {
		// The guard fired: the connection's deadline is spoiled.
		reusable = false
	}
	return delivered{response: res, sent: sent}, reusable
}

// earlyAnswer reads an answer that may have arrived before a request could be
// written in full (a receiver that answers on the headers, then closes).
func (r *Runner) earlyAnswer(ctx context.Context, pc *pconn, sent, size int64) (response, bool) {
	if sent == 0 || ctx.Err() != nil {
		return response{}, false
	}
	pc.c.SetReadDeadline(time.Now().Add(earlyAnswerWait))
	ans, _ := r.readResponse(pc)
	if !ans.gotResp || ans.err != nil {
		return response{}, false
	}
	ans.sentEarly, ans.size = sent, size
	return ans, true
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
		return history.ErrClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return history.ErrClassRefused
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert),
		errors.As(err, &unk), errors.As(err, &host), errors.As(err, &inv):
		return history.ErrClassTLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return history.ErrClassReset
	}
	s := err.Error()
	switch {
	case errors.Is(err, errHeadersTooLarge), errors.Is(err, errTooManyInterim), errors.Is(err, errResponseTooLarge):
		return history.ErrClassTooLarge
	case strings.Contains(s, "exceeded") && strings.Contains(s, "bytes"):
		return history.ErrClassTooLarge
	case strings.Contains(s, "tls:") || strings.Contains(s, "x509:"):
		return history.ErrClassTLS
	case strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe") ||
		strings.Contains(s, "EOF") || strings.Contains(s, "server closed"):
		return history.ErrClassReset
	}
	return history.ErrClassOther
}
