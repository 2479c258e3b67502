package simulator

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// Request is one HTTP request as the simulator would write it.
type Request struct {
	// Step is the plan step index; StepName its name, Event the name of the
	// plan event it delivers.
	Step     int
	StepName string
	Event    string
	Key      profiles.Key
	// Attempt is the provider's attempt number; Copies how many copies of the
	// request the step releases together.
	Attempt int
	Copies  int
	Method  string
	// URL is the target URL, a password in it masked.
	URL string
	// Header is every header written, Host and Content-Length included. It
	// carries signatures, never a secret.
	Header   http.Header
	Body     []byte
	SignedAt time.Time
	Faults   []string
	PadTo    int
}

// Preview returns, for each step of plan, the request its first attempt (first
// copy) would send, without sending anything: the events resolved and signed
// as Run would at this moment. A replay with its original timestamp takes the
// one previewed for the replayed step.
func (r *Runner) Preview(plan *Plan) ([]Request, error) {
	rp, err := plan.resolve(r.eventDefaults(plan.Seed, time.Now()))
	if err != nil {
		return nil, err
	}
	ds := rp.deliveries()
	e := &engine{r: r, seed: plan.Seed, timeout: plan.Timeout.D(), field: "plan: steps"}
	out := make([]Request, 0, len(ds))
	signed := make([]time.Time, len(ds))
	for k, d := range ds {
		var orig time.Time
		if d.replayOf >= 0 {
			orig = signed[d.replayOf]
		}
		g, err := e.prepare(k, d, orig)
		if err != nil {
			return out, err
		}
		signed[k] = g.p.signedAt
		s := plan.Steps[k]
		evName := s.Event
		if d.replayOf >= 0 {
			evName = plan.Steps[d.replayOf].Event
		}
		h := g.p.header.Clone()
		// As serialize writes them: its own Host and Content-Length win.
		h.Set("Host", r.u.Host)
		h.Set("Content-Length", strconv.Itoa(len(g.p.body)))
		u, method := r.u.Redacted(), http.MethodPost
		if g.p.method != "" {
			method = g.p.method
		}
		if g.p.url != "" {
			if pu, err := url.Parse(g.p.url); err == nil {
				u = pu.Redacted()
				h.Set("Host", pu.Host)
			}
		}
		out = append(out, Request{
			Step: k, StepName: s.Name, Event: evName, Key: profiles.EventKey(r.target.Profile, d.ev),
			Attempt: g.at.N, Copies: d.copies, Method: method, URL: u,
			Header: h, Body: g.p.body, SignedAt: g.p.signedAt.UTC(), Faults: g.p.faults, PadTo: g.p.padTo,
		})
	}
	return out, nil
}
