package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/certify"
)

// suiteFlags are the flags every command that runs the suite shares.
type suiteFlags struct {
	reportDir    string
	seed         int64
	labelFilter  string
	focus        []string
	timeScale    float64
	verbose      bool
	databaseURL  string
	keepDatabase bool
}

func (f *suiteFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.reportDir, "report-dir", "hookcert-report", "where results.json, junit.xml, summary.md, index.html and history.jsonl go")
	fl.Int64Var(&f.seed, "seed", 0, "seed for spec order and every plan (0: random, printed)")
	fl.StringVar(&f.labelFilter, "label-filter", "", `Ginkgo label filter, e.g. "DEDUP || ATOMIC-1"`)
	fl.StringSliceVar(&f.focus, "focus", nil, "run only scenarios whose text matches these regular expressions")
	fl.Float64Var(&f.timeScale, "time-scale", certify.DefaultTimeScale, "provider seconds per real second for retry schedules")
	fl.BoolVar(&f.verbose, "verbose", false, "stream every scenario's progress")
	fl.StringVar(&f.databaseURL, "database-url", "", "the database server for targets that use {{.DatabaseURL}}: PostgreSQL ($HOOKCERT_DATABASE_URL when unset, else provisioned), or a mysql:// server for observe.mysql ($HOOKCERT_MYSQL_URL when unset); the run gets a database of its own there")
	fl.BoolVar(&f.keepDatabase, "keep-database", false, "keep the run's database afterwards")
}

// reproFrom is the --from of a repro command: the run's report directory,
// whose history the repro compares its schedule with.
func (f *suiteFlags) reproFrom() string {
	if f.reportDir == "" {
		return ""
	}
	return " --from " + f.reportDir
}

func (f *suiteFlags) validate() error {
	if f.timeScale < 1 {
		return usageErr("--time-scale must be at least 1 (got %g)", f.timeScale)
	}
	if f.seed == 0 {
		f.seed = time.Now().UnixNano() % 1_000_000
	}
	return nil
}

