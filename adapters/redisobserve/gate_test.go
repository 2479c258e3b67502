package redisobserve

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// gateDB is a database of the test server no other test of this package
// uses: a gate counts only the clients of the observed database.
const gateDB = 14

// TestGateHoldsWritesAndCuts: under the gate, reads go on and writes wait; the
// gate counts the writers of its database (not another database's, not a
// blocking read, not its own), releases them together, and a cut closes a
// waiting client's connection so that its write never runs.
func TestGateHoldsWritesAndCuts(t *testing.T) {
	ctx := context.Background()
	base, prefix := testRedis(t)
	u, err := url.Parse(testURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/14" // gateDB
	r := openTest(t, u.String(), map[string]string{"event_rows": "EXISTS " + "k:$3", "effects": "GET c:$3"}, Timeouts{})
	receiver := func(db int) *redis.Client {
		o := *base.Options()
		o.DB, o.MaxRetries = db, -1
		c := redis.NewClient(&o)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	key := prefix + "gate"
	t.Cleanup(func() { receiver(gateDB).Del(ctx, key, key+":cut") })

	g, err := r.Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Release(ctx) }()
	// Two check-then-set writers: both checks see nothing, both wait at the set.
	var wg sync.WaitGroup
	seen := make(chan int64, 2)
	for range 2 {
		c := receiver(gateDB)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _ := c.Exists(ctx, key).Result()
			seen <- n
			c.Incr(ctx, key)
		}()
	}
	// Not the gate's: a writer of another database, a worker in BLPOP.
	other := receiver(gateDB - 1)
	go other.Set(ctx, prefix+"elsewhere", 1, time.Minute)
	worker := receiver(gateDB)
	go worker.BLPop(ctx, 3*time.Second, prefix+"queue")

	deadline := time.Now().Add(5 * time.Second)
	held := 0
	for time.Now().Before(deadline) {
		if held, err = g.Held(ctx); err != nil {
			t.Fatal(err)
		}
		if held >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if held, _ = g.Held(ctx); held != 2 {
		ws, _ := g.Waiters(ctx)
		t.Fatalf("the gate holds %d writers, want 2: %+v", held, ws)
	}
	if v, err := r.client.Exists(ctx, key).Result(); err != nil || v != 0 {
		t.Fatalf("a read under the gate: %d, %v", v, err)
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if a, b := <-seen, <-seen; a != 0 || b != 0 {
		t.Errorf("the checks saw %d and %d, want both 0 (made before the writes)", a, b)
	}
	if n, _ := receiver(gateDB).Get(ctx, key).Int(); n != 2 {
		t.Errorf("after the release the counter is %d, want 2: both held writes ran", n)
	}

	// A cut: the waiting write's connection is closed, and it never runs.
	g2, err := r.Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g2.Release(ctx) }()
	cutc := receiver(gateDB)
	done := make(chan error, 1)
	go func() { done <- cutc.Set(ctx, key+":cut", 1, time.Minute).Err() }()
	for i := 0; i < 250; i++ {
		if n, _ := g2.Held(ctx); n == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ids, err := r.TerminateWaiters(ctx, g2)
	if err != nil || len(ids) != 1 {
		t.Fatalf("TerminateWaiters = %v, %v; want one client", ids, err)
	}
	if err := <-done; err == nil {
		t.Error("the cut write returned no error")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the cut write timed out instead of losing its connection: %v", err)
	}
	if err := g2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := receiver(gateDB).Exists(ctx, key+":cut").Result(); n != 0 {
		t.Error("the cut write ran after the release")
	}
}
