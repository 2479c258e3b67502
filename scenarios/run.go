package scenarios

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Run is one run of the suite against one target: the scenarios it has run and
// the history they recorded. Runs share nothing, so several can go in one
// process.
type Run struct {
	env   *Env
	opt   RunOptions
	start time.Time

	mu      sync.Mutex
	hist    history.History
	runners map[string]*simulator.Runner
	prev    *session
	// lost is why the receiver cannot be reached any more, once it cannot.
	lost string
	// unwell is how the receiver went away during the last scenario, until it
	// is restarted.
	unwell string
}

// NewRun prepares a run against env. meta describes it in the history.
func NewRun(env *Env, opt RunOptions, meta history.Meta) (*Run, error) {
	if env == nil {
		return nil, errors.New("scenarios: no environment")
	}
	if env.Observer == nil {
		return nil, errors.New("scenarios: no observer configured (target.observe is required)")
	}
	if opt.ScenarioTimeout <= 0 {
		opt.ScenarioTimeout = 3 * time.Minute
	}
	if opt.QuiesceTimeout <= 0 {
		opt.QuiesceTimeout = 30 * time.Second
	}
	r := &Run{env: env, opt: opt, start: time.Now(), runners: map[string]*simulator.Runner{}}
	meta.Seed, meta.RunID, meta.Started = opt.Seed, env.RunID, r.start.UTC()
	if meta.TimeScale == 0 {
		meta.TimeScale = env.TimeScale
	}
	r.hist.Meta = meta
	return r, nil
}

// Close releases the run's connections to the receiver.
func (r *Run) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rn := range r.runners {
		rn.Close()
	}
	r.runners = map[string]*simulator.Runner{}
}

// History returns what the run recorded so far, attempts in start order.
func (r *Run) History() *history.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hist
	h.Scenarios = append([]history.Scenario(nil), r.hist.Scenarios...)
	h.Attempts = append([]history.Attempt(nil), r.hist.Attempts...)
	sort.SliceStable(h.Attempts, func(i, j int) bool { return h.Attempts[i].StartNS < h.Attempts[j].StartNS })
	h.Releases = append([]history.Release(nil), r.hist.Releases...)
	h.Observations = append([]history.Observation(nil), r.hist.Observations...)
	h.Sink = append([]history.Sink(nil), r.hist.Sink...)
	h.APICalls = append([]history.APICall(nil), r.hist.APICalls...)
	if h.Meta.Finished.IsZero() {
		h.Meta.Finished = time.Now().UTC()
	}
	return &h
}

// All runs every selected scenario in the seed's order. When ctx ends, the
// scenario in progress and every one not yet run are recorded as errors
// ("interrupted"): an interrupted run is never a pass.
func (r *Run) All(ctx context.Context) error {
	specs, err := Select(r.opt)
	if err != nil {
		return err
	}
	for i, sp := range specs {
		if ctx.Err() != nil {
			r.skipInterrupted(specs[i:], ctx)
			break
		}
		r.Scenario(ctx, sp, i+1, len(specs))
	}
	r.finish()
	return nil
}

func (r *Run) finish() {
	r.mu.Lock()
	r.hist.Meta.Finished = time.Now().UTC()
	r.mu.Unlock()
}

func (r *Run) skipInterrupted(rest []Spec, ctx context.Context) {
	now := int64(time.Since(r.start))
	for _, sp := range rest {
		r.addScenario(history.Scenario{Guarantee: sp.Guarantee, Name: sp.Text, State: history.ScenarioError,
			Reason: fmt.Sprintf("interrupted before it ran: %v", context.Cause(ctx)), StartNS: now, EndNS: now})
	}
}

