//go:build !linux

package cli

import "os"

// isTerminal reports whether f looks like a terminal. Without a portable
// termios call, a character device is taken for one (/dev/null too, where
// colour is harmless).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
