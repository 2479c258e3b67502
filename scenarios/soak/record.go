package soak

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/history"
)

// PhaseSoak is the phase of the final reads of every key.
const PhaseSoak = "soak"

// read reads every key's event rows and effects, eight at a time.
func (s *soak) read(ctx context.Context) ([]history.Observation, error) {
	s.mu.Lock()
	keys := append([]*keyState(nil), s.keys...)
	s.mu.Unlock()
	out := make([]history.Observation, 2*len(keys))
	var noEffects atomic.Bool
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ks := keys[i]
				params := []string{ks.key.Source, ks.key.Account, ks.key.EventID, ks.ev.ObjectID}
				n, err := s.env.Observer.EventRows(ctx, ks.key)
				out[2*i] = observation("event_rows", params, n, err, s.since())
				if noEffects.Load() {
					continue
				}
				n, err = s.env.Observer.Effects(ctx, ks.key, ks.ev.ObjectID)
				if errors.Is(err, observe.ErrNotConfigured) {
					noEffects.Store(true)
					continue
				}
				out[2*i+1] = observation("effects", params, n, err, s.since())
			}
		}()
	}
	for i := range keys {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	// Unset slots: effects not configured, or reads cut short.
	obs := out[:0]
	for _, o := range out {
		if o.Query != "" {
			obs = append(obs, o)
		}
	}
	if ctx.Err() != nil {
		return obs, fmt.Errorf("interrupted while reading: %w", context.Cause(ctx))
	}
	return obs, nil
}

func observation(q string, params []string, n int, err error, at int64) history.Observation {
	o := history.Observation{Query: q, Params: params, Phase: PhaseSoak, Found: err == nil, Count: int64(n), AtNS: at}
	if err != nil {
		o.Error = err.Error()
	}
	return o
}

// history is what the soak recorded, attempts in the order they started.
func (s *soak) history(obs []history.Observation) *history.History {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &history.History{
		Meta:         history.Meta{RunID: s.env.RunID, Seed: s.o.Seed, TimeScale: s.env.TimeScale, Started: s.start.UTC(), Finished: time.Now().UTC(), Plan: Plan},
		Attempts:     s.attempts.all(),
		Releases:     []history.Release{},
		Observations: obs,
	}
	if len(s.env.Endpoints) > 0 {
		h.Meta.Profile = s.env.Endpoints[0].Profile.ID()
	}
	sort.SliceStable(h.Attempts, func(i, j int) bool { return h.Attempts[i].StartNS < h.Attempts[j].StartNS })
	return h
}

// attemptLog is the soak's records in arrival order, kept in fixed-size
// chunks: a long soak never copies its whole history to grow it, as append on
// one slice did at every doubling. The soak's lock guards it.
type attemptLog struct {
	chunks [][]history.Attempt
	n      int
}

const attemptChunk = 1024

func (l *attemptLog) add(recs []history.Attempt) {
	for _, a := range recs {
		if l.n%attemptChunk == 0 {
			l.chunks = append(l.chunks, make([]history.Attempt, 0, attemptChunk))
		}
		c := &l.chunks[len(l.chunks)-1]
		*c = append(*c, a)
		l.n++
	}
}

func (l *attemptLog) len() int { return l.n }

// at is record i (0 ≤ i < len), in place.
func (l *attemptLog) at(i int) *history.Attempt { return &l.chunks[i/attemptChunk][i%attemptChunk] }

// all is a copy of every record in arrival order (nil for none).
func (l *attemptLog) all() []history.Attempt {
	if l.n == 0 {
		return nil
	}
	out := make([]history.Attempt, 0, l.n)
	for _, c := range l.chunks {
		out = append(out, c...)
	}
	return out
}
