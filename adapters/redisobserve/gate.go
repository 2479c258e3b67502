package redisobserve

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GateLabel names what a Redis gate holds, where a SQL gate names a table:
// every client's writes on the server.
const GateLabel = "redis-writes"

// maxPause bounds a gate's pause on the server: a harness that dies holding
// one leaves the server paused no longer than this.
const maxPause = 60 * time.Second

// Gate holds every client's writes on the Redis server (CLIENT PAUSE … WRITE,
// Redis 6.2+), while reads go on: a receiver that checks for a key and then
// sets it has made its check and waits at its write, as a SQL receiver waits
// at a locked table. The pause is server-wide, so the receiver's Redis must be
// its own under test; the clients it counts and cuts are those of the
// observed database that are not the harness's.
type Gate struct {
	r     *Reader
	since time.Time

	mu       sync.Mutex
	released bool
}

// Waiter is a client whose write waits on the gate.
type Waiter struct {
	ID   int64
	Addr string
	// Port is the client's TCP port, which ties it to the process holding
	// the connection (0 over a Unix socket).
	Port int
	Cmd  string
}

// Hold pauses every client's writes until Release (at most maxPause).
func (r *Reader) Hold(ctx context.Context) (*Gate, error) {
	if err := r.client.Do(ctx, "CLIENT", "PAUSE", strconv.FormatInt(maxPause.Milliseconds(), 10), "WRITE").Err(); err != nil {
		return nil, fmt.Errorf("redisobserve: gate: CLIENT PAUSE WRITE on %s (Redis 6.2 or newer): %w", r.where, err)
	}
	return &Gate{r: r, since: time.Now()}, nil
}

// Table is what the gate holds (GateLabel).
func (g *Gate) Table() string { return GateLabel }

// Since is when the pause began.
func (g *Gate) Since() time.Time { return g.since }

// blockingReads are the commands a client waits in by design (a worker's
// BLPOP on its queue), also flagged blocked: not writes held by the gate.
var blockingReads = map[string]bool{
	"blpop": true, "brpop": true, "brpoplpush": true, "blmove": true, "blmpop": true,
	"bzpopmin": true, "bzpopmax": true, "bzmpop": true, "xread": true, "xreadgroup": true, "wait": true, "waitaof": true,
}

// Waiters lists the clients of the observed database whose command waits on
// the pause: blocked, not the harness's, not in a blocking read.
func (g *Gate) Waiters(ctx context.Context) ([]Waiter, error) {
	list, err := g.r.client.ClientList(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("redisobserve: gate: CLIENT LIST: %w", err)
	}
	var ws []Waiter
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		if f["name"] == ClientName || !strings.Contains(f["flags"], "b") || blockingReads[f["cmd"]] || f["db"] != strconv.Itoa(g.r.db) {
			continue
		}
		id, err := strconv.ParseInt(f["id"], 10, 64)
		if err != nil {
			continue
		}
		w := Waiter{ID: id, Addr: f["addr"], Cmd: f["cmd"]}
		if _, p, err := net.SplitHostPort(f["addr"]); err == nil {
			w.Port, _ = strconv.Atoi(p)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// Held counts the receiver's clients whose writes wait on the gate. A
// command sent before the pause has already run, so no waiter is older work.
func (g *Gate) Held(ctx context.Context) (int, error) {
	ws, err := g.Waiters(ctx)
	return len(ws), err
}

// Release ends the pause; the writes waiting run in arrival order. It is safe
// to call more than once.
func (g *Gate) Release(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return nil
	}
	g.released = true
	// Without the caller's cancellation: a pause left behind stalls the server.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.r.to.Connect+g.r.to.Read)
	defer cancel()
	if err := g.r.client.Do(rctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		return fmt.Errorf("redisobserve: gate: CLIENT UNPAUSE on %s: %w", g.r.where, err)
	}
	return nil
}

// TerminateWaiters closes the connections of the clients waiting on g
// (CLIENT KILL ID): their paused write never runs, as a SQL session cut
// mid-transaction commits nothing. It returns their client IDs.
func (r *Reader) TerminateWaiters(ctx context.Context, g *Gate) ([]int, error) {
	ws, err := g.Waiters(ctx)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, w := range ws {
		if err := r.client.Do(ctx, "CLIENT", "KILL", "ID", strconv.FormatInt(w.ID, 10)).Err(); err != nil {
			return ids, fmt.Errorf("redisobserve: CLIENT KILL ID %d: %w", w.ID, err)
		}
		ids = append(ids, int(w.ID))
	}
	return ids, nil
}
