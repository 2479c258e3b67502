package soak

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxShards bounds --shard's N.
const MaxShards = 256

// Shard is one slice of a soak's traffic. The soak's workers are numbered 0 to
// Concurrency-1 and each draws its events from a generator seeded by the seed
// and its number alone; shard Index of Count runs the workers whose number is
// Index modulo Count. The shards of one seed together send what one process
// with the same seed, concurrency and rate sends, and no event of one shard is
// another's (an event's ID carries its worker's number). Nothing coordinates
// the shards beyond the seed, the index and the common start time.
type Shard struct {
	Index, Count int
	// StartAt is when every shard begins its traffic; the soak's times count
	// from it, so the shards' histories share one clock origin.
	StartAt time.Time
}

// ShardInfo is a shard as its history's meta.run records it.
type ShardInfo struct {
	Index   int       `json:"index"`
	Count   int       `json:"count"`
	StartAt time.Time `json:"start_at"`
}

// Sharded reports whether the soak runs one slice of several.
func (s Shard) Sharded() bool { return s.Count > 1 }

// String is the shard as --shard takes it.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads --shard's "i/N": shard i (from 0) of N.
func ParseShard(v string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return Shard{}, fmt.Errorf("%q is not INDEX/COUNT (e.g. 0/2: the first of two shards)", v)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	switch {
	case err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("%q is not INDEX/COUNT with whole numbers (e.g. 0/2)", v)
	case cnt < 1 || cnt > MaxShards:
		return Shard{}, fmt.Errorf("%q: the shard count must be between 1 and %d", v, MaxShards)
	case idx < 0 || idx >= cnt:
		return Shard{}, fmt.Errorf("%q: the shard index counts from 0 and must be below the count %d", v, cnt)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// ParseStartAt reads --start-at, an RFC 3339 time.
func ParseStartAt(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (e.g. 2026-05-04T12:00:00Z)", v)
	}
	return t, nil
}

// ShardRunID is the run's namespace in every event ID of a soak started at a
// given time: the same in every shard, so the merged history is one run, and
// new with each start time, so a later soak of the same seed against the same
// receiver sends events it has not seen.
func ShardRunID(seed int64, startAt time.Time) string {
	return fmt.Sprintf("s%dt%d", seed, startAt.Unix())
}

// workers are the worker numbers this shard runs, of total concurrency.
func (s Shard) workers(concurrency int) []int {
	if !s.Sharded() {
		ws := make([]int, concurrency)
		for i := range ws {
			ws[i] = i
		}
		return ws
	}
	var ws []int
	for w := s.Index; w < concurrency; w += s.Count {
		ws = append(ws, w)
	}
	return ws
}

// validate checks the shard against the soak's total concurrency.
func (s Shard) validate(concurrency int) error {
	if s.Count == 0 {
		return nil
	}
	if s.Index < 0 || s.Index >= s.Count || s.Count > MaxShards {
		return fmt.Errorf("--shard %s: the index counts from 0 and must be below the count (at most %d)", s, MaxShards)
	}
	if s.Sharded() && concurrency < s.Count {
		return fmt.Errorf("--shard %s: --concurrency is the whole soak's and must be at least the shard count %d (got %d), so every shard runs a worker", s, s.Count, concurrency)
	}
	if s.Sharded() && s.StartAt.IsZero() {
		return errors.New("--shard with more than one shard needs --start-at: the shards' common start time (RFC 3339), which also names the run")
	}
	return nil
}

// appliesFaults reports whether this process applies the nemesis: receiver-wide
// faults (a kill, a pause, the end of every session) come from shard 0 alone,
// or N shards would apply N times the schedule asked for.
func (s Shard) appliesFaults() bool { return !s.Sharded() || s.Index == 0 }

// origin is the time the soak counts from: the common start time, else now.
func (s Shard) origin() time.Time {
	if s.StartAt.IsZero() {
		return time.Now()
	}
	return s.StartAt
}

// rate is this shard's share of the whole soak's rate: its workers' share, so
// every worker is held to the rate it has in an unsharded soak.
func (s Shard) rate(total float64, concurrency int) float64 {
	if !s.Sharded() || total <= 0 {
		return total
	}
	return total * float64(len(s.workers(concurrency))) / float64(concurrency)
}

// trafficWindow waits for the common start time, if any, and returns the
// context traffic runs under: until the start time plus the duration, so every
// shard stops when the others do, even one that started late.
func (s *soak) trafficWindow(ctx context.Context) (context.Context, context.CancelFunc, error) {
	at := s.o.Shard.StartAt
	if at.IsZero() {
		c, cancel := context.WithTimeout(ctx, s.o.Duration)
		return c, cancel, nil
	}
	end := at.Add(s.o.Duration)
	if !time.Now().Before(end) {
		return nil, nil, fmt.Errorf("--start-at %s: the traffic window ended at %s, before this shard was ready to send", at.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("interrupted waiting for --start-at: %w", context.Cause(ctx))
		}
	}
	c, cancel := context.WithDeadline(ctx, end)
	return c, cancel, nil
}

func (s ShardInfo) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Info is the shard as meta.run records it (nil for an unsharded soak without
// a start time).
func (s Shard) Info() *ShardInfo {
	if s.Count == 0 && s.StartAt.IsZero() {
		return nil
	}
	return &ShardInfo{Index: s.Index, Count: max(1, s.Count), StartAt: s.StartAt.UTC()}
}
