//go:build linux

package simulator

import (
	"encoding/binary"
	"syscall"
	"unsafe"
)

// sockState is what the kernel knows about a connection's sending side: how
// much of what was written the receiver's kernel acknowledged. The barrier
// holds back a copy's final byte only once the receiver's kernel holds the
// rest, and a reset counts as "the receiver took none of it" only when no byte
// was acknowledged.
type sockState struct {
	known       bool  // the kernel answered (false: assume the worst and the old behaviour)
	established bool  // TCP_ESTABLISHED: neither side has closed or reset
	pending     bool  // bytes written but not yet acknowledged (or not yet sent)
	acked       int64 // bytes the receiver's kernel acknowledged (tcpi_bytes_acked)
	received    int64 // bytes received from the receiver (tcpi_bytes_received)
}

// Offsets in struct tcp_info (linux/tcp.h, stable since 4.6).
const (
	tcpiState      = 0
	tcpiUnacked    = 24
	tcpiBytesAcked = 120
	tcpiBytesRecv  = 128
	tcpiNotsent    = 144
	tcpiMinLen     = 148
	tcpEstablished = 1
)

// readSockState reads TCP_INFO of the connection's socket.
func readSockState(pc *pconn) sockState {
	if pc.raw == nil {
		return sockState{}
	}
	var buf [256]byte
	var st sockState
	pc.raw.Control(func(fd uintptr) {
		n := uint32(len(buf))
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		if e != 0 || n < tcpiMinLen {
			return
		}
		st.known = true
		st.established = buf[tcpiState] == tcpEstablished
		st.pending = binary.NativeEndian.Uint32(buf[tcpiUnacked:]) != 0 || binary.NativeEndian.Uint32(buf[tcpiNotsent:]) != 0
		st.acked = int64(binary.NativeEndian.Uint64(buf[tcpiBytesAcked:]))
		st.received = int64(binary.NativeEndian.Uint64(buf[tcpiBytesRecv:]))
	})
	return st
}
