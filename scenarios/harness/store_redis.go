package harness

import (
	"context"
	"fmt"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/redisobserve"
	"github.com/hookcert/hookcert/scenarios"
)

// observeRedis opens the observer of observe.redis: every query checked, the
// server's PING answered.
func (hs *Harness) observeRedis(ctx context.Context) (*observe.Observer, error) {
	st := hs.tg.Store
	r, err := redisobserve.Open(ctx, st.URL.Reveal(), st.Queries.Named(), st.Queries.FieldPath,
		redisobserve.Timeouts{Connect: st.ConnectTimeout, Read: st.StatementTimeout})
	if err != nil {
		return nil, err
	}
	hs.redis = r
	return observe.NewReader(r, st.Queries, observe.WithTimeouts(observe.Timeouts{Connect: st.ConnectTimeout, Statement: st.StatementTimeout})), nil
}

// faultsRedis wires the Redis gate where the target allows it: every write
// paused (CLIENT PAUSE WRITE) stands in for a locked table, and a cut closes
// the waiting clients' connections (CLIENT KILL). Redis keeps no session
// state a busy check could read between scenarios.
func (hs *Harness) faultsRedis() {
	if hs.redis == nil || (!hs.tg.Has("lock-gating") && !hs.tg.Has("connection-loss")) {
		return
	}
	hs.Env.DB = redisFaults{hs.redis}
	hs.Env.EventTable, hs.Env.EffectTable = redisobserve.GateLabel, redisobserve.GateLabel
}

// redisFaults adapts the Redis gate to the suite's DBFaults.
type redisFaults struct{ r *redisobserve.Reader }

type redisGate struct{ g *redisobserve.Gate }

func (g redisGate) Held(ctx context.Context) (scenarios.GateHeld, error) {
	n, err := g.g.Held(ctx)
	return scenarios.GateHeld{AtGate: n}, err
}
func (g redisGate) Release(ctx context.Context) error { return g.g.Release(ctx) }

// Hold pauses every write; the table is the suite's name for what it locks,
// and Redis has one gate for all of them.
func (d redisFaults) Hold(ctx context.Context, _ string) (scenarios.Gate, error) {
	g, err := d.r.Hold(ctx)
	if err != nil {
		return nil, err
	}
	return redisGate{g}, nil
}

func (d redisFaults) TerminateWaiters(ctx context.Context, g scenarios.Gate, _ bool) ([]int, error) {
	rg, ok := g.(redisGate)
	if !ok {
		return nil, fmt.Errorf("gate %T was not made by this harness", g)
	}
	return d.r.TerminateWaiters(ctx, rg.g)
}

// holderPorts are the client ports of the connections waiting on the gate.
func (g redisGate) holderPorts(ctx context.Context) ([]int, error) {
	ws, err := g.g.Waiters(ctx)
	if err != nil {
		return nil, err
	}
	var ports []int
	for _, w := range ws {
		if w.Port > 0 {
			ports = append(ports, w.Port)
		}
	}
	return ports, nil
}
