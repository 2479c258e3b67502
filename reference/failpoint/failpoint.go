package failpoint

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Point names a moment in the handling of one delivery.
type Point string

// The points a receiver implementing the protocol reports.
const (
	// AfterInsertBeforeCommit is reached after the event key and the business change
	// were written in the transaction and before it commits.
	AfterInsertBeforeCommit Point = "after-insert-before-commit"
	// AfterCommitBeforeResponse is reached after the commit and before any byte of the
	// response is written.
	AfterCommitBeforeResponse Point = "after-commit-before-response"
	// AfterResponse is reached right after the acknowledgement was written and flushed
	// to the client.
	AfterResponse Point = "after-response"
)

// Actions an armed point performs when it fires.
const (
	// ActionCrash makes the process kill itself with SIGKILL: no deferred functions,
	// no graceful shutdown, exactly like a power cut of the process.
	ActionCrash = "crash"
	// ActionError makes Hit return ErrInjected: the receiver treats it as a database
	// error at that point, rolls back what is still open and answers 5xx. At
	// AfterCommitBeforeResponse the commit has happened, so the 5xx models a commit
	// whose outcome the client never learned; at AfterResponse it is refused.
	ActionError = "error"
)

// maxEventIDLen bounds event_id so that a stray request cannot grow the registry
// without limit; real provider event IDs are far shorter.
const maxEventIDLen = 1024

// ErrInjected is returned by Hit when the point was armed with action "error".
var ErrInjected = errors.New("failpoint: injected failure")

// Points lists the known points in the order a delivery reaches them.
func Points() []Point {
	return []Point{AfterInsertBeforeCommit, AfterCommitBeforeResponse, AfterResponse}
}

// Valid reports whether p is one of Points().
func (p Point) Valid() bool {
	switch p {
	case AfterInsertBeforeCommit, AfterCommitBeforeResponse, AfterResponse:
		return true
	}
	return false
}

// Arming is one armed point as listed by the protocol's GET.
type Arming struct {
	Point Point `json:"point"`
	// EventID is the event the point fires for; "" means the next event to reach it.
	EventID string `json:"event_id"`
	Action  string `json:"action"`
}

// FieldError is a rejected arming request: the field and the rule it broke.
type FieldError struct {
	Field string
	Rule  string
}

// Error implements error.
func (e *FieldError) Error() string { return "failpoint: " + e.Field + ": " + e.Rule }

type key struct {
	point   Point
	eventID string
}

// Registry holds the armed points of one receiver process. It is safe for concurrent
// use. The zero value is not usable; call New. A nil *Registry is inert.
type Registry struct {
	crash func()
	// armed counts entries in byKey so that Hit takes no lock when nothing is armed,
	// which is the state of every delivery outside a crash scenario.
	armed atomic.Int64
	mu    sync.Mutex
	byKey map[key]string // action
}

// New returns an empty registry. crash is what ActionCrash does; nil means SIGKILL of
// the current process (tests pass a function to observe the crash in-process).
func New(crash func()) *Registry {
	if crash == nil {
		crash = killSelf
	}
	return &Registry{crash: crash, byKey: map[key]string{}}
}

// killSelf sends SIGKILL to this process and never returns: signal delivery is
// asynchronous, so the goroutine must not go on to run the step it was stopped at.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix
	}
	select {}
}

// Arm arms point p for eventID ("" = the next event that reaches p) with action
// "crash" or "error". Arming the same point and event again replaces the action.
// Errors are *FieldError naming the field and the rule.
func (r *Registry) Arm(p Point, eventID, action string) error {
	if r == nil {
		return errors.New("failpoint: registry not enabled (start the receiver with --enable-failpoints)")
	}
	if !p.Valid() {
		return &FieldError{Field: "point", Rule: fmt.Sprintf("must be one of %s, got %q", joinPoints(), truncate(string(p)))}
	}
	if action != ActionCrash && action != ActionError {
		return &FieldError{Field: "action", Rule: fmt.Sprintf("must be %q or %q, got %q", ActionCrash, ActionError, truncate(action))}
	}
	if p == AfterResponse && action == ActionError {
		// The acknowledgement is already on the wire: there is nothing left to fail.
		return &FieldError{Field: "action", Rule: fmt.Sprintf("at %s must be %q (the response is already sent)", AfterResponse, ActionCrash)}
	}
	if len(eventID) > maxEventIDLen {
		return &FieldError{Field: "event_id", Rule: fmt.Sprintf("must be at most %d bytes, got %d", maxEventIDLen, len(eventID))}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key{p, eventID}
	if _, ok := r.byKey[k]; !ok {
		r.armed.Add(1)
	}
	r.byKey[k] = action
	return nil
}

// Hit is called by the receiver when it reaches point p for eventID. If the point is
// armed for that event (an arming for the exact event ID wins over one for any event),
// the arming is consumed and its action performed: "crash" runs the crash function
// (by default SIGKILL, and Hit does not return), "error" returns ErrInjected. Otherwise
// Hit returns nil; when nothing is armed that costs one atomic load.
//
// If a crash function passed to New returns, Hit returns an error wrapping
// ErrInjected so that the caller still does not carry on past the point.
func (r *Registry) Hit(p Point, eventID string) error {
	if r == nil || r.armed.Load() == 0 {
		return nil
	}
	action, ok := r.take(p, eventID)
	if !ok {
		return nil
	}
	if action == ActionCrash {
		r.crash()
		return fmt.Errorf("crash at %s returned: %w", p, ErrInjected)
	}
	return fmt.Errorf("at %s: %w", p, ErrInjected)
}

// Idle reports that nothing is armed (one atomic load): a Hit now would do
// nothing.
func (r *Registry) Idle() bool { return r == nil || r.armed.Load() == 0 }

// take removes and returns the arming that matches (p, eventID), if any. Removal under
// the lock makes an arming fire exactly once even when concurrent deliveries of one
// event reach the point together.
func (r *Registry) take(p Point, eventID string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range []key{{p, eventID}, {p, ""}} {
		if action, ok := r.byKey[k]; ok {
			delete(r.byKey, k)
			r.armed.Add(-1)
			return action, true
		}
	}
	return "", false
}

// Armed lists the armed points, sorted by point (in delivery order) then event ID.
func (r *Registry) Armed() []Arming {
	if r == nil {
		return []Arming{}
	}
	r.mu.Lock()
	out := make([]Arming, 0, len(r.byKey))
	for k, action := range r.byKey {
		out = append(out, Arming{Point: k.point, EventID: k.eventID, Action: action})
	}
	r.mu.Unlock()
	order := map[Point]int{}
	for i, p := range Points() {
		order[p] = i
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Point != out[j].Point {
			return order[out[i].Point] < order[out[j].Point]
		}
		return out[i].EventID < out[j].EventID
	})
	return out
}

// DisarmAll removes every arming.
func (r *Registry) DisarmAll() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed.Add(-int64(len(r.byKey)))
	clear(r.byKey)
}

func joinPoints() string {
	ps := Points()
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// truncate keeps echoed client input short in error messages.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
