package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2/formatter"
)

// Colour is for people at a terminal only. It is off when the writer is not a
// terminal (a pipe, a file, a CI log), when --no-color is given, when NO_COLOR
// is set to any non-empty value (https://no-color.org) and when TERM is dumb.
// With colour off, no escape sequence reaches the output, not even one from a
// library (Ginkgo colours its label-filter errors) or quoted from a receiver's
// output: the writer strips them.

// noColorFlag is the global flag's name.
const noColorFlag = "no-color"

// noColorArg reports whether the command line asks for --no-color. Main reads
// it before cobra parses the flags, since the writers are set up first.
func noColorArg(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--"+noColorFlag {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--"+noColorFlag+"="); ok {
			b, err := strconv.ParseBool(v)
			return err != nil || b
		}
	}
	return false
}

// colorAllowed decides for one output stream.
func colorAllowed(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// colorWriter marks an output stream where colour is allowed.
type colorWriter struct{ io.Writer }

// painter colours text for w when w allows it, and leaves it alone otherwise.
type painter bool

func painterFor(w io.Writer) painter {
	_, ok := w.(colorWriter)
	return painter(ok)
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiGrey   = "\x1b[90m"
)

func (p painter) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return code + s + ansiReset
}

// status colours a verdict label or state (PASS, failed, N/A …).
func (p painter) status(label string) string {
	switch strings.ToUpper(strings.TrimSpace(label)) {
	case "PASS", "PASSED":
		return p.paint(ansiGreen, label)
	case "FAIL", "FAILED":
		return p.paint(ansiBold+ansiRed, label)
	case "ERROR":
		return p.paint(ansiYellow, label)
	case "N/A", "NOT_APPLICABLE", "NO VERDICT":
		return p.paint(ansiGrey, label)
	}
	return label
}

// setupColor wraps Main's writers: colour-capable streams are marked, the
// others strip escape sequences. Ginkgo's formatter, which colours the errors
// of a bad label filter, follows stderr, where those errors are printed.
func setupColor(args []string, stdout, stderr io.Writer) (io.Writer, io.Writer) {
	noColor := noColorArg(args)
	wrap := func(w io.Writer) io.Writer {
		if colorAllowed(w, noColor) {
			return colorWriter{w}
		}
		return &stripWriter{w: w}
	}
	out, errw := wrap(stdout), wrap(stderr)
	mode := formatter.ColorModeNone
	if _, ok := errw.(colorWriter); ok {
		mode = formatter.ColorModeTerminal
	}
	formatter.SingletonFormatter = formatter.New(mode)
	return out, errw
}

// stripWriter removes ANSI escape sequences (CSI, OSC and two-byte escapes)
// from what it passes on, across writes.
type stripWriter struct {
	mu    sync.Mutex
	w     io.Writer
	state int
}

const (
	stText     = iota
	stEsc      // after ESC
	stEscInter // ESC, intermediate bytes …, final byte
	stCSI      // inside ESC [ … final byte
	stOSC      // inside ESC ] … BEL or ESC \
	stOSCEsc
)

func (s *stripWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]byte, 0, len(b))
	for _, c := range b {
		switch s.state {
		case stText:
			// Only ESC starts a sequence: the 8-bit C1 forms are UTF-8
			// continuation bytes in text.
			if c == 0x1b {
				s.state = stEsc
			} else {
				out = append(out, c)
			}
		case stEsc:
			switch c {
			case '[':
				s.state = stCSI
			case ']':
				s.state = stOSC
			default:
				if c >= 0x20 && c <= 0x2f {
					s.state = stEscInter // ESC ( B and the like
				} else {
					s.state = stText // a two-byte escape: both bytes dropped
				}
			}
		case stEscInter:
			if c >= 0x30 && c <= 0x7e {
				s.state = stText
			}
		case stCSI:
			if c >= 0x40 && c <= 0x7e {
				s.state = stText
			}
		case stOSC:
			if c == 0x07 {
				s.state = stText
			} else if c == 0x1b {
				s.state = stOSCEsc
			}
		case stOSCEsc:
			s.state = stText
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
