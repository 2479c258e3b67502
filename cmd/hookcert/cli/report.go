package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/certify"
	"github.com/hookcert/hookcert/scenarios/check"
	"github.com/hookcert/hookcert/scenarios/soak"
)

// newReportCmd re-renders the report files from a stored results.json, e.g. after an
// upgrade of hookcert or to get the HTML page for a CI run that kept only the JSON.
func newReportCmd() *cobra.Command {
	var from, out string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Re-render junit.xml, summary.md and index.html from a stored results.json",
		Long: `Report reads a results.json written by a certification run, checks it against
its schema (` + reports.Schema + `), and writes results.json, junit.xml, summary.md
and index.html into --out: the page of a CI run that kept only the JSON, or the
reports of an older run as this version of hookcert renders them.

Exit status: 0 the reports were written, 2 the file cannot be read or is not valid
results, or --out cannot be written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usageErr("report: --from must name a results.json file")
			}
			if out == "" {
				return usageErr("report: --out must name a directory")
			}
			r, err := reports.ReadResults(from)
			if err != nil {
				return usageErr("report: --from: %w", err)
			}
			paths, err := reports.Write(out, r, reports.Options{})
			if err != nil {
				return usageErr("report: --out %s: %w", out, err)
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "hookcert-report/results.json", "results.json to read")
	cmd.Flags().StringVar(&out, "out", "hookcert-report", "directory to write the reports into (created if missing)")
	return cmd
}

// newCheckCmd re-judges a stored run from its history alone: the checker stage
// without the receiver, as Jepsen's analyze re-checks a stored history.
func newCheckCmd() *cobra.Command {
	var from []string
	var out string
	cmd := &cobra.Command{
		Use:   "check --from REPORT_DIR [REPORT_DIR...]",
		Short: "Re-judge a stored run from its history.jsonl and write the reports",
		Long: `Check reads REPORT_DIR/` + certify.HistoryFile + ` (schema ` + history.Schema + `), judges every
scenario from the attempts and observations it holds, and writes results.json,
junit.xml, summary.md and index.html into --out (default: REPORT_DIR). A soak's
history (hookcert soak) is reconciled per event key as the soak does, into
results.json and soak.html. The receiver is not contacted.

Several directories, each a shard of one sharded soak (hookcert soak --shard I/N),
are merged and judged as the whole soak: --from dir0 dir1 ... or --from repeated.
The merged history.jsonl, results.json and soak.html go to --out (default
hookcert-soak-merged). Every shard must be given once.

Exit status as for certify (or soak): 0 passed, 1 a guarantee failed, 4 nothing
judged, 5 none failed but some could not be judged (a read the history lacks, an
interrupted run), 6 a soak breached a threshold (re-judged from the thresholds its
history stores); 2 when the history cannot be read or the reports not written.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// --from dir0 dir1 ...: the directories after the first are arguments.
			if len(args) > 0 && !cmd.Flags().Changed("from") {
				return usageErr("check: %q: name report directories with --from", args[0])
			}
			dirs := append(slices.DeleteFunc(slices.Clone(from), func(d string) bool { return d == "" }), args...)
			if len(dirs) == 0 {
				return usageErr("check: --from must name a report directory")
			}
			if len(dirs) > 1 {
				if out == "" {
					out = mergedSoakDir
				}
				return mergeSoaks(cmd.OutOrStdout(), dirs, out)
			}
			if out == "" {
				out = dirs[0]
			}
			f, err := os.Open(filepath.Join(dirs[0], certify.HistoryFile))
			if err != nil {
				return usageErr("check: --from: %v", err)
			}
			defer f.Close()
			h, err := history.ReadJSONL(f)
			if err != nil {
				return usageErr("check: --from %s: %v", f.Name(), err)
			}
			if soak.IsSoak(h) {
				return recheckSoak(cmd.OutOrStdout(), h, f.Name(), out)
			}
			res, err := check.Judge(h)
			if err != nil {
				return usageErr("check: --from %s: %v", f.Name(), err)
			}
			if _, err := reports.Write(out, res, reports.Options{}); err != nil {
				return usageErr("check: --out %s: %v", out, err)
			}
			return verdictExit(cmd.OutOrStdout(), res, out, time.Time{})
		},
	}
	cmd.Flags().StringArrayVar(&from, "from", []string{"hookcert-report"}, "report directory holding "+certify.HistoryFile+"; several (the shards of one soak) are merged")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the reports into (default: --from, or "+mergedSoakDir+" when merging)")
	return cmd
}

// recheckSoak re-judges a soak's history as hookcert soak judged it: the same
// soak section, the same exit status.
func recheckSoak(w io.Writer, h *history.History, name, out string) error {
	res, err := soak.Results(h)
	if err != nil {
		return usageErr("check: --from %s: %v", name, err)
	}
	if _, err := reports.WriteSoak(out, res, reports.Options{}); err != nil {
		return usageErr("check: --out %s: %v", out, err)
	}
	printSoak(w, painterFor(w), res.Soak)
	fmt.Fprintf(w, "reports: %s/{results.json,soak.html}\n", strings.TrimRight(out, "/"))
	var info soak.RunInfo
	_ = json.Unmarshal(h.Meta.Run, &info) // soak.Results read it already
	return soakExit(res.Soak, info.Error, res.Seed)
}
