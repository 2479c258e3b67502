package hookcerttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
	"github.com/hookcert/hookcert/scenarios/harness"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// DefaultTimeScale compresses providers' retry schedules: one provider hour
// passes in one real second, as in `hookcert certify`.
const DefaultTimeScale = 3600

// EnvSeed names the environment variable that sets the seed of runs given no
// WithSeed, so a failing run can be replayed without editing the test.
const EnvSeed = "HOOKCERT_SEED"

// HistoryFile is the history's name in a report directory (the input of
// `hookcert check --from DIR`).
const HistoryFile = "history.jsonl"

// Option tunes Run.
type Option func(*options)

type options struct {
	seed        int64
	seedSet     bool
	labelFilter string
	reportDir   string
	timeScale   float64
	runID       string
	scenario    time.Duration
	onResults   func(*reports.Results)
}

// WithSeed sets the run's seed: the scenario order and every choice the
// scenarios make derive from it, so one seed replays one run. Without it the
// seed is $HOOKCERT_SEED, else random; it is logged either way.
func WithSeed(seed int64) Option { return func(o *options) { o.seed, o.seedSet = seed, true } }

// WithLabelFilter keeps the guarantees a Ginkgo label filter selects, over
// guarantee IDs, families and needs:<capability> ("DEDUP || ATOMIC-1",
// "!needs:crash"). `go test -run 'Test/DEDUP-1'` selects by subtest name too.
func WithLabelFilter(filter string) Option { return func(o *options) { o.labelFilter = filter } }

// WithReportDir writes results.json, junit.xml, summary.md, index.html and
// history.jsonl into dir once the suite has run, secrets scrubbed.
func WithReportDir(dir string) Option { return func(o *options) { o.reportDir = dir } }

// WithTimeScale sets how many provider seconds pass in one real second on the
// retry schedules (default DefaultTimeScale).
func WithTimeScale(scale float64) Option { return func(o *options) { o.timeScale = scale } }

// WithScenarioTimeout bounds each scenario (default 3 minutes).
func WithScenarioTimeout(d time.Duration) Option { return func(o *options) { o.scenario = d } }

// WithRunID sets the namespace of every event and object ID of the run
// (default: from the clock), for a receiver whose database keeps old runs.
func WithRunID(id string) Option { return func(o *options) { o.runID = id } }

// OnResults is called with the judged results of the run, after every
// guarantee has been reported.
func OnResults(f func(*reports.Results)) Option { return func(o *options) { o.onResults = f } }

