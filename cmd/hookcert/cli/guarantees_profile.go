package cli

import (
	"fmt"

	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// profileVerdict is what a provider's profile alone says of one guarantee.
type profileVerdict struct {
	ID string `json:"id"`
	// Applies is false when the profile makes the guarantee not applicable,
	// whatever the target declares.
	Applies bool `json:"applies"`
	// Why says why not, when Applies is false.
	Why string `json:"why,omitempty"`
	// TargetNeeds are the capabilities the guarantee also needs of the
	// target (declared, or derived from its other endpoints), each with what
	// the suite says a target without it lacks.
	TargetNeeds []targetNeed `json:"target_needs,omitempty"`
}

type targetNeed struct {
	Capability string `json:"capability"`
	Lacking    string `json:"lacking"`
}

// profileVerdicts judges every guarantee of the catalogue by what the
// profile p makes possible: its needs are weighed by the suite's own
// capability logic (scenarios.Env.Has) on a target of one endpoint of p. A
// need that no profile could meet alone (a crash, a second account) is the
// target's; one that another profile meets where p does not is p's doing.
func profileVerdicts(p profiles.Profile, others []profiles.Profile) []profileVerdict {
	envOf := func(p profiles.Profile) *scenarios.Env {
		return &scenarios.Env{Endpoints: []scenarios.Endpoint{{Profile: p, Source: p.ID(), Account: "acct"}}}
	}
	env := envOf(p)
	// byProfile: whether some profile meets the capability on its own.
	byProfile := map[scenarios.Capability]bool{}
	metBySome := func(c scenarios.Capability) bool {
		if v, ok := byProfile[c]; ok {
			return v
		}
		for _, o := range others {
			if ok, _ := envOf(o).Has(c); ok {
				byProfile[c] = true
				return true
			}
		}
		byProfile[c] = false
		return false
	}
	var out []profileVerdict
	for _, g := range scenarios.Catalogue() {
		v := profileVerdict{ID: g.ID, Applies: true}
		for _, need := range g.Needs {
			ok, why := env.Has(need)
			switch {
			case ok:
			case metBySome(need):
				if v.Applies {
					v.Applies, v.Why = false, fmt.Sprintf("needs %s: %s", need, why)
				}
			default:
				v.TargetNeeds = append(v.TargetNeeds, targetNeed{Capability: need, Lacking: why})
			}
		}
		out = append(out, v)
	}
	return out
}
