package scenarios

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// RunOptions selects and shapes one run of the suite.
type RunOptions struct {
	// Seed orders the specs and seeds every plan; the same seed gives the same run.
	Seed int64
	// LabelFilter is a Ginkgo label filter, e.g. "DEDUP || ATOMIC-1".
	LabelFilter string
	// Focus keeps only specs whose text matches one of these regular expressions.
	Focus []string
	// Verbose streams each spec's progress as it runs.
	Verbose bool
	// Silent suppresses Ginkgo's own console report.
	Silent bool
	// NoColor disables colour in the console report.
	NoColor bool
	// Timeout bounds the whole run (default 15 minutes).
	Timeout time.Duration
}

// SpecOutcome is one scenario as Ginkgo reported it, with what the scenario recorded.
type SpecOutcome struct {
	Guarantee string
	Name      string
	State     string // passed, failed, skipped, error
	Message   string
	Duration  time.Duration
	Record    *Record
}

// fakeT lets the suite run inside the hookcert binary, outside `go test`.
type fakeT struct{ failed bool }

func (t *fakeT) Fail() { t.failed = true }

var (
	collectMu sync.Mutex
	collected []SpecOutcome
)

// ReportAfterEach runs in every process that registers the suite: the binary and
// `go test`. It turns Ginkgo's report into outcomes keyed by guarantee ID.
var _ = ginkgo.ReportAfterEach(func(r types.SpecReport) {
	if r.LeafNodeType != types.NodeTypeIt {
		return
	}
	o := SpecOutcome{Name: r.LeafNodeText, Duration: r.RunTime}
	for _, l := range r.Labels() {
		if _, err := Lookup(l); err == nil {
			o.Guarantee = strings.ToUpper(l)
		}
	}
	switch r.State {
	case types.SpecStatePassed:
		o.State = "passed"
	case types.SpecStateSkipped:
		if !strings.HasPrefix(r.Failure.Message, "not applicable") {
			// Left out by --label-filter or --focus: not judged, not reported.
			return
		}
		o.State = "skipped"
		o.Message = r.Failure.Message
	case types.SpecStatePending:
		o.State = "skipped"
		o.Message = "pending"
	case types.SpecStateFailed:
		o.State = "failed"
		o.Message = r.Failure.Message
	default: // panicked, interrupted, aborted, timed out
		o.State = "error"
		o.Message = fmt.Sprintf("%s: %s", r.State, r.Failure.Message)
	}
	o.Record = takeRecord(r.LeafNodeText)
	if o.Record != nil && o.Record.errored && o.State == "failed" {
		o.State = "error"
	}
	collectMu.Lock()
	collected = append(collected, o)
	collectMu.Unlock()
})

// Run executes the suite against env in this process and returns every scenario's
// outcome. Ginkgo allows one run per process: call it once.
func Run(env *Env, opt RunOptions) ([]SpecOutcome, error) {
	if env == nil {
		return nil, fmt.Errorf("scenarios: no environment")
	}
	// Under `go test` or the ginkgo CLI, Ginkgo's own flags are the defaults.
	sc, rc := ginkgo.GinkgoConfiguration()
	if opt.Seed != 0 {
		sc.RandomSeed = opt.Seed
	}
	env.Seed = sc.RandomSeed
	setEnv(env)
	defer setEnv(nil)
	// A conformance tool must not hide flakiness: random order, no reruns, and an
	// empty or pending selection is an error.
	sc.RandomizeAllSpecs = true
	sc.FailOnPending = true
	sc.FailOnEmpty = true
	sc.FlakeAttempts = 0
	sc.MustPassRepeatedly = 0
	if opt.LabelFilter != "" {
		sc.LabelFilter = opt.LabelFilter
	}
	if len(opt.Focus) > 0 {
		sc.FocusStrings = opt.Focus
	}
	if opt.Timeout == 0 {
		opt.Timeout = 15 * time.Minute
	}
	sc.Timeout = opt.Timeout
	rc.NoColor = rc.NoColor || opt.NoColor
	if opt.Verbose {
		rc.Verbose, rc.Succinct = true, false
	} else if !rc.Verbose && !rc.VeryVerbose {
		rc.Succinct = true
	}
	if opt.Silent {
		rc.Succinct = true
		rc.Verbose = false
	}

	collectMu.Lock()
	collected = nil
	collectMu.Unlock()

	t := &fakeT{}
	ginkgo.RunSpecs(t, "hookcert", sc, rc)

	collectMu.Lock()
	defer collectMu.Unlock()
	return append([]SpecOutcome(nil), collected...), nil
}

// labels are a scenario's Ginkgo labels: its guarantee ID and, per capability it
// needs, "needs:<capability>", so --label-filter selects by either
// (e.g. "ATOMIC || needs:crash", "!needs:lock-gating").
func labels(id string) ginkgo.Labels {
	l := ginkgo.Labels{id}
	if g, err := Lookup(id); err == nil {
		for _, n := range g.Needs {
			l = append(l, "needs:"+n)
		}
	}
	return l
}
