package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/reports"
)

func init() { register(newReportCmd) }

// newReportCmd re-renders the report files from a stored results.json, e.g. after an
// upgrade of hookcert or to get the HTML page for a CI run that kept only the JSON.
func newReportCmd() *cobra.Command {
	var from, out string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Re-render junit.xml, summary.md and index.html from a stored results.json",
		Long: "report reads a results.json written by a certification run, checks its schema (" +
			reports.Schema + "), and writes results.json, junit.xml, summary.md and index.html " +
			"into --out. Exit 2 when the file cannot be read or is not valid results.",
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
