package certify

import (
	"context"
	"errors"

	"github.com/hookcert/hookcert/adapters/pgfault"
)

// ReceiverPID is the receiver process's current pid, also its process group
// (0 when the harness did not start it): what a pause nemesis stops and
// continues.
func (hs *Harness) ReceiverPID() int {
	if c, ok := hs.Env.Controller.(*controller); ok {
		return c.p.PID()
	}
	return 0
}

// TerminateReceiverSessions ends every database session of the receiver (all
// of its database's client sessions but the harness's own) with
// pg_terminate_backend, waits until they are gone and returns their pids.
func (hs *Harness) TerminateReceiverSessions(ctx context.Context) ([]int, error) {
	d, ok := hs.Env.Activity.(*dbFaults)
	if !ok {
		return nil, errors.New("the harness holds no session in the receiver's database")
	}
	return pgfault.TerminateBackends(ctx, d.pool, d.database, pgfault.Filter{})
}
