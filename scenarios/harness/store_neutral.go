package harness

import (
	"context"
	"time"

	"github.com/hookcert/hookcert/adapters/cmdobserve"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// observeNeutral opens the observer of observe.command or observe.http.
func (hs *Harness) observeNeutral(ctx context.Context) (*observe.Observer, error) {
	st := hs.tg.Store
	named, field := st.Queries.Named(), st.Queries.FieldPath
	var r observe.Reader
	var timeout = targetfile.DefaultObserverCallTimeout
	if c := st.Command; c != nil {
		cr, err := cmdobserve.OpenCommand(ctx, cmdobserve.CommandConfig{Dir: c.Dir, Env: c.Env, Timeout: c.Timeout, MaxOutput: c.MaxOutput,
			Capabilities: c.Capabilities, Queries: named, FieldPath: field, Secrets: hs.secrets})
		if err != nil {
			return nil, err
		}
		r, timeout = cr, c.Timeout
	} else {
		h := st.HTTP
		hr, err := cmdobserve.OpenHTTP(ctx, cmdobserve.HTTPConfig{BaseURL: h.BaseURL, Timeout: h.Timeout, MaxBody: h.MaxBody,
			Capabilities: h.Capabilities, Queries: named, FieldPath: field, Secrets: hs.secrets})
		if err != nil {
			return nil, err
		}
		r, timeout = hr, h.Timeout
	}
	// The call's own timeout fires first and names its field; the observer's
	// bound is a backstop a second later.
	return observe.NewReader(r, st.Queries, observe.WithTimeouts(observe.Timeouts{Statement: timeout, Connect: time.Second})), nil
}
