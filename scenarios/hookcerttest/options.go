package hookcerttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookcert/hookcert/reports"
)

// DefaultTimeScale compresses providers' retry schedules: one provider hour
// passes in one real second, as in `hookcert certify`.
const DefaultTimeScale = 3600

// EnvSeed names the environment variable that sets the seed of runs given no
// WithSeed, so a failing run can be replayed without editing the test.
const EnvSeed = "HOOKCERT_SEED"

// Option tunes Run and RunFile.
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

	// What RunFile fills in for the file, or a Go test supplies in place of
	// part of it.
	databaseURL string
	env         []envVar
	genSecrets  bool
	receiver    Factory
	purge       func(ctx context.Context, asOf time.Time) error
}

type envVar struct{ name, value string }

// WithSeed sets the run's seed: the scenario order and every choice the
// scenarios make derive from it, so one seed replays one run. Without it the
// seed is $HOOKCERT_SEED, else random; it is logged either way.
func WithSeed(seed int64) Option { return func(o *options) { o.seed, o.seedSet = seed, true } }

// WithLabelFilter keeps the guarantees a Ginkgo label filter selects, over
// guarantee IDs, families and needs:<capability> ("DEDUP || ATOMIC-1",
// "!needs:crash"). `go test -run 'Test/DEDUP-1'` selects by subtest name too.
// A filter that selects nothing fails the test.
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

// WithDatabaseURL is {{.DatabaseURL}} in the target file (RunFile): the
// receiver's database, which the test created. hookcerttest never
// provisions one, so a file that uses {{.DatabaseURL}} needs it.
func WithDatabaseURL(url string) Option { return func(o *options) { o.databaseURL = url } }

// WithEnv sets an environment variable for the test's duration (t.Setenv,
// so not in a parallel test) before the target is read: a file's secret_env
// and {{env "NAME"}} read it, a lifecycle process inherits it, and so does a
// receiver in the test process that reads its configuration from the
// environment. A value of 8 characters or more is scrubbed from everything
// the run writes.
func WithEnv(name, value string) Option {
	return func(o *options) { o.env = append(o.env, envVar{name, value}) }
}

// WithGeneratedSecrets gives every endpoint of the target file whose
// secret_env is unset or empty a fresh signing secret in its profile's
// format, set as WithEnv sets a variable: the harness signs with it, and a
// receiver that reads the same variable verifies with it (RunFile).
func WithGeneratedSecrets() Option { return func(o *options) { o.genSecrets = true } }

// WithReceiver serves the receiver in the test process, built by f, in place
// of the target's lifecycle: at the target's base URL (a loopback http URL;
// {{.Port}} is a free port), started once the target's setup hook has run,
// and crashed and restarted by the harness as a process would be (Receiver).
// The target's capability crash is then satisfied without a lifecycle. A
// file's lifecycle is still checked as the CLI checks it (the variables its
// {{env}} reads must be set), but not run. A target whose lifecycle declares
// worker processes is refused: the harness could not kill them alone.
func WithReceiver(f Factory) Option { return func(o *options) { o.receiver = f } }

// WithPurge purges the receiver as if its clock read asOf, in Go, in place
// of the target file's retention.purge (RunFile; a Target sets
// Retention.Purge). The file must still declare capability retention and its
// TTLs.
func WithPurge(f func(ctx context.Context, asOf time.Time) error) Option {
	return func(o *options) { o.purge = f }
}

// newOptions applies opts over the defaults and settles the seed and the run
// ID; the error names the option or variable at fault.
func newOptions(opts []Option) (options, error) {
	o := options{timeScale: DefaultTimeScale}
	for _, f := range opts {
		f(&o)
	}
	if !o.seedSet {
		o.seed = rand.Int64N(1 << 31)
		if s := strings.TrimSpace(os.Getenv(EnvSeed)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return o, fmt.Errorf("$%s=%q is not an integer", EnvSeed, s)
			}
			o.seed = n
		}
	}
	if o.timeScale <= 0 {
		return o, fmt.Errorf("WithTimeScale: must be > 0, got %v", o.timeScale)
	}
	for _, e := range o.env {
		if !envNameRE.MatchString(e.name) {
			return o, fmt.Errorf("WithEnv: %q is not an environment variable name", e.name)
		}
	}
	if o.runID == "" {
		o.runID = strings.ToLower(strconv.FormatInt(time.Now().UnixNano()&0xffffffffff, 16))
	}
	return o, nil
}

// goTargetOnly refuses the options that only a target file takes, naming
// the Target field that says the same.
func (o options) goTargetOnly() error {
	switch {
	case o.databaseURL != "":
		return fmt.Errorf("WithDatabaseURL: a Target names its database in Target.DatabaseURL (the option fills a target file's {{.DatabaseURL}}, for RunFile)")
	case o.genSecrets:
		return fmt.Errorf("WithGeneratedSecrets: a Target's endpoints carry their Secret (the option fills a target file's secret_env, for RunFile)")
	case o.purge != nil:
		return fmt.Errorf("WithPurge: a Target purges through Target.Retention.Purge (the option replaces a target file's retention.purge, for RunFile)")
	}
	return nil
}

// minSecretLen is the shortest WithEnv value scrubbed as a secret.
const minSecretLen = 8

// envNameRE is an environment variable's name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// setenv applies WithEnv and returns the values to scrub.
func (o options) setenv(t interface{ Setenv(k, v string) }) []string {
	var secrets []string
	for _, e := range o.env {
		t.Setenv(e.name, e.value)
		// Short values are flags and names, not secrets: scrubbing them would
		// blank ordinary words out of the reports.
		if len(e.value) >= minSecretLen {
			secrets = append(secrets, e.value)
		}
	}
	return secrets
}
