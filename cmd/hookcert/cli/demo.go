package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reference"
)

func newDemoCmd() *cobra.Command {
	var f suiteFlags
	var defects, caps []string
	var mode, store string
	var workerProcs int
	cmd := &cobra.Command{
		Use:   "demo [--store postgres|mysql] [--mode sync|inbox|both] [--worker-processes N] [--defect NAME]...",
		Short: "Start the reference receiver on a throwaway PostgreSQL and certify it",
		Long: `Demo provisions PostgreSQL (--database-url, $HOOKCERT_DATABASE_URL, a container, or
local binaries), starts the reference receiver with fresh random secrets (and the
named defects, which break it on purpose), certifies it and writes the reports.
With --mode inbox the reference stores each event and answers 202, 4 workers apply
it later, and credits and refunds reach a downstream sink the harness runs through
an outbox; the target declares asynchronous acceptance, its inbox and its outbox,
and the INBOX and OUTBOX guarantees apply. --worker-processes N runs those workers in
N "hookcert reference worker" processes instead, declared as lifecycle.worker, so
the INBOX crash checks kill the workers alone. --mode both runs sync, then inbox, with
reports in <report-dir>/sync and <report-dir>/inbox and a summary.md over both.
Defects belong to one design (hookcert reference defects lists them). Exit status as
for certify; with both, the one that says most: a failure in either mode (1), else a
run that could not start (2, 3), else one that could not judge everything (5), else
nothing judged (4), else 0.

--store mysql certifies the small MySQL/MariaDB reference instead (Stripe only,
sync design; its defects: hookcert reference defects --store mysql). Its database
is created fresh on the server --database-url names, else $HOOKCERT_MYSQL_URL, else
mysql://root@127.0.0.1:3306/ when unset, and dropped afterwards (--keep-database
keeps it). It declares capabilities crash, lock-gating and connection-loss.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validStore(store); err != nil {
				return err
			}
			if store == storeMySQL {
				return runDemoMySQLCmd(cmd, f, mode, workerProcs, defects, caps)
			}
			if err := validDemoMode(mode, defects); err != nil {
				return err
			}
			switch {
			case workerProcs < 0 || workerProcs > targetfile.MaxWorkerProcesses:
				return usageErr("--worker-processes: must be between 0 and %d, got %d", targetfile.MaxWorkerProcesses, workerProcs)
			case workerProcs > 0 && mode == reference.ModeSync:
				return usageErr("--worker-processes: needs --mode inbox or both (a synchronous receiver has no workers)")
			}
			if err := reference.ValidateDefects(defects); err != nil {
				return usageErr("--defect: %v", err)
			}
			if err := f.validate(); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("locating the hookcert binary: %w", err)}
			}
			if err := validDemoCapabilities(caps); err != nil {
				return usageErr("--capabilities: %v", err)
			}
			out := cmd.OutOrStdout()
			if n := removeStaleDemoDirs(os.TempDir()); n > 0 {
				fmt.Fprintf(out, "removed %d stale demo %s left by a killed run\n", n, plural(n, "directory", "directories"))
			}
			if mode != demoModeBoth {
				return runDemo(cmd.Context(), out, exe, mode, workerProcs, f, defects, caps)
			}
			// Both designs, one after the other, reported side by side.
			var worst error
			base := f.reportDir
			var lines []string
			for _, m := range []string{reference.ModeSync, reference.ModeInbox} {
				fmt.Fprintf(out, "\n== reference receiver, %s mode ==\n", m)
				mf := f
				if base != "" {
					mf.reportDir = filepath.Join(base, m)
				}
				procs := 0
				if m == reference.ModeInbox {
					procs = workerProcs
				}
				err := runDemo(cmd.Context(), out, exe, m, procs, mf, defects, caps)
				lines = append(lines, fmt.Sprintf("%s mode: %s", m, demoOutcome(err, mf.reportDir)))
				worst = worseExit(worst, err)
				if cmd.Context().Err() != nil {
					break
				}
			}
			fmt.Fprintln(out, "\n== both designs ==")
			for _, l := range lines {
				fmt.Fprintln(out, l)
			}
			if base != "" {
				if err := writeBothSummary(base, lines); err != nil {
					return worseExit(worst, &ExitError{Code: ExitUnjudged, Err: err})
				}
			}
			return worst
		},
	}
	cmd.Flags().StringVar(&mode, "mode", reference.ModeSync, "reference receiver design: sync (apply, then 200), inbox (store, 202, workers apply, outbox) or both")
	cmd.Flags().IntVar(&workerProcs, "worker-processes", 0, "inbox mode: run the workers in this many separate worker processes (0: inside the receiver)")
	cmd.Flags().StringSliceVar(&caps, "capabilities", demoCapabilities,
		"capabilities the demo target declares (a subset, to see the verdicts a receiver without test hooks gets; \"none\" for none)")
	cmd.Flags().StringArrayVar(&defects, "defect", nil, "start the reference with defect `NAME` (repeatable; hookcert reference defects [--store mysql] lists them)")
	addStoreFlag(cmd, &store, "the reference to certify: postgres, or mysql (the MySQL/MariaDB reference on a fresh database of --database-url, default mysql://root@127.0.0.1:3306/)")
	f.add(cmd)
	return cmd
}

// validDemoMode checks --mode and, as the reference does, that each defect
// belongs to that design, before anything starts.
func validDemoMode(mode string, defects []string) error {
	switch mode {
	case reference.ModeSync, reference.ModeInbox:
		if err := reference.ValidateDefectsFor(defects, mode, mode == reference.ModeInbox); err != nil {
			return usageErr("--defect: %v", err)
		}
	case demoModeBoth:
		if len(defects) > 0 {
			return usageErr("--defect: defects belong to one design; with --mode both give none, or choose --mode sync or inbox")
		}
	default:
		return usageErr("--mode: must be %s, %s or %s, got %q", reference.ModeSync, reference.ModeInbox, demoModeBoth, mode)
	}
	return nil
}

func validDemoCapabilities(caps []string) error {
	for _, c := range caps {
		if c != "none" && !slices.Contains(demoCapabilities, c) {
			return fmt.Errorf("%q is not one of %s, none", c, strings.Join(demoCapabilities, ", "))
		}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// demoModeBoth runs the demo in sync mode, then in inbox mode (with the outbox).
const demoModeBoth = "both"

// runDemo certifies the reference receiver in one mode.
func runDemo(ctx context.Context, out io.Writer, exe, mode string, workerProcs int, f suiteFlags, defects, caps []string) error {
	// The directory holds the endpoints file with the run's secrets. It is
	// removed on return, which SIGINT and SIGTERM reach (they cancel the
	// run's context); after SIGKILL its pid file lets the next demo remove it.
	dir, err := newDemoDir()
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	defer os.RemoveAll(dir)
	targetYAML, secrets, err := demoTarget(exe, dir, mode, demoShape{workerProcs: workerProcs, maxConns: demoMaxConns}, defects, caps)
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	// The database password is a secret of the run too: a driver error
	// or the receiver's output may quote it without its URL.
	dbURL := f.databaseURL
	if dbURL == "" {
		dbURL = pgprovision.URLFromEnv()
	}
	secrets = append(secrets, scrub.Password(dbURL))
	if len(defects) > 0 {
		fmt.Fprintf(out, "reference receiver with defect(s): %s\n", strings.Join(defects, ", "))
	}
	opts := f.options(out, func(id string) string {
		c := fmt.Sprintf("hookcert repro %s --seed %d --demo", id, f.seed)
		if mode == reference.ModeInbox {
			c += " --mode inbox"
			if workerProcs > 0 {
				c += fmt.Sprintf(" --worker-processes %d", workerProcs)
			}
		}
		for _, d := range defects {
			c += " --defect " + d
		}
		return c + f.reproFrom()
	})
	opts.ConfigPath = "demo target"
	opts.ConfigData = targetYAML
	opts.Secrets = secrets
	err = runCertify(ctx, out, opts)
	var ee *ExitError
	if errors.As(err, &ee) {
		// Printed by Main: scrubbed like everything else the run prints.
		ee.Err = scrub.New(secrets...).Error(ee.Err)
	}
	return err
}

// demoOutcome is one line on how a mode's run ended.
func demoOutcome(err error, reportDir string) string {
	where := ""
	if reportDir != "" {
		where = " (reports in " + reportDir + ")"
	}
	var ee *ExitError
	switch {
	case err == nil:
		return "every guarantee judged passed or not applicable" + where
	case errors.As(err, &ee) && ee.Code == ExitFailed:
		return "FAILED" + where
	case errors.As(err, &ee) && ee.Code == ExitNothing:
		return "NO VERDICT: " + err.Error() + where
	default:
		return "ERROR: " + err.Error() + where
	}
}

// exitRank orders outcomes by how much they must be heard: a failed
// guarantee above all (it is a fact about the receiver, whatever else went
// wrong), then a run that could not start, then one that could not judge
// everything, then one that judged nothing, then a pass.
func exitRank(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		return 3
	}
	switch ee.Code {
	case ExitFailed:
		return 4
	case ExitUnjudged:
		return 2
	case ExitNothing:
		return 1
	}
	return 3
}

// worseExit keeps the outcome that ranks higher (exitRank); the first of two
// equals.
func worseExit(a, b error) error {
	if exitRank(b) > exitRank(a) {
		return b
	}
	return a
}

// writeBothSummary writes summary.md over the two modes' reports.
func writeBothSummary(dir string, lines []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# hookcert demo: the reference receiver in both designs\n\n")
	for _, l := range lines {
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("\nEach mode has its own results.json, junit.xml, summary.md, index.html and history.jsonl in sync/ and inbox/.\n")
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
}