// Run runs the conformance suite against tg inside the caller's test. With a
// *testing.T each guarantee is a subtest named by its ID: it fails with every
// deviation found, or with the reason the harness could not judge it, and is
// skipped with the reason when it is not applicable. With another testing.TB
// (a benchmark, say) each guarantee that failed or could not be judged is one
// Errorf line, the others one Logf line. A target that is wrong or cannot be
// reached fails t at once (Fatalf).
func Run(t testing.TB, tg Target, opts ...Option) {
	t.Helper()
	o := options{timeScale: DefaultTimeScale}
	for _, f := range opts {
		f(&o)
	}
	if !o.seedSet {
		o.seed = rand.Int64N(1 << 31)
		if s := strings.TrimSpace(os.Getenv(EnvSeed)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("hookcerttest: $%s=%q is not an integer", EnvSeed, s)
				return
			}
			o.seed = n
		}
	}
	if o.timeScale <= 0 {
		t.Fatalf("hookcerttest: WithTimeScale: must be > 0, got %v", o.timeScale)
		return
	}
	if o.runID == "" {
		o.runID = strings.ToLower(strconv.FormatInt(time.Now().UnixNano()&0xffffffffff, 16))
	}
	if tg.Name == "" {
		tg.Name = t.Name()
	}
	ctx := t.Context()
	h, err := open(ctx, tg, o)
	if err != nil {
		t.Fatalf("hookcerttest: %v", scrub.New(secretsOf(tg)...).Error(err))
		return
	}
	defer h.Close()
	clean := scrub.New(h.Secrets()...)

	ro := scenarios.RunOptions{Seed: o.seed, LabelFilter: o.labelFilter, ScenarioTimeout: o.scenario}
	specs, err := scenarios.Select(ro)
	if err != nil {
		t.Fatalf("hookcerttest: WithLabelFilter: %v", err)
		return
	}
	run, err := h.NewRun(ro)
	if err != nil {
		t.Fatalf("hookcerttest: %v", err)
		return
	}
	defer run.Close()
	t.Logf("hookcert: %d guarantee(s) selected, seed %d (replay: %s=%d or WithSeed(%d)), run %s", len(specs), o.seed, EnvSeed, o.seed, o.seed, o.runID)

	tt, isT := t.(*testing.T)
	for i, sp := range specs {
		if isT {
			tt.Run(sp.Guarantee, func(st *testing.T) {
				st.Helper()
				v := scenario(st.Context(), run, sp, i+1, len(specs))
				report(st, sp, v, clean, replay(o.seed, st.Name()))
			})
			continue
		}
		v := scenario(ctx, run, sp, i+1, len(specs))
		reportTB(t, sp, v, clean, fmt.Sprintf("replay: %s=%d with WithLabelFilter(%q)", EnvSeed, o.seed, sp.Guarantee))
	}

	res, err := h.Finish(ctx, run, harness.Report{
		Environment: map[string]string{"mode": "go test (hookcerttest)"},
		Repro: func(id string) string {
			return fmt.Sprintf("%s=%d go test -run '%s'", EnvSeed, o.seed, runPattern(t.Name()+"/"+id))
		},
		Dir: o.reportDir,
	})
	if res == nil {
		t.Errorf("hookcerttest: judging the run: %v", err)
		return
	}
	s := res.Summary
	t.Logf("hookcert: %s: %d passed, %d failed, %d not applicable, %d error (seed %d)",
		s.Verdict(), s.Passed, s.Failed, s.NotApplicable, s.Error, o.seed)
	switch {
	case err != nil:
		t.Errorf("hookcerttest: %v", err)
	case o.reportDir != "":
		t.Logf("hookcert: reports in %s", o.reportDir)
	}
	if o.onResults != nil {
		o.onResults(res)
	}
}

// scenario runs one scenario and judges it as the checker stage does.
func scenario(ctx context.Context, run *scenarios.Run, sp scenarios.Spec, n, total int) check.Verdict {
	rec := run.Scenario(ctx, sp, n, total)
	g, _ := scenarios.Lookup(sp.Guarantee)
	return check.Scenario(g, rec, check.PartOf(run.History(), rec.Index))
}

// report turns a verdict into the subtest's outcome.
func report(t *testing.T, sp scenarios.Spec, v check.Verdict, clean *scrub.Scrubber, replay string) {
	t.Helper()
	t.Log(sp.Text)
	for _, n := range v.Notes {
		t.Log("note: " + clean.String(n))
	}
	switch v.Status {
	case reports.StatusNotApplicable:
		t.Skip("not applicable: " + clean.String(v.Reason))
	case reports.StatusError:
		t.Errorf("%s not judged (harness error): %s\n%s", sp.Guarantee, clean.String(v.Reason), replay)
	case reports.StatusFailed:
		t.Errorf("%s\n%s", clean.String(deviations(sp.Guarantee, v)), replay)
	}
}

// reportTB reports a verdict on a testing.TB that cannot run subtests.
func reportTB(t testing.TB, sp scenarios.Spec, v check.Verdict, clean *scrub.Scrubber, replay string) {
	t.Helper()
	switch v.Status {
	case reports.StatusPassed:
		t.Logf("%s passed", sp.Guarantee)
	case reports.StatusNotApplicable:
		t.Logf("%s not applicable: %s", sp.Guarantee, clean.String(v.Reason))
	case reports.StatusError:
		t.Errorf("%s not judged (harness error): %s (%s)", sp.Guarantee, clean.String(v.Reason), replay)
	case reports.StatusFailed:
		t.Errorf("%s (%s)", clean.String(deviations(sp.Guarantee, v)), replay)
	}
}

