//go:build !unix

package simulator

import "net"

// prober cannot probe without blocking on this platform; idle connections
// are trusted.
type prober struct{}

func newProber(net.Conn) *prober { return nil }

// connAlive trusts idle connections on this platform.
func connAlive(*pconn) bool { return true }

// releaseWrite writes the held-back final byte(s) of a barrier copy.
func releaseWrite(c net.Conn, b []byte) (int, error) { return c.Write(b) }
