package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// masks are the values steps asked to hide with ::add-mask::. As on a runner,
// the command line itself is not shown, and every later line of the log shows
// *** in place of the value.
type masks struct {
	mu     sync.Mutex
	values []string
}

func (m *masks) add(v string) {
	if v = strings.TrimSpace(v); v == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values = append(m.values, v)
}

func (m *masks) apply(s string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.values {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}

func (m *masks) writer(w io.Writer) *maskWriter { return &maskWriter{m: m, w: w} }

// maskWriter passes a step's output on line by line, masked.
type maskWriter struct {
	m   *masks
	w   io.Writer
	buf []byte
}

func (mw *maskWriter) Write(p []byte) (int, error) {
	mw.buf = append(mw.buf, p...)
	for {
		i := bytes.IndexByte(mw.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		mw.line(string(mw.buf[:i+1]))
		mw.buf = mw.buf[i+1:]
	}
}

func (mw *maskWriter) line(l string) {
	if v, ok := strings.CutPrefix(strings.TrimSpace(l), "::add-mask::"); ok {
		mw.m.add(v)
		return
	}
	_, _ = io.WriteString(mw.w, mw.m.apply(l))
}

// flush writes a last line that has no newline.
func (mw *maskWriter) flush() {
	if len(mw.buf) > 0 {
		mw.line(string(mw.buf) + "\n")
		mw.buf = nil
	}
}
