//go:build unix

package simulator

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"unsafe"
)

// prober peeks at an idle connection without blocking: EOF or stray data
// means the receiver closed it (or it is out of step), so it must not be
// reused. It is built once per connection so a probe allocates nothing: the
// raw connection and the callback are kept, the result goes in a field.
type prober struct {
	raw   syscall.RawConn // nil: see dead
	dead  bool            // the raw connection was unavailable: never reuse
	alive bool
	buf   [1]byte
	fn    func(fd uintptr) bool
}

func newProber(c net.Conn) *prober {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil // nothing to probe: trusted, as on platforms without MSG_PEEK
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return &prober{dead: true}
	}
	p := &prober{raw: raw}
	p.fn = p.peek
	return p
}

func (p *prober) peek(fd uintptr) bool {
	_, _, rerr := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	// 0 bytes with no error is EOF, more is stray data: both dead.
	p.alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
	return true // never wait for readiness: this is a probe
}

// connAlive reports whether pc's idle connection may carry another request.
// Its deadline must not have passed (a raw read checks it first).
func connAlive(pc *pconn) bool {
	p := pc.probe
	if p == nil {
		return true
	}
	if p.dead {
		return false
	}
	p.alive = false
	err := p.raw.Read(p.fn)
	return err == nil && p.alive
}

// releaseWrite writes the held-back final byte(s) of a barrier copy. On a plain
// TCP connection it issues write(2) as a raw system call: the socket is
// non-blocking and the write is a byte or so, so it never blocks, and skipping
// the scheduler's syscall bookkeeping keeps the release loop from losing its
// processor between copies.
func releaseWrite(c net.Conn, b []byte) (int, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok || len(b) == 0 {
		return c.Write(b)
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c.Write(b)
	}
	var n int
	var werr error
	err = raw.Write(func(fd uintptr) bool {
		r1, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e == syscall.EAGAIN {
			return false // buffer full: wait for writability
		}
		if e != 0 {
			werr = e
		} else {
			n = int(r1)
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err == nil && n < len(b) {
		m, err2 := c.Write(b[n:])
		return n + m, err2
	}
	return n, err
}
