package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// tsReceiver is a minimal HTTP/1.1 receiver that timestamps each request with
// the KERNEL receive time of the packet that completed its body (SO_TIMESTAMPNS
// on the accepted TCP socket). That is when the request arrived at the
// receiver's host, independent of how fast the receiving process gets
// scheduled, which on a 2-CPU machine shared with the sender dominates
// handler-observed spreads.
type tsReceiver struct {
	mu     sync.Mutex
	kernel map[string][]int64 // batch → kernel arrival, unix ns
	user   map[string][]int64 // batch → user-space observation, unix ns
}

func newTSReceiver() *tsReceiver {
	return &tsReceiver{kernel: map[string][]int64{}, user: map[string][]int64{}}
}

func (t *tsReceiver) take(batch string) (k, u []int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, u = t.kernel[batch], t.user[batch]
	delete(t.kernel, batch)
	delete(t.user, batch)
	return k, u
}

func (t *tsReceiver) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go t.conn(c.(*net.TCPConn))
	}
}

var okResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n{\"status\":\"processed\"}")

func (t *tsReceiver) conn(c *net.TCPConn) {
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
	var pending []byte
	buf := make([]byte, 64<<10)
	oob := make([]byte, 128)
	for {
		var n, oobn int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, 0)
			return rerr != syscall.EAGAIN
		})
		if err != nil || rerr != nil || n <= 0 {
			return
		}
		now := time.Now().UnixNano()
		kts := kernelTime(oob[:oobn])
		pending = append(pending, buf[:n]...)
		for {
			path, size, ok := parseRequest(pending)
			if !ok {
				break
			}
			pending = pending[size:]
			batch := path[bytes.LastIndexByte([]byte(path), '/')+1:]
			t.mu.Lock()
			t.kernel[batch] = append(t.kernel[batch], kts)
			t.user[batch] = append(t.user[batch], now)
			t.mu.Unlock()
			if _, err := c.Write(okResponse); err != nil {
				return
			}
		}
	}
}

// kernelTime reads the SCM_TIMESTAMPNS control message (0 when absent).
func kernelTime(oob []byte) int64 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return sec*1e9 + nsec
		}
	}
	return 0
}

// parseRequest finds one complete request at the start of b: its path and
// total size. ok is false until headers and body are all there.
func parseRequest(b []byte) (path string, size int, ok bool) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return "", 0, false
	}
	head := b[:end]
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	parts := bytes.Split(line, []byte(" "))
	if len(parts) >= 2 {
		path = string(parts[1])
	}
	cl := 0
	for _, h := range bytes.Split(rest, []byte("\r\n")) {
		k, v, _ := bytes.Cut(h, []byte(":"))
		if bytes.EqualFold(bytes.TrimSpace(k), []byte("Content-Length")) {
			cl, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	size = end + 4 + cl
	if len(b) < size {
		return "", 0, false
	}
	return path, size, true
}
