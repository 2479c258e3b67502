package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
)

func newReproCmd() *cobra.Command {
	var (
		config       string
		demo         bool
		mode         string
		store        string
		workerProcs  int
		from         string
		defects      []string
		untilFails   bool
		maxRuns      int
		seed         int64
		databaseURL  string
		reportDir    string
		verbose      bool
		keepDatabase bool
	)
	cmd := &cobra.Command{
		Use:   "repro GUARANTEE-ID (--seed N | --from REPORT-DIR) (--config TARGET.yaml | --demo [--store S] [--mode M] [--defect NAME]...)",
		Short: "Replay one guarantee's schedule from a report, or rerun it until it fails",
		Long: `Repro reruns the scenarios of one guarantee with the seed a report printed: the
same deliveries, and every race held at the same lock gate, so a failure that a forced
race caught fails again.

With --from REPORT-DIR (the failing run's report directory, as the printed repro
command gives it) it takes the seed from that run's history.jsonl and, once the rerun
is done, compares the two schedules: the deliveries made (event IDs without the run's
namespace, types, roles, attempts, copies, faults) and the lock gates held. It says
whether the rerun replayed the failing run's schedule, and where it departed from it.
A rerun that departed and passed exits 5: it was no replay, so it judges nothing.

With --until-it-fails it reruns with seeds N, N+1, … in fresh processes until one
fails (or --max-runs is reached) and prints the seed that failed: a race the target
gives no lock gate for, hunted on purpose.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := scenarios.Lookup(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			if (config == "") == !demo {
				return usageErr("give exactly one of --config TARGET.yaml or --demo")
			}
			if len(defects) > 0 && !demo {
				return usageErr("--defect goes with --demo")
			}
			if maxRuns < 1 {
				return usageErr("--max-runs must be at least 1 (got %d)", maxRuns)
			}
			var failing *check.Schedule
			if from != "" {
				sc, runSeed, err := failingSchedule(from, g.ID)
				if err != nil {
					return usageErr("--from: %v", err)
				}
				if seed != 0 && seed != runSeed {
					return usageErr("--seed %d is not the seed of the run in %s (%d)", seed, from, runSeed)
				}
				if untilFails {
					return usageErr("--from replays one run; --until-it-fails hunts over seeds: give one of them")
				}
				seed, failing = runSeed, &sc
				if filepath.Clean(from) == filepath.Clean(reportDir) {
					return usageErr("--report-dir %s is the failing run's report (--from): the rerun would overwrite it", reportDir)
				}
			}
			if seed == 0 {
				return usageErr("--seed is required (the seed printed with the failure), or --from with the failing run's report directory")
			}
			if !demo && (mode != "" || workerProcs != 0 || store != "") {
				return usageErr("--mode, --store and --worker-processes go with --demo")
			}
			base := []string{"certify", "--config", config}
			if demo {
				base = []string{"demo"}
				if store != "" {
					base = append(base, "--store", store)
				}
				if mode != "" {
					base = append(base, "--mode", mode)
				}
				if workerProcs != 0 {
					base = append(base, "--worker-processes", fmt.Sprint(workerProcs))
				}
				for _, d := range defects {
					base = append(base, "--defect", d)
				}
			}
			base = append(base, "--label-filter", g.ID, "--report-dir", reportDir)
			if databaseURL != "" {
				base = append(base, "--database-url", databaseURL)
			}
			if verbose {
				base = append(base, "--verbose")
			}
			if keepDatabase {
				base = append(base, "--keep-database")
			}
			out := cmd.OutOrStdout()
			if !untilFails {
				for try := 1; ; try++ {
					r := NewRoot(out, cmd.ErrOrStderr())
					r.SetArgs(append(base, "--seed", fmt.Sprint(seed)))
					err := r.ExecuteContext(cmd.Context())
					if failing == nil {
						return err
					}
					replayed, err := compareReplay(out, *failing, reportDir, err)
					if replayed || try == replayTries || cmd.Context().Err() != nil {
						return err
					}
					// Same seed, same deliveries: only where the receiver's sessions
					// stood when a gate let go can differ (a loaded machine brings a
					// racer late), so the same run goes again.
					fmt.Fprintf(out, "rerunning seed %d to replay the failing run's schedule (try %d of %d)\n", seed, try+1, replayTries)
				}
			}
			return reproUntilFails(cmd, g.ID, base, seed, maxRuns)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&config, "config", "", "target file")
	fl.BoolVar(&demo, "demo", false, "reproduce against the reference receiver, as hookcert demo")
	fl.StringVar(&mode, "mode", "", "with --demo: the reference receiver's design, as hookcert demo --mode")
	fl.StringVar(&store, "store", "", "with --demo: the reference's database, as hookcert demo --store (postgres or mysql)")
	fl.IntVar(&workerProcs, "worker-processes", 0, "with --demo: as hookcert demo --worker-processes")
	fl.StringVar(&from, "from", "", "the failing run's report directory: take its seed and compare the rerun's schedule with its own")
	fl.StringArrayVar(&defects, "defect", nil, "with --demo: start the reference with this defect (repeatable)")
	fl.BoolVar(&untilFails, "until-it-fails", false, "rerun with seeds N, N+1, … until a run fails")
	fl.IntVar(&maxRuns, "max-runs", 100, "with --until-it-fails: give up after this many runs")
	fl.Int64Var(&seed, "seed", 0, "the seed to reproduce (required)")
	fl.StringVar(&databaseURL, "database-url", "", "the database server for the target: PostgreSQL ($HOOKCERT_DATABASE_URL when unset, else provisioned), or a mysql:// server for observe.mysql ($HOOKCERT_MYSQL_URL when unset)")
	fl.StringVar(&reportDir, "report-dir", "hookcert-repro", "where the rerun's reports go (not the failing run's: --from reads those)")
	fl.BoolVar(&verbose, "verbose", false, "stream every scenario's progress")
	fl.BoolVar(&keepDatabase, "keep-database", false, "keep the run's database afterwards")
	return cmd
}

// reproUntilFails runs hookcert base with seeds seed, seed+1, … in fresh
// processes until one run fails its guarantee id (or maxRuns have passed) and
// prints the command that reproduces it.
func reproUntilFails(cmd *cobra.Command, id string, base []string, seed int64, maxRuns int) error {
	out := cmd.OutOrStdout()
	exe, err := os.Executable()
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	for i := 0; i < maxRuns; i++ {
		s := seed + int64(i)
		fmt.Fprintf(out, "run %d/%d: %s seed %d\n", i+1, maxRuns, id, s)
		c := exec.CommandContext(cmd.Context(), exe, append(base, "--seed", fmt.Sprint(s))...)
		c.Stdout, c.Stderr = out, cmd.ErrOrStderr()
		err := c.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			continue
		case errors.As(err, &ee) && ee.ExitCode() == ExitFailed:
			fmt.Fprintf(out, "%s failed with seed %d after %d run(s): hookcert %s --seed %d\n", id, s, i+1, strings.Join(base, " "), s)
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s failed with seed %d", id, s)}
		case errors.As(err, &ee):
			return &ExitError{Code: ee.ExitCode(), Err: fmt.Errorf("run %d: %w", i+1, err)}
		default:
			// The run could not start: nothing was judged.
			return &ExitError{Code: ExitUnjudged, Err: err}
		}
	}
	fmt.Fprintf(out, "%s passed %d run(s) in a row\n", id, maxRuns)
	return nil
}

// failingSchedule reads the schedule of guarantee id and the seed from the
// history in dir.
func failingSchedule(dir, id string) (check.Schedule, int64, error) {
	h, err := readRunHistory(dir)
	if err != nil {
		return check.Schedule{}, 0, err
	}
	sc, err := check.ScheduleOf(h, id)
	return sc, h.Meta.Seed, err
}

// readRunHistory reads dir/history.jsonl.
func readRunHistory(dir string) (*history.History, error) {
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return history.ReadJSONL(f)
}

// compareReplay compares the rerun's schedule (in reportDir) with the failing
// run's, says whether it was replayed, and returns the exit of the rerun —
// unless the rerun departed from the schedule and passed: that judged
// nothing (exit 5). replayed reports the schedule was the failing run's.
func compareReplay(out io.Writer, failing check.Schedule, reportDir string, runErr error) (replayed bool, _ error) {
	h, err := readRunHistory(reportDir)
	if err != nil {
		return false, errors.Join(runErr, fmt.Errorf("reading the rerun's history to compare its schedule: %w", err))
	}
	replay, err := check.ScheduleOf(h, failing.Guarantee)
	if err != nil {
		return false, errors.Join(runErr, err)
	}
	diffs := failing.Replays(replay)
	if len(diffs) == 0 {
		fmt.Fprintf(out, "schedule replayed: %s, as in the failing run\n", replay.Describe())
		return true, runErr
	}
	fmt.Fprintf(out, "the rerun departed from the failing run's schedule (%d difference(s)):\n", len(diffs))
	for i, d := range diffs {
		if i == 10 {
			fmt.Fprintf(out, "  … and %d more\n", len(diffs)-i)
			break
		}
		fmt.Fprintf(out, "  %s\n", d)
	}
	if runErr != nil {
		return false, runErr
	}
	return false, &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("%s passed, but not on the failing run's schedule: this rerun judges nothing of the failure", failing.Guarantee)}
}

// replayTries bounds the reruns of one seed that --from makes until the
// failing run's schedule is replayed.
const replayTries = 3
