package soak

import "time"

// Progress is a snapshot of a running soak.
type Progress struct {
	// Phase is "traffic", "settle" or "read".
	Phase    string
	Elapsed  time.Duration
	Duration time.Duration
	// Rate is the deliveries that ended in the last second.
	Rate                   int64
	Attempts, Acknowledged int64
	// LostAcks are attempts whose acknowledgement the soak lost on purpose
	// (Options.LostAckRate): their outcome is unknown by design. Errors are
	// the other attempts that were not acknowledged: failed, or unknown
	// because the receiver or the network lost the answer.
	LostAcks, Errors int64
	// Faults counts the faults applied, Down is true while one is applied.
	Faults int64
	Down   string
}

// report calls Progress once a second until the returned stop, which waits
// for the last call to end: Progress is never called concurrently.
func (s *soak) report(phase string) (stop func()) {
	if s.o.Progress == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.progress(phase)
			}
		}
	}()
	return func() { close(done); <-exited }
}

func (s *soak) progress(phase string) {
	if s.o.Progress == nil {
		return
	}
	now := s.since()
	var rate int64
	s.mu.Lock()
	for i := s.attempts.len() - 1; i >= 0 && s.attempts.at(i).EndNS > now-int64(time.Second); i-- {
		rate++
	}
	s.mu.Unlock()
	p := Progress{Phase: phase, Elapsed: time.Duration(now), Duration: s.o.Duration, Rate: rate,
		Attempts: s.nAttempts.Load(), Acknowledged: s.nAcked.Load(), LostAcks: s.nLostAck.Load(), Errors: s.nErr.Load(), Faults: s.nFlt.Load()}
	if d := s.down.Load(); d != nil {
		p.Down = *d
	}
	s.o.Progress(p)
}
