package simulator

import (
	"cmp"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// ResolvedPlan is a plan with every seeded choice made: concrete events.
type ResolvedPlan struct {
	Plan   Plan
	Events map[string]profiles.Event
}

// Resolve fixes the plan's events for a profile and account: generated IDs, the
// created time (the event's own, else the run's start), defaults. Same seed,
// same result.
func (p *Plan) Resolve(profileID, account string, created time.Time) (*ResolvedPlan, error) {
	prof := lookupProfile(profileID)
	return p.resolve(eventDefaults{seed: p.Seed, profile: profileID, derivedIDs: prof != nil && prof.Facts().EventIDRule != "",
		objects: objectIDMakerOf(prof), account: account, created: created})
}

// resolve is Resolve with the defaults given (a runner passes its own profile's).
func (p *Plan) resolve(defs eventDefaults) (*ResolvedPlan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rp := &ResolvedPlan{Plan: *p, Events: map[string]profiles.Event{}}
	for i, e := range p.Events {
		rp.Events[e.Name] = defs.fill(i, profiles.Event{
			Source: e.Source, Account: e.Account, ID: e.ID, Type: e.Type,
			ObjectID: e.ObjectID, Version: e.Version, Amount: e.Amount,
			Currency: e.Currency, Status: e.Status, Created: e.Created, Object: e.Object,
		})
	}
	return rp, nil
}

// eventDefaults fills what an event leaves empty. A plan's events and
// Deliver's go through the same fill, so the same event and seed give the same
// IDs either way.
type eventDefaults struct {
	seed int64
	// profile is the profile ID: the default source and the event ID's shape.
	profile string
	// derivedIDs is set when the provider sends no event ID and receivers
	// derive the key (Facts.EventIDRule, Adyen): an empty ID stays empty, as
	// the profile rejects any other than the derived one.
	derivedIDs bool
	// objects shapes generated object IDs (nil: obj_…).
	objects profiles.ObjectIDMaker
	// account is the target's.
	account string
	// created is the run's start, the default creation time.
	created time.Time
}

// eventDefaults are the runner's, for a run with this seed starting at created.
func (r *Runner) eventDefaults(seed int64, created time.Time) eventDefaults {
	return eventDefaults{seed: seed, profile: r.target.Profile.ID(), derivedIDs: r.facts.EventIDRule != "",
		objects: r.objects, account: r.target.Account, created: created}
}

// fill completes event index i: generated IDs come from the seed and i.
func (d eventDefaults) fill(i int, ev profiles.Event) profiles.Event {
	ev.Source = cmp.Or(ev.Source, d.profile)
	if ev.Created.IsZero() {
		ev.Created = d.created.UTC().Truncate(time.Second)
	} else {
		ev.Created = ev.Created.UTC()
	}
	if ev.Account == "" {
		ev.Account = d.account
	}
	if ev.ID == "" && !d.derivedIDs {
		ev.ID = NewEventID(d.seed, d.profile, i)
	}
	if ev.ObjectID == "" {
		ev.ObjectID = newObjectID(d.objects, d.seed, i)
	}
	if ev.Currency == "" && ev.Amount != 0 {
		ev.Currency = "usd"
	}
	return ev
}

// deliveries are the plan's steps as the engine makes them, each with its
// resolved event (a replay's is the replayed step's).
func (rp *ResolvedPlan) deliveries() []delivery {
	p := &rp.Plan
	ds := make([]delivery, len(p.Steps))
	for k, s := range p.Steps {
		d := delivery{shape: s.Shape, copies: max(s.Copies, 1), together: s.WithPrevious,
			wait: s.Wait.D(), retry: s.Retry, replayOf: -1}
		evName := s.Event
		if s.Replay != nil {
			d.replayOf = stepIndex(p, s.Replay.Of)
			d.original = s.Replay.OriginalTimestamp
			evName = p.Steps[d.replayOf].Event
		}
		d.ev = rp.Events[evName]
		ds[k] = d
	}
	return ds
}

func stepIndex(p *Plan, name string) int {
	for i, s := range p.Steps {
		if s.Name == name {
			return i
		}
	}
	return -1
}
