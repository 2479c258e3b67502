package scenarios

import (
	"fmt"
	"sync"
	"time"

	"github.com/hookcert/hookcert/simulator"
)

// Record is what one scenario saw: every deviation from its promise, the delivery
// attempts, the rows observed, and notes (release spread, gate waiters, …).
type Record struct {
	mu         sync.Mutex
	Deviations []string
	Notes      []string
	Attempts   []simulator.AttemptRecord
	Observed   []Observation
	errored    bool
}

// Observation is one read of the receiver's state.
type Observation struct {
	Query string
	Of    string // the key or object it was read for
	Value string
	At    time.Time
}

func (r *Record) deviate(format string, args ...any) {
	r.mu.Lock()
	r.Deviations = append(r.Deviations, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *Record) note(format string, args ...any) {
	r.mu.Lock()
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *Record) attempts(as ...simulator.AttemptRecord) {
	r.mu.Lock()
	r.Attempts = append(r.Attempts, as...)
	r.mu.Unlock()
}

func (r *Record) observed(query, of, value string) {
	r.mu.Lock()
	r.Observed = append(r.Observed, Observation{Query: query, Of: of, Value: value, At: time.Now()})
	r.mu.Unlock()
}

var (
	recordsMu sync.Mutex
	records   = map[string]*Record{}
)

func newRecord(spec string) *Record {
	r := &Record{}
	recordsMu.Lock()
	records[spec] = r
	recordsMu.Unlock()
	return r
}

func takeRecord(spec string) *Record {
	recordsMu.Lock()
	defer recordsMu.Unlock()
	r := records[spec]
	delete(records, spec)
	return r
}
