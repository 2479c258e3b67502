package harness

import (
	"context"
	"errors"

	"github.com/hookcert/hookcert/adapters/observe"
)

// observeNeutral opens the observer of observe.command or observe.http.
func (hs *Harness) observeNeutral(ctx context.Context) (*observe.Observer, error) {
	return nil, errors.New("observe.command and observe.http: not wired yet")
}
