package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// RunOptions select and shape one run of the suite.
type RunOptions struct {
	// Seed orders the scenarios and seeds every choice they make; the same seed
	// gives the same deliveries.
	Seed int64
	// LabelFilter is a Ginkgo label filter over guarantee IDs, families and
	// needs:<capability>, e.g. "DEDUP || ATOMIC-1".
	LabelFilter string
	// Focus keeps only scenarios whose text matches one of these regular expressions.
	Focus []string
	// ScenarioTimeout bounds one scenario (default 3 minutes).
	ScenarioTimeout time.Duration
	// QuiesceTimeout bounds the wait, before each scenario, for the previous one's
	// work to leave the receiver (default 30 s).
	QuiesceTimeout time.Duration
	// Progress, when set, is called as each scenario starts and ends.
	Progress func(ev ProgressEvent)
}

// ProgressEvent reports a scenario starting (Done false) or ending.
type ProgressEvent struct {
	Index, Total int
	Guarantee    string
	Name         string
	Done         bool
	State        string
	Reason       string
	Elapsed      time.Duration
}

// Spec is one registered scenario.
type Spec struct {
	Guarantee string
	Text      string
	Labels    []string
	run       func(*session)
}

// registry holds every scenario in catalogue order. It is filled once at init
// from the scenario files and never changes: it is the suite, not a run.
var registry []Spec

func register(id, text string, fn func(*session)) {
	if _, err := Lookup(id); err != nil {
		panic(err)
	}
	registry = append(registry, Spec{Guarantee: id, Text: id + " " + text, Labels: labels(id), run: fn})
	sort.SliceStable(registry, func(i, j int) bool {
		return catalogueIndex(registry[i].Guarantee) < catalogueIndex(registry[j].Guarantee)
	})
}

// Specs returns every scenario in catalogue order.
func Specs() []Spec { return append([]Spec(nil), registry...) }

// labels are a scenario's labels: its guarantee ID, its family and, per capability
// it needs, "needs:<capability>", so a label filter selects by any of them
// (e.g. "ATOMIC || needs:crash", "!needs:lock-gating").
func labels(id string) []string {
	g, _ := Lookup(id)
	l := []string{g.ID, g.Family}
	for _, n := range g.Needs {
		l = append(l, "needs:"+n)
	}
	return l
}

// Select returns the scenarios a label filter and focus keep, in the order the
// seed draws. Errors name the option.
func Select(opt RunOptions) ([]Spec, error) {
	keep := func([]string) bool { return true }
	if opt.LabelFilter != "" {
		f, err := types.ParseLabelFilter(opt.LabelFilter)
		if err != nil {
			return nil, fmt.Errorf("label filter %q: %v", opt.LabelFilter, err)
		}
		keep = f
	}
	var focus []*regexp.Regexp
	for _, f := range opt.Focus {
		re, err := regexp.Compile(f)
		if err != nil {
			return nil, fmt.Errorf("focus %q: %v", f, err)
		}
		focus = append(focus, re)
	}
	var out []Spec
	for _, sp := range registry {
		if !keep(sp.Labels) {
			continue
		}
		if len(focus) > 0 {
			hit := false
			for _, re := range focus {
				hit = hit || re.MatchString(sp.Text)
			}
			if !hit {
				continue
			}
		}
		out = append(out, sp)
	}
	// Random order, drawn from the seed alone: a scenario that passes only after
	// another is caught, and the same seed gives the same order.
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x686f6f6b63657274))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

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
		return nil, errors.New("scenarios: no observer configured (observe.postgres is required)")
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
	rec.State, rec.Reason = r.drive(s, sp)
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
	rec.Notes, rec.Facts = s.notes, s.facts
	s.mu.Unlock()
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
func (r *Run) drive(s *session, sp Spec) (state, reason string) {
	defer func() {
		if p := recover(); p != nil {
			switch v := p.(type) {
			case abortSignal:
				state, reason = history.ScenarioError, v.reason
			case naSignal:
				state, reason = history.ScenarioNotApplicable, v.reason
			default:
				state, reason = history.ScenarioError, fmt.Sprintf("harness panic: %v", p)
			}
		}
		if state == history.ScenarioError && s.ctx.Err() != nil && !strings.HasPrefix(reason, "interrupted") {
			reason = fmt.Sprintf("interrupted (%v): %s", context.Cause(s.ctx), reason)
		}
	}()
	for _, need := range s.g.Needs {
		if ok, why := r.env.has(need); !ok {
			s.notApplicable("%s", why)
		}
	}
	sp.run(s)
	s.bg.Wait()
	s.reconcile()
	if err := s.ctx.Err(); err != nil {
		s.abort("interrupted: %v", context.Cause(s.ctx))
	}
	return history.ScenarioRan, ""
}

