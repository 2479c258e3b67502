package cmdobserve

import (
	"strings"
	"sync"
)

// kindError is an error of one or more classes (observe.ErrInvalidQuery,
// observe.ErrTimeout, observe.ErrUnreachable, a cause) whose message does not
// repeat the classes' words, as adapters/observe builds its own.
type kindError struct {
	msg   string
	kinds []error
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return e.kinds }

func classed(msg string, kinds ...error) error {
	e := &kindError{msg: msg}
	for _, k := range kinds {
		if k != nil {
			e.kinds = append(e.kinds, k)
		}
	}
	return e
}

// tail keeps the last limit bytes written to it: the end of a program's
// stderr, where its error usually is.
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	lost  bool
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.lost = true
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// lines is the last n lines kept. A line the limit cut at its front is
// dropped: the cut may split a secret the scrubber would then not recognise.
func (t *tail) lines(n int) string {
	t.mu.Lock()
	s := string(t.buf)
	lost := t.lost
	t.mu.Unlock()
	if lost {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		} else {
			s = ""
		}
	}
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.TrimSpace(strings.Join(ls, "\n"))
}

// capped keeps at most limit bytes; the first write past it calls over, once,
// and later writes are swallowed so the program never blocks on a full pipe
// before it is killed.
type capped struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	past  bool
	over  func()
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.past {
		return len(b), nil
	}
	if len(c.buf)+len(b) > c.limit {
		c.past = true
		c.over()
		return len(b), nil
	}
	c.buf = append(c.buf, b...)
	return len(b), nil
}

func (c *capped) result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.past
}
