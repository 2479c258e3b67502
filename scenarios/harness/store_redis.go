package harness

import (
	"context"
	"errors"

	"github.com/hookcert/hookcert/adapters/observe"
)

// observeRedis opens the observer of observe.redis.
func (hs *Harness) observeRedis(ctx context.Context) (*observe.Observer, error) {
	return nil, errors.New("observe.redis: not wired yet")
}
