package harness

import (
	"context"
	"fmt"
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
	// Every guarantee reads event_rows, and effects unless none is declared:
	// a store that says it cannot answer them cannot be certified.
	for _, q := range []string{observe.QEventRows, observe.QEffects} {
		if _, configured := named[q]; configured && !r.Has(q) {
			r.Close()
			return nil, fmt.Errorf("%s: %w: %s", field(q), observe.ErrInvalidQuery, unsupported(r, q))
		}
	}
	// The call's own timeout fires first and names its field; the observer's
	// bound is a backstop a second later.
	return observe.NewReader(r, st.Queries, observe.WithTimeouts(observe.Timeouts{Statement: timeout, Connect: time.Second})), nil
}

// unsupported is why a store-neutral observer does not answer q.
func unsupported(r observe.Reader, q string) string {
	if u, ok := r.(interface{ Unsupported() map[string]string }); ok && u.Unsupported()[q] != "" {
		return u.Unsupported()[q] + ", and every guarantee reads it"
	}
	return "the observer does not answer it, and every guarantee reads it"
}
