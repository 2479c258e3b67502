package certify

import (
	"context"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
)

// TestSuite is the suite as Ginkgo specs, for `go test` and the ginkgo CLI: one It
// per scenario, labelled with its guarantee ID, family and needs:<capability>, so
// Ginkgo's own flags (--ginkgo.label-filter, --ginkgo.seed, --ginkgo.focus) select
// and order them. Each spec runs its scenario against $HOOKCERT_CONFIG and is
// judged by the checker stage, as `hookcert certify` judges it; the reports go to
// $HOOKCERT_REPORT_DIR when it is set.
func TestSuite(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	cfg := os.Getenv("HOOKCERT_CONFIG")
	if cfg == "" {
		t.Skip("no target: set HOOKCERT_CONFIG=target.yaml to certify a receiver (scenarios/selftest runs the suite against the reference)")
	}
	sc, rc := ginkgo.GinkgoConfiguration()
	// Colour only on a terminal, and never with NO_COLOR (https://no-color.org).
	if os.Getenv("NO_COLOR") != "" || !isTerminal(os.Stdout) {
		rc.NoColor = true
	}
	hs, err := Open(context.Background(), Options{ConfigPath: cfg, ReportDir: os.Getenv("HOOKCERT_REPORT_DIR"), TimeScale: DefaultTimeScale,
		Run: scenarios.RunOptions{Seed: sc.RandomSeed}})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	run, err := hs.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	// The specs close over this run: nothing of it lives in a package variable.
	ginkgo.Describe("hookcert", func() {
		for _, sp := range scenarios.Specs() {
			ginkgo.It(sp.Text, ginkgo.Label(sp.Labels...), func(ctx ginkgo.SpecContext) {
				rec := run.Scenario(ctx, sp, 0, 0)
				g, _ := scenarios.Lookup(sp.Guarantee)
				v := check.Scenario(g, rec, check.PartOf(run.History(), rec.Index))
				switch v.Status {
				case reports.StatusNotApplicable:
					ginkgo.Skip("not applicable: " + v.Reason)
				case reports.StatusError:
					ginkgo.Fail("error: " + v.Reason)
				case reports.StatusFailed:
					msg := sp.Guarantee + " broken:"
					for _, d := range v.Deviations {
						msg += "\n  - [" + d.Code + "] " + d.Text
					}
					ginkgo.Fail(msg)
				}
			})
		}
	})
	ginkgo.RunSpecs(t, "hookcert", rc)
	if _, err := hs.Finish(context.Background(), run); err != nil {
		t.Error(err)
	}
}

// isTerminal reports whether f is a character device (a terminal), not a pipe
// or a file.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
