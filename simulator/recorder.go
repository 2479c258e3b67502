package simulator

import (
	"cmp"
	"slices"
	"sync"

	"github.com/hookcert/hookcert/history"
)

// ExcerptLimit bounds the response body excerpt kept in a record.
const ExcerptLimit = 512

// recorder appends records from concurrent goroutines. Attempts are kept in
// fixed-size chunks so a long run never copies its whole history to grow it.
type recorder struct {
	mu     sync.Mutex
	h      history.History // Meta and Releases; Attempts live in chunks
	chunks [][]history.Attempt
	// each, when set, is told of every attempt as it is recorded.
	each func(history.Attempt)
}

const recorderChunk = 1024

func (r *recorder) attempt(a history.Attempt) {
	r.mu.Lock()
	n := len(r.chunks)
	if n == 0 || len(r.chunks[n-1]) == recorderChunk {
		r.chunks = append(r.chunks, make([]history.Attempt, 0, recorderChunk))
		n++
	}
	r.chunks[n-1] = append(r.chunks[n-1], a)
	r.mu.Unlock()
	if r.each != nil {
		r.each(a)
	}
}

func (r *recorder) release(rel history.Release) {
	r.mu.Lock()
	r.h.Releases = append(r.h.Releases, rel)
	r.mu.Unlock()
}

// snapshot returns a copy sorted by start time, so concurrent appends give a
// stable, readable order.
func (r *recorder) snapshot() *history.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := history.History{Meta: r.h.Meta}
	n := 0
	for _, c := range r.chunks {
		n += len(c)
	}
	// Sort (start, arrival index) keys rather than the records themselves, which
	// are hundreds of bytes each: a long run's history is then copied once, in
	// order, instead of being shuffled in place by a stable sort.
	type key struct {
		start int64
		i     int32
	}
	keys := make([]key, 0, n)
	for ci, c := range r.chunks {
		for j := range c {
			keys = append(keys, key{c[j].StartNS, int32(ci*recorderChunk + j)})
		}
	}
	if !slices.IsSortedFunc(keys, func(a, b key) int { return cmp.Compare(a.start, b.start) }) {
		slices.SortFunc(keys, func(a, b key) int {
			if c := cmp.Compare(a.start, b.start); c != 0 {
				return c
			}
			return cmp.Compare(a.i, b.i) // equal starts keep arrival order, as a stable sort
		})
	}
	if n > 0 {
		h.Attempts = make([]history.Attempt, n)
	}
	for k, x := range keys {
		h.Attempts[k] = r.chunks[int(x.i)/recorderChunk][int(x.i)%recorderChunk]
	}
	h.Releases = append([]history.Release(nil), r.h.Releases...)
	return &h
}
