package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/scenarios"
)

func newGuaranteesCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "guarantees",
		Short: "Print the guarantee catalogue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			switch format {
			case "text":
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNEEDS\tPROMISE")
				for _, g := range scenarios.Catalogue() {
					needs := strings.Join(g.Needs, ",")
					if needs == "" {
						needs = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", g.ID, needs, g.Promise)
				}
				return tw.Flush()
			case "markdown":
				_, err := out.Write(scenarios.CatalogueMarkdown())
				return err
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(scenarios.Catalogue())
			}
			return usageErr("--format must be one of text, markdown, json (got %q)", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, markdown or json")
	return cmd
}
