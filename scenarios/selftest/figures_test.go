package selftest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hookcert/hookcert/internal/docs"
	"github.com/hookcert/hookcert/reports"
)

// checkExampleVerdicts holds an example receiver's clean run to the verdicts
// the documentation renders for it (internal/docs.ExampleNotApplicable): the
// same guarantees not applicable, every other one passed. An example the
// documentation quotes no verdicts of is not held to any.
func checkExampleVerdicts(t reporter, label string, r *exampleRun) {
	t.Helper()
	if _, documented := docs.ExampleNotApplicable[r.ex.dir]; !documented {
		t.Logf("%s: the docs quote no verdicts of it", label)
		return
	}
	_, want, err := docs.ExampleVerdicts(r.ex.dir)
	if err != nil {
		t.Errorf("%s: %v", label, err)
		return
	}
	var got []string
	for _, g := range r.res.Guarantees {
		if g.Status == reports.StatusNotApplicable {
			got = append(got, g.ID)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s (seed %d): not applicable %v, but the docs say %v: update internal/docs/examples.go and run make generate", label, r.seed, got, want)
	}
}

// reporter is the part of testing.T the check reports through.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// errorsOf records what a check reported.
type errorsOf struct{ errs, logs []string }

func (e *errorsOf) Helper() {}
func (e *errorsOf) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}
func (e *errorsOf) Logf(format string, args ...any) {
	e.logs = append(e.logs, fmt.Sprintf(format, args...))
}

// TestCheckExampleVerdicts: a clean run matching the documented verdicts
// passes; one with a guarantee more or less not applicable fails.
func TestCheckExampleVerdicts(t *testing.T) {
	passed, na, err := docs.ExampleVerdicts("stripe-shop")
	if err != nil {
		t.Fatal(err)
	}
	run := func(naIDs []string) *exampleRun {
		res := &reports.Results{}
		for _, id := range passed {
			res.Guarantees = append(res.Guarantees, reports.Guarantee{ID: id, Status: reports.StatusPassed})
		}
		for _, id := range naIDs {
			res.Guarantees = append(res.Guarantees, reports.Guarantee{ID: id, Status: reports.StatusNotApplicable})
		}
		return &exampleRun{ex: &example{dir: "stripe-shop"}, res: res}
	}
	var ok errorsOf
	checkExampleVerdicts(&ok, "stripe-shop", run(na))
	if len(ok.errs) != 0 {
		t.Errorf("matching verdicts reported: %v", ok.errs)
	}
	var bad errorsOf
	checkExampleVerdicts(&bad, "stripe-shop", run(na[1:]))
	if len(bad.errs) != 1 {
		t.Errorf("a guarantee that passes where the docs say not applicable: %d errors, want 1", len(bad.errs))
	}
	var unknown errorsOf
	r := run(na)
	r.ex.dir = "no-such-example"
	checkExampleVerdicts(&unknown, "no-such-example", r)
	if len(unknown.errs) != 0 || len(unknown.logs) != 1 {
		t.Errorf("an example the docs quote nothing of: %v, %v", unknown.errs, unknown.logs)
	}
}