func deviations(id string, v check.Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s broken: %d deviation(s)", id, len(v.Deviations))
	for _, d := range v.Deviations {
		fmt.Fprintf(&b, "\n  - [%s] %s", d.Code, d.Text)
	}
	return b.String()
}

// replay is the command that reruns one subtest with the run's seed.
func replay(seed int64, testName string) string {
	return fmt.Sprintf("replay: %s=%d go test -run '%s'", EnvSeed, seed, runPattern(testName))
}

// runPattern anchors each level of a test name for go test -run.
func runPattern(testName string) string {
	parts := strings.Split(testName, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// secretsOf are the values to scrub before the harness is open.
func secretsOf(tg Target) []string {
	out := []string{scrub.Password(tg.DatabaseURL)}
	if tg.Pool != nil {
		out = append(out, tg.Pool.Config().ConnConfig.Password)
	}
	for _, ep := range tg.Endpoints {
		out = append(out, ep.Secret)
	}
	return out
}

// checked is a Target rendered as a file, with what the loader and the
// harness need beside it.
type checked struct {
	data  []byte
	hooks harness.Hooks
	opts  []targetfile.Option
}

// check checks tg before anything is opened: its Go-only fields, then the
// file it stands for, with the loader's stand-in template values. Every
// problem is reported at once, each naming its Go field.
func (tg *Target) check() (*targetfile.Target, checked, error) {
	if err := tg.goChecks(); err != nil {
		return nil, checked{}, err
	}
	data, hooks, gh, err := tg.file()
	if err != nil {
		return nil, checked{}, err
	}
	// A relative program or directory is the test's, as a file's are the file's.
	dir, err := os.Getwd()
	if err != nil {
		return nil, checked{}, err
	}
	opts := []targetfile.Option{targetfile.WithBaseDir(dir), targetfile.WithGoHooks(gh)}
	inspected, err := targetfile.Inspect(data, profiles.IDs(), opts...)
	if err != nil {
		return nil, checked{}, goNames(err)
	}
	return inspected, checked{data: data, hooks: hooks, opts: opts}, nil
}

// open checks tg as a target file and assembles it with the composition
// root, as hookcert certify assembles a file.
func open(ctx context.Context, tg Target, o options) (*harness.Harness, error) {
	inspected, f, err := tg.check()
	if err != nil {
		return nil, err
	}
	data, hooks, opts := f.data, f.hooks, f.opts
	b := harness.New(harness.Options{RunID: o.runID, TimeScale: o.timeScale, Hooks: hooks, Secrets: secretsOf(tg), LogDir: o.reportDir})
	vars, err := b.Vars(inspected)
	if err != nil {
		b.Close()
		return nil, err
	}
	vars.DatabaseURL = tg.DatabaseURL
	if tg.Pool != nil {
		vars.DatabaseURL = hooks.PoolConfig.ConnString()
	}
	model, err := targetfile.Parse(data, vars, append(opts, targetfile.WithProfiles(profiles.IDs()))...)
	if err != nil {
		b.Close()
		return nil, goNames(err)
	}
	hs, err := b.Open(ctx, model)
	if err != nil {
		// The root names the file's fields (an observer query that does not
		// prepare, say): name the Go ones.
		return nil, goText{msg: pathRE.ReplaceAllStringFunc(err.Error(), goField), err: err}
	}
	return hs, nil
}

// goText is an error whose message names Target's fields, wrapping the one
// that named the file's.
type goText struct {
	msg string
	err error
}

func (e goText) Error() string { return e.msg }
func (e goText) Unwrap() error { return e.err }
