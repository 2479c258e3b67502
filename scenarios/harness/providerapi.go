package harness

import (
	"encoding/json"
	"fmt"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/providerapi"
)

// startProviderAPI starts the provider API when the target names
// {{.ProviderAPIURL}} or declares capability refetch: it listens from now on,
// before the receiver starts, and checks the key target.provider_api declares.
func (b *Builder) startProviderAPI(inspected *targetfile.Target) error {
	if !inspected.Uses("ProviderAPIURL") && !inspected.Has(targetfile.Refetch) {
		return nil
	}
	if inspected.ProviderAPI == nil || inspected.ProviderAPI.Key.IsZero() {
		return fmt.Errorf("%w: target.provider_api: the API key the receiver sends is required to start the provider API", ErrConfig)
	}
	s, err := providerapi.New(inspected.ProviderAPI.Key.Reveal())
	if err != nil {
		return fmt.Errorf("%w: starting the provider API: %w", ErrUnreachable, err)
	}
	b.api = s
	b.closers = append(b.closers, func() { _ = s.Close() })
	b.vars.ProviderAPIURL = s.URL()
	fmt.Fprintf(b.out, "provider API: %s\n", b.vars.ProviderAPIURL)
	return nil
}

// modelAPI adapts the provider API to the suite's interface.
type modelAPI struct{ s *providerapi.Server }

func (m modelAPI) Put(id string, body json.RawMessage, key int64, stale bool) {
	m.s.Put(id, body, key, stale)
}
func (m modelAPI) Delete(id string, key int64) { m.s.Delete(id, key) }
func (m modelAPI) Fail(id string, fs ...scenarios.APIFault) {
	out := make([]providerapi.Fault, len(fs))
	for i, f := range fs {
		out[i] = providerapi.Fault{Status: f.Status, RetryAfter: f.RetryAfter, Delay: f.Delay}
	}
	m.s.Fail(id, out...)
}
func (m modelAPI) Drain() []scenarios.APICall {
	var out []scenarios.APICall
	for _, c := range m.s.Drain() {
		out = append(out, scenarios.APICall{Seq: c.Seq, At: c.At, Method: c.Method, Path: c.Path, Provider: c.Provider,
			Object: c.Object, Status: c.Status, Fault: c.Fault, Key: c.Key})
	}
	return out
}
