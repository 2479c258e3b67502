package scenarios

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/onsi/ginkgo/v2/types"
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

// Spec is one guarantee's scenario as the suite runs it: its Ginkgo spec
// text and labels.
type Spec struct {
	Guarantee string
	Text      string
	Labels    []string
}

// Specs returns every scenario in catalogue order.
func Specs() []Spec {
	out := make([]Spec, len(catalogue))
	for i, g := range catalogue {
		out[i] = Spec{Guarantee: g.ID, Text: g.ID + " " + g.Spec, Labels: labels(g)}
	}
	return out
}

// labels are a scenario's labels: its guarantee ID, its family and, per capability
// it needs, "needs:<capability>", so a label filter selects by any of them
// (e.g. "ATOMIC || needs:crash", "!needs:lock-gating").
func labels(g Guarantee) []string {
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
	for _, sp := range Specs() {
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
