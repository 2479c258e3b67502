package hookcerttest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
	"github.com/hookcert/hookcert/scenarios/harness"
)

// HistoryFile is the history's name in a report directory (the input of
// `hookcert check --from DIR`).
const HistoryFile = "history.jsonl"

// Run runs the conformance suite against tg inside the caller's test. With a
// *testing.T each guarantee is a subtest named by its ID: it fails with every
// deviation found, or with the reason the harness could not judge it, and is
// skipped with the reason when it is not applicable. With another testing.TB
// (a benchmark, say) each guarantee that failed or could not be judged is one
// Errorf line, the others one Logf line. A target that is wrong or cannot be
// reached fails t at once (Fatalf), naming Target's fields.
func Run(t testing.TB, tg Target, opts ...Option) {
	t.Helper()
	o, err := newOptions(opts)
	if err == nil {
		err = o.goTargetOnly()
	}
	if err != nil {
		t.Fatalf("hookcerttest: %v", err)
		return
	}
	if tg.Name == "" {
		tg.Name = t.Name()
	}
	secrets := append(o.setenv(t), secretsOf(tg)...)
	src, err := tg.source(o)
	if err != nil {
		t.Fatalf("hookcerttest: %v", scrub.New(secrets...).Error(err))
		return
	}
	src.secrets = append(src.secrets, secrets...)
	suite(t, src, o)
}

// suite opens the target src stands for, runs the selected guarantees as
// subtests (or lines), judges the run and writes its reports.
func suite(t testing.TB, src *source, o options) {
	t.Helper()
	ro := scenarios.RunOptions{Seed: o.seed, LabelFilter: o.labelFilter, ScenarioTimeout: o.scenario}
	specs, err := scenarios.Select(ro)
	switch {
	case err != nil:
		t.Fatalf("hookcerttest: WithLabelFilter: %v", err)
		return
	case len(specs) == 0:
		t.Fatalf("hookcerttest: WithLabelFilter(%q) selects no guarantee (labels: guarantee IDs, families, needs:<capability>)", o.labelFilter)
		return
	}
	ctx := t.Context()
	h, err := open(ctx, src, o)
	if err != nil {
		t.Fatalf("hookcerttest: %v", scrub.New(src.secrets...).Error(err))
		return
	}
	defer h.Close()
	clean := scrub.New(h.Secrets()...)
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
	finish(t, h, run, src, o)
}

// finish judges the run, writes its reports and hands the results to
// OnResults.
func finish(t testing.TB, h *harness.Harness, run *scenarios.Run, src *source, o options) {
	t.Helper()
	env := map[string]string{"mode": "go test (hookcerttest)"}
	if src.path != "" {
		env["target_file"] = src.path
	}
	res, err := h.Finish(t.Context(), run, harness.Report{
		Environment: env,
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
