package harness

import (
	"context"
	"errors"

	"github.com/hookcert/hookcert/adapters/observe"
)

// observeMySQL opens the observer of observe.mysql.
func (hs *Harness) observeMySQL(ctx context.Context) (*observe.Observer, error) {
	return nil, errors.New("observe.mysql: not wired yet")
}

// faultsMySQL opens the harness's own MySQL sessions: lock gates, cuts, busy checks.
func (hs *Harness) faultsMySQL(ctx context.Context) error {
	return errors.New("observe.mysql: not wired yet")
}
