package harness

import (
	"context"
	"errors"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// mysqlDB opens the harness's sessions in the receiver's MySQL database once,
// for the setup script, the observer, fixtures and the purge.
func (hs *Harness) mysqlDB(ctx context.Context) (sqlstore.DB, error) {
	return nil, errors.New("observe.mysql: not wired yet")
}

// observeMySQL opens the observer of observe.mysql.
func (hs *Harness) observeMySQL(ctx context.Context) (*observe.Observer, error) {
	return nil, errors.New("observe.mysql: not wired yet")
}

// faultsMySQL opens the harness's own MySQL sessions: lock gates, cuts, busy checks.
func (hs *Harness) faultsMySQL(ctx context.Context) error {
	return errors.New("observe.mysql: not wired yet")
}
