package soak

import (
	"context"
	"testing"
	"time"
)

func TestPacerSpacesSlotsWithoutDebt(t *testing.T) {
	if newPacer(0) != nil {
		t.Fatal("rate 0: want no pacer (unlimited)")
	}
	p := newPacer(1000) // 1 ms apart
	if p.interval != time.Millisecond {
		t.Fatalf("interval %v, want 1ms", p.interval)
	}
	gen := context.Background()
	var tm *time.Timer
	// A slot long past is not owed: the next one is now, then one interval on.
	p.next = time.Now().Add(-time.Hour)
	before := time.Now()
	if !p.wait(gen, &tm) {
		t.Fatal("wait: false with gen open")
	}
	if p.next.Before(before.Add(p.interval)) {
		t.Fatalf("after a missed slot the next is %v, want at least one interval after %v", p.next, before)
	}
	// A slot still ahead is taken in turn, one interval after the one before;
	// a worker waiting for it leaves as soon as the traffic ends.
	ahead := time.Now().Add(time.Hour)
	p.next = ahead
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if p.wait(ended, &tm) {
		t.Fatal("wait: true after gen ended")
	}
	if got := p.next.Sub(ahead); got != p.interval {
		t.Fatalf("the slot after %v is %v later, want %v", ahead, got, p.interval)
	}
	// Two copies take two slots: charge takes the second without waiting.
	p.charge()
	if got := p.next.Sub(ahead); got != 2*p.interval {
		t.Fatalf("after a charge the next slot is %v after %v, want %v", got, ahead, 2*p.interval)
	}
}
