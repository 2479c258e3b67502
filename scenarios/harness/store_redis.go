package harness

import (
	"context"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/redisobserve"
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
	return observe.NewReader(r, st.Queries, observe.WithTimeouts(observe.Timeouts{Connect: st.ConnectTimeout, Statement: st.StatementTimeout})), nil
}