// Scenario runs one scenario and records it; n of total is for progress only.
func (r *Run) Scenario(ctx context.Context, sp Spec, n, total int) history.Scenario {
	g, _ := Lookup(sp.Guarantee)
	if r.opt.Progress != nil {
		r.opt.Progress(ProgressEvent{Index: n, Total: total, Guarantee: g.ID, Name: sp.Text})
	}
	t0 := time.Now()
	r.mu.Lock()
	index := len(r.hist.Scenarios) + 1
	r.mu.Unlock()
	s := &session{run: r, env: r.env, g: g, index: index, rng: scenarioRand(r.opt.Seed, g.ID), waited: map[profiles.Key]bool{}}
	rec := history.Scenario{Index: index, Guarantee: g.ID, Name: sp.Text, StartNS: int64(time.Since(r.start))}

	// Isolation: nothing of the previous scenario may still be running.
	r.quiesce(ctx, s)
	r.revive(ctx, s)
	// Calls to the provider API made until now are the previous scenario's.
	r.drainAPI(index - 1)
	if reason := r.gone(); reason != "" {
		rec.State, rec.Reason, rec.EndNS = history.ScenarioError, reason, int64(time.Since(r.start))
		s.mu.Lock()
		rec.Notes = s.notes
		s.mu.Unlock()
		r.addScenario(rec)
		if r.opt.Progress != nil {
			r.opt.Progress(ProgressEvent{Index: n, Total: total, Guarantee: g.ID, Name: sp.Text, Done: true, State: rec.State, Reason: rec.Reason})
		}
		return rec
	}

	sctx, cancel := context.WithTimeoutCause(ctx, r.opt.ScenarioTimeout, fmt.Errorf("scenario timeout %s exceeded", r.opt.ScenarioTimeout))
	defer cancel()
	s.ctx = sctx
	rec.State, rec.Reason = r.drive(s)
	r.drainAPI(index)
	r.mu.Lock()
	r.prev = s
	r.mu.Unlock()
	// A receiver that died or stopped answering during the scenario is named:
	// what the scenario saw is no verdict on the promise.
	if why := r.died(ctx); why != "" {
		if rec.State == history.ScenarioError && rec.Reason != "" {
			// Keep what the scenario itself ran into; the death comes after.
			why = rec.Reason + "; then " + why
		}
		rec.State, rec.Reason = history.ScenarioError, why
	}

	rec.EndNS = int64(time.Since(r.start))
	s.mu.Lock()
	rec.Notes = s.notes
	s.mu.Unlock()
	rec.Facts = s.factsRecord()
	r.addScenario(rec)
	if r.opt.Progress != nil {
		r.opt.Progress(ProgressEvent{Index: n, Total: total, Guarantee: g.ID, Name: sp.Text, Done: true, State: rec.State, Reason: rec.Reason, Elapsed: time.Since(t0)})
	}
	return rec
}

// died reports how the receiver went away during a scenario: its process exited
// (lifecycle), or it stopped answering (no lifecycle: every later scenario is
// then an error with that reason).
func (r *Run) died(ctx context.Context) string {
	if ctx.Err() != nil {
		return ""
	}
	if c := r.env.Controller; c != nil {
		if ok, why := c.Alive(); !ok {
			r.mu.Lock()
			r.unwell = why
			r.mu.Unlock()
			if strings.HasPrefix(why, "running") {
				return "the receiver stopped answering during the scenario: " + why
			}
			return "the receiver exited during the scenario: " + why
		}
		return ""
	}
	if r.env.Reachable != nil {
		if err := r.env.Reachable(ctx); err != nil {
			r.mu.Lock()
			r.lost = fmt.Sprintf("the receiver stopped answering (%v); the harness cannot restart it (no lifecycle)", err)
			r.mu.Unlock()
			return "the receiver stopped answering during the scenario: " + err.Error()
		}
	}
	return ""
}

