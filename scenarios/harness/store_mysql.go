package harness

import (
	"context"
	"fmt"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/scenarios"
)

// mysqlDB opens the harness's sessions in the receiver's MySQL or MariaDB
// database once, for the setup script, the observer, fixtures, the purge and
// the fault tools; the harness closes it.
func (hs *Harness) mysqlDB(ctx context.Context) (*mysqlstore.DB, error) {
	if hs.mysql != nil {
		return hs.mysql, nil
	}
	st := hs.tg.Store
	db, err := mysqlstore.Open(ctx, st.URL.Reveal(), sqlstore.Timeouts{Connect: st.ConnectTimeout, Statement: st.StatementTimeout, Lock: st.LockTimeout})
	if err != nil {
		return nil, err
	}
	hs.closers = append(hs.closers, db.Close)
	hs.mysql = db
	return db, nil
}

// observeMySQL opens the observer of observe.mysql: every query prepared on
// the server.
func (hs *Harness) observeMySQL(ctx context.Context) (*observe.Observer, error) {
	db, err := hs.mysqlDB(ctx)
	if err != nil {
		return nil, err
	}
	st := hs.tg.Store
	return observe.NewSQL(ctx, db, st.Queries, observe.WithTimeouts(observe.Timeouts{Connect: st.ConnectTimeout, Statement: st.StatementTimeout, Lock: st.LockTimeout}))
}

// faultsMySQL wires the MySQL fault tools: lock gates (LOCK TABLES … READ),
// cuts (KILL CONNECTION) and the busy checks between scenarios.
func (hs *Harness) faultsMySQL(ctx context.Context) error {
	db, err := hs.mysqlDB(ctx)
	if err != nil {
		return fmt.Errorf("%w: harness database session: %w", ErrUnreachable, err)
	}
	d := &myFaults{db: db}
	hs.Env.Activity = d
	if hs.tg.Has("lock-gating") || hs.tg.Has("connection-loss") {
		hs.Env.DB = d
	}
	return nil
}

// myFaults adapts the MySQL fault tools to the suite's DBFaults and Activity.
type myFaults struct{ db *mysqlstore.DB }

type myGate struct{ g *mysqlstore.Gate }

func (g myGate) Held(ctx context.Context) (scenarios.GateHeld, error) {
	h, err := g.g.Held(ctx)
	return scenarios.GateHeld{AtGate: h.AtGate, Behind: h.Behind, Foreign: h.Foreign}, err
}
func (g myGate) Release(ctx context.Context) error { return g.g.Release(ctx) }

func (d *myFaults) Hold(ctx context.Context, table string) (scenarios.Gate, error) {
	g, err := d.db.Hold(ctx, table)
	if err != nil {
		return nil, err
	}
	return myGate{g}, nil
}

func (d *myFaults) TerminateWaiters(ctx context.Context, g scenarios.Gate, ownOnly bool) ([]int, error) {
	mg, ok := g.(myGate)
	if !ok {
		return nil, fmt.Errorf("gate %T was not made by this harness", g)
	}
	return d.db.TerminateWaiters(ctx, mg.g, ownOnly)
}

func (d *myFaults) Busy(ctx context.Context) (int, string, error) { return d.db.Busy(ctx) }

// holderPorts are the client ports of the sessions waiting on the gate
// (those that began before it are another scenario's).
func (g myGate) holderPorts(ctx context.Context) ([]int, error) {
	ws, err := g.g.Waiters(ctx)
	if err != nil {
		return nil, err
	}
	var ports []int
	for _, w := range ws {
		if w.ClientPort > 0 && !w.Foreign {
			ports = append(ports, w.ClientPort)
		}
	}
	return ports, nil
}
