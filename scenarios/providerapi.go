package scenarios

import (
	"encoding/json"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// apiModel tells the provider API the state ev gives its object: the newest
// ordering key wins, a deletion makes it answer 404, and an event sent as late
// (role late) is older than what the provider holds, so it never replaces an
// equal key. Forged deliveries (role bad:…) are no provider's event: the
// object does not move.
func (s *session) apiModel(role string, ev profiles.Event) {
	tellAPI(s.env.ProviderAPI, s.voc(), role, ev)
}

// tellAPI is apiModel for traffic sent outside a scenario too (EffectEvent).
func tellAPI(api ProviderAPI, voc *vocab.Vocabulary, role string, ev profiles.Event) {
	if api == nil || ev.ObjectID == "" || strings.HasPrefix(role, "bad:") {
		return
	}
	if isDeletion(voc, ev) {
		api.Delete(ev.ObjectID, ev.Version)
		return
	}
	body := ev.Object
	if len(body) == 0 {
		// No declared object (the built-in domain without a template): the
		// fields the built-in events carry.
		body, _ = json.Marshal(map[string]any{"id": ev.ObjectID, "status": ev.Status, "amount": ev.Amount, "currency": ev.Currency, "version": ev.Version})
	}
	api.Put(ev.ObjectID, body, ev.Version, role == roleLate)
}

// isDeletion reports whether ev deletes its object: the ordered role's
// deletion type, or a deleted status.
func isDeletion(voc *vocab.Vocabulary, ev profiles.Event) bool {
	if ev.Status == "deleted" {
		return true
	}
	o := voc.Ordered
	return o != nil && o.Delete != nil && ev.Type == o.Delete.Type
}

// drainAPI files the provider API calls made since the last drain under
// scenario index (0: before the first scenario).
func (r *Run) drainAPI(index int) {
	api := r.env.ProviderAPI
	if api == nil {
		return
	}
	calls := api.Drain()
	if len(calls) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range calls {
		r.hist.APICalls = append(r.hist.APICalls, history.APICall{Scenario: index, Seq: c.Seq, Method: c.Method, Path: c.Path,
			Provider: c.Provider, Object: c.Object, Status: c.Status, Fault: c.Fault, Key: c.Key, AtNS: int64(c.At.Sub(r.start))})
	}
}
