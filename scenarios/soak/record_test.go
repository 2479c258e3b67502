package soak

import (
	"testing"

	"github.com/hookcert/hookcert/history"
)

// The log keeps records in arrival order across chunk boundaries.
func TestAttemptLogKeepsArrivalOrder(t *testing.T) {
	var l attemptLog
	if l.all() != nil || l.len() != 0 {
		t.Fatal("empty log: want no records")
	}
	n := 2*attemptChunk + 7
	for i := 0; i < n; i += 3 {
		var recs []history.Attempt
		for j := i; j < min(i+3, n); j++ {
			recs = append(recs, history.Attempt{StartNS: int64(j)})
		}
		l.add(recs)
	}
	if l.len() != n {
		t.Fatalf("len %d, want %d", l.len(), n)
	}
	all := l.all()
	for i := 0; i < n; i++ {
		if l.at(i).StartNS != int64(i) || all[i].StartNS != int64(i) {
			t.Fatalf("record %d: at %d, all %d", i, l.at(i).StartNS, all[i].StartNS)
		}
	}
}