// quiesce waits, bounded, until the previous scenario's background work has
// ended and the receiver has no session busy in its database, and notes what it
// waited for.
func (r *Run) quiesce(ctx context.Context, s *session) {
	r.mu.Lock()
	prev := r.prev
	r.mu.Unlock()
	t0 := time.Now()
	deadline := t0.Add(r.opt.QuiesceTimeout)
	if prev != nil {
		done := make(chan struct{})
		go func() { prev.bg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return
		case <-time.After(time.Until(deadline)):
			s.note("the previous scenario's deliveries were still running after %s", r.opt.QuiesceTimeout)
		}
	}
	r.mu.Lock()
	unwell := r.unwell
	r.mu.Unlock()
	if unwell != "" || r.gone() != "" {
		return // a receiver that exited or hung has nothing in flight worth waiting for
	}
	if prev != nil {
		r.awaitStragglers(ctx, s, prev, deadline)
	}
	if r.env.Activity == nil {
		return
	}
	idle, detail := 0, ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n, d, err := r.env.Activity.Busy(ctx)
		if err != nil {
			s.note("could not read the receiver's database activity: %v", err)
			return
		}
		if n == 0 {
			// Twice in a row: a pool between two statements looks idle for a moment.
			if idle++; idle >= 2 {
				if w := time.Since(t0); w > 100*time.Millisecond {
					s.note("waited %s for the previous scenario's work to leave the receiver", w.Round(time.Millisecond))
				}
				return
			}
		} else {
			idle, detail = 0, d
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() == nil {
		s.note("the receiver was still busy after %s (%s); this scenario may see the previous one's work", r.opt.QuiesceTimeout, detail)
	}
}

// awaitStragglers waits, until deadline, for the previous scenario's deliveries
// whose outcome was unknown (timed out, answer lost) to land in the receiver:
// a receiver that queues requests in memory may still be working through them
// with no database session busy, and its late writes would look like the next
// scenario's. The reads are recorded under the next scenario, phase "quiesce",
// which no checker judges.
func (r *Run) awaitStragglers(ctx context.Context, s *session, prev *session, deadline time.Time) {
	seen := map[profiles.Key]bool{}
	var keys []profiles.Key
	for _, a := range r.attemptsOf(prev.index) {
		if a.Outcome != history.OutcomeUnknown || a.Key.EventID == "" || BadInput(a.Faults) || !r.env.vocabulary().Handled(a.EventType) || seen[a.Key] {
			continue
		}
		seen[a.Key] = true
		keys = append(keys, a.Key)
	}
	if len(keys) == 0 {
		return
	}
	t0 := time.Now()
	pending := keys
	// Give up when nothing has landed for a settle period: the receiver is not
	// working through them (it lost them, or stores nothing).
	progress := time.Now()
	for len(pending) > 0 && time.Now().Before(deadline) && time.Since(progress) < settle && ctx.Err() == nil {
		var still []profiles.Key
		for _, k := range pending {
			n, err := r.env.Observer.EventRows(ctx, k)
			o := history.Observation{Scenario: s.index, Query: "event_rows", Phase: PhaseQuiesce, Params: keyParams(k), Found: err == nil, Count: int64(n), AtNS: int64(time.Since(r.start))}
			if err != nil {
				o.Error = err.Error()
			}
			r.addObservation(o)
			if err != nil || n == 0 {
				still = append(still, k)
			}
		}
		if len(still) < len(pending) {
			progress = time.Now()
		}
		if pending = still; len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	switch {
	case len(pending) > 0:
		s.note("%d of the previous scenario's %d deliveries with an unknown outcome had not landed after %s; this scenario may see them land", len(pending), len(keys), time.Since(t0).Round(time.Millisecond))
	case time.Since(t0) > 100*time.Millisecond:
		s.note("waited %s for the previous scenario's %d deliveries with an unknown outcome to land", time.Since(t0).Round(time.Millisecond), len(keys))
	}
}

func (r *Run) runner(ep Endpoint) *simulator.Runner {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rn, ok := r.runners[ep.URL]; ok {
		return rn
	}
	rn, err := simulator.NewRunner(simulator.Target{URL: ep.URL, Profile: ep.Profile, Secrets: ep.Secrets, Account: ep.Account}, simulator.Options{})
	if err != nil {
		panic(abortSignal{reason: fmt.Sprintf("endpoint %s: %v", ep.URL, err)})
	}
	r.runners[ep.URL] = rn
	return rn
}

// align moves a runner's attempt times onto the run's clock.
func (r *Run) align(rn *simulator.Runner, recs ...history.Attempt) []history.Attempt {
	off := int64(rn.Started().Sub(r.start))
	for i := range recs {
		recs[i].StartNS += off
		recs[i].EndNS += off
	}
	return recs
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
