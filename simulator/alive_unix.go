//go:build unix

package simulator

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"unsafe"
)

// connAlive peeks at an idle connection without blocking: EOF or stray data
// means the receiver closed it (or it is out of step), so it must not be reused.
func connAlive(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		_ = n // 0 with no error is EOF, more is stray data: both dead
		alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true // never wait for readiness: this is a probe
	})
	return err == nil && alive
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