func (f *suiteFlags) options(w io.Writer, repro func(id string) string) certify.Options {
	run := scenarios.RunOptions{Seed: f.seed, LabelFilter: f.labelFilter, Focus: f.focus}
	run.Progress = progress(w, f.verbose)
	return certify.Options{
		DatabaseURL: f.databaseURL, KeepDatabase: f.keepDatabase, ReportDir: f.reportDir,
		Run: run, TimeScale: f.timeScale, Repro: repro, Stdout: w,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

func newCertifyCmd() *cobra.Command {
	var f suiteFlags
	var config string
	cmd := &cobra.Command{
		Use:   "certify --config TARGET.yaml",
		Short: "Certify a receiver described by a target file",
		Long: `Certify runs the guarantee suite against the receiver described by a target file
(docs/target.md) and writes the reports. Exit status: 0 every applicable guarantee
passed, 1 some guarantee failed, 2 usage or configuration error (the file, a query
that does not prepare, a failing setup hook), 3 the target could not be reached or
its receiver started, 4 nothing was judged (no guarantee selected, or every selected
one is not applicable), 5 none failed but some could not be judged (or the run was
interrupted). Once the target file is read, every run writes results.json and
summary.md, saying why when it stopped early.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				return usageErr("--config is required (a target file, see docs/target.md)")
			}
			if err := f.validate(); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			opts := f.options(out, func(id string) string {
				return fmt.Sprintf("hookcert repro %s --seed %d --config %s", id, f.seed, config) + f.reproFrom()
			})
			opts.ConfigPath = config
			printFileWarnings(out, config)
			return runCertify(cmd.Context(), out, opts)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "target file (YAML, see docs/target.md)")
	f.add(cmd)
	return cmd
}

// runCertify runs a certification and maps its result to an exit status.
func runCertify(ctx context.Context, out io.Writer, opts certify.Options) error {
	start := time.Now()
	fmt.Fprintf(out, "seed %d\n", opts.Run.Seed)
	if _, err := scenarios.Select(opts.Run); err != nil {
		return usageErr("%v", err)
	}
	res, err := certify.Certify(ctx, opts)
	if err != nil && res != nil && opts.ReportDir != "" {
		// The run stopped before it judged anything; its reports say why.
		fmt.Fprintf(out, "reports: %s/{results.json,summary.md} (outcome %s)\n", strings.TrimRight(opts.ReportDir, "/"), res.Outcome)
	}
	switch {
	case errors.Is(err, certify.ErrConfig):
		return &ExitError{Code: ExitUsage, Err: err}
	case errors.Is(err, certify.ErrUnreachable):
		return &ExitError{Code: ExitUnreachable, Err: err}
	case errors.Is(err, certify.ErrNothing):
		return &ExitError{Code: ExitNothing, Err: err}
	case err != nil && res != nil && res.Outcome == reports.RunUnreachable:
		// The reports say the target or its database could not be had; the
		// exit status says the same.
		return &ExitError{Code: ExitUnreachable, Err: err}
	case err != nil:
		// The harness failed before it could judge: nothing failed.
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	if res.Summary.Total == 0 {
		return &ExitError{Code: ExitNothing, Err: fmt.Errorf("no scenario selected: --label-filter %q and --focus %q match none (labels: guarantee IDs, families, needs:<capability>; see hookcert guarantees)",
			opts.Run.LabelFilter, strings.Join(opts.Run.Focus, ","))}
	}
	return verdictExit(out, res, opts.ReportDir, start)
}

// verdictExit prints the verdicts and maps the run's verdict to an exit
// status: 1 only when a guarantee failed, 5 when nothing failed but something
// could not be judged (an interrupted run never exits 0), 4 when nothing was.
func verdictExit(out io.Writer, res *reports.Results, reportDir string, start time.Time) error {
	printSummary(out, res)
	if reportDir != "" {
		fmt.Fprintf(out, "reports: %s/{results.json,junit.xml,summary.md,index.html,history.jsonl}\n", strings.TrimRight(reportDir, "/"))
	}
	if !start.IsZero() {
		fmt.Fprintf(out, "wall time %s\n", time.Since(start).Round(100*time.Millisecond))
	}
	s := res.Summary
	switch res.RunVerdict() {
	case reports.VerdictFailed:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d guarantee(s) failed, %d could not be judged", s.Failed, s.Error)}
	case reports.VerdictError:
		if res.Interrupted {
			return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("the run was interrupted; %d guarantee(s) could not be judged, none failed", s.Error)}
		}
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("%d guarantee(s) could not be judged, none failed", s.Error)}
	case reports.VerdictNone:
		// Nothing certified: a CI step must not read this as a pass.
		return &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing was judged: all %d selected guarantee(s) are not applicable to this target", s.NotApplicable)}
	}
	return nil
}

// printSummary prints the verdicts so that what failed is nearest the
// verdict line a reader's eye lands on: the passes one a line, the
// not-applicable guarantees one line per reason, then what could not be
// judged and what failed, each with its codes, event types, race and repro.
func printSummary(out io.Writer, res *reports.Results) {
	p := painterFor(out)
	fmt.Fprintln(out)
	var problems []reports.Guarantee
	var reasons []string
	naByReason := map[string][]string{}
	for _, g := range res.Guarantees {
		switch g.Status {
		case reports.StatusPassed:
			fmt.Fprintf(out, "  %s %-9s %s\n", p.status("PASS "), g.ID, g.Title)
		case reports.StatusNotApplicable:
			if naByReason[g.Reason] == nil {
				reasons = append(reasons, g.Reason)
			}
			naByReason[g.Reason] = append(naByReason[g.Reason], g.ID)
		default:
			problems = append(problems, g)
		}
	}
	for _, r := range reasons {
		fmt.Fprintf(out, "  %s %s: %s\n", p.status("N/A  "), strings.Join(naByReason[r], " "), r)
	}
	// Errors before failures: the failures end the list.
	for _, st := range []reports.Status{reports.StatusError, reports.StatusFailed} {
		for _, g := range problems {
			if g.Status == st {
				printProblem(out, p, g)
			}
		}
	}
	s := res.Summary
	fmt.Fprintf(out, "\n%s: %d failed, %d error, %d passed, %d not applicable\n", p.status(reports.VerdictTitle(res.RunVerdict())), s.Failed, s.Error, s.Passed, s.NotApplicable)
}

// printProblem is a failed or errored guarantee: its line, then what a reader
// needs to act on it.
func printProblem(out io.Writer, p painter, g reports.Guarantee) {
	line := fmt.Sprintf("  %s %-9s %s", p.status(fmt.Sprintf("%-5s", g.Status.Label())), g.ID, g.Title)
	if g.Reason != "" {
		line += " — " + g.Reason
	}
	fmt.Fprintln(out, line)
	if len(g.Codes) > 0 {
		fmt.Fprintf(out, "        codes: %s\n", strings.Join(g.Codes, ", "))
	}
	if ts := reports.EventTypes(g); len(ts) > 0 {
		fmt.Fprintf(out, "        event types: %s\n", strings.Join(ts, ", "))
	}
	if race := reports.RaceText(g); race != "" {
		fmt.Fprintf(out, "        %s\n", race)
	}
	if g.Repro != "" {
		fmt.Fprintf(out, "        repro: %s\n", g.Repro)
	}
}

// progress prints one line per scenario as it ends (and as it starts, verbose).
func progress(w io.Writer, verbose bool) func(scenarios.ProgressEvent) {
	p := painterFor(w)
	return func(ev scenarios.ProgressEvent) {
		if !ev.Done {
			if verbose {
				fmt.Fprintf(w, "[%d/%d] %s …\n", ev.Index, ev.Total, ev.Name)
			}
			return
		}
		line := fmt.Sprintf("[%d/%d] %s %s (%s)", ev.Index, ev.Total, p.status(fmt.Sprintf("%-14s", ev.State)), ev.Guarantee, ev.Elapsed.Round(time.Millisecond))
		if ev.Reason != "" && (verbose || ev.State == "error") {
			line += ": " + ev.Reason
		}
		fmt.Fprintln(w, line)
	}
}
