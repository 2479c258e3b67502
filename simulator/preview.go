package simulator

import (
	"net/http"
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
	rp, err := plan.Resolve(r.target.Profile.ID(), r.target.Account, time.Now())
	if err != nil {
		return nil, err
	}
	out := make([]Request, 0, len(plan.Steps))
	signed := map[string]time.Time{}
	for k, s := range plan.Steps {
		var orig time.Time
		if s.Replay != nil {
			orig = signed[s.Replay.Of]
		}
		g, err := r.prepareStep(plan, rp, k, orig)
		if err != nil {
			return out, err
		}
		if s.Name != "" {
			signed[s.Name] = g.p.signedAt
		}
		evName := s.Event
		if s.Replay != nil {
			evName = plan.Steps[stepIndex(plan, s.Replay.Of)].Event
		}
		h := g.p.header.Clone()
		// As serialize writes them: its own Host and Content-Length win.
		h.Set("Host", r.u.Host)
		h.Set("Content-Length", strconv.Itoa(len(g.p.body)))
		out = append(out, Request{
			Step: k, StepName: s.Name, Event: evName, Key: profiles.EventKey(r.target.Profile, g.ev),
			Attempt: g.at.N, Copies: max(s.Copies, 1), Method: http.MethodPost, URL: r.u.Redacted(),
			Header: h, Body: g.p.body, SignedAt: g.p.signedAt.UTC(), Faults: g.p.faults, PadTo: g.p.padTo,
		})
	}
	return out, nil
}