// gone is why no scenario can run any more ("" while the receiver is there).
func (r *Run) gone() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// revive restarts a receiver that exited before the scenario starts, and says
// so in the scenario's notes: its verdict follows a restart.
func (r *Run) revive(ctx context.Context, s *session) {
	c := r.env.Controller
	if c == nil {
		return
	}
	r.mu.Lock()
	why := r.unwell
	r.unwell = ""
	r.mu.Unlock()
	ok := why == ""
	if ok {
		ok, why = c.Alive()
	}
	if !ok {
		// A hung receiver is still running: stop it before starting it anew.
		if err := c.Kill(); err != nil {
			r.mu.Lock()
			r.lost = fmt.Sprintf("the receiver is not answering (%s) and could not be killed: %v", why, err)
			r.mu.Unlock()
			return
		}
		if err := c.Restart(ctx); err != nil {
			r.mu.Lock()
			r.lost = fmt.Sprintf("the receiver exited (%s) and could not be restarted: %v", why, err)
			r.mu.Unlock()
			return
		}
		s.note("the receiver had exited (%s); it was restarted before this scenario, whose verdict follows that restart", why)
	}
}

// drive runs the scenario body and its reconciliation, turning the session's
// signals into a state.
func (r *Run) drive(s *session) (state, reason string) {
	st := catch(func() {
		for _, need := range s.g.Needs {
			if ok, why := r.env.has(need); !ok {
				s.notApplicable("%s", why)
			}
		}
		if why := r.env.ledgerReason(&s.g); why != "" {
			s.notApplicable("%s", why)
		}
		s.g.judge.run(s)
		s.bg.Wait()
		s.reconcile()
		if err := s.ctx.Err(); err != nil {
			s.abort("interrupted: %v", context.Cause(s.ctx))
		}
	})
	if st == nil {
		return history.ScenarioRan, ""
	}
	state, reason = st.state, st.reason
	if state == history.ScenarioError && s.ctx.Err() != nil && !strings.HasPrefix(reason, "interrupted") {
		reason = fmt.Sprintf("interrupted (%v): %s", context.Cause(s.ctx), reason)
	}
	return state, reason
}

func (r *Run) runner(ep Endpoint) *simulator.Runner {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rn, ok := r.runners[ep.URL]; ok {
		return rn
	}
	// Its records are on the run's clock: one clock from the attempt to the history.
	rn, err := simulator.NewRunner(simulator.Target{URL: ep.URL, Profile: ep.Profile, Secrets: ep.Secrets, Account: ep.Account}, simulator.Options{Origin: r.start})
	if err != nil {
		panic(stop{state: history.ScenarioError, reason: fmt.Sprintf("endpoint %s: %v", ep.URL, err)})
	}
	r.runners[ep.URL] = rn
	return rn
}

func (r *Run) addAttempts(recs ...history.Attempt) {
	r.mu.Lock()
	r.hist.Attempts = append(r.hist.Attempts, recs...)
	r.mu.Unlock()
}

func (r *Run) addRelease(rel history.Release) {
	r.mu.Lock()
	r.hist.Releases = append(r.hist.Releases, rel)
	r.mu.Unlock()
}

// sinceStart is now on the history's clock: nanoseconds since the run started.
func (r *Run) sinceStart() int64 { return int64(time.Since(r.start)) }

func (r *Run) addGate(g history.Gate) {
	r.mu.Lock()
	r.hist.Gates = append(r.hist.Gates, g)
	r.mu.Unlock()
}

func (r *Run) addObservation(o history.Observation) {
	r.mu.Lock()
	r.hist.Observations = append(r.hist.Observations, o)
	r.mu.Unlock()
}

func (r *Run) addSink(c history.Sink) {
	r.mu.Lock()
	r.hist.Sink = append(r.hist.Sink, c)
	r.mu.Unlock()
}

func (r *Run) addScenario(rec history.Scenario) {
	r.mu.Lock()
	if rec.Index == 0 {
		rec.Index = len(r.hist.Scenarios) + 1
	}
	r.hist.Scenarios = append(r.hist.Scenarios, rec)
	r.mu.Unlock()
}

func (r *Run) attemptsOf(index int) []history.Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []history.Attempt
	for _, a := range r.hist.Attempts {
		if a.Scenario == index {
			out = append(out, a)
		}
	}
	return out
}

func (r *Run) observationsOf(index int) []history.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []history.Observation
	for _, o := range r.hist.Observations {
		if o.Scenario == index {
			out = append(out, o)
		}
	}
	return out
}
