package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/scenarios"
)

func newReproCmd() *cobra.Command {
	var (
		config       string
		demo         bool
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
		Use:   "repro GUARANTEE-ID --seed N (--config TARGET.yaml | --demo [--defect NAME]...)",
		Short: "Rerun one guarantee's scenarios with a seed, or until they fail",
		Long: `Repro reruns the scenarios of one guarantee with the seed a report printed. With
--until-it-fails it reruns them with seeds N, N+1, … in fresh processes until one
fails (or --max-runs is reached) and prints the seed that failed: a race hunted on
purpose.`,
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
			if seed == 0 {
				return usageErr("--seed is required (the seed printed with the failure)")
			}
			base := []string{"certify", "--config", config}
			if demo {
				base = []string{"demo"}
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
				r := NewRoot(out, cmd.ErrOrStderr())
				r.SetArgs(append(base, "--seed", fmt.Sprint(seed)))
				return r.ExecuteContext(cmd.Context())
			}
			return reproUntilFails(cmd, g.ID, base, seed, maxRuns)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&config, "config", "", "target file")
	fl.BoolVar(&demo, "demo", false, "reproduce against the reference receiver, as hookcert demo")
	fl.StringArrayVar(&defects, "defect", nil, "with --demo: start the reference with this defect (repeatable)")
	fl.BoolVar(&untilFails, "until-it-fails", false, "rerun with seeds N, N+1, … until a run fails")
	fl.IntVar(&maxRuns, "max-runs", 100, "with --until-it-fails: give up after this many runs")
	fl.Int64Var(&seed, "seed", 0, "the seed to reproduce (required)")
	fl.StringVar(&databaseURL, "database-url", "", "PostgreSQL for the target (default: $HOOKCERT_DATABASE_URL, else provisioned)")
	fl.StringVar(&reportDir, "report-dir", "hookcert-report", "where the reports go")
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
		return &ExitError{Code: ExitFailed, Err: err}
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
			return &ExitError{Code: ExitFailed, Err: err}
		}
	}
	fmt.Fprintf(out, "%s passed %d run(s) in a row\n", id, maxRuns)
	return nil
}
