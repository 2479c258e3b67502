//go:build !unix

package simulator

import "net"

// connAlive cannot probe without blocking on this platform; idle connections
// are trusted.
func connAlive(net.Conn) bool { return true }

// releaseWrite writes the held-back final byte(s) of a barrier copy.
func releaseWrite(c net.Conn, b []byte) (int, error) { return c.Write(b) }
